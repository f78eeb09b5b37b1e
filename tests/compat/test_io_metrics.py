"""I/O metrics (`/debug/io-metrics` and its live websocket) against a known write pattern, and the slow-I/O
notification (`--slow-io-threshold-ms`, `/notifications`, `/notification-center/dismiss`)."""

from __future__ import annotations

import json
import time
from urllib.parse import urlparse

import requests
import websocket

from corvid_support import CorvidServer, create_database, wait_until


def put(http, url, db, doc_id, body):
    r = http.put(f"{url}/databases/{db}/docs", params={"id": doc_id}, json={**body, "@metadata": {"@collection": "Users"}})
    assert r.status_code == 201, r.text


def io_metrics(http, url, db) -> dict:
    r = http.get(f"{url}/databases/{db}/debug/io-metrics")
    assert r.status_code == 200, r.text
    return r.json()


def events(environment: dict, kind: str) -> list:
    return [e for f in environment["Files"] for e in f["Recent"] if e["Type"] == kind]


def settle(http, url, db) -> None:
    """Waits for the database's one-time expiration backfill (a small merged write at its first opening), so
    the writes counted below are the test's own."""
    def done():
        return http.get(f"{url}/databases/{db}/debug/expiration").json()["Backfill"]["QueuedDocuments"] is not None

    assert wait_until(done, timeout=30)


def documents_environment(metrics: dict) -> dict:
    [environment] = [e for e in metrics["Environments"] if e["Type"] == "Documents"]
    return environment


def test_io_metrics_follow_a_known_write_pattern(http, server_url, db_name):
    settle(http, server_url, db_name)
    before = documents_environment(io_metrics(http, server_url, db_name))
    writes_before = len(events(before, "JournalWrite"))
    flushes_before = len(events(before, "DataFlush"))
    # Ten writes one after the other: ten merged commits, each a journal record and an LMDB commit, each
    # acknowledged after a journal sync.
    for i in range(10):
        put(http, server_url, db_name, f"users/{i}", {"Name": "x" * 1000})
    after = documents_environment(io_metrics(http, server_url, db_name))
    journal_writes = events(after, "JournalWrite")
    assert len(journal_writes) - writes_before == 10, journal_writes
    assert len(events(after, "DataFlush")) - flushes_before == 10
    new_writes = journal_writes[writes_before:]
    assert all(w["Size"] > 1000 for w in new_writes), new_writes
    syncs = events(after, "JournalSync")
    assert syncs, after
    # The journal files hold the records; the data file holds the commits.
    files = {f["File"]: f for f in after["Files"]}
    assert "data.mdb" in files
    assert any(name.startswith("journal/") and name.endswith(".journal") for name in files), files.keys()
    for event in journal_writes + syncs:
        assert event["Duration"] >= 0 and event["Start"].endswith("Z")

    # One batch of 200 documents: one record holding them all.
    commands = [
        {"Type": "PUT", "Id": f"batch/{i}", "Document": {"Name": "y" * 500, "@metadata": {"@collection": "Users"}}, "ChangeVector": None}
        for i in range(200)
    ]
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands})
    assert r.status_code == 201, r.text
    last = events(documents_environment(io_metrics(http, server_url, db_name)), "JournalWrite")[-1]
    assert last["Size"] > 200 * 500, last


def test_index_environments_record_their_commits(http, server_url, db_name):
    definition = {"Name": "Users/ByName", "Maps": ["map('Users', u => ({ Name: u.Name }))"], "Type": "JavaScriptMap"}
    r = http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [definition]})
    assert r.status_code in (200, 201), r.text
    for i in range(5):
        put(http, server_url, db_name, f"users/{i}", {"Name": f"n{i}"})

    def indexed():
        metrics = io_metrics(http, server_url, db_name)
        envs = [e for e in metrics["Environments"] if e["Type"] == "Index" and e["Index"] == "Users/ByName"]
        return envs and events(envs[0], "DataFlush")

    assert wait_until(indexed, timeout=30), io_metrics(http, server_url, db_name)

    # A map-reduce index keeps its entries and results in an LMDB store beside its tantivy files: both recorded.
    definition = {
        "Name": "Users/CountByName",
        "Maps": ["map('Users', u => ({ Name: u.Name, Count: 1 }))"],
        "Reduce": "groupBy(x => x.Name).aggregate(g => ({ Name: g.key, Count: g.values.reduce((a, v) => a + v.Count, 0) }))",
        "Type": "JavaScriptMapReduce",
    }
    r = http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [definition]})
    assert r.status_code in (200, 201), r.text

    def reduced():
        envs = [e for e in io_metrics(http, server_url, db_name)["Environments"] if e["Index"] == "Users/CountByName"]
        return any(e["Path"].endswith("map-reduce") and events(e, "DataSync") for e in envs) and len(envs) == 2

    assert wait_until(reduced, timeout=30), io_metrics(http, server_url, db_name)


