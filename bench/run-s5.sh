#!/usr/bin/env bash
# S5: phone catalogue. Corvid static index (Search on Name, exact Brand/OS, numeric Price, spatial point):
# facet queries (with and without a full-text filter) and radius queries sorted by distance, p50/p99 and q/s at
# 1 and 8 clients; the cold-query penalty after a restart.
# Peers in the same run: OpenSearch (terms/range aggregations, geo_distance sorted by distance) and PostgreSQL 15
# (GROUP BY GROUPING SETS with a tsvector filter; earthdistance/cube GiST for the radius). See bench/README.md.
# Usage: bench/run-s5.sh               (500,000 products)
#        QUICK=1 bench/run-s5.sh       (50,000 products, short steps)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"
source "$BENCH_DIR/lib/opensearch.sh"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    N=${N:-50000}; DURATION=${DURATION:-5}; REPEATS=${REPEATS:-1}; WARMUP=${WARMUP:-8}
else
    N=${N:-500000}; DURATION=${DURATION:-10}; REPEATS=${REPEATS:-2}; WARMUP=${WARMUP:-15}
fi
SHAPES=${SHAPES:-"facet facet_q radius"}
CONCS=${CONCS:-"1 8"}
SYSTEMS=${SYSTEMS:-"corvid opensearch postgres"}
SEED=${SEED:-42}
WRK_THREADS=${WRK_THREADS:-2}
OS_LOAD_CONCURRENCY=${OS_LOAD_CONCURRENCY:-2}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR
S5="$BENCH_DIR/s5/s5.py"

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
log "S5 start: commit $COMMIT, N=$N, ${DURATION}s steps x $REPEATS"
DISK_BEFORE=$(disk_probe "$BENCH_TMPDIR" 2000); REGIME=$(disk_regime "$DISK_BEFORE")
log "disk: $DISK_BEFORE durable 4 KiB writes/s -> regime '$REGIME'"

gen=$("$PY" "$S5" prepare --count "$N" --seed "$SEED" --out-dir "$W")
log "generated: $gen"
echo "$gen" >"$W/gen.json"; rec "$W/gen.json" kind=data

