"""Compare-exchange values through the official client's operations: index-checked put and delete, reads
by key and prefix, metadata, races between threads where exactly one wins, bad input, and a kill -9 with
every acknowledged value present afterwards."""

from __future__ import annotations

import threading

import requests
from ravendb.documents.operations.compare_exchange.operations import (
    DeleteCompareExchangeValueOperation,
    GetCompareExchangeValueOperation,
    GetCompareExchangeValuesOperation,
    PutCompareExchangeValueOperation,
)
from ravendb.documents.operations.statistics import GetDetailedStatisticsOperation
from ravendb.json.metadata_as_dictionary import MetadataAsDictionary

from corvid_support import User, assert_error_json, create_database, open_store


def put(store, key, value, index, metadata=None):
    return store.operations.send(PutCompareExchangeValueOperation(key, value, index, metadata))


def test_create_read_update_delete_with_indexes(store):
    created = put(store, "emails/ayende@ravendb.net", "users/1", 0)
    assert created.successful and created.value == "users/1" and created.index > 0

    read = store.operations.send(GetCompareExchangeValueOperation("Emails/Ayende@RavenDB.net", str))
    assert (read.value, read.index) == ("users/1", created.index)

    updated = put(store, "emails/ayende@ravendb.net", "users/2", created.index)
    assert updated.successful and updated.index > created.index and updated.value == "users/2"

    deleted = store.operations.send(DeleteCompareExchangeValueOperation(str, "emails/ayende@ravendb.net", updated.index))
    assert deleted.successful and deleted.value == "users/2"
    assert store.operations.send(GetCompareExchangeValueOperation("emails/ayende@ravendb.net", str)) is None


def test_stale_index_fails_and_answers_the_current_value(store):
    first = put(store, "names/karmel", "users/1", 0)
    # index 0 means "create only": the key exists, so nothing changes
    again = put(store, "names/karmel", "users/2", 0)
    assert not again.successful and again.index == first.index and again.value == "users/1"
    stale = put(store, "names/karmel", "users/3", first.index + 1000)
    assert not stale.successful and stale.value == "users/1"
    stale_delete = store.operations.send(DeleteCompareExchangeValueOperation(str, "names/karmel", first.index + 1))
    assert not stale_delete.successful and stale_delete.index == first.index and stale_delete.value == "users/1"
    current = store.operations.send(GetCompareExchangeValueOperation("names/karmel", str))
    assert (current.value, current.index) == ("users/1", first.index)


def test_objects_metadata_and_reads_by_keys_and_prefix(server_url, db_name, store, http):
    metadata = MetadataAsDictionary()
    metadata["Role"] = "admin"
    metadata["@expires"] = "2099-01-01T00:00:00.0000000Z"
    put(store, "users/ayende", User(name="Ayende", age=40), 0, metadata)
    for i in range(5):
        put(store, f"keys/{i}", {"n": i}, 0)
    value = store.operations.send(GetCompareExchangeValueOperation("users/ayende", User))
    assert value.value.name == "Ayende" and value.value.age == 40
    assert value.metadata["Role"] == "admin" and value.metadata["@expires"].startswith("2099-01-01")

    by_keys = store.operations.send(GetCompareExchangeValuesOperation(["keys/1", "keys/3", "keys/missing"], dict))
    assert by_keys["keys/1"].value == {"n": 1} and by_keys["keys/3"].value == {"n": 3}
    assert by_keys["keys/missing"].index == -1 and by_keys["keys/missing"].value is None

    # The client (7.2.7) drops `startsWith` and cannot quote an int `start`: the prefix listing is sent raw.
    base = f"{server_url}/databases/{db_name}/cmpxchg"
    page = http.get(base, params={"startsWith": "KEYS/", "start": 1, "pageSize": 3}).json()["Results"]
    assert [(v["Key"], v["Value"]["Object"]["n"]) for v in page] == [("keys/1", 1), ("keys/2", 2), ("keys/3", 3)]
    assert len(http.get(base, params={"startsWith": "keys/"}).json()["Results"]) == 5
    everything = store.operations.send(GetCompareExchangeValuesOperation.create_for_start_with("", object_type=dict))
    assert len(everything) == 6

    stats = store.maintenance.send(GetDetailedStatisticsOperation())
    assert stats.count_of_compare_exchange == 6


def test_racing_creators_exactly_one_wins(store):
    threads, results = [], {}
    barrier = threading.Barrier(8)

    def claim(t):
        barrier.wait()
        results[t] = put(store, "race/unique", f"thread-{t}", 0)

    for t in range(8):
        threads.append(threading.Thread(target=claim, args=(t,)))
        threads[-1].start()
    for thread in threads:
        thread.join()
    winners = [t for t, r in results.items() if r.successful]
    assert len(winners) == 1, results
    stored = store.operations.send(GetCompareExchangeValueOperation("race/unique", str))
    assert stored.value == f"thread-{winners[0]}"
    # every loser was told the winner's value and index
    for t, r in results.items():
        assert (r.value, r.index) == (stored.value, stored.index)


