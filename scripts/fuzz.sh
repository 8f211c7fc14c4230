#!/usr/bin/env bash
# Runs a cargo-fuzz target (libFuzzer, nightly) for a given time and prints how many
# executions it made and the coverage it reached.
#
#   scripts/fuzz.sh ops 600        # operation sequences against std's BTreeMap
#   scripts/fuzz.sh codecs 300     # the typed codecs
#   scripts/fuzz.sh ops 3600 2     # two jobs (libFuzzer -jobs/-workers)
#   FUZZ_SANITIZER=none scripts/fuzz.sh ops 3600 2
#                                  # without AddressSanitizer (cargo-fuzz's default): a few
#                                  # times the executions per second; the oracle checks
#                                  # stay, only ASan's memory checks go
#
# Installs cargo-fuzz from crates.io when it is missing. The corpus grows in
# fuzz/corpus/<target>; a failing input lands in fuzz/artifacts/<target> with the command
# that replays it. Results of recorded runs: docs/verification.md.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:?usage: scripts/fuzz.sh <ops|codecs> <seconds> [jobs]}
seconds=${2:?usage: scripts/fuzz.sh <ops|codecs> <seconds> [jobs]}
jobs=${3:-1}

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz
fi

log=$(mktemp)
args=(-max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1)
if [ "$jobs" -gt 1 ]; then
    args+=(-jobs="$jobs" -workers="$jobs")
fi
status=0
start=$SECONDS
cargo +nightly fuzz run -O -s "${FUZZ_SANITIZER:-address}" "$target" -- "${args[@]}" >"$log" 2>&1 || status=$?
# With several jobs, libFuzzer's parent copies each job's log (fuzz-N.log) into its own
# output when the job exits, final statistics included.
rm -f fuzz-*.log
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')
cov=$(grep -o 'cov: [0-9]*' "$log" | awk '{print $2}' | sort -n | tail -1)
echo "target $target: ${runs} executions in $((SECONDS - start)) s (${jobs} job(s), sanitizer ${FUZZ_SANITIZER:-address}), coverage ${cov:-?} edges, exit ${status}"
# 72: the run was interrupted (Ctrl-C); its statistics above count.
if [ "$status" -ne 0 ] && [ "$status" -ne 72 ]; then
    grep -A40 'panicked\|Failing input\|ERROR' "$log" | head -80 || true
    echo "full log: $log"
    exit "$status"
fi
rm -f "$log"
