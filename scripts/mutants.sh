#!/usr/bin/env bash
# Mutation testing of the test suite (cargo-mutants; not part of CI): each mutant changes one
# function or operator of the chosen module, and the contree tests run against it; a mutant
# that no test catches ("missed") is a hole in the suite, or code that does not matter.
#
#   scripts/mutants.sh latch      # contree/src/sync/latch.rs
#   scripts/mutants.sh node       # contree/src/node/
#   scripts/mutants.sh tree       # contree/src/tree.rs, contree/src/ops/, contree/src/engine/
#   scripts/mutants.sh xmerge     # contree/src/smo/xmerge/
#   scripts/mutants.sh all        # the four above
#
# Each mutant builds the library and runs the module's tests below, optimised (Cargo profile
# `mutants`: release without debug info, incremental; not the Shuttle models, which need
# their own build). MUTANTS_SHARD=k/n runs one round-robin shard (k from 0). Mutants per module (cargo mutants --list,
# 2026-11-23): latch 204, node 1054, tree 637, xmerge 275; at a minute or two each, a
# module takes hours on two cores (cargo-mutants' --shard splits a run across sessions). Results land in mutants.out/<module>/ (missed.txt,
# caught.txt, timeout.txt, unviable.txt); record them in docs/verification.md.
# Installs cargo-mutants from crates.io when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

module=${1:?usage: scripts/mutants.sh <latch|node|tree|xmerge|all>}
# The tests that can see each module's mutants (fewer tests per mutant: minutes saved on
# each of hundreds of mutants); `tree` runs them all.
case "$module" in
    latch)
        files=(contree/src/sync/latch.rs)
        tests=(--lib --test loom_latch --test stress --test contention --test atomic)
        ;;
    node)
        files=('contree/src/node/**')
        tests=(--lib --test oracle --test basic --test long_keys --test blob --test errors)
        ;;
    tree)
        files=(contree/src/tree.rs 'contree/src/ops/**' 'contree/src/engine/**')
        tests=()
        ;;
    xmerge)
        files=('contree/src/smo/xmerge/**')
        tests=(--lib --test xmerge --test space_churn --test errors --test stress)
        ;;
    all)
        for m in latch node tree xmerge; do "$0" "$m"; done
        exit 0
        ;;
    *) echo "unknown module $module" >&2; exit 2 ;;
esac

if ! cargo mutants --version >/dev/null 2>&1; then
    cargo install cargo-mutants
fi

args=()
for f in "${files[@]}"; do
    args+=(--file "$f")
done
mkdir -p mutants.out
# A mutant that makes a test loop is stopped by --timeout (the watchdogs abort hangs too).
# MUTANTS_SHARD=k/n runs every n-th mutant from the k-th (round robin), so that a module's
# mutants can be spread over several runs; each shard writes its own output folder.
shard=()
out="mutants.out/$module"
if [ -n "${MUTANTS_SHARD:-}" ]; then
    shard=(--shard "$MUTANTS_SHARD" --sharding round-robin)
    out="$out-${MUTANTS_SHARD//\//-of-}"
fi
cargo mutants --package contree "${args[@]}" "${shard[@]}" --timeout 300 --profile mutants \
    --output "$out" -- "${tests[@]}" || status=$?
for kind in missed caught timeout unviable; do
    printf '%s: %s\n' "$kind" "$(wc -l <"$out/mutants.out/$kind.txt" 2>/dev/null || echo '?')"
done
echo "mutants of $module: $out/mutants.out/"
exit "${status:-0}"
