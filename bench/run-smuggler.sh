#!/usr/bin/env bash
# Export/import benchmark (issue 22): Corvid's smuggler export and import of the S2 data with attachments
# (MB/s, docs/s, peak RSS of the server, dump size) against pg_dump -Fc / pg_restore of the same data in the
# same run, then a snapshot backup taken while S1-style single-document PUTs run (write p50/p99 with and
# without the snapshot).
# Usage: bench/run-smuggler.sh                 (200k users + 1M posts, 10% of posts with a ~4 KB attachment)
#        QUICK=1 bench/run-smuggler.sh         (20k users + 100k posts)
#        USERS=40000 POSTS=200000 bench/run-smuggler.sh
# Knobs: ATT_SHARE (0.1), ATT_BYTES (4096), SNAPSHOT_MIN_GB (0: the database as loaded; else 64 MiB
#        attachments are added until its directory is that large), DURATION (write steps, s), CLIENTS,
#        SYSTEMS ("corvid postgres"), STEPS ("dump snapshot"), COMPRESSION (Corvid export: Gzip|Zstd, default
#        the server's), PG_RESTORE_JOBS (1), PERF_DIR (set: `perf record -g` of the server during the export
#        and the import, into PERF_DIR/{export,import}.perf).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$BENCH_DIR/lib/common.sh"
source "$BENCH_DIR/lib/pg.sh"
source "$BENCH_DIR/lib/corvid.sh"
S2="$BENCH_DIR/s2"
SM="$BENCH_DIR/smuggler/smuggler.py"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    USERS=${USERS:-20000}; POSTS=${POSTS:-100000}; DURATION=${DURATION:-8}; MODE=quick
else
    USERS=${USERS:-200000}; POSTS=${POSTS:-1000000}; DURATION=${DURATION:-20}; MODE=full
fi
SEED=${SEED:-42}
ATT_SHARE=${ATT_SHARE:-0.1}
ATT_BYTES=${ATT_BYTES:-4096}
SNAPSHOT_MIN_GB=${SNAPSHOT_MIN_GB:-0}
CLIENTS=${CLIENTS:-16}
COMPRESSION=${COMPRESSION:-}
PG_RESTORE_JOBS=${PG_RESTORE_JOBS:-1}
S2_DATA=${S2_DATA:-/tmp/corvid-s2-data/$MODE-u$USERS-p$POSTS-s$SEED}
BENCH_TMPDIR=${BENCH_TMPDIR:-/tmp}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
SYSTEMS=${SYSTEMS:-"corvid postgres"}
STEPS=${STEPS:-"dump snapshot"}
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
if has corvid; then
    [ -x "$BENCH_CORVID_BIN" ] || die "Corvid binary not found: $BENCH_CORVID_BIN"
    BINARY_DESC="$(basename "$BENCH_CORVID_BIN") built $(date -u -r "$BENCH_CORVID_BIN" +%Y-%m-%dT%H:%M:%SZ), sha256 $(sha256sum "$BENCH_CORVID_BIN" | cut -c1-12)"
    cp "$BENCH_CORVID_BIN" "$W/corvid"; BENCH_CORVID_BIN=$W/corvid
else
    BINARY_DESC=n/a
fi
log "smuggler ($MODE) start: commit $COMMIT, $USERS users + $POSTS posts, attachments on $ATT_SHARE of posts (~$ATT_BYTES B)"

# ---- data ------------------------------------------------------------------------------------------
"$PY" "$S2/s2.py" gen "$S2_DATA" --users "$USERS" --posts "$POSTS" --seed "$SEED" >"$R/data.json"
"$PY" "$SM" attach-gen "$S2_DATA" --share "$ATT_SHARE" --size "$ATT_BYTES" --seed "$SEED" >"$R/attachments.json"
log "data: $(cat "$R/data.json"); attachments: $(cat "$R/attachments.json")"
sync

