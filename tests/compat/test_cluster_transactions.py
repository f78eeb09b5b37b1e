"""Cluster-wide transactions through the official client's session: compare-exchange values and documents
saved together or not at all, atomic guards (`rvn-atomic/<id>`) that let exactly one of several racing
sessions create a document, stale indexes refused with a ConcurrencyException and nothing written."""

from __future__ import annotations

import threading

import pytest
from ravendb.documents.operations.compare_exchange.operations import GetCompareExchangeValueOperation
from ravendb.documents.session.misc import SessionOptions, TransactionMode
from ravendb.exceptions.raven_exceptions import ConcurrencyException

from corvid_support import User, assert_error_json, stats


def cluster_session(store, atomic=True):
    options = SessionOptions(transaction_mode=TransactionMode.CLUSTER_WIDE)
    options.disable_atomic_document_writes_in_cluster_wide_transaction = not atomic
    return store.open_session(session_options=options)


def cmpxchg(store, key, object_type=dict):
    return store.operations.send(GetCompareExchangeValueOperation(key, object_type))


def test_value_and_document_saved_together(store):
    with cluster_session(store) as session:
        session.advanced.cluster_transaction.create_compare_exchange_value("usernames/karmel", "users/1")
        session.store(User(name="Karmel"), "users/1")
        session.save_changes()
    with store.open_session() as session:
        assert session.load("users/1", User).name == "Karmel"
    value = cmpxchg(store, "usernames/karmel", str)
    assert value.value == "users/1"
    guard = cmpxchg(store, "rvn-atomic/users/1")
    assert guard is not None and guard.index == value.index  # one transaction, one index


def test_taken_value_fails_the_whole_transaction(store):
    with cluster_session(store) as session:
        session.advanced.cluster_transaction.create_compare_exchange_value("usernames/ayende", "users/1")
        session.store(User(name="Ayende"), "users/1")
        session.save_changes()
    before = stats(store).count_of_documents
    with cluster_session(store) as session:
        session.advanced.cluster_transaction.create_compare_exchange_value("usernames/ayende", "users/2")
        session.store(User(name="Impostor"), "users/2")
        with pytest.raises(ConcurrencyException) as raised:
            session.save_changes()
    assert "usernames/ayende" in str(raised.value)
    assert stats(store).count_of_documents == before
    with store.open_session() as session:
        assert session.load("users/2", User) is None
    assert cmpxchg(store, "usernames/ayende", str).value == "users/1"


