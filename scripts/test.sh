#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests, then the Python compatibility, crash and bad-input
# suites against a real `corvid serve` with the official RavenDB client (pinned in tests/compat), then the
# Node.js compatibility suite with the official `ravendb` npm package (pinned in tests/compat-node).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== lint"
# No two files of a crate import each other, directly or through others (issue 17).
python3 scripts/import_loops.py
cargo fmt --all -- --check
cargo clippy --release --all-targets --locked -- -D warnings

echo "== build"
cargo build --release --locked

echo "== rust tests"
cargo test --release --locked --workspace

echo "== browser for the Studio tests (Debian's chromium and chromium-driver)"
# CI machines start with only what this script installs; the Studio's browser tests must run there too.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver
fi
# The Studio-over-HTTPS tests (test_studio_https.py) give the browser a client certificate: certutil and
# pk12util fill its NSS database, and a managed policy lets Chromium send the tests' certificate unasked
# (the same text as tests/compat/studio_client_certificates.py writes; it only matches the tests' own CA).
if ! command -v certutil >/dev/null || ! command -v pk12util >/dev/null; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libnss3-tools
fi
studio_policy=/etc/chromium/policies/managed/corvid-studio-tests.json
studio_policy_text='{"AutoSelectCertificateForUrls": ["{\"pattern\": \"https://127.0.0.1:*\", \"filter\": {\"ISSUER\": {\"CN\": \"Corvid Studio Test CA\"}}}"]}'
if [ "$(cat "$studio_policy" 2>/dev/null)" != "$studio_policy_text" ]; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" mkdir -p "$(dirname "$studio_policy")"
    printf '%s' "$studio_policy_text" | "${as_root[@]}" tee "$studio_policy" >/dev/null
fi

echo "== compatibility tests (official ravendb client)"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/compat/requirements.txt
# pytest exits 5 when it collected nothing: that is a failure too.
# The Studio's browser tests run in a process of their own (one browser start, their screenshots and the
# benchmark together). They also pass after the rest of the suite in one process: the old failure there was
# the official client's shared default metadata in BulkInsertOperation.store_as (see test_studio.py).
# The benchmark (test_studio_bench.py) writes target/studio-bench.json.
studio_tests=(tests/compat/test_studio.py tests/compat/test_studio_views.py tests/compat/test_studio_https.py
    tests/compat/test_studio_accessibility.py tests/compat/test_studio_bench.py)
.venv/bin/python -m pytest "${studio_tests[@]}" -q "$@"
.venv/bin/python -m pytest tests/compat -q "${studio_tests[@]/#/--ignore=}" "$@"

echo "== compatibility tests (official ravendb Node.js client)"
(
    cd tests/compat-node
    # Install the pinned client only when node_modules is missing or was installed from another lock file.
    if ! cmp -s package-lock.json node_modules/.corvid-installed-lock 2>/dev/null; then
        npm ci --no-audit --no-fund --loglevel=error
        cp package-lock.json node_modules/.corvid-installed-lock
    fi
    report=$(mktemp)
    trap 'rm -f "$report"' EXIT
    node --test test/ | tee "$report"
    # node --test passes when it finds no tests: that is a failure too.
    grep -q '^# pass [1-9]' "$report" || { echo "no Node.js compatibility test passed" >&2; exit 1; }
)
