#!/usr/bin/env bash
# S4: NuGet-like package versions. Corvid static full-text index (Search on Title/Description/Tags) and a
# map-reduce index of download totals per PackageId, built cold over bulk-inserted documents; searches at 1 and
# 8 clients while 1,000 updates/s arrive; write-to-visible lag; map-reduce totals checked exactly.
# Peers in the same run: OpenSearch (embedded, bulk with refresh_interval -1 then refresh; default 1 s refresh
# afterwards) and PostgreSQL 15 (GIN tsvector indexes, GROUP BY). See bench/README.md.
# Usage: bench/run-s4.sh               (1,000,000 documents)
#        QUICK=1 bench/run-s4.sh       (100,000 documents, short steps)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"
source "$BENCH_DIR/lib/opensearch.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    N=${N:-100000}; DURATION=${DURATION:-5}; REPEATS=${REPEATS:-1}; LAG_DURATION=${LAG_DURATION:-10}; WARMUP=${WARMUP:-8}
else
    N=${N:-1000000}; DURATION=${DURATION:-10}; REPEATS=${REPEATS:-2}; LAG_DURATION=${LAG_DURATION:-30}; WARMUP=${WARMUP:-15}
fi
SHAPES=${SHAPES:-"title desc total"}
CONCS=${CONCS:-"1 8"}
SYSTEMS=${SYSTEMS:-"corvid opensearch postgres"}
UPDATE_RATE=${UPDATE_RATE:-1000}
LAG_TRACK_EVERY=${LAG_TRACK_EVERY:-10}
OS_LOAD_CONCURRENCY=${OS_LOAD_CONCURRENCY:-2}
SEED=${SEED:-42}
WRK_THREADS=${WRK_THREADS:-2}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR
S4="$BENCH_DIR/s4/s4.py"

install_cleanup_trap
ensure_python; ensure_curl; ensure_wrk; ensure_postgres; ensure_opensearch

make_tmpdir BENCH_WORK
export BENCH_WORK
W=$BENCH_WORK
RECORDS=$W/records.jsonl; NOTES=$W/notes.txt
: >"$RECORDS"; : >"$NOTES"
note() { log "NOTE: $*"; printf '%s\n' "$*" >>"$NOTES"; }
rec() { "$PY" "$BENCH_LIB/measure.py" merge "$@" >>"$RECORDS"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
cpu_of() {
    case $1 in
        corvid) "$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" ;;
        opensearch) "$PY" "$BENCH_LIB/measure.py" cpu "$OS_PID" ;;
        postgres) "$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree ;;
    esac | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/'
}
rss_of() { "$PY" "$BENCH_LIB/measure.py" rss "$1"; }

DATE=$(date -u +%Y-%m-%d); STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ); COMMIT=$(git_commit)
BINARY_DESC="$(basename "$BENCH_CORVID_BIN") built $(date -u -r "$BENCH_CORVID_BIN" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$BENCH_CORVID_BIN" | cut -c1-12)"
log "S4 start: commit $COMMIT, N=$N, ${DURATION}s query steps, $UPDATE_RATE updates/s, lag ${LAG_DURATION}s"
DISK_BEFORE=$(disk_probe "$BENCH_TMPDIR" 2000); REGIME=$(disk_regime "$DISK_BEFORE")
log "disk: $DISK_BEFORE durable 4 KiB writes/s -> regime '$REGIME'"

# ---- data (generated before anything is timed) --------------------------------------------------
gen=$("$PY" "$S4" prepare --count "$N" --seed "$SEED" --out-dir "$W")
log "generated: $gen"
echo "$gen" >"$W/gen.json"; rec "$W/gen.json" kind=data

