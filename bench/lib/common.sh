# Shared helpers for the Corvid benchmark scripts. Source it; do not execute it.
# Provides: logging, dependency installation, a temp-dir registry with cleanup,
# the disk-regime probe and small /proc helpers.

BENCH_DIR=${BENCH_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BENCH_LIB="$BENCH_DIR/lib"
REPO_DIR=${REPO_DIR:-$(cd "$BENCH_DIR/.." && pwd)}
PY=${PY:-python3}

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { log "ERROR: $*"; exit 1; }

# ---- dependencies -----------------------------------------------------------
_apt_updated=0
apt_install() {
    [ "$(id -u)" = 0 ] || die "need root to apt-get install $*"
    if [ $_apt_updated = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || true
        _apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}
ensure_wrk()   { command -v wrk >/dev/null 2>&1 || apt_install wrk; }
ensure_curl()  { command -v curl >/dev/null 2>&1 || apt_install curl; }
ensure_python() {
    "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' 2>/dev/null \
        || die "python3 >= 3.9 required (PY=$PY)"
}

# ---- cleanup registry -------------------------------------------------------
# Functions registered here run (in reverse order) from the EXIT trap.
_cleanup_fns=()
on_exit() { _cleanup_fns+=("$*"); }
_run_cleanup() {
    local rc=$? i
    trap - EXIT INT TERM
    for ((i=${#_cleanup_fns[@]}-1; i>=0; i--)); do
        eval "${_cleanup_fns[$i]}" || true
    done
    exit $rc
}
install_cleanup_trap() {
    trap _run_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# make_tmpdir VAR [parent]  -> creates a temp dir, removes it on exit unless KEEP_TMP=1
make_tmpdir() {
    local __var=$1 parent=${2:-${BENCH_TMPDIR:-/tmp}} d
    mkdir -p "$parent"
    d=$(mktemp -d "$parent/corvid-bench.XXXXXX") || die "mktemp failed in $parent"
    printf -v "$__var" '%s' "$d"
    if [ "${KEEP_TMP:-0}" != 1 ]; then on_exit "rm -rf '$d'"; fi
}

# ---- machine / disk ---------------------------------------------------------
# disk_probe DIR [COUNT] -> prints durable 4 KiB writes per second (dd oflag=dsync)
disk_probe() {
    local dir=$1 count=${2:-2000} f out secs
    f="$dir/.dsync-probe.$$"
    out=$(LC_ALL=C dd if=/dev/zero of="$f" bs=4k count="$count" oflag=dsync 2>&1 >/dev/null | tail -1)
    rm -f "$f"
    # "8192000 bytes (8.2 MB, 7.8 MiB) copied, 0.5 s, 16 MB/s"
    secs=$(printf '%s' "$out" | sed -n 's/.* copied, \([0-9.e+-]*\) s,.*/\1/p')
    [ -n "$secs" ] || { echo 0; return; }
    awk -v c="$count" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f\n", c / s }'
}
disk_regime() { if [ "${1:-0}" -gt 2000 ]; then echo fast; else echo slow; fi; }
fs_of() { df -P "$1" | awk 'NR==2 {print $1}'; }
fstype_of() { df -PT "$1" | awk 'NR==2 {print $2}'; }

git_commit() {
    local c
    c=$(git -C "$REPO_DIR" rev-parse --short=12 HEAD 2>/dev/null) || c="(no commit)"
    if [ -n "$(git -C "$REPO_DIR" status --porcelain --untracked-files=no 2>/dev/null)" ]; then c="$c+dirty"; fi
    echo "$c"
}
machine_desc() {
    local cpus mem model
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)
    model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
    echo "${cpus} vCPU (${model:-unknown}), ${mem} RAM, $(uname -sr)"
}

wait_port_free() {   # wait_port_free PORT -> fails if something listens on it
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 1; fi
    return 0
}
