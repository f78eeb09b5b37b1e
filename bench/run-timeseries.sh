#!/usr/bin/env bash
# Time series: append throughput (bulk insert stream and batches), storage bytes per value and a 1-hour bucket
# aggregation over per-minute values, Corvid vs PostgreSQL 15 (a (series, ts) btree table). See bench/README.md.
# Usage: bench/run-timeseries.sh                (100 series x 365 days of per-minute values)
#        QUICK=1 bench/run-timeseries.sh        (20 series x 7 days)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    export TS_SERIES=${TS_SERIES:-20} TS_DAYS=${TS_DAYS:-7}
else
    export TS_SERIES=${TS_SERIES:-100} TS_DAYS=${TS_DAYS:-365}
fi
export TS_BATCH=${TS_BATCH:-1000} TS_THREADS=${TS_THREADS:-4} TS_AGG_SAMPLES=${TS_AGG_SAMPLES:-10}
SYSTEMS=${SYSTEMS:-"corvid postgres"}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR
has() { case " $SYSTEMS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

install_cleanup_trap
ensure_python
ensure_curl
has postgres && ensure_postgres

make_tmpdir BENCH_WORK
export BENCH_WORK
RECORDS=$BENCH_WORK/records.jsonl
: >"$RECORDS"
log "time series: $TS_SERIES series x $TS_DAYS days per minute, batches of $TS_BATCH, $TS_THREADS writers; systems: $SYSTEMS"

if has corvid; then
    make_tmpdir CD "$BENCH_TMPDIR"
    corvid_start "$CD"
    corvid_create_db tsbench
    "$PY" "$BENCH_LIB/timeseries.py" corvid "$CORVID_URL" tsbench "$CD/data" | tee -a "$RECORDS"
    corvid_stop
fi
if has postgres; then
    make_tmpdir PGD "$BENCH_TMPDIR"
    pg_start "$PGD"
    "$PY" "$BENCH_LIB/timeseries.py" postgres psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
        | tee -a "$RECORDS"
    pg_stop
fi

mkdir -p "$RESULTS_DIR"
OUT="$RESULTS_DIR/timeseries-$(date -u +%Y%m%dT%H%M%SZ)$([ "$QUICK" = 1 ] && echo -quick).jsonl"
cp "$RECORDS" "$OUT"
log "records: $OUT"
"$PY" - "$RECORDS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["system"], r["step"]): r for r in rows}
print(f"{'step':<16}{'corvid':>16}{'postgres':>16}{'ratio':>10}")
for step, key, better in [("append_bulk", "values_per_s", "higher"), ("append_batches", "values_per_s", "higher"),
                          ("bytes_per_value", "bytes_per_value", "lower"), ("aggregate_1h", "p50_ms", "lower")]:
    c, p = by.get(("corvid", step), {}).get(key), by.get(("postgres", step), {}).get(key)
    ratio = f"{c / p:.2f}x" if c and p else "-"
    print(f"{step:<16}{str(c):>16}{str(p):>16}{ratio:>10}  ({key}, {better} is better)")
PY
