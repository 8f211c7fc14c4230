#!/usr/bin/env bash
# The README's test command: the workspace tests, then the Shuttle models of the whole tree
# (`contree/tests/shuttle/`), which need the `shuttle` feature and so a build of their own
# (cargo unifies features across `--workspace`; a `shuttle` build of the tree works only
# inside Shuttle). The models run in the test profile, with debug assertions on.
# Longer model runs: CONTREE_SHUTTLE_ITERATIONS=20000 CONTREE_SHUTTLE_SEED=random scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --release
cargo test -p contree --features shuttle --test shuttle
