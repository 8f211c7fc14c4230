# Sourced by scripts/tsan.sh and scripts/asan.sh: the nightly toolchain check and the
# sanitizer build flags they share.
#
#   sanitizer_setup <script name> <rustc flags>
#
# Sets `host` (the target triple to pass as --target, which keeps the sanitizer flags away
# from build scripts and proc macros), `build_std` (an array: -Zbuild-std when the nightly
# rust-src component is installed, so that std is instrumented too; empty otherwise, with
# -Cunsafe-allow-abi-mismatch=sanitizer added to the flags), and exports RUSTFLAGS and
# RUSTDOCFLAGS.
sanitizer_setup() {
    local name=$1 flags=$2
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
        echo "$name: the nightly toolchain is required (rustup toolchain install nightly)" >&2
        exit 2
    fi
    host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
    build_std=()
    if rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
        build_std=(-Zbuild-std)
    else
        echo "$name: nightly rust-src is missing; using the uninstrumented std" \
             "(rustup component add rust-src --toolchain nightly to fix)" >&2
        flags="$flags -Cunsafe-allow-abi-mismatch=sanitizer"
    fi
    export RUSTFLAGS="$flags"
    export RUSTDOCFLAGS="$flags"
}
