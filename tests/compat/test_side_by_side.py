"""Side-by-side rebuild of static indexes: a changed definition is built as `ReplacementOf/<name>` while the
old index keeps answering, and swaps in once it has caught up. Expected answers are computed from the
documents the test wrote."""

from __future__ import annotations

import time

from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.indexes import GetIndexOperation, PutIndexesOperation

from corvid_support import assert_error_json, create_database, wait_until

N = 300
# Slow enough that the replacement is observable for a while (a few seconds for N documents).
SLOW = "var spin = 0; for (var i = 0; i < 200000; i++) { spin += i % 7; }"
OLD_MAP = "map('Items', function (d) { return { group: d.group }; })"


def slow_map(body: str) -> str:
    return f"map('Items', function (d) {{ {SLOW} return {body}; }})"


def put_items(http, url, db, n=N, start=0):
    commands = [
        {"Type": "PUT", "Id": f"items/{i}", "ChangeVector": None,
         "Document": {"group": i % 5, "value": i, "@metadata": {"@collection": "Items"}}}
        for i in range(start, start + n)
    ]
    assert http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}).status_code == 201


def put_index(http, url, db, maps, name="Items/ByGroup", **extra):
    definition = {"Name": name, "Maps": [maps], **extra}
    return http.put(f"{url}/databases/{db}/admin/indexes", json={"Indexes": [definition]})


def query(http, url, db, rql, wait=True):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "WaitForNonStaleResults": wait})
    assert r.status_code == 200, r.text
    return r.json()


def index_names(http, url, db):
    return [i["Name"] for i in http.get(f"{url}/databases/{db}/stats").json()["Indexes"]]



def wait_for_indexing(http, url, db, timeout=60.0):
    """As the client's wait_for_indexing: no stale index and no `ReplacementOf/` left."""

    def done():
        indexes = http.get(f"{url}/databases/{db}/stats").json()["Indexes"]
        return all(not i["IsStale"] and not i["Name"].startswith("ReplacementOf/") for i in indexes)

    assert wait_until(done, timeout), index_names(http, url, db)


def test_a_changed_definition_is_built_side_by_side_and_swapped_in(server_url, db_name, http):
    put_items(http, server_url, db_name)
    assert put_index(http, server_url, db_name, OLD_MAP).status_code == 201
    old = query(http, server_url, db_name, "from index 'Items/ByGroup' where group = 2")
    assert old["TotalResults"] == len([i for i in range(N) if i % 5 == 2])

    # Only values above 100 in the new definition.
    r = put_index(http, server_url, db_name, slow_map("d.value > 100 ? { group: d.group, big: true } : null"))
    assert r.status_code == 201
    names = index_names(http, server_url, db_name)
    assert "ReplacementOf/Items/ByGroup" in names and "Items/ByGroup" in names, names
    listed = http.get(f"{server_url}/databases/{db_name}/indexes").json()["Results"]
    replacement = [d for d in listed if d["Name"] == "ReplacementOf/Items/ByGroup"]
    assert replacement and "d.value > 100" in replacement[0]["Maps"][0]
    stats = http.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": "ReplacementOf/Items/ByGroup"}).json()
    assert stats["Results"][0]["Name"] == "ReplacementOf/Items/ByGroup"
    assert stats["Results"][0]["Type"] == "JavaScriptMap"

    # While the replacement builds, the old definition answers, up to date and not stale.
    seen_while_building = 0
    while "ReplacementOf/Items/ByGroup" in index_names(http, server_url, db_name):
        answer = query(http, server_url, db_name, "from index 'Items/ByGroup' where group = 2", wait=False)
        if "ReplacementOf/Items/ByGroup" in index_names(http, server_url, db_name):
            assert answer["TotalResults"] == len([i for i in range(N) if i % 5 == 2])
            assert answer["IsStale"] is False
            seen_while_building += 1
        time.sleep(0.05)
    assert seen_while_building > 0

    wait_for_indexing(http, server_url, db_name)
    assert index_names(http, server_url, db_name) == ["Items/ByGroup"]
    new = query(http, server_url, db_name, "from index 'Items/ByGroup' where group = 2")
    assert new["TotalResults"] == len([i for i in range(N) if i % 5 == 2 and i > 100])
    assert new["IndexName"] == "Items/ByGroup"
    definition = http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "Items/ByGroup"}).json()["Results"][0]
    assert definition["Name"] == "Items/ByGroup" and "d.value > 100" in definition["Maps"][0]
    assert http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "ReplacementOf/Items/ByGroup"}).status_code == 404

    # The swapped-in index keeps indexing new writes.
    put_items(http, server_url, db_name, n=10, start=N)
    after = query(http, server_url, db_name, "from index 'Items/ByGroup' where group = 2")
    assert after["TotalResults"] == len([i for i in range(N + 10) if i % 5 == 2 and i > 100])


