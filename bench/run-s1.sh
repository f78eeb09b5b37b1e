#!/usr/bin/env bash
# Scenario S1: durable single-document writes and reads by id, Corvid vs PostgreSQL 15.
# See bench/README.md. Usage: bench/run-s1.sh            (full: 10 s steps, 5 repetitions)
#                             QUICK=1 bench/run-s1.sh    (3 s steps, 1 repetition)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"

# ---- configuration (environment) --------------------------------------------
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    DURATION=${DURATION:-3}; REPEATS=${REPEATS:-1}
else
    DURATION=${DURATION:-10}; REPEATS=${REPEATS:-5}
fi
PUT_CONCS=${PUT_CONCS:-"1 4 16 64 256"}
GET_CONCS=${GET_CONCS:-"1 16"}
UPDATE_CONCS=${UPDATE_CONCS:-"16 64"}  # only with STEPS containing "update" (opt-in)
PRELOAD=${PRELOAD:-100000}            # documents loaded before the GET steps
PRELOAD_BATCH=${PRELOAD_BATCH:-1000}
DOC_BYTES=${DOC_BYTES:-500}
SEED=${SEED:-42}
SYSTEMS=${SYSTEMS:-"corvid postgres"} # e.g. SYSTEMS=postgres to exercise only the peer
STEPS=${STEPS:-"put get"}
WRK_THREADS=${WRK_THREADS:-2}
PGBENCH_THREADS=${PGBENCH_THREADS:-2}
DISK_PROBE_COUNT=${DISK_PROBE_COUNT:-500}  # dsync writes probed before each write step
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}    # parent of both data directories (same disk as /work here)
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR

has() { case " $SYSTEMS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
has_step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

install_cleanup_trap
ensure_python
ensure_curl
has corvid && ensure_wrk
has postgres && ensure_postgres

make_tmpdir BENCH_WORK
export BENCH_WORK
W=$BENCH_WORK
RECORDS=$W/records.jsonl
NOTES=$W/notes.txt
: >"$RECORDS"; : >"$NOTES"
note() { log "NOTE: $*"; printf '%s\n' "$*" >>"$NOTES"; }

DATE=$(date -u +%Y-%m-%d)
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git_commit)
BINARY_DESC="n/a"
if has corvid && [ -x "$BENCH_CORVID_BIN" ]; then
    BINARY_DESC="$(basename "$BENCH_CORVID_BIN") built $(date -u -r "$BENCH_CORVID_BIN" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$BENCH_CORVID_BIN" | cut -c1-12)"
fi
log "S1 start: commit $COMMIT, ${DURATION}s steps x $REPEATS repetition(s), systems: $SYSTEMS"

# ---- disk regime --------------------------------------------------------------
DISK_BEFORE=$(disk_probe "$BENCH_TMPDIR" 2000)
REGIME=$(disk_regime "$DISK_BEFORE")
log "disk: $DISK_BEFORE durable 4 KiB writes/s in $BENCH_TMPDIR ($(fs_of "$BENCH_TMPDIR")) -> regime '$REGIME'"

# ---- the document -------------------------------------------------------------
"$PY" "$BENCH_LIB/gen.py" doc --seed "$SEED" --size "$DOC_BYTES" -n >"$W/doc.json"
DOC_JSON=$(cat "$W/doc.json")
"$PY" "$BENCH_LIB/gen.py" doc --seed "$SEED" --size "$DOC_BYTES" --index 999999999 -n >"$W/doc_update.json"
UPD_JSON=$(cat "$W/doc_update.json")

# ---- start the systems -----------------------------------------------------------
if has postgres; then
    make_tmpdir PGD "$BENCH_TMPDIR"
    pg_start "$PGD"
    pg_psql -c "CREATE TABLE docs(id text PRIMARY KEY, body jsonb)"
    cat >"$W/pg_insert.sql" <<'SQL'
\set n :n + 1
INSERT INTO docs (id, body) VALUES (:prefix || :client_id || '-' || :n, :body);
SQL
    cat >"$W/pg_get.sql" <<SQL
