#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests, then the Python compatibility, crash and bad-input
# suites against a real `corvid serve` with the official RavenDB client (pinned in tests/compat).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== lint"
cargo fmt --all -- --check
cargo clippy --release --all-targets --locked -- -D warnings

echo "== build"
cargo build --release --locked

echo "== rust tests"
cargo test --release --locked --workspace

echo "== compatibility tests (official ravendb client)"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/compat/requirements.txt
# pytest exits 5 when it collected nothing: that is a failure too.
.venv/bin/python -m pytest tests/compat -q "$@"