# ---- Corvid: load, export, import ------------------------------------------------------------------
PERF_PID=""
perf_start() { [ -n "${PERF_DIR:-}" ] || return 0; mkdir -p "$PERF_DIR"; perf record -g -q -p "$CORVID_PID" -o "$PERF_DIR/$1.perf" 2>/dev/null & PERF_PID=$!; sleep 0.3; }
perf_stop() { [ -n "$PERF_PID" ] || return 0; kill -INT "$PERF_PID" 2>/dev/null; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=""; }
cpu_s() { "$PY" "$BENCH_LIB/measure.py" cpu "$1" ${2:-} | sed 's/.*"cpu_s": \([0-9.]*\).*/\1/'; }
if has corvid; then
    make_tmpdir CVD "$BENCH_TMPDIR"
    corvid_start "$CVD"
    corvid_create_db s2
    "$PY" "$S2/s2.py" load "$CORVID_URL" s2 "$S2_DATA" --pid "$CORVID_PID" >"$R/corvid_load.json"
    "$PY" "$SM" load-attachments "$CORVID_URL" s2 "$S2_DATA" >"$R/corvid_load_attachments.json"
    log "Corvid load: $(cat "$R/corvid_load.json") attachments $(cat "$R/corvid_load_attachments.json")"
    sync
    if has_step dump; then
        DUMP=$W/s2.ravendbdump
        c0=$(cpu_s "$CORVID_PID")
        perf_start export
        "$PY" "$SM" export "$CORVID_URL" s2 "$DUMP" --pid "$CORVID_PID" ${COMPRESSION:+--compression "$COMPRESSION"} >"$W/cexport.json"
        perf_stop
        c1=$(cpu_s "$CORVID_PID")
        "$PY" "$BENCH_LIB/measure.py" merge "$W/cexport.json" "server_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}')" >"$R/corvid_export.json"
        log "Corvid export: $(cat "$R/corvid_export.json")"
        corvid_create_db s2import
        sync
        c0=$(cpu_s "$CORVID_PID")
        perf_start import
        "$PY" "$SM" import "$CORVID_URL" s2import "$DUMP" --pid "$CORVID_PID" >"$W/cimport.json"
        perf_stop
        c1=$(cpu_s "$CORVID_PID")
        "$PY" "$BENCH_LIB/measure.py" merge "$W/cimport.json" "server_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}')" >"$R/corvid_import.json"
        log "Corvid import: $(cat "$R/corvid_import.json")"
        rm -f "$DUMP"
        curl -s -X DELETE "$CORVID_URL/admin/databases?name=s2import&hardDelete=true" >/dev/null || true
    fi

    # ---- snapshot backup while single-document writes run --------------------------------------------
    if has_step snapshot; then
        if [ "$SNAPSHOT_MIN_GB" != 0 ]; then
            "$PY" "$SM" pad "$CORVID_URL" s2 "$(awk -v g="$SNAPSHOT_MIN_GB" 'BEGIN{printf "%.0f", g*1073741824}')" "$CVD/data" --tmp "$W" >"$R/pad.json"
            log "padded: $(cat "$R/pad.json")"
        fi
        sync
        DBBYTES=$(du -sb "$CVD/data" | cut -f1)
        "$PY" "$BENCH_LIB/gen.py" doc --seed "$SEED" --size 1024 >"$W/doc.json" 2>/dev/null \
            || printf '{"Name":"bench","Text":"%s","@metadata":{"@collection":"Bench"}}' "$(head -c 900 /dev/zero | tr '\0' x)" >"$W/doc.json"
        threads=2; [ "$CLIENTS" -lt 2 ] && threads=1
        # Warm-up (not measured): the first seconds after the loads and the import's database removal carry
        # their background work (checkpoints, writeback), which would weigh on the first measured step only.
        BENCH_DB=s2 BENCH_MODE=put BENCH_BODY_FILE="$W/doc.json" BENCH_ID_PREFIX="bench/warm-" \
            wrk -t "$threads" -c "$CLIENTS" -d "${WARMUP:-5}s" --timeout 30s -s "$BENCH_LIB/wrk_docs.lua" "$CORVID_URL" \
            >/dev/null 2>&1 || true
        sync
        BENCH_DB=s2 BENCH_MODE=put BENCH_BODY_FILE="$W/doc.json" BENCH_ID_PREFIX="bench/base-" \
            wrk -t "$threads" -c "$CLIENTS" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_docs.lua" "$CORVID_URL" \
            >"$W/put_base.out" 2>&1 || true
        "$PY" "$BENCH_LIB/measure.py" wrk "$W/put_base.out" >"$R/put_without_snapshot.json"
        log "PUTs without snapshot: $(cat "$R/put_without_snapshot.json")"
        sync
        make_tmpdir SNAP "$BENCH_TMPDIR"
        BENCH_DB=s2 BENCH_MODE=put BENCH_BODY_FILE="$W/doc.json" BENCH_ID_PREFIX="bench/snap-" \
            wrk -t "$threads" -c "$CLIENTS" -d "${DURATION}s" --timeout 30s -s "$BENCH_LIB/wrk_docs.lua" "$CORVID_URL" \
            >"$W/put_snap.out" 2>&1 & wrk_pid=$!
        sleep 1
        "$PY" "$SM" snapshot "$CORVID_URL" s2 "$SNAP/backup" >"$W/snap.json" || echo '{"status": "failed"}' >"$W/snap.json"
        wait $wrk_pid || true
        "$PY" "$BENCH_LIB/measure.py" merge "$W/snap.json" "database_bytes=$DBBYTES" "write_seconds=$DURATION" >"$R/snapshot.json"
        "$PY" "$BENCH_LIB/measure.py" wrk "$W/put_snap.out" >"$R/put_with_snapshot.json"
        log "snapshot: $(cat "$R/snapshot.json"); PUTs with it: $(cat "$R/put_with_snapshot.json")"
        rm -rf "$SNAP/backup"
    fi
    corvid_stop
    rm -rf "$CVD/data"
