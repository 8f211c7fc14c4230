#!/usr/bin/env bash
# The README's test command: the workspace tests, the latch-stats feature's tests, then the
# Shuttle models of the whole tree (`contree/tests/shuttle/`). The last two need features
# and so builds of their own (cargo unifies features across `--workspace`; a `shuttle`
# build of the tree works only inside Shuttle). The models run in the test profile, with debug assertions on.
# Longer model runs: CONTREE_SHUTTLE_ITERATIONS=20000 CONTREE_SHUTTLE_SEED=random scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --release
# The latch-stats counters (`tests/latch_stats.rs`), in the build that CI also uses for the
# serde feature.
cargo test -p contree --release --features serde,latch-stats --test latch_stats
cargo test -p contree --features shuttle --test shuttle
