#!/usr/bin/env bash
# HTTPS (issue 21): S1's GET by id and durable PUT over HTTPS with keep-alive against plain HTTP in the same
# run (two Corvid servers, same binary, taking turns), TLS handshakes per second with a client certificate,
# and PostgreSQL 15 with sslmode=require as the peer. Target: HTTPS >= 0.85x of plain.
# Usage: bench/run-https.sh            (full: 10 s steps, 5 repetitions)
#        QUICK=1 bench/run-https.sh    (3 s steps, 1 repetition, 10,000 documents)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"
source "$BENCH_DIR/lib/tls.sh"

# ---- configuration (environment) --------------------------------------------
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    DURATION=${DURATION:-3}; REPEATS=${REPEATS:-1}; PRELOAD=${PRELOAD:-10000}
else
    DURATION=${DURATION:-10}; REPEATS=${REPEATS:-5}; PRELOAD=${PRELOAD:-100000}
fi
CONC=${CONC:-16}                      # keep-alive connections of the PUT and GET steps
PRELOAD_BATCH=${PRELOAD_BATCH:-1000}
DOC_BYTES=${DOC_BYTES:-500}
SEED=${SEED:-42}
WRK_THREADS=${WRK_THREADS:-2}
PGBENCH_THREADS=${PGBENCH_THREADS:-2}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
export BENCH_TMPDIR

install_cleanup_trap
ensure_python
ensure_curl
ensure_wrk
ensure_postgres
command -v openssl >/dev/null 2>&1 || apt_install openssl

make_tmpdir BENCH_WORK
export BENCH_WORK
W=$BENCH_WORK
RECORDS=$W/records.jsonl
: >"$RECORDS"
DATE=$(date -u +%Y-%m-%d)
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git_commit)
log "HTTPS start: commit $COMMIT, ${DURATION}s steps x $REPEATS repetition(s), $CONC connections"

# ---- certificates, documents ---------------------------------------------------
tls_make_certificates "$W/tls"
WRK_TLS_SHIM=$(tls_client_shim "$W/tls")
"$PY" "$BENCH_LIB/gen.py" doc --seed "$SEED" --size "$DOC_BYTES" -n >"$W/doc.json"
DOC_JSON=$(cat "$W/doc.json")

# ---- the systems: Corvid over HTTP, Corvid over HTTPS, PostgreSQL with TLS ---------
make_tmpdir CVD "$BENCH_TMPDIR"
corvid_start "$CVD"
corvid_create_db bench
make_tmpdir CVS "$BENCH_TMPDIR"
corvid_https_start "$CVS"
code=$(corvid_https_curl -o "$W/createdb.out" -w '%{http_code}' -X PUT "$CORVID_HTTPS_URL/admin/databases?name=bench" \
    -H 'Content-Type: application/json' -d '{"DatabaseName":"bench"}')
[ "$code" = 201 ] || die "HTTPS PUT /admin/databases -> $code: $(head -c 300 "$W/createdb.out")"

make_tmpdir PGD "$BENCH_TMPDIR"
mkdir -p "$PGD/tls"
cp "$W/tls/server.crt" "$W/tls/server.key" "$PGD/tls/"
chmod 600 "$PGD/tls/server.key"
[ "$(id -u)" = 0 ] && chown -R postgres "$PGD/tls"
PG_EXTRA_CONF="ssl = on
ssl_cert_file = '$PGD/tls/server.crt'
ssl_key_file = '$PGD/tls/server.key'
${PG_EXTRA_CONF:-}"
pg_start "$PGD"
export PGSSLMODE=require
pg_psql -At -c "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()" | grep -qx t || die "PostgreSQL did not use TLS"
pg_psql -c "CREATE TABLE docs(id text PRIMARY KEY, body jsonb)"
cat >"$W/pg_insert.sql" <<'SQL'
\set n :n + 1
INSERT INTO docs (id, body) VALUES (:prefix || :client_id || '-' || :n, :body);
SQL
cat >"$W/pg_get.sql" <<SQL
\set i random(0, $((PRELOAD - 1)))
SELECT body FROM docs WHERE id = :prefix || :i;
SQL
echo 'SELECT 1;' >"$W/pg_select1.sql"