def test_putting_another_definition_replaces_the_replacement(server_url, db_name, http):
    put_items(http, server_url, db_name)
    put_index(http, server_url, db_name, OLD_MAP)
    query(http, server_url, db_name, "from index 'Items/ByGroup'")
    put_index(http, server_url, db_name, slow_map("{ group: d.group, first: 1 }"))
    put_index(http, server_url, db_name, slow_map("d.value < 50 ? { group: d.group } : null"))
    names = index_names(http, server_url, db_name)
    assert names.count("ReplacementOf/Items/ByGroup") == 1, names
    listed = http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "ReplacementOf/Items/ByGroup"}).json()["Results"]
    assert "d.value < 50" in listed[0]["Maps"][0]
    wait_for_indexing(http, server_url, db_name)
    got = query(http, server_url, db_name, "from index 'Items/ByGroup' where group = 1")
    assert got["TotalResults"] == len([i for i in range(N) if i % 5 == 1 and i < 50])


def test_putting_the_same_definition_or_only_priority_builds_nothing(server_url, db_name, http):
    put_items(http, server_url, db_name, n=20)
    put_index(http, server_url, db_name, OLD_MAP)
    wait_for_indexing(http, server_url, db_name)
    put_index(http, server_url, db_name, OLD_MAP, Priority="High", LockMode="Unlock")
    assert index_names(http, server_url, db_name) == ["Items/ByGroup"]
    stats = http.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": "Items/ByGroup"}).json()["Results"][0]
    assert stats["Priority"] == "High" and stats["EntriesCount"] == 20


def test_deleting_an_index_deletes_its_replacement(server_url, db_name, http):
    put_items(http, server_url, db_name)
    put_index(http, server_url, db_name, OLD_MAP)
    put_index(http, server_url, db_name, slow_map("{ group: d.group, other: 2 }"))
    assert "ReplacementOf/Items/ByGroup" in index_names(http, server_url, db_name)
    assert http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": "Items/ByGroup"}).status_code == 204
    assert index_names(http, server_url, db_name) == []


def test_deleting_only_the_replacement_keeps_the_index(server_url, db_name, http):
    put_items(http, server_url, db_name)
    put_index(http, server_url, db_name, OLD_MAP)
    put_index(http, server_url, db_name, slow_map("{ group: d.group, other: 2 }"))
    r = http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": "ReplacementOf/Items/ByGroup"})
    assert r.status_code == 204
    assert index_names(http, server_url, db_name) == ["Items/ByGroup"]
    assert query(http, server_url, db_name, "from index 'Items/ByGroup'")["TotalResults"] == N


def test_locked_error_refuses_and_locked_ignore_keeps_the_definition(server_url, db_name, http):
    put_items(http, server_url, db_name, n=20)
    put_index(http, server_url, db_name, OLD_MAP)
    set_lock = f"{server_url}/databases/{db_name}/indexes/set-lock"
    assert http.post(set_lock, json={"IndexNames": ["Items/ByGroup"], "Mode": "LockedError"}).status_code == 204
    body = assert_error_json(put_index(http, server_url, db_name, slow_map("{ group: 1 }")))
    assert "LockedError" in body["Message"], body
    assert http.post(set_lock, json={"IndexNames": ["Items/ByGroup"], "Mode": "LockedIgnore"}).status_code == 204
    assert put_index(http, server_url, db_name, slow_map("{ group: 1 }")).status_code == 201
    assert index_names(http, server_url, db_name) == ["Items/ByGroup"]
    assert http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "Items/ByGroup"}).json()["Results"][0]["Maps"] == [OLD_MAP]


