"""Slow clients: partial headers and bodies are dropped after their timeouts instead of holding request slots,
and SIGTERM with such requests open exits within the shutdown timeout, closing the databases cleanly."""

from __future__ import annotations

import re
import socket
import time
from urllib.parse import urlparse

import requests

from corvid_support import assert_error_json, create_database, doc_url, unique_db_name

SHORT_TIMEOUTS = ["--request-header-timeout-ms", "1000", "--request-body-timeout-ms", "1000"]


def _connect(url: str) -> socket.socket:
    parsed = urlparse(url)
    return socket.create_connection((parsed.hostname, parsed.port), timeout=10)


def _partial_put(url: str, path: str, sent: int = 10, declared: int = 1000) -> socket.socket:
    """A PUT whose headers are complete but whose body stops after `sent` of `declared` bytes."""
    s = _connect(url)
    head = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    s.sendall(head.encode() + b"{" + b" " * (sent - 1))
    return s


def _read_until_closed(s: socket.socket, timeout: float) -> bytes:
    """Everything the server sends until it closes the connection (or `timeout` passes)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except socket.timeout:
        raise AssertionError(f"the server kept the connection open for {timeout}s; received {data[:300]!r}")


def test_partial_bodies_are_dropped_and_free_their_slots(server_factory):
    server = server_factory(extra_args=["--max-concurrent-requests", "3", *SHORT_TIMEOUTS])
    url = server.url
    db = unique_db_name("slowbody")
    create_database(url, db)
    slow = [_partial_put(url, f"/databases/{db}/docs?id=slow/{i}") for i in range(3)]
    time.sleep(0.3)
    # Every slot is taken by a request waiting for its body.
    r = requests.get(f"{url}/build/version", timeout=10)
    assert r.status_code == 503, r.text

    for s in slow:
        answer = _read_until_closed(s, timeout=5)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
        assert b"TimeoutException" in answer and b"too slowly" in answer, answer[-500:]
        s.close()
    r = requests.get(f"{url}/build/version", timeout=10)
    assert r.status_code == 200, r.text
    # Nothing of the cut-off bodies was written.
    for i in range(3):
        assert requests.get(doc_url(url, db, f"slow/{i}"), timeout=10).status_code == 404


def test_a_body_trickling_below_the_minimum_rate_gets_408(server_factory):
    server = server_factory(extra_args=[*SHORT_TIMEOUTS, "--request-body-min-rate", "100"])
    url = server.url
    db = unique_db_name("trickle")
    create_database(url, db)
    s = _partial_put(url, f"/databases/{db}/docs?id=trickle/1", sent=1, declared=1000)
    started = time.monotonic()
    s.settimeout(0.1)
    answer = b""
    # One byte every 100 ms (10 bytes/s) never stops for a whole window, but stays below 100 bytes/s.
    while time.monotonic() - started < 5:
        try:
            s.sendall(b" ")
        except OSError:
            break
        try:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        except socket.timeout:
            pass
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert time.monotonic() - started < 3, "dropped at the first window, not later"
    s.close()
    r = requests.put(doc_url(url, db, "fast/1"), json={"ok": True}, timeout=10)
    assert r.status_code == 201, r.text


def test_partial_headers_are_dropped(server_factory):
    server = server_factory(extra_args=SHORT_TIMEOUTS)
    s = _connect(server.url)
    s.sendall(b"GET /build/version HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    _read_until_closed(s, timeout=5)
    assert time.monotonic() - started < 3
    s.close()
    assert requests.get(f"{server.url}/build/version", timeout=10).status_code == 200


def test_a_slow_client_is_not_dropped_while_the_body_keeps_the_rate(server_factory):
    """A body sent in pieces with pauses shorter than the window, above the minimum rate, is accepted."""
    server = server_factory(extra_args=SHORT_TIMEOUTS)
    url = server.url
    db = unique_db_name("steady")
    create_database(url, db)
    body = b'{"name": "' + b"x" * 600 + b'"}'
    s = _connect(url)
    s.sendall(f"PUT /databases/{db}/docs?id=steady/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n".encode())
    for i in range(0, len(body), 150):
        s.sendall(body[i : i + 150])
        time.sleep(0.3)  # 500 bytes/s for 1.5 s: longer than the 1 s window, above 240 bytes/s
    s.settimeout(10)
    answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 201"), answer[:300]
    s.close()


def test_sigterm_with_partial_requests_open_exits_within_the_shutdown_timeout(server_factory):
    server = server_factory(extra_args=["--shutdown-timeout-ms", "2000"])
    url = server.url
    db = unique_db_name("shutdown")
    create_database(url, db)
    r = requests.put(doc_url(url, db, "kept/1"), json={"written": "before"}, timeout=10)
    assert r.status_code == 201, r.text
    slow = [_partial_put(url, f"/databases/{db}/docs?id=partial/{i}") for i in range(4)]
    idle = _connect(url)  # an idle keep-alive connection is closed at once
    time.sleep(0.3)

    started = time.monotonic()
    code = server.stop(timeout=15)
    took = time.monotonic() - started
    assert code == 0, server.log_text()[-3000:]
    assert took < 3.0, f"shutdown took {took:.1f}s with a 2 s shutdown timeout"
    log = server.log_text()
    assert re.search(r"all databases closed", log), log[-3000:]
    for s in [*slow, idle]:
        s.close()

    url = server.start()
    r = requests.get(doc_url(url, db, "kept/1"), timeout=10)
    assert r.status_code == 200 and r.json()["Results"][0]["written"] == "before", r.text
    for i in range(4):
        assert requests.get(doc_url(url, db, f"partial/{i}"), timeout=10).status_code == 404
    assert_error_json(requests.get(f"{url}/databases/{db}/no-such-route", timeout=10))
