#!/usr/bin/env bash
# Revisions: durable document writes with revisions enabled vs disabled, same server, same load (PUT over
# random ids of a fixed set with a body that changes every time, so every write keeps a revision and, past
# MinimumRevisionsToKeep, trims one). Target (issue 20): enabled >= 0.7x disabled.
# Usage: bench/run-revisions.sh            (10 s steps, 3 repetitions)
#        QUICK=1 bench/run-revisions.sh    (3 s steps, 1 repetition)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/corvid.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then DURATION=${DURATION:-3}; REPEATS=${REPEATS:-1}; else DURATION=${DURATION:-10}; REPEATS=${REPEATS:-3}; fi
CONCS=${CONCS:-"1 16 64"}
IDS=${IDS:-10000}
KEEP=${KEEP:-5}
WRK_THREADS=${WRK_THREADS:-2}

install_cleanup_trap
ensure_curl
ensure_wrk
make_tmpdir BENCH_WORK
export BENCH_WORK
corvid_start "$BENCH_WORK"
corvid_create_db rev_off
corvid_create_db rev_on
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$CORVID_URL/databases/rev_on/admin/revisions/config" \
    -H 'Content-Type: application/json' -d "{\"Default\":{\"MinimumRevisionsToKeep\":$KEEP}}")
[ "$code" = 200 ] || die "configuring revisions -> HTTP $code"

rate() {  # rate DB CONC REP -> requests per second
    local out threads=$WRK_THREADS
    [ "$2" -lt "$threads" ] && threads=$2  # wrk needs at least one connection per thread
    out=$(BENCH_DB=$1 BENCH_ID_COUNT=$IDS BENCH_SEED=$3 wrk -t "$threads" -c "$2" -d "${DURATION}s" --timeout 30s \
        -s "$BENCH_DIR/lib/wrk_revisions.lua" "$CORVID_URL" 2>&1 | grep WRK_JSON | sed 's/^WRK_JSON //')
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['errors']==0, d; print(round(d['requests']/(d['duration_us']/1e6)))" "$out"
}

printf '| connections | revisions off (writes/s) | revisions on (writes/s) | on / off |\n|---|---|---|---|\n'
for conc in $CONCS; do
    off=0; on=0
    for rep in $(seq 1 "$REPEATS"); do
        # Alternate the order so neither side always runs on a warmer file system.
        if [ $((rep % 2)) = 1 ]; then a=$(rate rev_off "$conc" "$rep"); b=$(rate rev_on "$conc" "$rep"); else b=$(rate rev_on "$conc" "$rep"); a=$(rate rev_off "$conc" "$rep"); fi
        off=$((off + a)); on=$((on + b))
    done
    off=$((off / REPEATS)); on=$((on / REPEATS))
    printf '| %s | %s | %s | %s |\n' "$conc" "$off" "$on" "$(python3 -c "print(f'{$on/$off:.2f}')")"
done
counts=$(curl -s "$CORVID_URL/databases/rev_on/stats" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['CountOfDocuments'], d['CountOfRevisionDocuments'])")
log "rev_on: documents and revisions: $counts"
