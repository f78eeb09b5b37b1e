#!/usr/bin/env bash
# Query scenario: bulk load, cold automatic-index build, query latency (equality, range, sorted top-30 with
# total, unfiltered sort, deep paging) at 1 and 8 clients, and write-to-visible lag; Corvid vs PostgreSQL 15.
# See bench/README.md. Usage: bench/run-queries.sh             (1,000,000 documents)
#                             QUICK=1 bench/run-queries.sh     (100,000 documents, short steps)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"

# ---- configuration (environment) --------------------------------------------
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    N=${N:-100000}; DURATION=${DURATION:-4}; REPEATS=${REPEATS:-1}; LAG_DURATION=${LAG_DURATION:-10}
else
    N=${N:-1000000}; DURATION=${DURATION:-10}; REPEATS=${REPEATS:-2}; LAG_DURATION=${LAG_DURATION:-30}
fi
SHAPES=${SHAPES:-"eq range sorted name page"}
CONCS=${CONCS:-"1 8"}
STEPS=${STEPS:-"index query lag"}      # load always runs
LOAD_CONCURRENCY=${LOAD_CONCURRENCY:-4}
LOAD_BATCH=${LOAD_BATCH:-1000}
LAG_RATE=${LAG_RATE:-1000}
LAG_TRACK_EVERY=${LAG_TRACK_EVERY:-10}
LAG_POLL_MS=${LAG_POLL_MS:-2}
CHECK_PER_SHAPE=${CHECK_PER_SHAPE:-5}
SEED=${SEED:-42}
WRK_THREADS=${WRK_THREADS:-2}
PGBENCH_THREADS=${PGBENCH_THREADS:-2}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR

has_step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

install_cleanup_trap
ensure_python
ensure_curl
ensure_wrk
ensure_postgres

make_tmpdir BENCH_WORK
export BENCH_WORK
W=$BENCH_WORK
RECORDS=$W/records.jsonl
NOTES=$W/notes.txt
: >"$RECORDS"; : >"$NOTES"
note() { log "NOTE: $*"; printf '%s\n' "$*" >>"$NOTES"; }
rec() { "$PY" "$BENCH_LIB/measure.py" merge "$@" >>"$RECORDS"; }
USERS="$BENCH_LIB/users.py"

DATE=$(date -u +%Y-%m-%d)
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git_commit)
BINARY_DESC="n/a"
[ -x "$BENCH_CORVID_BIN" ] && BINARY_DESC="$(basename "$BENCH_CORVID_BIN") built $(date -u -r "$BENCH_CORVID_BIN" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$BENCH_CORVID_BIN" | cut -c1-12)"
log "queries start: commit $COMMIT, N=$N, ${DURATION}s steps x $REPEATS, lag ${LAG_DURATION}s at ${LAG_RATE}/s"

DISK_BEFORE=$(disk_probe "$BENCH_TMPDIR" 2000)
REGIME=$(disk_regime "$DISK_BEFORE")
log "disk: $DISK_BEFORE durable 4 KiB writes/s in $BENCH_TMPDIR -> regime '$REGIME'"

# ---- the data (generated before anything is timed) ------------------------------
"$PY" "$USERS" values --out-dir "$W" >/dev/null
gen=$("$PY" "$USERS" prepare --count "$N" --seed "$SEED" --batch "$LOAD_BATCH" --out-dir "$W")
log "generated $N Users documents: $gen"
AVG_DOC=$(echo "$gen" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["avg_doc_bytes"])')