# ---- preload (for the GET steps) -------------------------------------------------------
"$PY" "$BENCH_LIB/gen.py" corvid-load --url "$CORVID_URL" --db bench --seed "$SEED" --size "$DOC_BYTES" \
    --count "$PRELOAD" --prefix bench/ --batch "$PRELOAD_BATCH" --check >/dev/null || die "preload over HTTP failed"
"$PY" "$BENCH_LIB/gen.py" corvid-load --url "$CORVID_HTTPS_URL" --cafile "$W/tls/ca.pem" --cert "$W/tls/client.pem" --db bench \
    --seed "$SEED" --size "$DOC_BYTES" --count "$PRELOAD" --prefix bench/ --batch "$PRELOAD_BATCH" --check >/dev/null \
    || die "preload over HTTPS failed"
"$PY" "$BENCH_LIB/gen.py" pg-copy --seed "$SEED" --size "$DOC_BYTES" --count "$PRELOAD" --prefix bench/ >"$W/preload.tsv"
pg_psql -c "\\copy docs FROM '$W/preload.tsv'" -c "VACUUM ANALYZE docs"
rm -f "$W/preload.tsv"
log "preloaded $PRELOAD documents in each system"

# ---- one step ------------------------------------------------------------------------------
# run_step SYSTEM OP REP: SYSTEM is http, https or postgres; OP put, get or handshake
run_step() {
    local sys=$1 op=$2 rep=$3 tag="${2}_${1}_r${3}" url
    case $sys in
    http | https)
        # Both wrk runs load the shim (the same client code); only HTTPS uses it.
        if [ "$sys" = https ]; then url=$CORVID_HTTPS_URL; else url=$CORVID_URL; fi
        if [ "$op" = handshake ]; then
            # New TLS connections one after another, each presenting the client certificate.
            local hostport=${CORVID_HTTPS_URL#https://}
            openssl s_time -new -connect "$hostport" -cert "$W/tls/client.crt" -key "$W/tls/client.key" \
                -time "$DURATION" >"$W/$tag.out" 2>&1 || true
            "$PY" - "$W/$tag.out" >"$W/$tag.json" <<'PYEOF'
import json, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"(\d+) connections in (\d+) real seconds", text)
print(json.dumps({"rps": round(int(m.group(1)) / max(int(m.group(2)), 1), 1) if m else None, "ok": int(m.group(1)) if m else 0}))
PYEOF
        else
            local mode=$op prefix="bench/" extra=()
            [ "$op" = put ] && prefix="bench/w${rep}-${sys}-"
            [ "$op" = get ] && extra=(BENCH_ID_COUNT="$PRELOAD" BENCH_SEED="$rep")
            env LD_PRELOAD="$WRK_TLS_SHIM" BENCH_TLS_CERT="$W/tls/client.crt" BENCH_TLS_KEY="$W/tls/client.key" BENCH_MODE=$mode BENCH_BODY_FILE="$W/doc.json" BENCH_ID_PREFIX="$prefix" "${extra[@]}" \
                wrk -t "$WRK_THREADS" -c "$CONC" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_docs.lua" "$url" \
                >"$W/$tag.out" 2>&1 || true
            "$PY" "$BENCH_LIB/measure.py" wrk "$W/$tag.out" >"$W/$tag.json"
        fi
        ;;
    postgres)
        case $op in
            put) pg_run_pgbench "$W/$tag" -M prepared -c "$CONC" -j "$PGBENCH_THREADS" -T "$DURATION" -f "$W/pg_insert.sql" \
                    -D n=0 -D "prefix=bench/p${rep}-" -D "body=$DOC_JSON" -l --log-prefix="$W/$tag.log" || true ;;
            get) pg_run_pgbench "$W/$tag" -M prepared -c "$CONC" -j "$PGBENCH_THREADS" -T "$DURATION" -f "$W/pg_get.sql" \
                    -D "prefix=bench/" -l --log-prefix="$W/$tag.log" || true ;;
            # -C: a new (TLS) connection for every transaction, one client, as s_time does for Corvid.
            handshake) pg_run_pgbench "$W/$tag" -C -c 1 -j 1 -T "$DURATION" -f "$W/pg_select1.sql" \
                    -l --log-prefix="$W/$tag.log" || true ;;
        esac
        "$PY" "$BENCH_LIB/measure.py" pgbench "$W/$tag.out" "$W/$tag.log" >"$W/$tag.json"
        rm -f "$W/$tag.log".*
        if [ "$op" = handshake ]; then  # with -C pgbench reports tps "including reconnection times"
            "$PY" - "$W/$tag.out" "$W/$tag.json" <<'PYEOF'
