#!/usr/bin/env bash
# The soak (contree/examples/soak.rs): mixed concurrent operations with every structure
# change active (splits, merges, Contention Split, XMerge, compact(), a tight memory budget,
# out-of-line values, scans both ways), each checked against per-thread oracles, shared
# counters and stable keys, and the whole tree checked at the end. Exits non-zero on any
# mismatch. Recorded runs: docs/verification.md.
#
# Usage: scripts/soak.sh [ops, default 100000000] [threads, default 8] [seed, default 1]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p contree --example soak
exec target/release/examples/soak --ops "${1:-100000000}" --threads "${2:-8}" --seed "${3:-1}"