def test_live_io_metrics_send_new_operations(http, server_url, db_name):
    settle(http, server_url, db_name)
    host = urlparse(server_url).netloc
    ws = websocket.create_connection(f"ws://{host}/databases/{db_name}/debug/io-metrics/live", timeout=10)
    try:
        first = json.loads(ws.recv())
        assert any(e["Type"] == "Documents" for e in first["Environments"])
        put(http, server_url, db_name, "users/live", {"Name": "live"})
        deadline = time.monotonic() + 10
        seen = []
        while not seen and time.monotonic() < deadline:
            frame = json.loads(ws.recv())
            seen = [e for env in frame["Environments"] for e in events(env, "JournalWrite")]
        assert len(seen) == 1, seen
    finally:
        ws.close()


def test_slow_io_is_logged_and_notified_until_dismissed(tmp_path):
    # A 1 ms threshold: writing a 24 MB batch to the journal takes longer than that on any disk.
    server = CorvidServer(tmp_path / "data", log_path=tmp_path / "server.log", extra_args=["--slow-io-threshold-ms", "1"])
    url = server.start()
    try:
        http = requests.Session()
        create_database(url, "slow")
        assert http.get(f"{url}/databases/slow/notifications").json() == {"Results": []}
        commands = [
            {"Type": "PUT", "Id": f"big/{i}", "Document": {"Blob": "z" * 200_000, "@metadata": {"@collection": "Big"}}, "ChangeVector": None}
            for i in range(120)
        ]
        r = http.post(f"{url}/databases/slow/bulk_docs", json={"Commands": commands})
        assert r.status_code == 201, r.text
        results = http.get(f"{url}/databases/slow/notifications").json()["Results"]
        assert len(results) == 1, results
        hint = results[0]
        assert (hint["Id"], hint["Type"], hint["HintType"], hint["Database"]) == ("PerformanceHint/SlowIO", "PerformanceHint", "SlowIO", "slow")
        writes = hint["Details"]["Writes"]
        assert any(w["Type"] == "JournalWrite" and w["DataWrittenInMb"] > 20 for w in writes.values()), writes
        assert "slow I/O" in server.log_text()
        r = http.post(f"{url}/databases/slow/notification-center/dismiss", params={"id": "PerformanceHint/SlowIO"})
        assert r.status_code == 204, r.text
        assert http.get(f"{url}/databases/slow/notifications").json() == {"Results": []}
        # Dismissing what is not there does nothing; a missing id is a 400 in RavenDB's error shape.
        assert http.post(f"{url}/databases/slow/notification-center/dismiss", params={"id": "Nope"}).status_code == 204
        r = http.post(f"{url}/databases/slow/notification-center/dismiss")
        assert r.status_code == 400 and "id" in r.json()["Message"]
    finally:
        server.stop()


def test_the_threshold_turns_off_with_zero(tmp_path):
    server = CorvidServer(tmp_path / "data", extra_args=["--slow-io-threshold-ms", "0"])
    url = server.start()
    try:
        http = requests.Session()
        create_database(url, "quiet")
        commands = [
            {"Type": "PUT", "Id": f"big/{i}", "Document": {"Blob": "z" * 200_000, "@metadata": {"@collection": "Big"}}, "ChangeVector": None}
            for i in range(60)
        ]
        assert http.post(f"{url}/databases/quiet/bulk_docs", json={"Commands": commands}).status_code == 201
        assert http.get(f"{url}/databases/quiet/notifications").json() == {"Results": []}
        assert events(documents_environment(io_metrics(http, url, "quiet")), "JournalWrite")
    finally:
        server.stop()
