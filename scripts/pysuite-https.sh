#!/usr/bin/env bash
# Runs the official Python client suite's HTTPS modules against this work tree's corvid binary.
#
# The suite's secured tests read four environment variables (ravendb/tests/test_base.py,
# TestSecuredServiceLocator): the HTTPS URL, the server's PFX, the client's PEM (certificate and key, made a
# well-known admin by ravendb-embedded) and the CA the client trusts. This script makes a throw-away CA,
# server and client certificate with openssl, then runs each module alone under the machine's pysuite lock
# (the suite's servers use fixed TCP ports and the default data directory).
#
#   scripts/pysuite-https.sh [module ...]      defaults: the modules that use the secured server (HTTPS,
#                                              secured subscriptions, the Changes API over HTTPS)
# Environment: SUITE (the suite's checkout), VENV (its venv), WORK (where certificates and the binary copy go),
#              CORVID (the binary), HTTPS_PORT, TIMEOUT (seconds per module).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUITE=${SUITE:-/work/pysuite/suite}
VENV=${VENV:-/work/pysuite/venv}
WORK=${WORK:-/tmp/$(basename "$ROOT")-pysuite-https}
CORVID=${CORVID:-$ROOT/target/release/corvid}
HTTPS_PORT=${HTTPS_PORT:-38443}
TIMEOUT=${TIMEOUT:-300}
MODULES=("$@")
if [ ${#MODULES[@]} -eq 0 ]; then
  MODULES=(
    ravendb.tests.jvm_migrated_tests.https_tests.test_https
    ravendb.tests.jvm_migrated_tests.client_tests.subscriptions_tests.test_secured_subscription_basic
    ravendb.tests.jvm_migrated_tests.server_tests.documents.notifications.test_changes
  )
fi

mkdir -p "$WORK/server" "$WORK/certs"
certs=$WORK/certs

# ravendb-embedded starts "Raven.Server" from the directory it is given; it gets a copy of the binary alone.
cp "$CORVID" "$WORK/server/Raven.Server"

make_certificates() {
  local days=30
  openssl req -x509 -newkey rsa:2048 -nodes -days $days -subj "/CN=Corvid pysuite test CA" \
    -keyout "$certs/ca.key" -out "$certs/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  # The server: localhost and 127.0.0.1, as a PFX (Security.Certificate.Path) without a password.
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$certs/server.key" -out "$certs/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' >"$certs/server.ext"
  openssl x509 -req -in "$certs/server.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" -CAcreateserial -days $days \
    -extfile "$certs/server.ext" -out "$certs/server.crt" 2>/dev/null
  openssl pkcs12 -export -inkey "$certs/server.key" -in "$certs/server.crt" -certfile "$certs/ca.pem" \
    -passout pass: -out "$certs/server.pfx"
  # The client: certificate and key in one PEM, allowed for TLS client authentication.
  openssl req -newkey rsa:2048 -nodes -subj "/CN=pysuite admin" -keyout "$certs/client.key" -out "$certs/client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' >"$certs/client.ext"
  openssl x509 -req -in "$certs/client.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" -CAcreateserial -days $days \
    -extfile "$certs/client.ext" -out "$certs/client.crt" 2>/dev/null
  cat "$certs/client.key" "$certs/client.crt" >"$certs/client.pem"
}
make_certificates

export RAVENDB_PYTHON_TEST_SERVER_PATH=$WORK/server/Raven.Server
export RAVENDB_PYTHON_TEST_HTTPS_SERVER_URL=https://127.0.0.1:$HTTPS_PORT
export RAVENDB_PYTHON_TEST_SERVER_CERTIFICATE_PATH=$certs/server.pfx
export RAVENDB_PYTHON_TEST_CLIENT_CERTIFICATE_PATH=$certs/client.pem
export RAVENDB_PYTHON_TEST_CA_PATH=$certs/ca.pem
# requests lets these override a session's `verify` (the client's trust_store_path): the suite's CA must win.
unset REQUESTS_CA_BUNDLE CURL_CA_BUNDLE

status=0
cd "$SUITE"
for module in "${MODULES[@]}"; do
  echo "== $module"
  flock /tmp/pysuite.lock timeout "$TIMEOUT" nice -n 19 "$VENV/bin/python" -m unittest -v "$module" 2>&1 |
    tee "$WORK/$(echo "$module" | tr . _).log" | grep -E "^(test_|Ran |OK|FAILED)|\.\.\. " || true
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit $status
