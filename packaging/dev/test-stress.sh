#!/usr/bin/env bash
# The test suite beside competing load: one `nice -n 19` busy loop per core the
# suite may use, for the whole run. Every bound and timeout stays as the tests
# have them; a test that fails here depends on the machine being quiet.
# Usage: packaging/dev/test-stress.sh PYTHON [pytest arguments]
set -euo pipefail
python="$1"
shift
cores=$("$python" -c 'import os; print(len(os.sched_getaffinity(0)))')
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
for _ in $(seq "$cores"); do
    nice -n 19 sh -c 'while :; do :; done' &
    pids+=("$!")
done
echo "test-stress: $cores busy loops at nice 19 beside the suite (load $(cut -d' ' -f1-3 /proc/loadavg))"
start=$(date +%s)
status=0
QT_QPA_PLATFORM=offscreen "$python" -m pytest -q "$@" || status=$?
echo "test-stress: exit $status after $(( $(date +%s) - start )) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
exit $status