fi

# ---- PostgreSQL: COPY, pg_dump -Fc, pg_restore ------------------------------------------------------
if has postgres && has_step dump; then
    make_tmpdir PGD "$BENCH_TMPDIR"
    pg_start "$PGD"
    pg_psql -c "CREATE TABLE users(id text PRIMARY KEY, data jsonb)" -c "CREATE TABLE posts(id text PRIMARY KEY, data jsonb)" \
        -c "CREATE TABLE attachments(id text, name text, content_type text, content bytea, PRIMARY KEY (id, name))"
    pg_psql -c "\\copy users FROM '$S2_DATA/users.tsv'" -c "\\copy posts FROM '$S2_DATA/posts.tsv'" \
        -c "\\copy attachments FROM '$S2_DATA/attachments.tsv'" -c "CHECKPOINT"
    sync
    PGDUMP=$W/s2.pgdump
    [ "$(id -u)" = 0 ] && chown postgres "$W" 2>/dev/null || true
    pgargs=(-h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER")
    "$PY" "$SM" timed pg_dump -- "$PGBIN/pg_dump" "${pgargs[@]}" -Fc -f "$PGDUMP" postgres >"$W/pdump.json"
    "$PY" "$BENCH_LIB/measure.py" merge "$W/pdump.json" "dump_bytes=$(stat -c %s "$PGDUMP")" >"$R/pg_dump.json"
    log "pg_dump -Fc: $(cat "$R/pg_dump.json")"
    pg_psql -c "CREATE DATABASE restored"
    sync
    "$PY" "$SM" timed pg_restore -- "$PGBIN/pg_restore" "${pgargs[@]}" -j "$PG_RESTORE_JOBS" -d restored "$PGDUMP" >"$W/prestore.json"
    rows=$(psql -X -At "${pgargs[@]}" -d restored -c "SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM posts)")
    "$PY" "$BENCH_LIB/measure.py" merge "$W/prestore.json" "rows=$rows" "jobs=$PG_RESTORE_JOBS" >"$R/pg_restore.json"
    log "pg_restore: $(cat "$R/pg_restore.json")"
    rm -f "$PGDUMP"
    pg_stop
fi

cat >"$R/meta.json" <<EOF
{"date": "$STAMP", "mode": "$MODE", "commit": "$COMMIT", "binary": "$BINARY_DESC", "machine": "$(machine_desc)",
 "users": $USERS, "posts": $POSTS, "att_share": $ATT_SHARE, "att_bytes": $ATT_BYTES, "clients": $CLIENTS,
 "duration": $DURATION, "snapshot_min_gb": $SNAPSHOT_MIN_GB, "compression": "${COMPRESSION:-default}",
 "fs": "$(fs_of "$BENCH_TMPDIR") ($(fstype_of "$BENCH_TMPDIR"))", "loadavg": "$(cut -d' ' -f1-3 /proc/loadavg)"}
EOF
REPORT=$("$PY" "$BENCH_DIR/smuggler/report.py" "$R")
printf '\n%s\n' "$REPORT"
mkdir -p "$RESULTS_DIR/raw"
{ printf '\n'; printf '%s\n' "$REPORT"; } >>"$RESULTS_DIR/smuggler-$DATE.md"
tar -C "$R" -cf - . | (mkdir -p "$RESULTS_DIR/raw/smuggler-${STAMP//:/}" && tar -C "$RESULTS_DIR/raw/smuggler-${STAMP//:/}" -xf -)
log "appended to $RESULTS_DIR/smuggler-$DATE.md (raw JSON in $RESULTS_DIR/raw/smuggler-${STAMP//:/})"
