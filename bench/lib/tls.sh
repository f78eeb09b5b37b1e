# TLS for the HTTPS benchmark. Source after common.sh and corvid.sh.
#   tls_make_certificates DIR      a CA, a server certificate for 127.0.0.1/localhost (PEM, key inside:
#                                  server.pem; also server.crt/server.key for PostgreSQL) and a client
#                                  certificate (client.pem, key inside); sets TLS_CLIENT_THUMBPRINT
#   tls_client_shim DIR            builds lib/tls_client_certificate.c into DIR; prints the LD_PRELOAD
#                                  value that makes wrk present client.crt (BENCH_TLS_CERT/BENCH_TLS_KEY)
#   corvid_https_start DATADIR     like corvid_start, over HTTPS with server.pem and client.pem as admin;
#                                  sets CORVID_HTTPS_URL, CORVID_HTTPS_PID, CORVID_HTTPS_LOG
#   corvid_https_curl ARGS...      curl with the CA and the client certificate
# wrk has no option for a client certificate (and OPENSSL_CONF's system-wide section refuses certificate
# commands), so a preloaded shim gives its SSL contexts one.

TLS_DIR=""
CORVID_HTTPS_URL=""
CORVID_HTTPS_PID=""
CORVID_HTTPS_LOG=""

tls_make_certificates() {
    TLS_DIR=$1
    mkdir -p "$TLS_DIR"
    local d=$TLS_DIR
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=Corvid bench CA" -keyout "$d/ca.key" -out "$d/ca.pem" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$d/server.ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
        -extfile "$d/server.ext" -out "$d/server.crt" 2>/dev/null
    cat "$d/server.crt" "$d/server.key" >"$d/server.pem"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=bench client" -keyout "$d/client.key" -out "$d/client.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' >"$d/client.ext"
    openssl x509 -req -in "$d/client.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
        -extfile "$d/client.ext" -out "$d/client.crt" 2>/dev/null
    cat "$d/client.key" "$d/client.crt" >"$d/client.pem"
    TLS_CLIENT_THUMBPRINT=$(openssl x509 -in "$d/client.crt" -noout -fingerprint -sha1 | sed 's/.*=//; s/://g')
    [ -n "$TLS_CLIENT_THUMBPRINT" ] || die "could not make the benchmark's certificates in $d"
}

tls_client_shim() {
    command -v cc >/dev/null 2>&1 || apt_install gcc libc6-dev
    cc -shared -fPIC -O2 -o "$1/tls_client_certificate.so" "$BENCH_LIB/tls_client_certificate.c" -ldl \
        || die "cannot build the client-certificate shim for wrk"
    echo "$1/tls_client_certificate.so"
}

corvid_https_start() {
    local dir=$1 i line
    mkdir -p "$dir/data"
    CORVID_HTTPS_LOG="$dir/corvid.log"
    "$BENCH_CORVID_BIN" serve --url https://127.0.0.1:0 --data-dir "$dir/data" --certificate-path "$TLS_DIR/server.pem" \
        --well-known-admin-certificates "$TLS_CLIENT_THUMBPRINT" ${BENCH_CORVID_ARGS:-} >"$CORVID_HTTPS_LOG" 2>&1 &
    CORVID_HTTPS_PID=$!
    on_exit corvid_https_stop
    for i in $(seq 1 300); do
        line=$(grep -m1 -o 'Server available on: https://[^[:space:]]*' "$CORVID_HTTPS_LOG" 2>/dev/null || true)
        if [ -n "$line" ]; then CORVID_HTTPS_URL=${line#Server available on: }; break; fi
        kill -0 "$CORVID_HTTPS_PID" 2>/dev/null || { tail -20 "$CORVID_HTTPS_LOG" >&2; die "Corvid (HTTPS) exited during startup"; }
        sleep 0.1
    done
    [ -n "$CORVID_HTTPS_URL" ] || { tail -20 "$CORVID_HTTPS_LOG" >&2; die "Corvid (HTTPS) did not start within 30 s"; }
    CORVID_HTTPS_URL=${CORVID_HTTPS_URL%/}
    log "Corvid (HTTPS) up at $CORVID_HTTPS_URL (pid $CORVID_HTTPS_PID, data $dir/data)"
}

corvid_https_stop() {
    [ -n "$CORVID_HTTPS_PID" ] || return 0
    if kill -0 "$CORVID_HTTPS_PID" 2>/dev/null; then
        kill -TERM "$CORVID_HTTPS_PID" 2>/dev/null
        local i
        for i in $(seq 1 150); do kill -0 "$CORVID_HTTPS_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$CORVID_HTTPS_PID" 2>/dev/null && kill -KILL "$CORVID_HTTPS_PID" 2>/dev/null
        wait "$CORVID_HTTPS_PID" 2>/dev/null
        log "Corvid (HTTPS) stopped"
    fi
    CORVID_HTTPS_PID=""
}

corvid_https_curl() { curl -s --cacert "$TLS_DIR/ca.pem" --cert "$TLS_DIR/client.pem" "$@"; }