# ---- systems ------------------------------------------------------------------------------------
make_tmpdir PGD "$BENCH_TMPDIR"; pg_start "$PGD"
chmod a+rx "$W"; chmod a+r "$W"/*.tsv
make_tmpdir CVD "$BENCH_TMPDIR"; corvid_start "$CVD"; corvid_create_db bench
make_tmpdir OSD "$BENCH_TMPDIR"; os_start "$OSD"
PSQL_CMD="psql -X -q -v ON_ERROR_STOP=1 -h $PG_HOST -p $PG_PORT -U $PG_USER -d postgres"

# ---- 1. load + cold index builds ------------------------------------------------------------------
log "Corvid: bulk insert of $N documents (one stream)"
c0=$(cpu_of corvid); t0=$(now)
out=$("$PY" "$S4" corvid-load --url "$CORVID_URL" --count "$N" --file "$W/versions.bulk")
t1=$(now); c1=$(cpu_of corvid)
log "Corvid load: $out"
echo "$out" >"$W/load_corvid.json"
rec "$W/load_corvid.json" kind=load system=corvid "docs=$N" "seconds=$(secs "$t0" "$t1")" "cpu_s=$(secs "$c0" "$c1")"
rm -f "$W/versions.bulk"

log "Corvid: cold build of $N documents, search index then map-reduce index"
c0=$(cpu_of corvid)
out=$("$PY" "$S4" corvid-indexes --url "$CORVID_URL" --count "$N" --seed "$SEED")
c1=$(cpu_of corvid)
log "Corvid indexes: $(echo "$out" | head -c 1200)"
echo "$out" >"$W/index_corvid.json"
rec "$W/index_corvid.json" kind=index system=corvid "cpu_s=$(secs "$c0" "$c1")" "rss=$(rss_of "$CORVID_PID")"
echo "$out" | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
for k in ("search", "reduce"):
    r = j[k]
    if r.get("error") or r.get("build_s") is None: print("Corvid index %s did not finish: %s" % (r["index"], r.get("error") or r.get("last_stats")))' \
    | while read -r l; do [ -n "$l" ] && note "$l"; done

# Corvid merges the segments of a cold build once it is caught up (decision 0015); wait for that background
# work to end, so it does not take CPU from OpenSearch's timed load (OpenSearch's own merges after its
# refresh are likewise outside its time, and are waited for the same way before PostgreSQL's).
settle() {  # settle SYSTEM [WHEN]: until the process uses < 5% of a core over 2 s (at most 180 s)
    local t0 c0 c1 i when=${2:-after its load/build}
    t0=$(now)
    for i in $(seq 1 90); do
        c0=$(cpu_of "$1"); sleep 2; c1=$(cpu_of "$1")
        if awk -v a="$c0" -v b="$c1" 'BEGIN { exit !((b - a) / 2 < 0.05) }'; then break; fi
    done
    log "$1 settled after $(secs "$t0" "$(now)") s"
    note "$1: background work $when settled in $(secs "$t0" "$(now)") s (not part of any timing)"
}
settle corvid

log "OpenSearch: _bulk of $N documents (refresh_interval -1, $OS_LOAD_CONCURRENCY concurrent requests of 5,000 docs), then refresh"
c0=$(cpu_of opensearch)
out=$("$PY" "$S4" os-load --url "$OS_URL" --count "$N" --dir "$W" --concurrency "$OS_LOAD_CONCURRENCY")
c1=$(cpu_of opensearch)
log "OpenSearch load: $out"
echo "$out" >"$W/load_os.json"
rec "$W/load_os.json" kind=index system=opensearch "cpu_s=$(secs "$c0" "$c1")" "rss=$(rss_of "$OS_PID")"
rm -f "$W/versions.os.ndjson"

settle opensearch

log "PostgreSQL: COPY, then GIN tsvector indexes (Title, Description, Tags) and a btree on PackageId"
pg_psql -c "CREATE TABLE versions(id text PRIMARY KEY, body jsonb NOT NULL)" \
        -c "CREATE TABLE q_title(i int PRIMARY KEY, w text)" -c "CREATE TABLE q_desc(i int PRIMARY KEY, q text)" \
        -c "CREATE TABLE q_pkg(i int PRIMARY KEY, p text)"
c0=$(cpu_of postgres); t0=$(now)
pg_psql -c "\\copy versions FROM '$W/versions.tsv'"
t1=$(now); c1=$(cpu_of postgres)
pg_psql -c "\\copy q_title FROM '$W/q_title.tsv'" -c "\\copy q_desc FROM '$W/q_desc.tsv'" -c "\\copy q_pkg FROM '$W/q_pkg.tsv'"
rec kind=load system=postgres "docs=$N" "seconds=$(secs "$t0" "$t1")" "cpu_s=$(secs "$c0" "$c1")"
rm -f "$W/versions.tsv"
pg_psql -c "SET maintenance_work_mem = '1GB'" >/dev/null
pg_index() {  # pg_index NAME SQL
    local c0 c1 t0 t1
    c0=$(cpu_of postgres); t0=$(now)
    pg_psql -c "SET maintenance_work_mem = '1GB'" -c "$2"
    t1=$(now); c1=$(cpu_of postgres)
    rec kind=index system=postgres "index=$1" "seconds=$(secs "$t0" "$t1")" "cpu_s=$(secs "$c0" "$c1")" \
        "docs_per_s=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", n/(b-a)}')"
    log "PostgreSQL index $1: $(secs "$t0" "$t1") s"
}
pg_index gin_title "CREATE INDEX v_title ON versions USING gin (to_tsvector('simple', body->>'Title'))"
pg_index gin_desc "CREATE INDEX v_desc ON versions USING gin (to_tsvector('simple', body->>'Description'))"
pg_index gin_tags "CREATE INDEX v_tags ON versions USING gin (to_tsvector('simple', body->>'Tags'))"
pg_index btree_pkg "CREATE INDEX v_pkg ON versions ((body->>'PackageId'))"
pg_psql -c "VACUUM ANALYZE versions" -c "ANALYZE q_title" -c "ANALYZE q_desc" -c "ANALYZE q_pkg"

# ---- 2. totals and cross-check right after the build ---------------------------------------------------
STATE=$W/corvid_state.json; echo '{}' >"$STATE"
check_totals() {  # check_totals LABEL
    local out
    out=$("$PY" "$S4" check-totals --source corvid --url "$CORVID_URL" --count "$N" --seed "$SEED" --state "$STATE" --label "$1")
    log "map-reduce totals ($1): $(echo "$out" | head -c 600)"
    echo "$out" >"$W/totals_$1.json"; rec "$W/totals_$1.json" kind=totals system=corvid
    echo "$out" | "$PY" -c 'import json,sys; j = json.load(sys.stdin)
if not j.get("exact"): print("map-reduce totals NOT exact at check %s: %s" % (j.get("label"), json.dumps({k: j.get(k) for k in ("error", "mismatches", "examples", "packages_expected", "packages_got", "sum_expected", "sum_got", "stale_at_read")})))' \
        | while read -r l; do [ -n "$l" ] && note "$l"; done
}
check_totals after-build
out=$("$PY" "$S4" check-totals --source pg --psql-cmd "$PSQL_CMD" --count "$N" --seed "$SEED" --label pg-after-load)
log "PostgreSQL GROUP BY totals: $(echo "$out" | head -c 400)"
echo "$out" >"$W/totals_pg.json"; rec "$W/totals_pg.json" kind=totals system=postgres
out=$("$PY" "$S4" crosscheck --url "$CORVID_URL" --os-url "$OS_URL" --psql-cmd "$PSQL_CMD" --count "$N" --seed "$SEED")
echo "$out" >"$W/crosscheck.json"; rec "$W/crosscheck.json" kind=crosscheck
echo "$out" | "$PY" -c 'import json,sys; j = json.load(sys.stdin)
for d in j["disagreements"]: print("search totals differ: %s" % json.dumps(d))' | while read -r l; do [ -n "$l" ] && note "$l"; done
log "cross-check: $(echo "$out" | head -c 300)"

# ---- 3. searches under $UPDATE_RATE updates/s -----------------------------------------------------------
cat >"$W/pg_update.sql" <<SQL
\\set i random(0, $((N - 1)))
\\set d random(1, 100)
UPDATE versions SET body = jsonb_set(body, '{DownloadCount}', to_jsonb((body->>'DownloadCount')::bigint + :d)) WHERE id = 'versions/' || :i;
SQL
TS_T="to_tsvector('simple', body->>'Title') @@ to_tsquery('simple', (SELECT w FROM q_title WHERE i = :k))"
TS_D="to_tsvector('simple', body->>'Description') @@ to_tsquery('simple', (SELECT q FROM q_desc WHERE i = :k))"
cat >"$W/pg_title.sql" <<SQL
\\set k random(1, 2000)
SELECT body FROM versions WHERE $TS_T LIMIT 20;
SELECT count(*) FROM versions WHERE $TS_T;
SQL
cat >"$W/pg_desc.sql" <<SQL
\\set k random(1, 2000)
SELECT body FROM versions WHERE $TS_D LIMIT 20;
SELECT count(*) FROM versions WHERE $TS_D;
SQL
cat >"$W/pg_total.sql" <<SQL
\\set k random(1, 2000)
SELECT body->>'PackageId', sum((body->>'DownloadCount')::bigint), count(*) FROM versions WHERE body->>'PackageId' = (SELECT p FROM q_pkg WHERE i = :k) GROUP BY 1;
SQL
for s in title desc total; do
    pg_psql -c "EXPLAIN $(grep -m1 '^SELECT' "$W/pg_$s.sql" | sed 's/:k/7/g')" >"$W/pg_$s.plan" 2>&1 || true
done

RUNSEED=100
run_q() {  # run_q SYSTEM SHAPE CONC REP
    local sys=$1 shape=$2 conc=$3 rep=$4 tag threads c0 c1 upid
    tag="q_${shape}_c${conc}_r${rep}_${sys}"
    RUNSEED=$((RUNSEED + 1))
    threads=$WRK_THREADS; [ "$conc" -lt "$threads" ] && threads=$conc
    # the update stream starts half a second before the measurement and ends after it
    case $sys in
        corvid) "$PY" "$S4" updates --target corvid --url "$CORVID_URL" --count "$N" --seed "$SEED" --rate "$UPDATE_RATE" \
                    --duration "$((DURATION + 1))" --state "$STATE" --run-seed "$RUNSEED" >"$W/$tag.upd.json" 2>"$W/$tag.upd.err" & upid=$! ;;
        opensearch) "$PY" "$S4" updates --target opensearch --url "$OS_URL" --count "$N" --seed "$SEED" --rate "$UPDATE_RATE" \
                    --duration "$((DURATION + 1))" --run-seed "$RUNSEED" >"$W/$tag.upd.json" 2>"$W/$tag.upd.err" & upid=$! ;;
        postgres) "$PGBENCH" -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -n -c 4 -j 1 -R "$UPDATE_RATE" -T "$((DURATION + 1))" \
                    -f "$W/pg_update.sql" postgres >"$W/$tag.upd.out" 2>&1 & upid=$! ;;
    esac
    sleep 0.5
    c0=$(cpu_of "$sys")
    case $sys in
        corvid|opensearch)
            local url path bodies
            if [ "$sys" = corvid ]; then url=$CORVID_URL; path=/databases/bench/queries; bodies=$W/corvid_$shape.txt
            else url=$OS_URL; path="/versions/_search?request_cache=false"; bodies=$W/os_$shape.txt; fi
            BENCH_PATH=$path BENCH_BODIES_FILE=$bodies BENCH_SEED=$rep \
                wrk -t "$threads" -c "$conc" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_bodies.lua" "$url" >"$W/$tag.out" 2>&1 || true
            "$PY" "$BENCH_LIB/measure.py" wrk "$W/$tag.out" >"$W/$tag.json" ;;
        postgres)
            pg_run_pgbench "$W/$tag" -M prepared -c "$conc" -j "$threads" -T "$DURATION" -f "$W/pg_$shape.sql" \
                -l --log-prefix="$W/$tag.log" || true
            "$PY" "$BENCH_LIB/measure.py" pgbench "$W/$tag.out" "$W/$tag.log" >"$W/$tag.json"
            rm -f "$W/$tag.log".* ;;
    esac
    c1=$(cpu_of "$sys")
    wait "$upid" || true
    if [ "$sys" = postgres ]; then
        "$PY" - "$W/$tag.upd.out" "$((DURATION + 1))" >"$W/$tag.upd.json" <<'PY'
import json, re, sys
t = open(sys.argv[1]).read(); d = float(sys.argv[2])
m = re.search(r"number of transactions actually processed: (\d+)", t)
n = int(m.group(1)) if m else 0
m2 = re.search(r"latency average = ([0-9.]+) ms", t)
print(json.dumps({"acked": n, "write_rate": round(n / d, 1), "put_avg_ms": float(m2.group(1)) if m2 else None, "error_count": 0 if m else 1}))
PY
    fi
    "$PY" -c 'import json,sys; u = json.load(open(sys.argv[1])); print(json.dumps({"upd_rate": u.get("write_rate"), "upd_errors": u.get("error_count"), "upd_p99_ms": u.get("put_p99_ms"), "upd_late": u.get("late_sends")}))' \
        "$W/$tag.upd.json" >"$W/$tag.upd2.json" 2>/dev/null || echo '{"upd_rate": null}' >"$W/$tag.upd2.json"
    rec "$W/$tag.json" "$W/$tag.upd2.json" kind=query "system=$sys" "shape=$shape" "conc=$conc" "rep=$rep" "cpu_s=$(secs "$c0" "$c1")"
    log "  $sys $shape c=$conc: $(head -c 300 "$W/$tag.json") | updates $(cat "$W/$tag.upd2.json")"
    if grep -q '"non2xx": [1-9]\|"sock_errors": [1-9]' "$W/$tag.json"; then
        note "$sys $shape c=$conc: errors $(grep -o '"non2xx": [0-9]*\|"sock_errors": [0-9]*' "$W/$tag.json" | tr '\n' ' ')"
    fi
}
# warm-up: every system answers every shape for WARMUP seconds first (the JVM's JIT needs it; not recorded)
log "warm-up: ${WARMUP}s of each shape on each system (not recorded)"
for sys in $SYSTEMS; do
    for shape in $SHAPES; do
        case $sys in
            corvid) BENCH_PATH=/databases/bench/queries BENCH_BODIES_FILE=$W/corvid_$shape.txt \
                        wrk -t 2 -c 4 -d "${WARMUP}s" -s "$BENCH_LIB/wrk_bodies.lua" "$CORVID_URL" >/dev/null 2>&1 || true ;;
            opensearch) BENCH_PATH="/versions/_search?request_cache=false" BENCH_BODIES_FILE=$W/os_$shape.txt \
                        wrk -t 2 -c 4 -d "${WARMUP}s" -s "$BENCH_LIB/wrk_bodies.lua" "$OS_URL" >/dev/null 2>&1 || true ;;
            postgres) pg_run_pgbench "$W/warm_$shape" -M prepared -c 4 -j 2 -T "$WARMUP" -f "$W/pg_$shape.sql" || true ;;
        esac
    done
done
log "searches under $UPDATE_RATE updates/s: shapes $SHAPES, clients $CONCS, ${DURATION}s each"
i=0
for rep in $(seq 1 "$REPEATS"); do
    for shape in $SHAPES; do
        for conc in $CONCS; do
            order=$SYSTEMS; [ $((i % 2)) = 1 ] && order=$(echo "$SYSTEMS" | tr ' ' '\n' | tac | tr '\n' ' ')
            for sys in $order; do run_q "$sys" "$shape" "$conc" "$rep"; done
            i=$((i + 1))
        done
    done
done
check_totals after-query-updates

# ---- 4. write-to-visible lag ------------------------------------------------------------------------------
for sys in corvid opensearch; do
    case " $SYSTEMS " in *" $sys "*) ;; *) continue ;; esac
    log "write-to-visible lag on $sys: $UPDATE_RATE updates/s for ${LAG_DURATION}s, every ${LAG_TRACK_EVERY}th polled by a search on its unique Title token"
    if [ $sys = corvid ]; then url=$CORVID_URL; st=(--state "$STATE"); else url=$OS_URL; st=(); fi
    # The other systems' background work (merges after their own query steps' updates) must not share the
    # two cores with the system being measured; each measured system keeps its own background work.
    others=""
    for other in $SYSTEMS; do
        [ "$other" = "$sys" ] && continue
        settle "$other" "before the $sys lag step"
        others="$others $other"
    done
    declare -A oc0=()
    for other in $others; do oc0[$other]=$(cpu_of "$other"); done
    c0=$(cpu_of $sys)
    out=$("$PY" "$S4" updates --target $sys --url "$url" --count "$N" --seed "$SEED" --rate "$UPDATE_RATE" \
        --duration "$LAG_DURATION" "${st[@]}" --track-every "$LAG_TRACK_EVERY" --run-seed 7 --salt "${sys:0:1}")
    c1=$(cpu_of $sys)
    for other in $others; do note "CPU of $other during the $sys lag step: $(secs "${oc0[$other]}" "$(cpu_of "$other")") s"; done
    log "lag $sys: $out"
    echo "$out" >"$W/lag_$sys.json"; rec "$W/lag_$sys.json" kind=lag "system=$sys" "cpu_s=$(secs "$c0" "$c1")"
    echo "$out" | "$PY" -c 'import json,sys; j = json.load(sys.stdin)
if j.get("never_visible"): print("lag %s: %d tracked writes never became visible within 10 s after the writer stopped" % (j["target"], j["never_visible"]))
for e in j.get("errors", [])[:3]: print("lag %s: %s" % (j["target"], e))' | while read -r l; do [ -n "$l" ] && note "$l"; done
done
check_totals after-lag

# ---- wrap up --------------------------------------------------------------------------------------------
DISK_AFTER=$(disk_probe "$BENCH_TMPDIR" 2000)
IDX=$(curl -s "$CORVID_URL/databases/bench/indexes/stats" | "$PY" -c '
import json, sys
try: print("; ".join("%s: %s entries, %.0f MiB" % (i["Name"], i.get("EntriesCount"), (i.get("SizeOnDisk") or 0) / 1048576) for i in json.load(sys.stdin)["Results"]))
except Exception as e: print("n/a (%s)" % e)')
OS_SIZE=$(curl -s "$OS_URL/_cat/indices/versions?h=store.size" | tr -d ' \n')
PG_SIZES=$(pg_psql -At -c "SELECT 'table ' || pg_size_pretty(pg_table_size('versions')) || ', GIN title ' || pg_size_pretty(pg_relation_size('v_title')) || ', GIN description ' || pg_size_pretty(pg_relation_size('v_desc')) || ', GIN tags ' || pg_size_pretty(pg_relation_size('v_tags'))")
USAGE="Corvid data dir $(du -sh "$CVD/data" | cut -f1) ($IDX); OpenSearch index $OS_SIZE; PostgreSQL $PG_SIZES"
PLANS=$(for s in title desc total; do printf '%s: %s\n' "$s" "$(grep -o 'Bitmap Index Scan on [a-z_]*\|Index Scan using [a-z_]*\|Seq Scan on [a-z_]*' "$W/pg_$s.plan" | head -2 | paste -sd '/' -)"; done)
RSS_C=$(rss_of "$CORVID_PID"); RSS_O=$(rss_of "$OS_PID")

"$PY" - "$W/meta.json" "$NOTES" <<PYEOF
import json, sys
notes = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
json.dump({
  "date": "$STAMP", "commit": "$COMMIT", "binary": """$BINARY_DESC""", "machine": """$(machine_desc)""",
  "regime": "$REGIME", "disk_wps_before": $DISK_BEFORE, "disk_wps_after": $DISK_AFTER,
  "n": $N, "duration": $DURATION, "repeats": $REPEATS, "lag_duration": $LAG_DURATION, "update_rate": $UPDATE_RATE,
  "quick": $QUICK, "opensearch": """$OS_VERSION_DESC""", "os_load_concurrency": $OS_LOAD_CONCURRENCY,
  "pg_settings": "fsync=on, synchronous_commit=on, shared_buffers=${PG_SHARED_BUFFERS:-2GB}, maintenance_work_mem=1GB for CREATE INDEX",
  "rss_corvid": $RSS_C, "rss_opensearch": $RSS_O, "disk_usage": """$USAGE""", "pg_plans": """$PLANS""", "notes": notes,
}, open(sys.argv[1], "w"))
PYEOF

REPORT=$("$PY" "$BENCH_DIR/s4/report.py" "$RECORDS" "$W/meta.json")
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/s4-$DATE.md"
cp "$RECORDS" "$RESULTS_DIR/raw/s4-${STAMP//:/}.jsonl"
cp "$W/meta.json" "$RESULTS_DIR/raw/s4-${STAMP//:/}.meta.json"
if [ "${KEEP_LOGS:-0}" = 1 ]; then
    mkdir -p "$RESULTS_DIR/tmp"; cp "$CORVID_LOG" "$RESULTS_DIR/tmp/s4-${STAMP//:/}.corvid.log"
fi
log "appended to $RESULTS_DIR/s4-$DATE.md (raw records in $RESULTS_DIR/raw/)"
