"""The request log: one line per request with number, method, duration, status and URL."""

from __future__ import annotations

import re
import socket
import time
import uuid
from urllib.parse import urlparse

import requests

from corvid_support import CorvidServer, create_database, unique_db_name

LINE_RE = r"Request #\s*(\d+): {method}\s+-\s+(\d+) ms - {status} - {path}"


def _wait_for_lines(server: CorvidServer, pattern: str, count: int = 1, timeout: float = 5.0) -> list[re.Match]:
    deadline = time.monotonic() + timeout
    while True:
        matches = list(re.finditer(pattern, server.log_text()))
        if len(matches) >= count or time.monotonic() > deadline:
            return matches
        time.sleep(0.1)


def test_request_log_line_for_build_version(corvid_server, http):
    """GET /build/version appears in the log as `Request #N: GET - <ms> ms - 200 - /build/version`."""
    before = len(re.findall(LINE_RE.format(method="GET", status=200, path=re.escape("/build/version")),
                            corvid_server.log_text()))
    for _ in range(2):
        assert http.get(f"{corvid_server.url}/build/version").status_code == 200
    pattern = LINE_RE.format(method="GET", status=200, path=re.escape("/build/version"))
    matches = _wait_for_lines(corvid_server, pattern, before + 2)
    assert len(matches) >= before + 2, f"no request-log line matching {pattern!r}; log tail:\n{corvid_server.log_text()[-2000:]}"
    numbers = [int(m.group(1)) for m in matches[-2:]]
    assert numbers[1] > numbers[0], f"request numbers must grow: {numbers}"


def test_request_log_records_status_and_query(corvid_server, http, db_name):
    """A 404 load shows its status and the URL with its query string; a PUT is logged with 201."""
    marker = uuid.uuid4().hex
    url = f"{corvid_server.url}/databases/{db_name}/docs?id=missing-{marker}"
    assert http.get(url).status_code == 404
    m404 = _wait_for_lines(
        corvid_server, LINE_RE.format(method="GET", status=404, path=rf"/databases/{db_name}/docs\?id=missing-{marker}")
    )
    assert m404, f"no 404 line for {url}; log tail:\n{corvid_server.log_text()[-2000:]}"

    r = http.put(f"{corvid_server.url}/databases/{db_name}/docs?id=logged-{marker}", json={"a": 1})
    assert r.status_code == 201
    m201 = _wait_for_lines(
        corvid_server, LINE_RE.format(method="PUT", status=201, path=rf"/databases/{db_name}/docs\?id=logged-{marker}")
    )
    assert m201, f"no 201 PUT line; log tail:\n{corvid_server.log_text()[-2000:]}"


def test_slow_only_request_log(server_factory):
    """With --log-requests-slower-than-ms, fast requests are not logged and slow ones are."""
    server = server_factory(extra_args=["--log-requests-slower-than-ms", "250"])
    db = unique_db_name("slowlog")
    create_database(server.url, db)
    for _ in range(3):
        assert requests.get(f"{server.url}/build/version", timeout=10).status_code == 200
    # A PUT whose body arrives in two parts 400 ms apart takes at least that long.
    marker = uuid.uuid4().hex
    parsed = urlparse(server.url)
    body = b'{"slow": true}'
    with socket.create_connection((parsed.hostname, parsed.port), timeout=10) as s:
        s.sendall(f"PUT /databases/{db}/docs?id=slow-{marker} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:5])
        time.sleep(0.4)
        s.sendall(body[5:])
        assert s.recv(65536).startswith(b"HTTP/1.1 201")
    slow = _wait_for_lines(server, LINE_RE.format(method="PUT", status=201, path=rf"/databases/{db}/docs\?id=slow-{marker}"))
    assert slow, f"no line for the slow PUT; log tail:\n{server.log_text()[-2000:]}"
    assert int(slow[0].group(2)) >= 250
    fast = re.findall(LINE_RE.format(method="GET", status=200, path=re.escape("/build/version")), server.log_text())
    assert fast == [], "fast requests must not be logged in slow-only mode"