make_tmpdir PGD "$BENCH_TMPDIR"; pg_start "$PGD"
chmod a+rx "$W"; chmod a+r "$W"/*.tsv
make_tmpdir CVD "$BENCH_TMPDIR"; corvid_start "$CVD"; corvid_create_db bench
make_tmpdir OSD "$BENCH_TMPDIR"; os_start "$OSD"
PSQL_CMD="psql -X -q -v ON_ERROR_STOP=1 -h $PG_HOST -p $PG_PORT -U $PG_USER -d postgres"

# ---- 1. load and index ---------------------------------------------------------------------------------
log "Corvid: bulk insert of $N products, then the cold build of '$( "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import s5; print(s5.INDEX)' "$BENCH_DIR/s5")'"
c0=$(cpu_of corvid); t0=$(now)
out=$("$PY" "$S5" corvid-load --url "$CORVID_URL" --count "$N" --file "$W/phones.bulk")
t1=$(now); c1=$(cpu_of corvid)
echo "$out" >"$W/load_corvid.json"
rec "$W/load_corvid.json" kind=load system=corvid "docs=$N" "seconds=$(secs "$t0" "$t1")" "cpu_s=$(secs "$c0" "$c1")"
rm -f "$W/phones.bulk"
c0=$(cpu_of corvid)
out=$("$PY" "$S5" corvid-index --url "$CORVID_URL" --count "$N" --seed "$SEED")
c1=$(cpu_of corvid)
log "Corvid index: $(echo "$out" | head -c 700)"
echo "$out" >"$W/index_corvid.json"
rec "$W/index_corvid.json" kind=index system=corvid "cpu_s=$(secs "$c0" "$c1")"
echo "$out" | "$PY" -c 'import json,sys; j = json.load(sys.stdin)
if j.get("error") or j.get("build_s") is None: print("Corvid index did not finish: %s" % (j.get("error") or j.get("last_stats")))' \
    | while read -r l; do [ -n "$l" ] && note "$l"; done

log "OpenSearch: _bulk (refresh_interval -1), refresh"
c0=$(cpu_of opensearch)
out=$("$PY" "$S5" os-load --url "$OS_URL" --count "$N" --dir "$W" --concurrency "$OS_LOAD_CONCURRENCY")
c1=$(cpu_of opensearch)
log "OpenSearch load: $out"
echo "$out" >"$W/load_os.json"; rec "$W/load_os.json" kind=index system=opensearch "cpu_s=$(secs "$c0" "$c1")"
rm -f "$W/phones.os.ndjson"

log "PostgreSQL: COPY, GIN tsvector on Name, GiST on ll_to_earth(Location)"
pg_psql -c "CREATE EXTENSION IF NOT EXISTS cube" -c "CREATE EXTENSION IF NOT EXISTS earthdistance" \
        -c "CREATE TABLE phones(id text PRIMARY KEY, body jsonb NOT NULL)" \
        -c "CREATE TABLE q_word(i int PRIMARY KEY, w text)" -c "CREATE TABLE q_geo(i int PRIMARY KEY, lat float8, lng float8, r float8)"
t0=$(now)
pg_psql -c "\\copy phones FROM '$W/phones.tsv'"
t1=$(now)
pg_psql -c "\\copy q_word FROM '$W/q_word.tsv'" -c "\\copy q_geo FROM '$W/q_geo.tsv'"
rec kind=load system=postgres "docs=$N" "seconds=$(secs "$t0" "$t1")"
rm -f "$W/phones.tsv"
LL="ll_to_earth((body->'Location'->>'Lat')::float8, (body->'Location'->>'Lng')::float8)"
t0=$(now)
pg_psql -c "SET maintenance_work_mem = '1GB'" -c "CREATE INDEX p_name ON phones USING gin (to_tsvector('simple', body->>'Name'))"
t1=$(now)
pg_psql -c "SET maintenance_work_mem = '1GB'" -c "CREATE INDEX p_geo ON phones USING gist ($LL)"
t2=$(now)
pg_psql -c "VACUUM ANALYZE phones" -c "ANALYZE q_word" -c "ANALYZE q_geo"
rec kind=index system=postgres "gin_s=$(secs "$t0" "$t1")" "gist_s=$(secs "$t1" "$t2")"

# ---- 2. cross-check -----------------------------------------------------------------------------------------
out=$("$PY" "$S5" crosscheck --url "$CORVID_URL" --os-url "$OS_URL" --psql-cmd "$PSQL_CMD" --count "$N" --seed "$SEED")
echo "$out" >"$W/crosscheck.json"; rec "$W/crosscheck.json" kind=crosscheck
echo "$out" | "$PY" -c 'import json,sys; j = json.load(sys.stdin)
for d in j["disagreements"]: print("cross-check %s %s: %s" % (d["shape"], json.dumps(d["q"]), json.dumps({k: v for k, v in d.items() if k not in ("shape", "q", "agree")})[:900]))' \
    | while read -r l; do [ -n "$l" ] && note "$l"; done
log "cross-check: $(echo "$out" | head -c 300)"

# ---- 3. query latency -------------------------------------------------------------------------------------------
FILTER="to_tsvector('simple', body->>'Name') @@ to_tsquery('simple', (SELECT w FROM q_word WHERE i = :k))"
facet_sql() {  # facet_sql WHERE-CLAUSE
    echo "SELECT body->>'Brand' AS brand, body->>'OS' AS os, CASE WHEN (body->>'Price')::float8 < 200 THEN 0 WHEN (body->>'Price')::float8 <= 500 THEN 1 ELSE 2 END AS price, count(*) FROM phones $1 GROUP BY GROUPING SETS ((brand), (os), (price));"
}
{ echo "\\set k random(1, 2000)"; facet_sql ""; } >"$W/pg_facet.sql"
{ echo "\\set k random(1, 2000)"; facet_sql "WHERE $FILTER"; } >"$W/pg_facet_q.sql"
cat >"$W/pg_radius.sql" <<SQL
\\set k random(1, 2000)
WITH c AS (SELECT ll_to_earth(lat, lng) AS e, r FROM q_geo WHERE i = :k) SELECT body FROM phones, c WHERE earth_box(c.e, c.r) @> $LL AND earth_distance(c.e, $LL) < c.r ORDER BY earth_distance(c.e, $LL) LIMIT 20;
WITH c AS (SELECT ll_to_earth(lat, lng) AS e, r FROM q_geo WHERE i = :k) SELECT count(*) FROM phones, c WHERE earth_box(c.e, c.r) @> $LL AND earth_distance(c.e, $LL) < c.r;
SQL
for s in facet facet_q radius; do
    pg_psql -c "EXPLAIN $(grep -m1 -v '^\\' "$W/pg_$s.sql" | sed 's/:k/7/g')" >"$W/pg_$s.plan" 2>&1 || true
done

log "warm-up: ${WARMUP}s of each shape on each system (not recorded)"
for sys in $SYSTEMS; do
    for shape in $SHAPES; do
        case $sys in
            corvid) BENCH_PATH=/databases/bench/queries BENCH_BODIES_FILE=$W/corvid_$shape.txt \
                        wrk -t 2 -c 4 -d "${WARMUP}s" -s "$BENCH_LIB/wrk_bodies.lua" "$CORVID_URL" >/dev/null 2>&1 || true ;;
            opensearch) BENCH_PATH="/phones/_search?request_cache=false" BENCH_BODIES_FILE=$W/os_$shape.txt \
                        wrk -t 2 -c 4 -d "${WARMUP}s" -s "$BENCH_LIB/wrk_bodies.lua" "$OS_URL" >/dev/null 2>&1 || true ;;
            postgres) pg_run_pgbench "$W/warm_$shape" -M prepared -c 4 -j 2 -T "$WARMUP" -f "$W/pg_$shape.sql" || true ;;
        esac
    done
done

run_q() {  # run_q SYSTEM SHAPE CONC REP
    local sys=$1 shape=$2 conc=$3 rep=$4 tag threads c0 c1
    tag="q_${shape}_c${conc}_r${rep}_${sys}"
    threads=$WRK_THREADS; [ "$conc" -lt "$threads" ] && threads=$conc
    c0=$(cpu_of "$sys")
    case $sys in
        corvid|opensearch)
            local url path bodies
            if [ "$sys" = corvid ]; then url=$CORVID_URL; path=/databases/bench/queries; bodies=$W/corvid_$shape.txt
            else url=$OS_URL; path="/phones/_search?request_cache=false"; bodies=$W/os_$shape.txt; fi
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
    rec "$W/$tag.json" kind=query "system=$sys" "shape=$shape" "conc=$conc" "rep=$rep" "cpu_s=$(secs "$c0" "$c1")"
    log "  $sys $shape c=$conc: $(head -c 300 "$W/$tag.json")"
    if grep -q '"non2xx": [1-9]\|"sock_errors": [1-9]' "$W/$tag.json"; then
        note "$sys $shape c=$conc: errors $(grep -o '"non2xx": [0-9]*\|"sock_errors": [0-9]*' "$W/$tag.json" | tr '\n' ' ')"
    fi
}
log "queries: shapes $SHAPES, clients $CONCS, ${DURATION}s each, $REPEATS repetition(s)"
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
RSS_C=$(rss_of "$CORVID_PID"); RSS_O=$(rss_of "$OS_PID")
IDX=$(curl -s "$CORVID_URL/databases/bench/indexes/stats" | "$PY" -c '
import json, sys
try: print("; ".join("%s: %s entries, %.0f MiB" % (i["Name"], i.get("EntriesCount"), (i.get("SizeOnDisk") or 0) / 1048576) for i in json.load(sys.stdin)["Results"]))
except Exception as e: print("n/a (%s)" % e)')

# ---- 4. cold-query penalty: restart Corvid (SIGTERM, start on the same data directory) -----------------------------
log "cold queries: restarting Corvid"
corvid_stop
t0=$(now)
corvid_start "$CVD"
t1=$(now)
out=$("$PY" "$S5" cold --url "$CORVID_URL" --count "$N" --seed "$SEED")
log "cold: $out"
echo "$out" >"$W/cold.json"; rec "$W/cold.json" kind=cold system=corvid "restart_s=$(secs "$t0" "$t1")"

DISK_AFTER=$(disk_probe "$BENCH_TMPDIR" 2000)
OS_SIZE=$(curl -s "$OS_URL/_cat/indices/phones?h=store.size" | tr -d ' \n')
PG_SIZES=$(pg_psql -At -c "SELECT 'table ' || pg_size_pretty(pg_table_size('phones')) || ', GIN name ' || pg_size_pretty(pg_relation_size('p_name')) || ', GiST location ' || pg_size_pretty(pg_relation_size('p_geo'))")
USAGE="Corvid data dir $(du -sh "$CVD/data" | cut -f1) ($IDX); OpenSearch index $OS_SIZE; PostgreSQL $PG_SIZES"
PLANS=$(for s in facet facet_q radius; do printf '%s: %s\n' "$s" "$(grep -o 'Bitmap Index Scan on [a-z_]*\|Index Scan using [a-z_]*\|Seq Scan on [a-z_]*\|Parallel Seq Scan on [a-z_]*' "$W/pg_$s.plan" | head -3 | paste -sd '/' -)"; done)

"$PY" - "$W/meta.json" "$NOTES" <<PYEOF
import json, sys
notes = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
json.dump({
  "date": "$STAMP", "commit": "$COMMIT", "binary": """$BINARY_DESC""", "machine": """$(machine_desc)""",
  "regime": "$REGIME", "disk_wps_before": $DISK_BEFORE, "disk_wps_after": $DISK_AFTER,
  "n": $N, "duration": $DURATION, "repeats": $REPEATS, "warmup": $WARMUP, "quick": $QUICK,
  "opensearch": """$OS_VERSION_DESC""", "pg_settings": "fsync=on, shared_buffers=${PG_SHARED_BUFFERS:-2GB}, default parallel workers",
  "rss_corvid": $RSS_C, "rss_opensearch": $RSS_O, "disk_usage": """$USAGE""", "pg_plans": """$PLANS""", "notes": notes,
}, open(sys.argv[1], "w"))
PYEOF

REPORT=$("$PY" "$BENCH_DIR/s5/report.py" "$RECORDS" "$W/meta.json")
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/s5-$DATE.md"
cp "$RECORDS" "$RESULTS_DIR/raw/s5-${STAMP//:/}.jsonl"
cp "$W/meta.json" "$RESULTS_DIR/raw/s5-${STAMP//:/}.meta.json"
if [ "${KEEP_LOGS:-0}" = 1 ]; then
    mkdir -p "$RESULTS_DIR/tmp"; cp "$CORVID_LOG" "$RESULTS_DIR/tmp/s5-${STAMP//:/}.corvid.log"
fi
log "appended to $RESULTS_DIR/s5-$DATE.md (raw records in $RESULTS_DIR/raw/)"