\set i random(0, $((PRELOAD - 1)))
SELECT body FROM docs WHERE id = :prefix || :i;
SQL
    cat >"$W/pg_update.sql" <<SQL
\set i random(0, $((PRELOAD - 1)))
UPDATE docs SET body = :body WHERE id = :prefix || :i;
SQL
fi
if has corvid; then
    make_tmpdir CVD "$BENCH_TMPDIR"
    corvid_start "$CVD"
    corvid_create_db bench
    # sanity probes: record exact replies, continue anyway
    r=$(corvid_probe PUT "/databases/bench/docs?id=bench/probe-1" "$W/doc.json")
    log "probe PUT /databases/bench/docs?id=bench/probe-1 -> $r"
    case $r in "HTTP 201 "*'"Id"'*'"ChangeVector"'*) ;; *) note "PUT /databases/bench/docs?id=bench/probe-1 (500-byte doc) -> $r (expected 201 {\"Id\",\"ChangeVector\"})" ;; esac
    r=$(corvid_probe GET "/databases/bench/docs?id=bench/probe-1")
    log "probe GET /databases/bench/docs?id=bench/probe-1 -> $r"
    case $r in "HTTP 200 "*'"Results"'*) ;; *) note "GET /databases/bench/docs?id=bench/probe-1 -> $r (expected 200 {\"Results\":[doc]})" ;; esac
    if corvid_metrics "$W/m0.json"; then
        probe=$("$PY" "$BENCH_LIB/measure.py" metrics-delta "$W/m0.json" "$W/m0.json" bench)
        case $probe in *metrics_error*) note "GET /admin/metrics: $(echo "$probe" | sed 's/.*"metrics_error": //') ; body: $(head -c 300 "$W/m0.json")" ;; esac
    else
        note "GET /admin/metrics -> $(corvid_probe GET /admin/metrics); docs per fsync not available"
    fi
fi

cpu_of() {  # cpu_of SYSTEM -> CPU seconds so far of the server process (tree)
    case $1 in
        corvid) "$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" ;;
        postgres) "$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree ;;
    esac | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/'
}
pg_wal_syncs() { pg_psql -At -c "SELECT wal_sync FROM pg_stat_wal" 2>/dev/null || echo ""; }

# timed OUTTAG CMD... : run CMD, store "user sys" CPU seconds of it (and its children) in OUTTAG.time
timed() {
    local tf=$1; shift
    local TIMEFORMAT='%U %S'
    { time "$@" 2>&3 ; } 3>&2 2>"$tf.time"
}

