#!/usr/bin/env bash
# Scenario S2: StackOverflow-like bulk load, patches from 16 clients, kill -9 during a load and time the
# restart; Corvid vs PostgreSQL 15 (COPY, UPDATE ... jsonb_set) in the same run.
# Usage: bench/run-s2.sh            (full: 200k users + 1M posts, about 1.2 GB of JSON, 20 s patch steps)
#        QUICK=1 bench/run-s2.sh    (20k users + 100k posts, 8 s patch steps)
# Python 3 stdlib + wrk + PostgreSQL 15 (Debian packages, installed by apt-get when missing).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"
S2="$BENCH_DIR/s2"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    USERS=${USERS:-20000}; POSTS=${POSTS:-100000}; DURATION=${DURATION:-8}; PUT_CRASH_SECS=${PUT_CRASH_SECS:-4}
    MODE=quick
else
    USERS=${USERS:-200000}; POSTS=${POSTS:-1000000}; DURATION=${DURATION:-20}; PUT_CRASH_SECS=${PUT_CRASH_SECS:-8}
    MODE=full
fi
SEED=${SEED:-42}
CLIENTS=${CLIENTS:-16}
BADGE_PCT=${BADGE_PCT:-25}            # share of patches that push a badge onto a user (rest: comments on posts)
CRASH_FRACTION=${CRASH_FRACTION:-0.4} # kill -9 after this share of the bulk-insert bytes was sent
S2_DATA=${S2_DATA:-/tmp/corvid-s2-data/$MODE-u$USERS-p$POSTS-s$SEED}   # generated once, reused (not committed)
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$S2/results}
SYSTEMS=${SYSTEMS:-"corvid postgres"}
STEPS=${STEPS:-"load patch crash"}
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
R=$W/results; mkdir -p "$R"
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
DATE=$(date -u +%Y-%m-%d)
COMMIT=$(git_commit)

# Benchmark a private copy of the binary: a rebuild replaces target/release/corvid under a running script.
if has corvid; then
    [ -x "$BENCH_CORVID_BIN" ] || die "Corvid binary not found: $BENCH_CORVID_BIN"
    BINARY_DESC="$(basename "$BENCH_CORVID_BIN") built $(date -u -r "$BENCH_CORVID_BIN" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$BENCH_CORVID_BIN" | cut -c1-12)"
    cp "$BENCH_CORVID_BIN" "$W/corvid"; BENCH_CORVID_BIN=$W/corvid
else
    BINARY_DESC=n/a
fi
log "S2 ($MODE) start: commit $COMMIT, $USERS users + $POSTS posts, patches ${DURATION}s x $CLIENTS clients, systems: $SYSTEMS"

# ---- data ------------------------------------------------------------------------------------------
"$PY" "$S2/s2.py" gen "$S2_DATA" --users "$USERS" --posts "$POSTS" --seed "$SEED" >"$R/data.json"
log "data: $(cat "$R/data.json")"
# Freshly generated data files sit dirty in the page cache; on ext4 (data=ordered) the first fsyncs of the
# servers would otherwise pay for writing them back (measured: a 0.5-1.2 s stall of the first patches).
sync
DISK_BEFORE=$(disk_probe "$BENCH_TMPDIR" 2000)
log "disk: $DISK_BEFORE durable 4 KiB writes/s -> regime $(disk_regime "$DISK_BEFORE")"
echo "{\"disk_before\": $DISK_BEFORE}" >"$R/disk.json"

