# Start/stop a Corvid server for benchmarks. Source after common.sh.
# Note: corvid reads every CORVID_<NAME> environment variable as a setting and refuses to start on
# unknown ones, so the knobs here are BENCH_CORVID_BIN / BENCH_CORVID_ARGS, never CORVID_*.
#   corvid_start DATADIR       starts $BENCH_CORVID_BIN on a free loopback port; sets CORVID_URL, CORVID_PID
#   corvid_stop                SIGTERM, then SIGKILL after 15 s (idempotent)
#   corvid_create_db NAME      PUT /admin/databases?name=NAME (expects 201; 409 = exists is accepted)
#   corvid_metrics FILE        GET /admin/metrics into FILE (returns non-zero unless 200)
#   corvid_probe METHOD PATH [BODYFILE]   one request with curl; prints "HTTP <code> <first 300 bytes>"

BENCH_CORVID_BIN=${BENCH_CORVID_BIN:-$REPO_DIR/target/release/corvid}
CORVID_URL=""
CORVID_PID=""
CORVID_LOG=""

corvid_start() {
    local dir=$1 i line
    [ -x "$BENCH_CORVID_BIN" ] || die "Corvid binary not found: $BENCH_CORVID_BIN (build it with cargo build --release)"
    mkdir -p "$dir/data"
    CORVID_LOG="$dir/corvid.log"
    "$BENCH_CORVID_BIN" serve --url http://127.0.0.1:0 --data-dir "$dir/data" ${BENCH_CORVID_ARGS:-} >"$CORVID_LOG" 2>&1 &
    CORVID_PID=$!
    on_exit corvid_stop
    for i in $(seq 1 300); do
        line=$(grep -m1 -o 'Server available on: http://[^[:space:]]*' "$CORVID_LOG" 2>/dev/null || true)
        if [ -n "$line" ]; then CORVID_URL=${line#Server available on: }; break; fi
        kill -0 "$CORVID_PID" 2>/dev/null || { tail -20 "$CORVID_LOG" >&2; die "Corvid exited during startup"; }
        sleep 0.1
    done
    [ -n "$CORVID_URL" ] || { tail -20 "$CORVID_LOG" >&2; die "Corvid did not print 'Server available on:' within 30 s"; }
    CORVID_URL=${CORVID_URL%/}
    log "Corvid up at $CORVID_URL (pid $CORVID_PID, data $dir/data)"
}

corvid_stop() {
    [ -n "$CORVID_PID" ] || return 0
    if kill -0 "$CORVID_PID" 2>/dev/null; then
        kill -TERM "$CORVID_PID" 2>/dev/null
        local i
        for i in $(seq 1 150); do kill -0 "$CORVID_PID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$CORVID_PID" 2>/dev/null; then
            log "Corvid did not exit on SIGTERM within 15 s; SIGKILL"
            kill -KILL "$CORVID_PID" 2>/dev/null
        fi
        wait "$CORVID_PID" 2>/dev/null
        log "Corvid stopped"
    fi
    CORVID_PID=""
}

corvid_create_db() {
    local name=$1 code
    code=$(curl -s -o "${BENCH_WORK:-/tmp}/createdb.out" -w '%{http_code}' -X PUT \
        "$CORVID_URL/admin/databases?name=$name" -H 'Content-Type: application/json' \
        -d "{\"DatabaseName\":\"$name\"}")
    case $code in
        201) log "Corvid database '$name' created" ;;
        409) log "Corvid database '$name' already exists (409)" ;;
        *) die "PUT /admin/databases?name=$name -> HTTP $code: $(head -c 300 "${BENCH_WORK:-/tmp}/createdb.out")" ;;
    esac
}

corvid_metrics() {
    local code
    code=$(curl -s -o "$1" -w '%{http_code}' "$CORVID_URL/admin/metrics")
    [ "$code" = 200 ]
}

corvid_probe() {
    local method=$1 path=$2 body=${3:-} out code
    out=$(mktemp)
    if [ -n "$body" ]; then
        code=$(curl -s -o "$out" -w '%{http_code}' -X "$method" "$CORVID_URL$path" \
            -H 'Content-Type: application/json' --data-binary "@$body")
    else
        code=$(curl -s -o "$out" -w '%{http_code}' -X "$method" "$CORVID_URL$path")
    fi
    printf 'HTTP %s %s\n' "$code" "$(head -c 300 "$out" | tr '\n' ' ')"
    rm -f "$out"
}