# run_step SYSTEM OP CONC REP [DISK_WPS]
run_step() {
    local sys=$1 op=$2 conc=$3 rep=$4 disk=${5:-null} tag threads c0 c1 extra="{}"
    tag="${op}_c${conc}_r${rep}_${sys}"
    c0=$(cpu_of "$sys")
    "$PY" "$BENCH_LIB/measure.py" cpustat >"$W/$tag.st0"
    case $sys in
    corvid)
        threads=$WRK_THREADS; [ "$conc" -lt "$threads" ] && threads=$conc
        corvid_metrics "$W/$tag.m0" || true
        if [ "$op" = update ]; then
            BENCH_MODE=update BENCH_BODY_FILE="$W/doc_update.json" BENCH_ID_PREFIX="bench/" BENCH_ID_COUNT="$PRELOAD" \
                BENCH_SEED="$rep" timed "$W/$tag" wrk -t "$threads" -c "$conc" -d "${DURATION}s" --timeout 30s \
                -s "$BENCH_LIB/wrk_docs.lua" "$CORVID_URL" >"$W/$tag.out" 2>&1 || true
        elif [ "$op" = put ]; then
            BENCH_MODE=put BENCH_BODY_FILE="$W/doc.json" BENCH_ID_PREFIX="bench/w${rep}c${conc}-" \
                timed "$W/$tag" wrk -t "$threads" -c "$conc" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_docs.lua" \
                "$CORVID_URL" >"$W/$tag.out" 2>&1 || true
        else
            BENCH_MODE=get BENCH_ID_PREFIX="bench/" BENCH_ID_COUNT="$PRELOAD" BENCH_SEED="$rep" \
                timed "$W/$tag" wrk -t "$threads" -c "$conc" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_docs.lua" \
                "$CORVID_URL" >"$W/$tag.out" 2>&1 || true
        fi
        corvid_metrics "$W/$tag.m1" || true
        "$PY" "$BENCH_LIB/measure.py" wrk "$W/$tag.out" >"$W/$tag.json"
        if [ "$op" != get ]; then
            "$PY" "$BENCH_LIB/measure.py" metrics-delta "$W/$tag.m0" "$W/$tag.m1" bench >"$W/$tag.fsync.json"
        else
            echo '{}' >"$W/$tag.fsync.json"
        fi
        "$PY" "$BENCH_LIB/measure.py" rss "$CORVID_PID" >"$W/$tag.rss.json"
        ;;
    postgres)
        threads=$PGBENCH_THREADS; [ "$conc" -lt "$threads" ] && threads=$conc
        local s0 s1
        s0=$(pg_wal_syncs)
        if [ "$op" = put ]; then
            timed "$W/$tag" pg_run_pgbench "$W/$tag" -M prepared -c "$conc" -j "$threads" -T "$DURATION" -f "$W/pg_insert.sql" \
                -D n=0 -D "prefix=bench/p${rep}c${conc}-" -D "body=$DOC_JSON" -l --log-prefix="$W/$tag.log" || true
        elif [ "$op" = update ]; then
            timed "$W/$tag" pg_run_pgbench "$W/$tag" -M prepared -c "$conc" -j "$threads" -T "$DURATION" -f "$W/pg_update.sql" \
                -D "prefix=bench/" -D "body=$UPD_JSON" -l --log-prefix="$W/$tag.log" || true
        else
            timed "$W/$tag" pg_run_pgbench "$W/$tag" -M prepared -c "$conc" -j "$threads" -T "$DURATION" -f "$W/pg_get.sql" \
                -D "prefix=bench/" -l --log-prefix="$W/$tag.log" || true
        fi
        sleep 0.5; s1=$(pg_wal_syncs)
        "$PY" "$BENCH_LIB/measure.py" pgbench "$W/$tag.out" "$W/$tag.log" >"$W/$tag.json"
        rm -f "$W/$tag.log".*
        if [ "$op" != get ] && [ -n "$s0" ] && [ -n "$s1" ]; then
            echo "{\"pg_wal_syncs\": $((s1 - s0))}" >"$W/$tag.fsync.json"
        else
            echo '{}' >"$W/$tag.fsync.json"
        fi
        echo '{}' >"$W/$tag.rss.json"
        ;;
    esac
    c1=$(cpu_of "$sys")
    "$PY" "$BENCH_LIB/measure.py" cpustat >"$W/$tag.st1"
    "$PY" "$BENCH_LIB/measure.py" steal "$W/$tag.st0" "$W/$tag.st1" >"$W/$tag.steal.json"
    local ccpu="null"
    [ -s "$W/$tag.time" ] && ccpu=$(tail -1 "$W/$tag.time" | awk '{printf "%.2f", $1 + $2}')
    local cpu
    cpu=$(awk -v a="${c0:-0}" -v b="${c1:-0}" 'BEGIN { printf "%.2f", b - a }')
    "$PY" "$BENCH_LIB/measure.py" merge "$W/$tag.json" "$W/$tag.fsync.json" "$W/$tag.rss.json" "$W/$tag.steal.json" \
        "client_cpu_s=$ccpu" "system=$sys" "op=$op" "conc=$conc" "rep=$rep" "cpu_s=$cpu" "disk_wps=$disk" >>"$RECORDS"
    tail -1 "$RECORDS" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
