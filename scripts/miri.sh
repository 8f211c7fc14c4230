#!/usr/bin/env bash
# Runs the node layer's unit tests under Miri, where every page byte is read and written
# (undefined behaviour, out-of-bounds and uninitialised reads, aliasing violations).
# Needs the nightly toolchain with the miri component
# (rustup component add miri --toolchain nightly).
#
# Usage: scripts/miri.sh [test name filter, default node::]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo +nightly miri test -p contree --lib "${1:-node::}"
