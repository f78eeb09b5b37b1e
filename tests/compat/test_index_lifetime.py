"""Automatic indexes that nobody queries are marked Idle, then deleted (times shortened by settings)."""

from __future__ import annotations

import time

from corvid_support import create_database, unique_db_name


def _index_states(http, url, db):
    stats = http.get(f"{url}/databases/{db}/indexes/stats").json()["Results"]
    return {s["Name"]: s["State"] for s in stats}


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def test_unqueried_auto_index_goes_idle_then_is_deleted(server_factory, http):
    server = server_factory(extra_args=["--auto-index-idle-after-ms", "1500", "--auto-index-delete-after-ms", "1500"])
    url, db = server.url, unique_db_name("idle")
    create_database(url, db)
    r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": [
        {"Id": f"users/{i}", "ChangeVector": None, "Type": "PUT", "Document": {"Name": f"n{i}", "@metadata": {"@collection": "Users"}}}
        for i in range(10)
    ]})
    assert r.status_code == 201
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": "from Users where Name = 'n3'", "WaitForNonStaleResults": True})
    assert r.status_code == 200 and r.json()["TotalResults"] == 1
    name = r.json()["IndexName"]
    assert name == "Auto/Users/ByName"
    assert _index_states(http, url, db)[name] == "Normal"

    assert _wait_for(lambda: _index_states(http, url, db).get(name) == "Idle"), "the unqueried index becomes Idle"
    assert _wait_for(lambda: name not in _index_states(http, url, db)), "the idle index is deleted"
    # A new query simply creates it again (waiting for it: a busy machine may not have built it at once).
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": "from Users where Name = 'n4'", "WaitForNonStaleResults": True})
    assert r.json()["TotalResults"] == 1 and r.json()["IndexName"] == name


def test_querying_keeps_an_index_alive(server_factory, http):
    server = server_factory(extra_args=["--auto-index-idle-after-ms", "1500", "--auto-index-delete-after-ms", "1500"])
    url, db = server.url, unique_db_name("alive")
    create_database(url, db)
    http.put(f"{url}/databases/{db}/docs?id=users/1", json={"Name": "a", "@metadata": {"@collection": "Users"}})
    for _ in range(8):
        r = http.post(f"{url}/databases/{db}/queries", json={"Query": "from Users where Name = 'a'"})
        assert r.json()["TotalResults"] == 1
        assert _index_states(http, url, db)["Auto/Users/ByName"] == "Normal"
        time.sleep(0.5)