f = lambda v: "n/a" if v is None else ("%.2f" % v)
extra = ""
if r.get("docs_per_fsync") is not None: extra += " docs/fsync=%s" % r["docs_per_fsync"]
if r.get("commit_ms_avg") is not None: extra += " commit=%sms" % r["commit_ms_avg"]
if r.get("client_cpu_s") is not None: extra += " client-cpu %ss" % r["client_cpu_s"]
if r.get("steal_pct") is not None: extra += " steal %s%%" % r["steal_pct"]
if r.get("pg_wal_syncs"): extra += " docs/walsync=%.1f" % (r.get("ok", 0) / r["pg_wal_syncs"])
err = (r.get("non2xx") or 0) + (r.get("sock_errors") or 0)
print("[%s] %-8s %-3s c=%-3s rep %s: %s/s p50 %s p99 %s p99.9 %s ms cpu %ss%s%s" % (
    __import__("time").strftime("%H:%M:%S"), r["system"], r["op"], r["conc"], r["rep"],
    "n/a" if r.get("rps") is None else "%.0f" % r["rps"], f(r.get("p50_ms")), f(r.get("p99_ms")),
    f(r.get("p999_ms")), r.get("cpu_s"), extra, (" ERRORS=%d" % err) if err else ""), file=sys.stderr)'
    # surface the first failing reply for diagnosis
    if [ "$sys" = corvid ] && grep -q '"non2xx": [1-9]' "$W/$tag.json"; then
        local path body=""
        local m=GET
        case $op in
            put) path="/databases/bench/docs?id=bench/diag-$tag"; body="$W/doc.json"; m=PUT ;;
            update) path="/databases/bench/docs?id=bench/1"; body="$W/doc_update.json"; m=PUT ;;
            *) path="/databases/bench/docs?id=bench/1" ;;
        esac
        note "$sys $op c=$conc: $(grep -o '"non2xx": [0-9]*' "$W/$tag.json") non-2xx replies; probe $m $path -> $(corvid_probe "$m" "$path" $body)"
    fi
}

order_for() {  # alternate which system goes first to cancel drift
    local i=$1
    if has corvid && has postgres; then
        if [ $((i % 2)) = 0 ]; then echo "corvid postgres"; else echo "postgres corvid"; fi
    else echo "$SYSTEMS"; fi
}

# ---- durable writes ---------------------------------------------------------------
step_i=0
if has_step put; then
    for rep in $(seq 1 "$REPEATS"); do
        for conc in $PUT_CONCS; do
            disk=$(disk_probe "$BENCH_TMPDIR" "$DISK_PROBE_COUNT")
            for sys in $(order_for $step_i); do run_step "$sys" put "$conc" "$rep" "$disk"; done
            step_i=$((step_i + 1))
        done
    done
fi

# ---- GET by id ----------------------------------------------------------------------
PRELOAD_DESC=""
if has_step get; then
    if has postgres; then
        "$PY" "$BENCH_LIB/gen.py" pg-copy --seed "$SEED" --size "$DOC_BYTES" --count "$PRELOAD" --prefix bench/ >"$W/preload.tsv"
        t0=$(date +%s.%N)
        pg_psql -c "\\copy docs FROM '$W/preload.tsv'" -c "VACUUM ANALYZE docs"
        t1=$(date +%s.%N)
        rm -f "$W/preload.tsv"
        PRELOAD_DESC="PostgreSQL COPY+VACUUM ANALYZE $(awk -v a="$t0" -v b="$t1" -v n="$PRELOAD" 'BEGIN{printf "%.0f docs/s", n/(b-a)}')"
        log "PostgreSQL preload: $PRELOAD_DESC"
    fi
    if has corvid; then
        out=$("$PY" "$BENCH_LIB/gen.py" corvid-load --url "$CORVID_URL" --db bench --seed "$SEED" --size "$DOC_BYTES" \
            --count "$PRELOAD" --prefix bench/ --batch "$PRELOAD_BATCH" --check) \
            || die "Corvid preload via bulk_docs failed"
        log "Corvid preload: $out"
        cdesc=$(echo "$out" | "$PY" -c 'import json,sys; j=json.load(sys.stdin); print("Corvid bulk_docs (%d-doc batches) %.0f docs/s, batch p50 %.0f ms" % (j["batch"], j["docs_per_s"], j["batch_p50_ms"]))')
        PRELOAD_DESC="${PRELOAD_DESC:+$PRELOAD_DESC; }$cdesc"
        r=$(corvid_probe GET "/databases/bench/docs?id=bench/0")
        case $r in "HTTP 200 "*'"Results"'*) ;; *) note "after preload GET /databases/bench/docs?id=bench/0 -> $r" ;; esac
        r=$(corvid_probe GET "/databases/bench/docs?id=bench/does-not-exist")
        case $r in "HTTP 404 "*) ;; *) note "GET of a missing id /databases/bench/docs?id=bench/does-not-exist -> $r (expected 404)" ;; esac
    fi
    for rep in $(seq 1 "$REPEATS"); do
        for conc in $GET_CONCS; do
            for sys in $(order_for $step_i); do run_step "$sys" get "$conc" "$rep"; done
            step_i=$((step_i + 1))
        done
    done