def test_racing_increments_lose_no_update(store):
    put(store, "counter", 0, 0)

    def incrementer():
        done = 0
        while done < 10:
            current = store.operations.send(GetCompareExchangeValueOperation("counter", int))
            if put(store, "counter", current.value + 1, current.index).successful:
                done += 1

    threads = [threading.Thread(target=incrementer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.operations.send(GetCompareExchangeValueOperation("counter", int)).value == 40


def test_bad_input_gets_ravendb_errors_and_changes_nothing(server_url, db_name, store, http):
    base = f"{server_url}/databases/{db_name}/cmpxchg"
    put(store, "kept", "v", 0)
    for params, body in [
        ({"key": "kept"}, '{"Object": 1}'),  # no index
        ({"key": "kept", "index": "x"}, '{"Object": 1}'),
        ({"key": "kept", "index": "-1"}, '{"Object": 1}'),
        ({"key": "kept", "index": "0"}, "[1, 2]"),
        ({"key": "kept", "index": "0"}, "{not json"),
        ({"key": "k" * 600, "index": "0"}, '{"Object": 1}'),
        ({"index": "0"}, '{"Object": 1}'),
    ]:
        r = http.put(base, params=params, data=body)
        assert r.status_code == 400, (params, r.status_code, r.text)
        assert_error_json(r)
    r = http.delete(base, params={"key": "kept"})
    assert r.status_code == 400
    assert_error_json(r)
    assert http.get(base, params={"key": "missing"}).status_code == 404
    everything = http.get(base).json()["Results"]
    assert [(v["Key"], v["Value"]) for v in everything] == [("kept", {"Object": "v"})]


def test_kill_minus_9_keeps_every_acknowledged_value(server_factory):
    server = server_factory()
    create_database(server.url, "cmpxchgcrash")
    stop = threading.Event()
    acked: dict[str, tuple[int, int]] = {}
    lock = threading.Lock()

    def writer(t):
        http = requests.Session()
        n = 0
        while not stop.is_set():
            key = f"crash/{t}/{n % 20}"
            with lock:
                expected = acked.get(key, (0, -1))[0]
            try:
                r = http.put(
                    f"{server.url}/databases/cmpxchgcrash/cmpxchg",
                    params={"key": key, "index": expected},
                    json={"Object": n},
                    timeout=10,
                )
            except requests.RequestException:
                return
            if r.status_code != 200:
                return
            body = r.json()
            if not body["Successful"]:
                return  # an earlier write committed but its answer was lost in the kill
            with lock:
                acked[key] = (body["Index"], n)
            n += 1

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(4)]
    for thread in threads:
        thread.start()
    threading.Event().wait(1.5)
    server.restart(crash=True)  # also runs `corvid check` on the killed server's files
    stop.set()
    for thread in threads:
        thread.join()
    assert acked
    store = open_store(server.url, "cmpxchgcrash")
    try:
        stored = store.operations.send(GetCompareExchangeValuesOperation.create_for_start_with("crash/", object_type=int))
        for key, (index, n) in acked.items():
            # a write may have committed after its answer was lost: the stored one is that one or newer
            assert stored[key].index >= index and stored[key].value >= n, (key, stored[key].index, index)
    finally:
        store.close()


def test_javascript_patches_and_projections_read_values(store):
    from ravendb.documents.operations.patch import PatchByQueryOperation
    from ravendb.documents.queries.index_query import IndexQuery

    put(store, "prices/apple", 3, 0)
    put(store, "prices/pear", 5, 0)
    with store.open_session() as session:
        session.store(User(name="apple"), "users/1")
        session.store(User(name="pear"), "users/2")
        session.store(User(name="plum"), "users/3")
        session.save_changes()
    with store.open_session() as session:
        rows = list(
            session.advanced.raw_query(
                "from Users as u select { Name: u.name, Price: cmpxchg('prices/' + u.name) }", dict
            ).wait_for_non_stale_results()
        )
        assert sorted((r["Name"], r["Price"]) for r in rows) == [("apple", 3), ("pear", 5), ("plum", None)]
    operation = store.operations.send_async(
        PatchByQueryOperation(IndexQuery("from Users update { this.age = cmpxchg('prices/' + this.name); }"))
    )
    operation.wait_for_completion()
    with store.open_session() as session:
        ages = {u.name: u.age for u in session.load(["users/1", "users/2", "users/3"], User).values()}
    assert ages == {"apple": 3, "pear": 5, "plum": None}
