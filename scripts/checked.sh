#!/usr/bin/env bash
# Runs contree's unit and integration tests in the `test` profile (optimised, with debug
# assertions and integer overflow checks on), where CI's test command runs them in release:
# the node layer's `debug_assert!`s on page offsets and slot indices, and every arithmetic
# overflow in the library and the tests, are checked. About 2 minutes to build and 1.5 to
# run on 2 cores. CI runs only the library's unit tests this way (`--lib`).
#
# Usage: scripts/checked.sh [cargo test arguments, e.g. --test oracle, or -- a_test_name]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test -p contree --lib --tests "$@"