def test_racing_sessions_creating_one_document_exactly_one_wins(store):
    barrier = threading.Barrier(6)
    outcomes = {}

    def create(t):
        with cluster_session(store) as session:
            session.store(User(name=f"thread-{t}"), "users/contended")
            barrier.wait()
            try:
                session.save_changes()
                outcomes[t] = "won"
            except ConcurrencyException:
                outcomes[t] = "lost"

    threads = [threading.Thread(target=create, args=(t,)) for t in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [t for t, o in outcomes.items() if o == "won"]
    assert len(winners) == 1 and len(outcomes) == 6, outcomes
    with store.open_session() as session:
        assert session.load("users/contended", User).name == f"thread-{winners[0]}"


def test_racing_sessions_on_one_value_exactly_one_wins(store):
    with cluster_session(store) as session:
        session.advanced.cluster_transaction.create_compare_exchange_value("seats/1a", {"owner": None})
        session.save_changes()
    barrier = threading.Barrier(5)
    outcomes = {}

    def book(t):
        with cluster_session(store, atomic=False) as session:
            seat = session.advanced.cluster_transaction.get_compare_exchange_value("seats/1a", dict)
            # a new object: the client (7.2.7) does not see in-place changes of a dict value
            seat.value = {"owner": f"passenger-{t}"}
            session.store(User(name=f"passenger-{t}"), f"bookings/{t}")
            barrier.wait()
            try:
                session.save_changes()
                outcomes[t] = True
            except ConcurrencyException:
                outcomes[t] = False

    threads = [threading.Thread(target=book, args=(t,)) for t in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [t for t, won in outcomes.items() if won]
    assert len(winners) == 1, outcomes
    assert cmpxchg(store, "seats/1a").value == {"owner": f"passenger-{winners[0]}"}
    with store.open_session() as session:
        booked = [t for t in range(5) if session.load(f"bookings/{t}", User) is not None]
    assert booked == winners  # the losers' documents were not written either


def test_update_and_delete_through_the_session(store):
    with cluster_session(store) as session:
        session.advanced.cluster_transaction.create_compare_exchange_value("config/mode", {"mode": "a"})
        session.save_changes()
    first = cmpxchg(store, "config/mode")
    with cluster_session(store) as session:
        value = session.advanced.cluster_transaction.get_compare_exchange_value("config/mode", dict)
        value.value = {"mode": "b"}
        session.save_changes()
        assert value.index > first.index  # the session learned the new index from the reply
    second = cmpxchg(store, "config/mode")
    assert second.value == {"mode": "b"} and second.index > first.index
    with cluster_session(store) as session:
        value = session.advanced.cluster_transaction.get_compare_exchange_value("config/mode", dict)
        session.advanced.cluster_transaction.delete_compare_exchange_value(value)
        session.save_changes()
    assert cmpxchg(store, "config/mode") is None


def test_deleting_a_guarded_document_removes_its_guard(store):
    with cluster_session(store) as session:
        session.store(User(name="Temp"), "users/temp")
        session.save_changes()
    assert cmpxchg(store, "rvn-atomic/users/temp") is not None
    with cluster_session(store) as session:
        session.delete(session.load("users/temp", User))
        session.save_changes()
    assert cmpxchg(store, "rvn-atomic/users/temp") is None
    with store.open_session() as session:
        assert session.load("users/temp", User) is None


def test_disabled_atomic_writes_leave_no_guard(store):
    with cluster_session(store, atomic=False) as session:
        session.advanced.cluster_transaction.create_compare_exchange_value("usernames/indych", "users/3")
        session.store(User(name="Indych"), "users/3")
        session.save_changes()
    assert cmpxchg(store, "rvn-atomic/users/3") is None
    assert cmpxchg(store, "usernames/indych", str).value == "users/3"


def test_bad_cluster_batches_are_refused_and_change_nothing(server_url, db_name, store, http):
    url = f"{server_url}/databases/{db_name}/bulk_docs"
    doc = {"Name": "x", "@metadata": {"@collection": "Users"}}
    bad = [
        [{"Type": "PATCH", "Id": "users/1", "Patch": {"Script": "this.a = 1"}}],
        [{"Type": "PUT", "Id": "users/", "Document": doc}],
        [{"Type": "PUT", "Id": "users|", "Document": doc}],
        [{"Type": "CompareExchangePUT", "Id": "k", "Index": 0}],
        [{"Type": "CompareExchangePUT", "Id": "", "Index": 0, "Document": {"Object": 1}}],
        [{"Type": "CompareExchangePUT", "Id": "k", "Index": -3, "Document": {"Object": 1}}],
    ]
    for commands in bad:
        body = {"Commands": [{"Type": "PUT", "Id": "users/ok", "Document": doc}, *commands], "TransactionMode": "ClusterWide"}
        r = http.post(url, json=body)
        assert r.status_code == 400, (commands, r.status_code, r.text)
        assert_error_json(r)
    # compare-exchange commands outside a cluster transaction are refused too
    r = http.post(url, json={"Commands": [{"Type": "CompareExchangePUT", "Id": "k", "Index": 0, "Document": {"Object": 1}}]})
    assert r.status_code == 400
    assert_error_json(r)
    assert stats(store).count_of_documents == 0
    assert http.get(f"{server_url}/databases/{db_name}/cmpxchg").json()["Results"] == []


def test_stale_guard_answers_cluster_transaction_concurrency_json(server_url, db_name, http):
    url = f"{server_url}/databases/{db_name}/bulk_docs"
    doc = {"Name": "x", "@metadata": {"@collection": "Users"}}
    body = {"Commands": [{"Type": "PUT", "Id": "users/1", "Document": doc}], "TransactionMode": "ClusterWide"}
    first = http.post(url, json=body)
    assert first.status_code == 201, first.text
    assert first.json()["TransactionIndex"] > 0
    again = http.post(url, json=body)
    assert again.status_code == 409
    error = assert_error_json(again)
    assert error["Type"] == "Raven.Client.Exceptions.ClusterTransactionConcurrencyException"
    assert "rvn-atomic/users/1" in error["Message"]


def test_loads_and_queries_include_values_in_one_request(store):
    with cluster_session(store, atomic=False) as session:
        for i in range(3):
            session.advanced.cluster_transaction.create_compare_exchange_value(f"emails/{i}", {"verified": i % 2 == 0})
            session.store(User(name=f"user{i}", friend_id=f"emails/{i}"), f"users/{i}")
        session.save_changes()
    with cluster_session(store) as session:
        user = session.load("users/1", User, lambda b: b.include_compare_exchange_value("friend_id"))
        value = session.advanced.cluster_transaction.get_compare_exchange_value(user.friend_id, dict)
        assert value.value == {"verified": False}
        assert session.number_of_requests == 1
    with cluster_session(store) as session:
        users = list(session.query(object_type=User).include(lambda b: b.include_compare_exchange_value("friend_id")))
        assert len(users) == 3
        for i in range(3):
            value = session.advanced.cluster_transaction.get_compare_exchange_value(f"emails/{i}", dict)
            assert value.value == {"verified": i % 2 == 0}
        assert session.number_of_requests == 1


def test_where_compares_with_a_value(store):
    from ravendb.documents.operations.compare_exchange.operations import PutCompareExchangeValueOperation

    store.operations.send(PutCompareExchangeValueOperation("names/chosen", "Jerry", 0))
    with store.open_session() as session:
        for name in ["Tom", "Jerry", "Spike"]:
            session.store(User(name=name))
        session.save_changes()
    with store.open_session() as session:
        found = list(session.advanced.raw_query("from Users where name = cmpxchg('names/chosen')", User))
        assert [u.name for u in found] == ["Jerry"]
    store.operations.send(PutCompareExchangeValueOperation("names/chosen", "Spike", cmpxchg(store, "names/chosen").index))
    with store.open_session() as session:
        found = list(
            session.advanced.raw_query("from Users where name = cmpxchg($k)", User).add_parameter("k", "names/chosen")
        )
        assert [u.name for u in found] == ["Spike"]


def test_kill_minus_9_keeps_every_acknowledged_transaction(server_factory):
    import requests

    from corvid_support import create_database, open_store

    server = server_factory()
    create_database(server.url, "clustercrash")
    stop = threading.Event()
    acked: list[int] = []
    lock = threading.Lock()

    def writer(t):
        http = requests.Session()
        n = 0
        while not stop.is_set():
            body = {
                "TransactionMode": "ClusterWide",
                "Commands": [
                    {"Type": "PUT", "Id": f"orders/{t}-{n}", "Document": {"N": n, "@metadata": {"@collection": "Orders"}}},
                    {"Type": "CompareExchangePUT", "Id": f"order-numbers/{t}-{n}", "Index": 0, "Document": {"Object": f"orders/{t}-{n}"}},
                ],
            }
            try:
                r = http.post(f"{server.url}/databases/clustercrash/bulk_docs", json=body, timeout=10)
            except requests.RequestException:
                return
            if r.status_code != 201:
                return
            with lock:
                acked.append((t, n))
            n += 1

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(4)]
    for thread in threads:
        thread.start()
    threading.Event().wait(1.5)
    server.restart(crash=True)  # runs `corvid check` on the files the kill left
    stop.set()
    for thread in threads:
        thread.join()
    assert acked
    store = open_store(server.url, "clustercrash")
    try:
        with store.open_session() as session:
            loaded = session.load([f"orders/{t}-{n}" for t, n in acked], dict)
        for t, n in acked:
            assert loaded[f"orders/{t}-{n}"]["N"] == n
            assert cmpxchg(store, f"order-numbers/{t}-{n}", str).value == f"orders/{t}-{n}"
            assert cmpxchg(store, f"rvn-atomic/orders/{t}-{n}") is not None
    finally:
        store.close()