import json, re, sys
rec = json.load(open(sys.argv[2]))
m = re.search(r"tps = ([0-9.]+) \(including reconnection times\)", open(sys.argv[1]).read())
rec["rps"] = float(m.group(1)) if m else None
json.dump(rec, open(sys.argv[2], "w"))
PYEOF
        fi
        ;;
    esac
    "$PY" "$BENCH_LIB/measure.py" merge "$W/$tag.json" "system=$sys" "op=$op" "conc=$CONC" "rep=$rep" >>"$RECORDS"
    tail -1 "$RECORDS" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
f = lambda v: "n/a" if v is None else ("%.2f" % v)
err = (r.get("non2xx") or 0) + (r.get("sock_errors") or 0)
print("%-9s %-8s rep %s: %s/s p50 %s p99 %s ms%s" % (r["op"], r["system"], r["rep"], "n/a" if r.get("rps") is None else "%.0f" % r["rps"],
      f(r.get("p50_ms")), f(r.get("p99_ms")), (" ERRORS=%d" % err) if err else ""), file=sys.stderr)'
}

# Alternate which system goes first to cancel drift.
step_i=0
for rep in $(seq 1 "$REPEATS"); do
    for op in put get handshake; do
        systems="http https postgres"
        [ "$op" = handshake ] && systems="https postgres"
        [ $((step_i % 2)) = 1 ] && systems=$(echo "$systems" | tr ' ' '\n' | tac | tr '\n' ' ')
        for sys in $systems; do run_step "$sys" "$op" "$rep"; done
        step_i=$((step_i + 1))
    done
done

# ---- report ------------------------------------------------------------------------------------
REPORT=$("$PY" - "$RECORDS" <<PYEOF
import json, statistics, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def median(op, system, key="rps"):
    values = [r[key] for r in records if r["op"] == op and r["system"] == system and r.get(key) is not None]
    return statistics.median(values) if values else None
fmt = lambda v, d=0: "n/a" if v is None else f"{v:.{d}f}"
out = [f"## HTTPS vs plain HTTP ($STAMP, commit $COMMIT)", "",
       f"{len(set(r['rep'] for r in records))} repetition(s) of ${DURATION} s, $CONC keep-alive connections, $PRELOAD documents of $DOC_BYTES bytes;"
       " medians. Corvid: two servers of the same binary, one plain, one HTTPS with a client certificate"
       " (wrk presents it through bench/lib/tls_client_certificate.c, preloaded). PostgreSQL 15: sslmode=require (pgbench).", "$(machine_desc)", "",
       "| step | HTTP req/s | HTTPS req/s | HTTPS / HTTP | HTTPS p99 ms | PostgreSQL TLS tx/s |", "|---|---|---|---|---|---|"]
for op, label in (("put", "durable PUT"), ("get", "GET by id")):
    http, https, pg = median(op, "http"), median(op, "https"), median(op, "postgres")
    ratio = f"{https / http:.2f}x" if http and https else "n/a"
    out.append(f"| {label} | {fmt(http)} | {fmt(https)} | {ratio} | {fmt(median(op, 'https', 'p99_ms'), 2)} | {fmt(pg)} |")
out += ["", f"TLS handshakes with a client certificate, one client, new connection each time: Corvid"
        f" {fmt(median('handshake', 'https'))}/s (openssl s_time -new); PostgreSQL {fmt(median('handshake', 'postgres'))}/s"
        " (pgbench -C, SELECT 1 on each connection)."]
print("\n".join(out))
PYEOF
)
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/https-$DATE.md"
cp "$RECORDS" "$RESULTS_DIR/raw/https-${STAMP//:/}.jsonl"
log "appended to $RESULTS_DIR/https-$DATE.md (raw records in $RESULTS_DIR/raw/)"