fi

# ---- updates of existing documents (opt-in: STEPS="put get update") ---------------------
if has_step update; then
    has_step get || die "STEPS=update needs the get step's preload (STEPS=\"put get update\")"
    for rep in $(seq 1 "$REPEATS"); do
        for conc in $UPDATE_CONCS; do
            disk=$(disk_probe "$BENCH_TMPDIR" "$DISK_PROBE_COUNT")
            for sys in $(order_for $step_i); do run_step "$sys" update "$conc" "$rep" "$disk"; done
            step_i=$((step_i + 1))
        done
    done
fi

# ---- wrap up -----------------------------------------------------------------------
DISK_AFTER=$(disk_probe "$BENCH_TMPDIR" 2000)
USAGE=""
if has corvid; then
    USAGE="Corvid data dir $(du -sh "$CVD/data" | cut -f1)"
fi
if has postgres; then
    n=$(pg_psql -At -c "SELECT count(*) FROM docs")
    USAGE="${USAGE:+$USAGE, }PostgreSQL data dir $(du -sh "$PGD/data" | cut -f1) ($n rows)"
fi

"$PY" - "$W/meta.json" "$NOTES" <<PYEOF
import json, sys
notes = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
meta = {
  "date": "$STAMP", "commit": "$COMMIT", "binary": """$BINARY_DESC""", "machine": """$(machine_desc)""",
  "regime": "$REGIME", "disk_wps_before": $DISK_BEFORE, "disk_wps_after": $DISK_AFTER,
  "tmp_parent": "$BENCH_TMPDIR", "fs": "$(fs_of "$BENCH_TMPDIR") ($(fstype_of "$BENCH_TMPDIR"))",
  "duration": $DURATION, "repeats": $REPEATS, "wrk_threads": $WRK_THREADS, "doc_bytes": $DOC_BYTES,
  "pg_settings": "fsync=on, synchronous_commit=on, shared_buffers=${PG_SHARED_BUFFERS:-2GB}, max_wal_size=${PG_MAX_WAL_SIZE:-8GB}",
  "preload": """$PRELOAD_DESC""", "preload_count": $PRELOAD, "disk_usage": """$USAGE""", "notes": notes,
}
json.dump(meta, open(sys.argv[1], "w"))
PYEOF

REPORT=$("$PY" "$BENCH_LIB/report.py" s1 "$RECORDS" "$W/meta.json")
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/s1-$DATE.md"
cp "$RECORDS" "$RESULTS_DIR/raw/s1-${STAMP//:/}.jsonl"
cp "$W/meta.json" "$RESULTS_DIR/raw/s1-${STAMP//:/}.meta.json"
if has corvid && [ "${KEEP_LOGS:-0}" = 1 ]; then   # results/tmp is git-ignored
    mkdir -p "$RESULTS_DIR/tmp"; cp "$CORVID_LOG" "$RESULTS_DIR/tmp/s1-${STAMP//:/}.corvid.log"
fi
log "appended to $RESULTS_DIR/s1-$DATE.md (raw records in $RESULTS_DIR/raw/)"
