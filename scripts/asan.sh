#!/usr/bin/env bash
# Runs contree's concurrent and memory-heavy tests under AddressSanitizer: the stress and
# XMerge tests, the blob heap, long keys, memory return (space_churn) and the cursor tests.
# ASan catches out-of-bounds accesses past an allocation, use after free and double frees,
# and (LeakSanitizer) leaks at exit. Pages come from segments of several pages each
# (`page::PagePool`), so an overrun from one page into its neighbour inside a segment is
# not visible to ASan; the tree's own bounds checks (`check_invariants`, debug assertions)
# cover those.
#
# Needs the nightly toolchain; with its rust-src component the standard library is rebuilt
# with ASan instrumentation (-Zbuild-std).
#
# The test profile (opt-level 2 with debug assertions) keeps the tree's own checks on.
#
# Two tests are skipped: one measures resident memory given back to the system (ASan's
# quarantine and shadow memory keep it) and one times failing inserts (ASan slows them).
#
# Usage: scripts/asan.sh [test binary args, e.g. a test name filter]
# Environment: CONTREE_STRESS_OPS (default 500000), RUST_TEST_THREADS (default 1),
#              CARGO_TARGET_DIR (default target-asan in the workspace root).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=lib/sanitizer.sh
source "$root/scripts/lib/sanitizer.sh"
sanitizer_setup asan.sh "-Zsanitizer=address -Csymbol-mangling-version=v0"
export ASAN_OPTIONS="detect_leaks=1 halt_on_error=1 detect_stack_use_after_return=1 ${ASAN_OPTIONS:-}"
export CONTREE_STRESS_OPS="${CONTREE_STRESS_OPS:-500000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-asan}"
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-1}"
# --target keeps the sanitizer flags away from build scripts and proc macros.
exec cargo +nightly test "${build_std[@]}" --target "$host" -p contree \
    --test stress --test xmerge --test heap --test blob --test long_keys --test space_churn \
    --test cursor --no-fail-fast -- \
    --skip emptied_memory_goes_back_to_the_system --skip failing_inserts_at_the_budget_are_fast \
    "$@"
