#!/usr/bin/env bash
# Subscriptions: documents/s delivered to one worker from a large collection, against the bulk insert rate of
# the same documents measured in the same run, and catch-up after a worker restart. See bench/README.md.
# Usage: bench/run-subscriptions.sh            (1,000,000 documents, 3 repetitions)
#        QUICK=1 bench/run-subscriptions.sh    (50,000 documents, 1 repetition)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/corvid.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    N=${N:-50000}; REPEATS=${REPEATS:-1}
else
    N=${N:-1000000}; REPEATS=${REPEATS:-3}
fi
BATCH=${BATCH:-4096}
DOC_BYTES=${DOC_BYTES:-300}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR

install_cleanup_trap
ensure_python; ensure_curl
make_tmpdir BENCH_WORK
export BENCH_WORK
W=$BENCH_WORK
RECORDS=$W/records.jsonl
: >"$RECORDS"

DATE=$(date -u +%Y-%m-%d); STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ); COMMIT=$(git_commit)
log "Subscriptions start: commit $COMMIT, N=$N, MaxDocsPerBatch=$BATCH, $REPEATS repetition(s)"
DISK=$(disk_probe "$BENCH_TMPDIR" 500)
log "disk: $DISK durable 4 KiB writes/s ($(disk_regime "$DISK"))"

for rep in $(seq 1 "$REPEATS"); do
    make_tmpdir CVD "$BENCH_TMPDIR"
    corvid_start "$CVD"
    corvid_create_db bench
    "$PY" "$BENCH_DIR/subscriptions/subs.py" run --url "$CORVID_URL" --db bench --docs "$N" --batch "$BATCH" \
        --doc-bytes "$DOC_BYTES" | tee -a "$RECORDS" >&2
    corvid_stop
    rm -rf "$CVD"
done

TABLE=$("$PY" - "$RECORDS" <<'PYEOF'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def cell(key, fmt="{:,.0f}"):
    vals = [r[key] for r in recs]
    med = statistics.median(vals)
    return fmt.format(med) if len(vals) == 1 else f"{fmt.format(med)} ({fmt.format(min(vals))}-{fmt.format(max(vals))})"
ratio = [r["delivery_docs_per_s"] / r["bulk_insert_docs_per_s"] for r in recs]
rows = [
    ("Bulk insert (peer), docs/s", cell("bulk_insert_docs_per_s")),
    ("Subscription delivery to one worker, docs/s", cell("delivery_docs_per_s")),
    ("Delivery / bulk insert", f"{statistics.median(ratio):.2f}x"),
    ("First batch after connect, s", cell("first_batch_s", "{:.3f}")),
    ("Catch-up after a worker restart (half the documents), s", cell("catchup_s", "{:.2f}")),
    ("Catch-up rate, docs/s", cell("catchup_docs_per_s")),
    ("Catch-up: first batch after reconnect, s", cell("catchup_first_batch_s", "{:.3f}")),
    ("Every document delivered exactly once", "yes" if all(r["catchup_exact"] and r["delivered"] == r["docs"] for r in recs) else "NO"),
]
print("| Measure | Value |\n|---|---|")
for k, v in rows:
    print(f"| {k} | {v} |")
verdict = "PASS" if statistics.median(ratio) >= 1.0 else "FAIL"
print(f"\nTarget: delivery >= bulk insert rate of the same documents: **{verdict}**")
PYEOF
)
REPORT="## Subscriptions, $STAMP
commit $COMMIT, N=$N documents of ~$DOC_BYTES bytes, MaxDocsPerBatch=$BATCH, $REPEATS repetition(s), disk $DISK writes/s

$TABLE
"
printf '%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR"
printf '%s\n' "$REPORT" >>"$RESULTS_DIR/subscriptions-$DATE.md"
log "appended to $RESULTS_DIR/subscriptions-$DATE.md"
