#!/usr/bin/env bash
# Issue 23's benchmark (bench/lib/operability.py): the database list with many unloaded databases, the
# shutdown of many loaded databases with indexes while writes arrive, and S1 writes with and without a
# Prometheus scrape every second.
# Usage: bench/run-operability.sh                  (1,000 databases, 100 loaded, 10 s x 3 alternations)
#        QUICK=1 bench/run-operability.sh          (100 databases, 10 loaded, 3 s x 1)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/corvid.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    ARGS=(--databases 100 --loaded 10 --list-requests 50 --seconds 3 --repeats 1 --write-seconds 2)
else
    ARGS=(--databases "${DATABASES:-1000}" --loaded "${LOADED:-100}" --seconds "${DURATION:-10}" --repeats "${REPEATS:-3}")
fi
STEPS=${STEPS:-list,shutdown,scrape}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}

install_cleanup_trap
ensure_python
ensure_wrk
make_tmpdir WORK
mkdir -p "$RESULTS_DIR"
OUT="$RESULTS_DIR/operability-$(date -u +%Y-%m-%dT%H%M%SZ).txt"
log "operability: commit $(git_commit), steps $STEPS, output $OUT"
{
    echo "# commit $(git_commit), $(machine_desc), $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$PY" "$BENCH_LIB/operability.py" --binary "$BENCH_CORVID_BIN" --work "$WORK" --steps "$STEPS" "${ARGS[@]}"
} | tee "$OUT"
