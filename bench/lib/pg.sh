# Private PostgreSQL cluster on loopback for benchmarks. Source after common.sh.
#   pg_start DIR      initdb + start in DIR (DIR must exist; owned by postgres after this)
#   pg_stop           fast shutdown (idempotent)
#   pg_psql ARGS...   psql against the private cluster (ON_ERROR_STOP)
#   pg_postmaster_pid
# Settings: durable (fsync=on, synchronous_commit=on, full_page_writes=on), plus enough
# shared_buffers and max_wal_size that checkpoints do not dominate a short run.
# Override/extend with PG_EXTRA_CONF (lines appended to postgresql.conf).

PG_VERSION=${PG_VERSION:-15}
PGBIN=${PGBIN:-/usr/lib/postgresql/$PG_VERSION/bin}
PG_PORT=${PG_PORT:-55432}
PG_HOST=127.0.0.1
PG_USER=postgres
PG_DIR=""

ensure_postgres() {
    if [ ! -x "$PGBIN/postgres" ] || ! command -v pgbench >/dev/null 2>&1; then
        apt_install postgresql postgresql-contrib
    fi
    [ -x "$PGBIN/postgres" ] || die "PostgreSQL $PG_VERSION not found in $PGBIN"
    PGBENCH=${PGBENCH:-$PGBIN/pgbench}
    [ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench)
}

_pg_su() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi; }

pg_start() {
    PG_DIR=$1
    [ -d "$PG_DIR" ] || die "pg_start: $PG_DIR does not exist"
    wait_port_free "$PG_PORT" || die "port $PG_PORT already in use (set PG_PORT)"
    [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
    _pg_su "$PGBIN/initdb -D '$PG_DIR/data' -U $PG_USER --auth=trust -E UTF8 --no-sync" >"$PG_DIR/initdb.log" 2>&1 \
        || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
    cat >>"$PG_DIR/data/postgresql.conf" <<CONF
# --- corvid bench ---
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
max_connections = ${PG_MAX_CONNECTIONS:-400}
fsync = on
synchronous_commit = on
full_page_writes = on
shared_buffers = ${PG_SHARED_BUFFERS:-2GB}
max_wal_size = ${PG_MAX_WAL_SIZE:-8GB}
checkpoint_timeout = 15min
log_min_messages = warning
${PG_EXTRA_CONF:-}
CONF
    on_exit pg_stop
    _pg_su "$PGBIN/pg_ctl -D '$PG_DIR/data' -l '$PG_DIR/log' -w -t 60 start" >/dev/null \
        || { tail -20 "$PG_DIR/log" >&2; die "PostgreSQL failed to start"; }
    log "PostgreSQL $PG_VERSION up on $PG_HOST:$PG_PORT (data $PG_DIR/data)"
}

pg_stop() {
    [ -n "$PG_DIR" ] && [ -f "$PG_DIR/data/postmaster.pid" ] || return 0
    _pg_su "$PGBIN/pg_ctl -D '$PG_DIR/data' -m fast -w -t 60 stop" >/dev/null 2>&1 \
        || { log "pg_ctl stop failed; killing postmaster"; kill -9 "$(pg_postmaster_pid)" 2>/dev/null; }
    log "PostgreSQL stopped"
}

pg_postmaster_pid() { head -1 "$PG_DIR/data/postmaster.pid" 2>/dev/null; }

pg_psql() { psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres "$@"; }

# pg_run_pgbench OUTPREFIX ARGS...  -> runs pgbench against the private cluster, stdout+stderr to OUTPREFIX.out
pg_run_pgbench() {
    local out=$1; shift
    "$PGBENCH" -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -n "$@" postgres >"$out.out" 2>&1
}