def test_the_official_client_waits_for_the_swap(store, server_url, db_name, http):
    put_items(http, server_url, db_name, n=50)
    store.maintenance.send(PutIndexesOperation(IndexDefinition(name="Items/ByGroup", maps={OLD_MAP})))
    store.maintenance.send(PutIndexesOperation(IndexDefinition(name="Items/ByGroup", maps={slow_map("{ group: d.group, v: d.value }")})))
    # The client's wait_for_indexing waits until no `ReplacementOf/` is left.
    deadline = time.monotonic() + 60
    while any(i.name.startswith("ReplacementOf/") for i in store.maintenance.send(_GetStats()).indexes) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "d.value" in list(store.maintenance.send(GetIndexOperation("Items/ByGroup")).maps)[0]


def _GetStats():
    from ravendb.documents.operations.statistics import GetStatisticsOperation

    return GetStatisticsOperation()


def test_a_restart_resumes_the_replacement_and_keeps_the_original(server_factory):
    import requests

    server = server_factory()
    url, db = server.url, "sbs_restart"
    http = requests.Session()
    create_database(url, db)
    put_items(http, url, db, n=2 * N)
    put_index(http, url, db, OLD_MAP)
    assert query(http, url, db, "from index 'Items/ByGroup'")["TotalResults"] == 2 * N
    put_index(http, url, db, slow_map("d.value % 2 == 0 ? { group: d.group } : null"))
    assert "ReplacementOf/Items/ByGroup" in index_names(http, url, db)
    server.stop()
    url = server.start()
    # The original answers at once after the restart; the replacement resumes and swaps in.
    names = index_names(http, url, db)
    assert "Items/ByGroup" in names, names
    answer = query(http, url, db, "from index 'Items/ByGroup' where group = 3", wait=False)
    if "ReplacementOf/Items/ByGroup" in index_names(http, url, db):
        assert answer["TotalResults"] == len([i for i in range(2 * N) if i % 5 == 3])
    wait_for_indexing(http, url, db, timeout=120)
    assert index_names(http, url, db) == ["Items/ByGroup"]
    got = query(http, url, db, "from index 'Items/ByGroup' where group = 3")
    assert got["TotalResults"] == len([i for i in range(2 * N) if i % 5 == 3 and i % 2 == 0])
    # And a second restart after the swap keeps the new definition only.
    server.stop()
    url = server.start()
    assert index_names(http, url, db) == ["Items/ByGroup"]
    got = query(http, url, db, "from index 'Items/ByGroup' where group = 3")
    assert got["TotalResults"] == len([i for i in range(2 * N) if i % 5 == 3 and i % 2 == 0])


def test_priority_sent_with_a_changed_definition_carries_over_the_swap(server_url, db_name, http):
    put_items(http, server_url, db_name, n=50)
    put_index(http, server_url, db_name, OLD_MAP)
    put_index(http, server_url, db_name, slow_map("{ group: d.group, p: 1 }"), Priority="High")
    stats = http.get(f"{server_url}/databases/{db_name}/indexes/stats").json()["Results"]
    assert {s["Name"]: s["Priority"] for s in stats} == {"Items/ByGroup": "High", "ReplacementOf/Items/ByGroup": "High"}
    wait_for_indexing(http, server_url, db_name)
    stats = http.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": "Items/ByGroup"}).json()["Results"][0]
    assert stats["Priority"] == "High"


def test_reset_delete_and_recreate_while_queries_run(server_url, db_name, http):
    """Every rebuild gets fresh files: queries still holding the old index never make it fail."""
    import threading

    import requests

    put_items(http, server_url, db_name, n=100)
    put_index(http, server_url, db_name, OLD_MAP)
    stop = threading.Event()
    failures = []

    def spam():
        with requests.Session() as s:
            while not stop.is_set():
                r = s.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'Items/ByGroup' where group = 1"})
                if r.status_code not in (200, 404):
                    failures.append(r.text)

    threads = [threading.Thread(target=spam) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(8):
            r = http.request("RESET", f"{server_url}/databases/{db_name}/indexes", params={"name": "Items/ByGroup"})
            assert r.status_code == 204, r.text
            assert http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": "Items/ByGroup"}).status_code == 204
            assert put_index(http, server_url, db_name, OLD_MAP).status_code == 201
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, failures[:3]
    wait_for_indexing(http, server_url, db_name)
    assert query(http, server_url, db_name, "from index 'Items/ByGroup' where group = 1")["TotalResults"] == 20
