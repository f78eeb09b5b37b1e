#!/usr/bin/env bash
# Changes API: 100 websocket subscribers watching every document while writers put documents.
#   1. write throughput with no subscribers and with 100 (as fast as acknowledged; target: within 10%),
#      alternating the two, REPEATS times each;
#   2. notification latency p50/p99 at RATE documents/s (default 5,000) with 100 subscribers, from the
#      acknowledged commit (HTTP 201 of the batch) to each subscriber, and from the send as an upper bound.
# Load generator: bench/changes/changes_load.py (standard library asyncio; subscribers in PROCS processes).
# Usage: bench/run-changes.sh            (10 s steps, 3 repetitions)
#        QUICK=1 bench/run-changes.sh    (3 s steps, 1 repetition)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/corvid.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    DURATION=${DURATION:-3}; REPEATS=${REPEATS:-1}
else
    DURATION=${DURATION:-10}; REPEATS=${REPEATS:-3}
fi
SUBSCRIBERS=${SUBSCRIBERS:-100}
RATE=${RATE:-5000}
PROCS=${PROCS:-2}                 # processes the subscribers are spread over
BATCH=${BATCH:-25}                # documents per bulk_docs request
CONCURRENCY=${CONCURRENCY:-8}     # requests in flight
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR
LOAD="$BENCH_DIR/changes/changes_load.py"

install_cleanup_trap
ensure_python; ensure_curl

make_tmpdir BENCH_WORK
export BENCH_WORK
W=$BENCH_WORK
RECORDS=$W/records.jsonl
: >"$RECORDS"

DATE=$(date -u +%Y-%m-%d); STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ); COMMIT=$(git_commit)
log "Changes start: commit $COMMIT, ${DURATION}s steps x $REPEATS, $SUBSCRIBERS subscribers, latency at $RATE docs/s"
DISK=$(disk_probe "$BENCH_TMPDIR" 2000); REGIME=$(disk_regime "$DISK")
log "disk: $DISK durable 4 KiB writes/s -> regime '$REGIME'"

make_tmpdir CVD "$BENCH_TMPDIR"
corvid_start "$CVD"
corvid_create_db bench

load() {  # load MODE SUBSCRIBERS -> one JSON line appended to RECORDS (and echoed)
    local mode=$1 subs=$2 line
    line=$("$PY" "$LOAD" "$mode" --url "$CORVID_URL" --db bench --subscribers "$subs" --procs "$PROCS" \
        --rate "$RATE" --duration "$DURATION" --batch "$BATCH" --concurrency "$CONCURRENCY")
    printf '%s\n' "$line" >>"$RECORDS"
    printf '%s\n' "$line"
}

for rep in $(seq 1 "$REPEATS"); do
    # Alternate the order so a drift of the machine does not favour one side.
    if [ $((rep % 2)) = 1 ]; then order="0 $SUBSCRIBERS"; else order="$SUBSCRIBERS 0"; fi
    for subs in $order; do
        log "throughput, $subs subscribers (repetition $rep)"
        load throughput "$subs" >/dev/null
    done
    log "latency at $RATE docs/s, $SUBSCRIBERS subscribers (repetition $rep)"
    load latency "$SUBSCRIBERS" >/dev/null
done
curl -s "$CORVID_URL/admin/metrics" >"$W/metrics.json" || true
corvid_stop

REPORT=$("$PY" - "$RECORDS" "$W/metrics.json" <<PYEOF
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
try:
    changes = json.load(open(sys.argv[2])).get("Changes", {})
except Exception:
    changes = {}
tp = lambda subs: [r["writes_per_s"] for r in rows if r.get("mode") == "throughput" and r["subscribers"] == subs]
none, some = tp(0), tp($SUBSCRIBERS)
lat = [r for r in rows if r.get("mode") == "latency"]
out = ["", "### Changes API run $STAMP (commit $COMMIT, ${DURATION}s steps x $REPEATS, disk $REGIME: $DISK dsync/s)", ""]
out.append("| Step | Result |")
out.append("|---|---|")
if none and some:
    a, b = statistics.median(none), statistics.median(some)
    out.append(f"| Write throughput, no subscribers (median docs/s) | {a:,.0f} (runs: {', '.join(f'{x:,.0f}' for x in none)}) |")
    out.append(f"| Write throughput, $SUBSCRIBERS subscribers (median docs/s) | {b:,.0f} (runs: {', '.join(f'{x:,.0f}' for x in some)}) |")
    out.append(f"| With / without | {b / a:.1%} (target: at least 90%) |")
for r in lat:
    f, s = r["latency_from_ack_ms"], r["latency_from_send_ms"]
    fmt = lambda v: "n/a" if v is None else f"{v:.1f}"
    out.append(
        f"| Latency at {r['target_rate']:,} docs/s asked ({r['writes_per_s']:,.0f} achieved), {r['subscribers']} subscribers | "
        f"from ack p50 {fmt(f['p50'])} ms, p99 {fmt(f['p99'])} ms; from send p50 {fmt(s['p50'])} ms, p99 {fmt(s['p99'])} ms; "
        f"{r['probe_deliveries']:,} of {r['probe_deliveries_expected']:,} probe deliveries seen, {r['delivered_before_ack']:,} before the ack |"
    )
errors = sum(r.get("write_errors", 0) for r in rows) + sum(len(r.get("subscriber_errors", [])) for r in rows)
out.append(f"| Errors (writes + subscribers) | {errors} |")
out.append(f"| Server: Changes clients dropped as too slow | {changes.get('DroppedTooSlow', 'n/a')} |")
print("\n".join(out))
PYEOF
)
printf '%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
printf '%s\n' "$REPORT" >>"$RESULTS_DIR/changes-$DATE.md"
cp "$RECORDS" "$RESULTS_DIR/raw/changes-${STAMP//:/}.jsonl"
log "appended to $RESULTS_DIR/changes-$DATE.md (raw records in $RESULTS_DIR/raw/)"
