#!/usr/bin/env bash
# Runs contree's concurrent stress and XMerge tests (contree/tests/stress.rs, xmerge.rs)
# under ThreadSanitizer.
#
# Needs the nightly toolchain; with its rust-src component the standard library is rebuilt
# with TSan instrumentation (-Zbuild-std), which avoids false reports from uninstrumented
# std code. Without rust-src it falls back to the prebuilt std (with
# -Cunsafe-allow-abi-mismatch=sanitizer), where reports inside std are less reliable.
#
# Usage: scripts/tsan.sh [extra cargo test args, e.g. -- mixed_workload]
# Environment: CONTREE_STRESS_OPS (default 200000: TSan slows execution 5-15x),
#              RUST_TEST_THREADS (default 1),
#              CARGO_TARGET_DIR (default target-tsan in the workspace root).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=lib/sanitizer.sh
source "$root/scripts/lib/sanitizer.sh"
sanitizer_setup tsan.sh "-Zsanitizer=thread -Csymbol-mangling-version=v0 --cfg contree_tsan"
export TSAN_OPTIONS="suppressions=$root/contree/tsan.supp halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export CONTREE_STRESS_OPS="${CONTREE_STRESS_OPS:-200000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-tsan}"
# One test at a time: each test starts its own threads, and some bound how long a tree takes
# to drop; two of them at once under TSan's slowdown on a 2-core machine miss those bounds.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-1}"
# --target keeps the sanitizer flags away from build scripts and proc macros.
exec cargo +nightly test "${build_std[@]}" --target "$host" -p contree --test stress --test xmerge "$@"