# ---- start the systems ---------------------------------------------------------
make_tmpdir PGD "$BENCH_TMPDIR"
pg_start "$PGD"
chmod a+rx "$W"; chmod a+r "$W"/*.txt "$W/users.tsv"
make_tmpdir CVD "$BENCH_TMPDIR"
corvid_start "$CVD"
corvid_create_db bench
PSQL_CMD="psql -X -q -v ON_ERROR_STOP=1 -h $PG_HOST -p $PG_PORT -U $PG_USER -d postgres"

cpu_of() {
    case $1 in
        corvid) "$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" ;;
        postgres) "$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree ;;
    esac | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/'
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# ---- 1. load ----------------------------------------------------------------------
log "loading $N documents into Corvid (bulk_docs, $LOAD_BATCH per batch, $LOAD_CONCURRENCY uploaders)"
c0=$(cpu_of corvid)
out=$("$PY" "$USERS" corvid-load --url "$CORVID_URL" --db bench --file "$W/batches.ndjson" --count "$N" \
    --concurrency "$LOAD_CONCURRENCY") || { note "Corvid bulk load failed: $out"; die "Corvid load failed: $out"; }
c1=$(cpu_of corvid)
log "Corvid load: $out"
echo "$out" >"$W/load_corvid.json"
rec "$W/load_corvid.json" kind=load system=corvid "cpu_s=$(secs "$c0" "$c1")"
rm -f "$W/batches.ndjson"
r=$(corvid_probe GET /databases/bench/stats)
cnt=$(echo "${r#HTTP 200 }" | grep -o '"CountOfDocuments":[0-9]*' | cut -d: -f2 || true)
[ "$cnt" = "$N" ] || note "after the load GET /databases/bench/stats says CountOfDocuments=${cnt:-?} (expected $N): $r"

log "loading $N rows into PostgreSQL (COPY into users(id text primary key, body jsonb))"
pg_psql -c "CREATE TABLE users(id text PRIMARY KEY, body jsonb NOT NULL)" \
        -c "CREATE TABLE cities(i int PRIMARY KEY, name text NOT NULL)"
c0=$(cpu_of postgres); t0=$(now)
pg_psql -c "\\copy users FROM '$W/users.tsv'"
t1=$(now); c1=$(cpu_of postgres)
pg_psql -c "TRUNCATE cities" -c "CREATE TEMP TABLE c0(name text)" \
        -c "\\copy c0 FROM '$W/cities.txt'" \
        -c "INSERT INTO cities SELECT row_number() OVER (), name FROM c0" >/dev/null
t2=$(now); pg_psql -c "VACUUM ANALYZE users" -c "ANALYZE cities"; t3=$(now)
s=$(secs "$t0" "$t1")
rec kind=load system=postgres "docs=$N" "seconds=$s" "docs_per_s=$(awk -v n="$N" -v s="$s" 'BEGIN{printf "%.1f", n/s}')" \
    "cpu_s=$(secs "$c0" "$c1")" "vacuum_analyze_s=$(secs "$t2" "$t3")"
log "PostgreSQL COPY: $s s; VACUUM ANALYZE $(secs "$t2" "$t3") s"
rm -f "$W/users.tsv"

# ---- 2. cold indexing -------------------------------------------------------------
if has_step index || has_step query; then
    log "cold index: first 'from Users where Age = 30' on Corvid, polling /indexes/stats"
    c0=$(cpu_of corvid)
    out=$("$PY" "$USERS" cold-index --url "$CORVID_URL" --db bench --count "$N")
    c1=$(cpu_of corvid)
    log "Corvid cold index: $out"
    echo "$out" >"$W/cold.json"
    rec "$W/cold.json" kind=index system=corvid "cpu_s=$(secs "$c0" "$c1")"
    echo "$out" | "$PY" -c '
import json, sys
j = json.load(sys.stdin); n = int(sys.argv[1]); fq = j.get("first_query") or {}
bad = []
if j.get("build_s") is None: bad.append("the index never reached EntriesCount=%d and IsStale=false (last: %s)" % (n, j.get("last_stats")))
if j.get("first_query_status") != 200: bad.append("first query -> %s %s" % (j.get("first_query_status"), fq))
if bad: print("; ".join(bad))' "$N" | while read -r l; do [ -n "$l" ] && note "cold index, request POST /databases/bench/queries {\"Query\":\"from Users where Age = 30\",\"WaitForNonStaleResults\":false}: $l"; done
    pg_age_total=$(pg_psql -At -c "SELECT count(*) FROM users WHERE (body->>'Age')::int = 30")
    read -r c_age_total c_age_stale < <(echo "$out" | "$PY" -c 'import json,sys; q = json.load(sys.stdin).get("first_query") or {}; print(q.get("TotalResults"), q.get("IsStale"))')
    if [ "$c_age_total" != "$pg_age_total" ]; then
        if [ "$c_age_stale" = True ]; then   # answered before the build finished (15 s wait), as RavenDB does
            note "the first query 'from Users where Age = 30' answered stale (IsStale=true) with TotalResults=$c_age_total of $pg_age_total: the index build outlasted the 15 s wait of an index-creating query"
        else
            note "BUG? first query 'from Users where Age = 30' answered IsStale=false with TotalResults=$c_age_total, PostgreSQL count $pg_age_total"
        fi
    fi

    log "PostgreSQL CREATE INDEX (age, then city+score, then lower(name))"
    pg_index() {  # pg_index NAME SQL
        local c0 c1 t0 t1
        c0=$(cpu_of postgres); t0=$(now)
        pg_psql -c "$2"
        t1=$(now); c1=$(cpu_of postgres)
        rec kind=index system=postgres "index=$1" "seconds=$(secs "$t0" "$t1")" "cpu_s=$(secs "$c0" "$c1")" \
            "docs_per_s=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", n/(b-a)}')"
        log "PostgreSQL index $1: $(secs "$t0" "$t1") s"
    }
    pg_index age "CREATE INDEX users_age ON users (((body->>'Age')::int))"
    pg_index city_score "CREATE INDEX users_city_score ON users ((body->>'City'), ((body->>'Score')::float8) DESC)"
    pg_index name "CREATE INDEX users_name ON users (lower(body->>'Name'))"
    pg_psql -c "VACUUM ANALYZE users"
fi

# ---- 3. query latency --------------------------------------------------------------
if has_step query; then
    log "warming Corvid: the first query of every shape (creates/merges the automatic index)"
    out=$("$PY" "$USERS" warm --url "$CORVID_URL" --db bench --count "$N" --shapes "$(echo $SHAPES | tr ' ' ,)")
    log "warm: $out"
    echo "$out" >"$W/warm.json"
    rec "$W/warm.json" kind=warm system=corvid
    echo "$out" | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
for f in j["first"]:
    if f.get("status") != 200: print("first %s query -> HTTP %s: request %s response %s" % (f["shape"], f.get("status"), json.dumps(f.get("request")), f.get("response")))
if j.get("wait_s") is None: print("indexes not caught up after the warm-up: %s" % j.get("indexes"))' | while read -r l; do [ -n "$l" ] && note "$l"; done

    log "cross-checking Corvid against PostgreSQL ($CHECK_PER_SHAPE queries per shape)"
    out=$("$PY" "$USERS" check --url "$CORVID_URL" --db bench --count "$N" --psql-cmd "$PSQL_CMD" \
        --shapes "$(echo $SHAPES | tr ' ' ,)" --per-shape "$CHECK_PER_SHAPE")
    echo "$out" >"$W/check.json"
    rec "$W/check.json" kind=check
    echo "$out" | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
for m in j["mismatches"][:8]: print("check %s: POST /databases/bench/queries %s -> %s %s" % (m["shape"], json.dumps(m["request"]), "; ".join(m.get("problems", [])) or "HTTP %s" % m.get("status"), m.get("response")))' \
        | while read -r l; do [ -n "$l" ] && note "$l"; done
    log "check: $(echo "$out" | head -c 600)"

    # pgbench scripts: the same queries, documents returned as jsonb, total counts where Corvid returns one
    CITY="(SELECT name FROM cities WHERE i = :c)"
    cat >"$W/pg_eq.sql" <<SQL
\set c random(1, 200)
SELECT body FROM users WHERE body->>'City' = $CITY;
SQL
    cat >"$W/pg_range.sql" <<SQL
\set lo random(0, 95)
\set hi :lo + random(0, 4)
SELECT body FROM users WHERE (body->>'Age')::int BETWEEN :lo AND :hi LIMIT 30;
SELECT count(*) FROM users WHERE (body->>'Age')::int BETWEEN :lo AND :hi;
SQL
    cat >"$W/pg_sorted.sql" <<SQL
\set c random(1, 200)
SELECT body FROM users WHERE body->>'City' = $CITY ORDER BY (body->>'Score')::float8 DESC LIMIT 30;
SELECT count(*) FROM users WHERE body->>'City' = $CITY;
SQL
    cat >"$W/pg_name.sql" <<SQL
SELECT body FROM users ORDER BY lower(body->>'Name') LIMIT 30;
SQL
    cat >"$W/pg_page.sql" <<SQL
\set o random(0, $((N / 2)))
SELECT body FROM users ORDER BY (body->>'Age')::int LIMIT 30 OFFSET :o;
SQL
    for s in eq range sorted name page; do
        pg_psql -c "EXPLAIN $(sed -n 's/^SELECT/SELECT/p' "$W/pg_$s.sql" | head -1 | sed "s/:c/7/g; s/:lo/30/g; s/:hi/32/g; s/:o/1000/g")" >"$W/pg_$s.plan" 2>&1 || true
    done

    run_q() {  # run_q SYSTEM SHAPE CONC REP
        local sys=$1 shape=$2 conc=$3 rep=$4 tag threads c0 c1 extra='{}'
        tag="q_${shape}_c${conc}_r${rep}_${sys}"
        c0=$(cpu_of "$sys")
        "$PY" "$BENCH_LIB/measure.py" cpustat >"$W/$tag.st0"
        if [ "$sys" = corvid ]; then
            threads=$WRK_THREADS; [ "$conc" -lt "$threads" ] && threads=$conc
            BENCH_QUERY=$shape BENCH_VALUES_FILE="$W/cities.txt" BENCH_COUNT=$N BENCH_SEED=$rep \
                wrk -t "$threads" -c "$conc" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_queries.lua" \
                "$CORVID_URL" >"$W/$tag.out" 2>&1 || true
            "$PY" "$BENCH_LIB/measure.py" wrk "$W/$tag.out" >"$W/$tag.json"
            extra=$(sed -n 's/^WRK_JSON //p' "$W/$tag.out" | "$PY" -c 'import json,sys
try:
    w = json.load(sys.stdin); print(json.dumps({"resp_bytes": round(w["bytes"] / max(w["requests"], 1))}))
except Exception: print("{}")')
        else
            threads=$PGBENCH_THREADS; [ "$conc" -lt "$threads" ] && threads=$conc
            pg_run_pgbench "$W/$tag" -M prepared -c "$conc" -j "$threads" -T "$DURATION" -f "$W/pg_$shape.sql" \
                -l --log-prefix="$W/$tag.log" || true
            "$PY" "$BENCH_LIB/measure.py" pgbench "$W/$tag.out" "$W/$tag.log" >"$W/$tag.json"
            rm -f "$W/$tag.log".*
        fi
        c1=$(cpu_of "$sys")
        "$PY" "$BENCH_LIB/measure.py" cpustat >"$W/$tag.st1"
        "$PY" "$BENCH_LIB/measure.py" steal "$W/$tag.st0" "$W/$tag.st1" >"$W/$tag.steal.json"
        echo "$extra" >"$W/$tag.extra.json"
        rec "$W/$tag.json" "$W/$tag.steal.json" "$W/$tag.extra.json" kind=query "system=$sys" "shape=$shape" \
            "conc=$conc" "rep=$rep" "cpu_s=$(secs "$c0" "$c1")"
        tail -1 "$RECORDS" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
f = lambda v: "n/a" if v is None else ("%.2f" % v)
err = (r.get("non2xx") or 0) + (r.get("sock_errors") or 0)
print("[%s] %-8s %-6s c=%s rep %s: %s q/s p50 %s p99 %s ms cpu %ss%s" % (__import__("time").strftime("%H:%M:%S"),
    r["system"], r["shape"], r["conc"], r["rep"], "n/a" if r.get("rps") is None else "%.0f" % r["rps"],
    f(r.get("p50_ms")), f(r.get("p99_ms")), r.get("cpu_s"), (" ERRORS=%d" % err) if err else ""), file=sys.stderr)'
        if [ "$sys" = corvid ] && grep -q '"non2xx": [1-9]\|"sock_errors": [1-9]' "$W/$tag.json"; then
            "$PY" "$USERS" check --url "$CORVID_URL" --db bench --count "$N" --psql-cmd "$PSQL_CMD" \
                --shapes "$shape" --per-shape 1 --seed 99 >"$W/$tag.diag" 2>&1 || true
            note "corvid $shape c=$conc: $(grep -o '"non2xx": [0-9]*\|"sock_errors": [0-9]*' "$W/$tag.json" | tr '\n' ' ') ; probe: $(head -c 600 "$W/$tag.diag")"
        fi
        if [ "$sys" = postgres ] && grep -q '"failed": [1-9]' "$W/$tag.json"; then
            note "postgres $shape c=$conc: $(grep -i error "$W/$tag.out" | head -2 | tr '\n' ' ')"
        fi
    }
    i=0
    for rep in $(seq 1 "$REPEATS"); do
        for shape in $SHAPES; do
            for conc in $CONCS; do
                if [ $((i % 2)) = 0 ]; then order="corvid postgres"; else order="postgres corvid"; fi
                for sys in $order; do run_q "$sys" "$shape" "$conc" "$rep"; done
                i=$((i + 1))
            done
        done
    done
fi

# ---- 4. write-to-visible lag ---------------------------------------------------------
if has_step lag; then
    if ! has_step query && ! has_step index; then
        "$PY" "$USERS" warm --url "$CORVID_URL" --db bench --count "$N" --shapes eq >/dev/null
    fi
    disk=$(disk_probe "$BENCH_TMPDIR" 500)
    log "write-to-visible lag: $LAG_RATE PUT/s for ${LAG_DURATION}s, polling every ${LAG_TRACK_EVERY}th write (disk $disk 4K dsync/s)"
    c0=$(cpu_of corvid)
    out=$("$PY" "$USERS" lag --url "$CORVID_URL" --db bench --duration "$LAG_DURATION" --rate "$LAG_RATE" \
        --track-every "$LAG_TRACK_EVERY" --poll-ms "$LAG_POLL_MS")
    c1=$(cpu_of corvid)
    log "lag: $out"
    echo "$out" >"$W/lag.json"
    rec "$W/lag.json" kind=lag system=corvid "disk_wps=$disk" "cpu_s=$(secs "$c0" "$c1")"
    echo "$out" | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
for e in j.get("errors", []): print("lag step: " + e)
if j.get("never_visible"): print("lag step: %d tracked writes never became visible to from Users where City = $p0 within 10 s after the writer stopped, e.g. %s" % (j["never_visible"], j["never_visible_ids"]))' \
        | while read -r l; do [ -n "$l" ] && note "$l"; done
fi

# ---- wrap up -----------------------------------------------------------------------
DISK_AFTER=$(disk_probe "$BENCH_TMPDIR" 2000)
RSS=$("$PY" "$BENCH_LIB/measure.py" rss "$CORVID_PID")
IDX=$(curl -s "$CORVID_URL/databases/bench/indexes/stats" | "$PY" -c '
import json, sys
try:
    print("; ".join("%s: %s entries, %.0f MiB, stale=%s" % (i["Name"], i.get("EntriesCount"), (i.get("SizeOnDisk") or 0) / 1048576, i.get("IsStale")) for i in json.load(sys.stdin)["Results"]))
except Exception as e: print("n/a (%s)" % e)')
USAGE="Corvid data dir $(du -sh "$CVD/data" | cut -f1) (indexes: $IDX); PostgreSQL data dir $(du -sh "$PGD/data" | cut -f1), table+indexes $(pg_psql -At -c "SELECT pg_size_pretty(pg_total_relation_size('users'))")"
for s in eq range sorted name page; do [ -f "$W/pg_$s.plan" ] && cp "$W/pg_$s.plan" "$W/plan_$s.txt"; done
PLANS=$(for s in $SHAPES; do [ -f "$W/pg_$s.plan" ] && printf '%s: %s\n' "$s" "$(grep -o 'Index Only Scan[^(]*\|Index Scan[^(]*\|Bitmap Heap Scan[^(]*\|Seq Scan[^(]*' "$W/pg_$s.plan" | head -2 | tr -s ' ' | paste -sd '/' -)"; done)

"$PY" - "$W/meta.json" "$NOTES" <<PYEOF
import json, sys
notes = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
meta = {
  "date": "$STAMP", "commit": "$COMMIT", "binary": """$BINARY_DESC""", "machine": """$(machine_desc)""",
  "regime": "$REGIME", "disk_wps_before": $DISK_BEFORE, "disk_wps_after": $DISK_AFTER,
  "tmp_parent": "$BENCH_TMPDIR", "fs": "$(fs_of "$BENCH_TMPDIR") ($(fstype_of "$BENCH_TMPDIR"))",
  "n": $N, "avg_doc_bytes": $AVG_DOC, "duration": $DURATION, "repeats": $REPEATS, "lag_duration": $LAG_DURATION,
  "lag_rate": $LAG_RATE, "quick": $QUICK, "load_concurrency": $LOAD_CONCURRENCY, "load_batch": $LOAD_BATCH,
  "pg_settings": "fsync=on, synchronous_commit=on, shared_buffers=${PG_SHARED_BUFFERS:-2GB}, max_wal_size=${PG_MAX_WAL_SIZE:-8GB}",
  "rss": $RSS, "disk_usage": """$USAGE""", "pg_plans": """$PLANS""", "notes": notes,
}
json.dump(meta, open(sys.argv[1], "w"))
PYEOF

REPORT=$("$PY" "$BENCH_LIB/report_queries.py" "$RECORDS" "$W/meta.json")
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/queries-$DATE.md"
cp "$RECORDS" "$RESULTS_DIR/raw/queries-${STAMP//:/}.jsonl"
cp "$W/meta.json" "$RESULTS_DIR/raw/queries-${STAMP//:/}.meta.json"
if [ "${KEEP_LOGS:-0}" = 1 ]; then
    mkdir -p "$RESULTS_DIR/tmp"; cp "$CORVID_LOG" "$RESULTS_DIR/tmp/queries-${STAMP//:/}.corvid.log"
fi
log "appended to $RESULTS_DIR/queries-$DATE.md (raw records in $RESULTS_DIR/raw/)"
