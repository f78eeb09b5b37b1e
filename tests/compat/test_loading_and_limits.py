"""Lazy database loading (503 while one is loading, others unaffected) and the concurrent-request limit.

A testing setting (`--debug-slow-open prefix:ms`) makes databases whose name starts with the prefix take
that long to open, so the "still loading" path can be observed on a real server.
"""

from __future__ import annotations

import threading
import time

import requests

from corvid_support import assert_error_json, create_database, unique_db_name

SLOW_MS = 2500


def _restart_cold(server):
    """Restart so no database is open: the next request for each one opens it."""
    return server.restart(crash=False)


def test_slow_database_answers_503_while_others_serve(server_factory, http):
    server = server_factory(extra_args=["--debug-slow-open", f"slowdb:{SLOW_MS}", "--database-load-timeout-ms", "300"])
    url = server.url
    slow, fast = unique_db_name("slowdb"), unique_db_name("fastdb")
    create_database(url, slow)
    create_database(url, fast)
    time.sleep(SLOW_MS / 1000 + 0.5)  # the create itself starts opening; let it finish
    for db in (slow, fast):
        r = http.put(f"{url}/databases/{db}/docs?id=things/1", json={"db": db})
        assert r.status_code == 201, r.text
    url = _restart_cold(server)

    started = time.monotonic()
    r = http.get(f"{url}/databases/{slow}/docs?id=things/1")
    waited = time.monotonic() - started
    assert r.status_code == 503, r.text
    body = assert_error_json(r)
    assert "loading" in body["Message"].lower()
    assert waited < SLOW_MS / 1000, "the request gave up at the load timeout, not after the open"

    # Another database is served at once while the slow one is still opening.
    started = time.monotonic()
    r = http.get(f"{url}/databases/{fast}/docs?id=things/1")
    assert r.status_code == 200 and r.json()["Results"][0]["db"] == fast
    assert time.monotonic() - started < 1.0

    # The open was not cancelled by the request that gave up: it completes and the data is there.
    deadline = time.monotonic() + 10
    while True:
        r = http.get(f"{url}/databases/{slow}/docs?id=things/1")
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert r.status_code == 200, r.text
    assert r.json()["Results"][0]["db"] == slow


def test_requests_beyond_the_limit_get_server_too_busy(server_factory):
    server = server_factory(extra_args=["--debug-slow-open", f"busydb:{SLOW_MS}", "--max-concurrent-requests", "1"])
    url = server.url
    slow = unique_db_name("busydb")
    create_database(url, slow)
    time.sleep(SLOW_MS / 1000 + 0.5)
    url = _restart_cold(server)

    # One request holds the only slot while it waits for the slow database to open.
    holder = threading.Thread(target=lambda: requests.get(f"{url}/databases/{slow}/stats", timeout=30))
    holder.start()
    time.sleep(0.5)
    r = requests.get(f"{url}/build/version", timeout=10)
    assert r.status_code == 503, r.text
    body = assert_error_json(r)
    assert "too busy" in body["Message"].lower()
    assert r.headers.get("Retry-After") == "1"
    holder.join()
    # With the slot free again, the server serves normally.
    r = requests.get(f"{url}/build/version", timeout=10)
    assert r.status_code == 200
    metrics = requests.get(f"{url}/admin/metrics", timeout=10).json()
    assert metrics["Requests"]["RejectedTooBusy"] >= 1