# ---- Corvid: bulk insert ---------------------------------------------------------------------------
if has corvid && { has_step load || has_step patch; }; then
    make_tmpdir CVD "$BENCH_TMPDIR"
    corvid_start "$CVD"
    corvid_create_db s2
    d=$(disk_probe "$BENCH_TMPDIR" 500)
    c0=$("$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
    "$PY" "$S2/s2.py" load "$CORVID_URL" s2 "$S2_DATA" --pid "$CORVID_PID" >"$R/corvid_load.json"
    c1=$("$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
    count=$(curl -s "$CORVID_URL/databases/s2/collections/stats")
    sleep 1
    size=$(du -sb "$CVD/data" | cut -f1)
    "$PY" "$BENCH_LIB/measure.py" merge "$R/corvid_load.json" "disk_wps=$d" "server_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}')" \
        "data_dir_bytes=$size" "collections=$count" >"$R/corvid_load.m.json"
    mv "$R/corvid_load.m.json" "$R/corvid_load.json"
    log "Corvid load: $(cat "$R/corvid_load.json")"
fi

# ---- PostgreSQL: COPY ------------------------------------------------------------------------------
if has postgres && { has_step load || has_step patch; }; then
    make_tmpdir PGD "$BENCH_TMPDIR"
    pg_start "$PGD"
    pg_psql -c "CREATE TABLE users(id text PRIMARY KEY, data jsonb)" -c "CREATE TABLE posts(id text PRIMARY KEY, data jsonb)"
    d=$(disk_probe "$BENCH_TMPDIR" 500)
    c0=$("$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
    t0=$(date +%s.%N)
    pg_psql -c "\\copy users FROM '$S2_DATA/users.tsv'" & p1=$!
    pg_psql -c "\\copy posts FROM '$S2_DATA/posts.tsv'" & p2=$!
    wait $p1; wait $p2
    t1=$(date +%s.%N)
    c1=$("$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
    pg_psql -c "ANALYZE users" -c "ANALYZE posts"
    rows=$(pg_psql -At -c "SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM posts)")
    relbytes=$(pg_psql -At -c "SELECT pg_total_relation_size('users') + pg_total_relation_size('posts')")
    "$PY" - "$R/data.json" "$t0" "$t1" "$rows" "$relbytes" "$d" "$c0" "$c1" >"$R/pg_load.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1])); t0, t1 = float(sys.argv[2]), float(sys.argv[3]); secs = t1 - t0
print(json.dumps({"seconds": round(secs, 2), "docs": m["docs"], "rows": int(sys.argv[4]), "doc_bytes": m["doc_bytes"],
                  "docs_per_s": round(m["docs"] / secs, 1), "mb_per_s": round(m["doc_bytes"] / 1e6 / secs, 2),
                  "relation_bytes": int(sys.argv[5]), "disk_wps": int(sys.argv[6]),
                  "server_cpu_s": round(float(sys.argv[8]) - float(sys.argv[7]), 2)}))
PYEOF
    log "PostgreSQL COPY: $(cat "$R/pg_load.json")"
fi

# ---- patches ---------------------------------------------------------------------------------------
timed() { local tf=$1; shift; local TIMEFORMAT='%U %S'; { time "$@" 2>&3 ; } 3>&2 2>"$tf.time"; }
if has_step patch; then
    # The loads leave dirty pages behind (PostgreSQL writes its heap back only at checkpoints): write them now,
    # so neither system's timed patches wait behind the other's writeback in their fsyncs.
    if has postgres; then pg_psql -c "CHECKPOINT" >/dev/null || true; fi
    sync
    if has corvid; then
        "$PY" "$S2/s2.py" patch-check "$CORVID_URL" s2 >"$R/patch_check.json"
        log "patch probe: $(cat "$R/patch_check.json")"
        d=$(disk_probe "$BENCH_TMPDIR" 500)
        corvid_metrics "$W/m0.json" || true
        c0=$("$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
        BENCH_DB=s2 BENCH_USERS=$USERS BENCH_POSTS=$POSTS BENCH_BADGE_PCT=$BADGE_PCT BENCH_SEED=$SEED \
            timed "$W/cpatch" wrk -t 2 -c "$CLIENTS" -d "${DURATION}s" --timeout 30s -s "$S2/wrk_patch.lua" "$CORVID_URL" \
            >"$W/cpatch.out" 2>&1 || true
        c1=$("$PY" "$BENCH_LIB/measure.py" cpu "$CORVID_PID" | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
        corvid_metrics "$W/m1.json" || true
        "$PY" "$BENCH_LIB/measure.py" wrk "$W/cpatch.out" >"$W/cpatch.json"
        "$PY" "$BENCH_LIB/measure.py" metrics-delta "$W/m0.json" "$W/m1.json" s2 >"$W/cpatch.fsync.json" 2>/dev/null || echo '{}' >"$W/cpatch.fsync.json"
        "$PY" "$BENCH_LIB/measure.py" rss "$CORVID_PID" >"$W/cpatch.rss.json"
        "$PY" "$BENCH_LIB/measure.py" merge "$W/cpatch.json" "$W/cpatch.fsync.json" "$W/cpatch.rss.json" "disk_wps=$d" \
            "server_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}')" \
            "client_cpu_s=$(tail -1 "$W/cpatch.time" | awk '{printf "%.2f", $1 + $2}')" >"$R/corvid_patch.json"
        log "Corvid patches: $(cat "$R/corvid_patch.json")"
        # one patched document, to show the patch really landed
        curl -s "$CORVID_URL/databases/s2/docs?id=posts/1" | head -c 400 >"$R/corvid_patched_doc.txt" || true
    fi
    if has postgres; then
        C_JSON='{"UserId":"users/17","Score":0,"CreationDate":"2024-05-01T12:00:00.000Z","Text":"Have you tried calling flush before closing the stream? The buffer is only written when it is full or flushed explicitly."}'
        B_JSON='{"Name":"Nice Answer","Class":"Bronze","Date":"2024-05-01T12:00:00.000Z"}'
        cat >"$W/pg_comment.sql" <<SQL
\set i random(1, $POSTS)
UPDATE posts SET data = jsonb_set(jsonb_set(data, '{Comments}', coalesce(data->'Comments', '[]'::jsonb) || jsonb_build_array(:c::jsonb)), '{CommentCount}', to_jsonb(coalesce((data->>'CommentCount')::int, 0) + 1)) WHERE id = 'posts/' || :i;
SQL
        cat >"$W/pg_badge.sql" <<SQL
\set i random(1, $USERS)
UPDATE users SET data = jsonb_set(data, '{Badges}', (data->'Badges') || jsonb_build_array(:b::jsonb)) WHERE id = 'users/' || :i;
SQL
        d=$(disk_probe "$BENCH_TMPDIR" 500)
        c0=$("$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
        timed "$W/ppatch" pg_run_pgbench "$W/ppatch" -M prepared -c "$CLIENTS" -j 2 -T "$DURATION" \
            -f "$W/pg_comment.sql@$((100 - BADGE_PCT))" -f "$W/pg_badge.sql@$BADGE_PCT" -D "c=$C_JSON" -D "b=$B_JSON" \
            -l --log-prefix="$W/ppatch.log" || true
        c1=$("$PY" "$BENCH_LIB/measure.py" cpu "$(pg_postmaster_pid)" --tree | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/')
        "$PY" "$BENCH_LIB/measure.py" pgbench "$W/ppatch.out" "$W/ppatch.log" >"$W/ppatch.json"
        rm -f "$W/ppatch.log".*
        "$PY" "$BENCH_LIB/measure.py" merge "$W/ppatch.json" "disk_wps=$d" \
            "server_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}')" \
            "client_cpu_s=$(tail -1 "$W/ppatch.time" | awk '{printf "%.2f", $1 + $2}')" >"$R/pg_patch.json"
        log "PostgreSQL updates: $(cat "$R/pg_patch.json")"
        pg_psql -At -c "SELECT data->'CommentCount', jsonb_array_length(data->'Comments') FROM posts WHERE data ? 'Comments' LIMIT 1" \
            >"$R/pg_patched_row.txt" || true
    fi
fi
corvid_stop
pg_stop

# ---- crash tests -----------------------------------------------------------------------------------
if has corvid && has_step crash; then
    make_tmpdir CR1 "$BENCH_TMPDIR"
    "$PY" "$S2/s2.py" crash-bulk "$BENCH_CORVID_BIN" "$CR1" "$S2_DATA" --fraction "$CRASH_FRACTION" >"$R/crash_bulk.json" \
        || die "crash-bulk failed (logs in $CR1)"
    log "crash (bulk insert): $(cat "$R/crash_bulk.json")"
    rm -rf "$CR1/data"
    make_tmpdir CR2 "$BENCH_TMPDIR"
    "$PY" "$S2/s2.py" crash-put "$BENCH_CORVID_BIN" "$CR2" --clients "$CLIENTS" --secs "$PUT_CRASH_SECS" >"$R/crash_put.json" \
        || die "crash-put failed (logs in $CR2)"
    log "crash (single PUTs): $(cat "$R/crash_put.json")"
fi

DISK_AFTER=$(disk_probe "$BENCH_TMPDIR" 2000)
cat >"$R/meta.json" <<EOF
{"date": "$STAMP", "mode": "$MODE", "commit": "$COMMIT", "binary": "$BINARY_DESC", "machine": "$(machine_desc)",
 "disk_before": $DISK_BEFORE, "disk_after": $DISK_AFTER, "fs": "$(fs_of "$BENCH_TMPDIR") ($(fstype_of "$BENCH_TMPDIR"))",
 "duration": $DURATION, "clients": $CLIENTS, "badge_pct": $BADGE_PCT, "crash_fraction": $CRASH_FRACTION,
 "put_crash_secs": $PUT_CRASH_SECS, "loadavg": "$(cut -d' ' -f1-3 /proc/loadavg)"}
EOF
REPORT=$("$PY" "$S2/report.py" "$R")
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/s2-$DATE.md"
tar -C "$R" -cf - . | (mkdir -p "$RESULTS_DIR/raw/s2-${STAMP//:/}" && tar -C "$RESULTS_DIR/raw/s2-${STAMP//:/}" -xf -)
log "appended to $RESULTS_DIR/s2-$DATE.md (raw JSON in $RESULTS_DIR/raw/s2-${STAMP//:/})"
