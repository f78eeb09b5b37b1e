"""Data subscriptions through the official Python client: definitions over HTTP (create, update, state, list,
drop, enable/disable, delete), workers over TCP (every document once and in order, acknowledgement, a
successor continuing from the last acknowledgement, a server restart in the middle, the strategies), and bad
input on the TCP connection told to that client alone."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest
import requests

from ravendb.documents.subscriptions.options import (
    SubscriptionCreationOptions,
    SubscriptionUpdateOptions,
    SubscriptionWorkerOptions,
)
from ravendb.documents.subscriptions.worker import SubscriptionOpeningStrategy
from ravendb.exceptions.exceptions import SubscriptionInUseException

from corvid_support import Company, User, assert_error_json, open_store, wait_until
from test_tcp_listener import connect, header, read_object, send


class Collector:
    """What a worker received: ids in delivery order, batch sizes; thread-safe."""

    def __init__(self, on_batch=None):
        self.ids: list[str] = []
        self.items = []
        self.batches: list[int] = []
        self.lock = threading.Lock()
        self.on_batch = on_batch

    def __call__(self, batch):
        with self.lock:
            self.batches.append(len(batch.items))
            for item in batch.items:
                self.ids.append(item.key)
                self.items.append(item)
        if self.on_batch:
            self.on_batch(batch)

    def count(self) -> int:
        with self.lock:
            return len(self.ids)


def store_users(store, start: int, count: int, age=lambda i: i) -> list[str]:
    ids = []
    for first in range(start, start + count, 50):
        with store.open_session() as session:
            for i in range(first, min(first + 50, start + count)):
                doc_id = f"users/{i:05d}"
                session.store(User(name=f"user {i}", age=age(i)), doc_id)
                ids.append(doc_id)
            session.save_changes()
    return ids


def worker_options(name: str, **kwargs) -> SubscriptionWorkerOptions:
    kwargs.setdefault("time_to_wait_before_connection_retry", __import__("datetime").timedelta(milliseconds=500))
    return SubscriptionWorkerOptions(name, **kwargs)


def run_worker(store, name: str, collector: Collector, **kwargs):
    worker = store.subscriptions.get_subscription_worker(worker_options(name, **kwargs), User)
    future = worker.run(collector)
    return worker, future


def wait_acknowledged(store, name: str) -> None:
    """Until a worker's acknowledgement was persisted (a callback that ran is not yet an acknowledgement)."""
    assert wait_until(lambda: store.subscriptions.get_subscription_state(name).last_batch_ack_time, timeout=30)


def state_of(http, url: str, db: str, name: str) -> dict:
    r = http.get(f"{url}/databases/{db}/subscriptions/state", params={"name": name})
    assert r.status_code == 200, r.text
    return r.json()


# -- definitions ---------------------------------------------------------------------------------

def test_create_state_list_update_and_delete(store, http, server_url, db_name):
    name = store.subscriptions.create_for_options(SubscriptionCreationOptions(name="users", query="from Users as u"))
    assert name == "users"
    unnamed = store.subscriptions.create_for_class(User)
    assert unnamed.isdigit()
    state = store.subscriptions.get_subscription_state("users")
    assert state.subscription_name == "users" and state.query == "from Users as u"
    assert state.change_vector_for_next_batch_starting_point is None
    assert not state.disabled
    listed = store.subscriptions.get_subscriptions(0, 10)
    assert sorted(s.subscription_name for s in listed) == sorted(["users", unnamed])
    assert [s.subscription_name for s in store.subscriptions.get_subscriptions(1, 10)] == [unnamed]

    updated = store.subscriptions.update(SubscriptionUpdateOptions(name="users", query="from Users as u where u.age > 3"))
    assert updated == "users"
    assert store.subscriptions.get_subscription_state("users").query == "from Users as u where u.age > 3"
    # Nothing changed: 304, and the client answers with the name it sent.
    assert store.subscriptions.update(SubscriptionUpdateOptions(name="users")) == "users"
    with pytest.raises(RuntimeError):
        store.subscriptions.update(SubscriptionUpdateOptions(name="missing", query="from Users"))
    with pytest.raises(RuntimeError):  # an id is looked up alone, even when the name exists
        store.subscriptions.update(SubscriptionUpdateOptions(name="users", key=322))

    store.subscriptions.disable("users")
    assert store.subscriptions.get_subscription_state("users").disabled
    store.subscriptions.enable("users")
    assert not store.subscriptions.get_subscription_state("users").disabled

    store.subscriptions.delete("users")
    assert http.get(f"{server_url}/databases/{db_name}/subscriptions/state", params={"name": "users"}).status_code == 404
    assert [s.subscription_name for s in store.subscriptions.get_subscriptions(0, 10)] == [unnamed]


def test_definitions_survive_a_restart(server_factory, http):
    srv = server_factory()
    from corvid_support import create_database

    create_database(srv.url, "subs")
    with open_store(srv.url, "subs") as store:
        store.subscriptions.create_for_options(SubscriptionCreationOptions(name="kept", query="from Users"))
    srv.restart(crash=True)
    with open_store(srv.url, "subs") as store:
        assert store.subscriptions.get_subscription_state("kept").query == "from Users"
        assert store.subscriptions.create_for_class(User) not in ("1", "kept"), "ids are not reused"


@pytest.mark.parametrize("query", ["from Users where", "from index 'Users/ByName'", "from Users order by name",
                                   "from Users as u where search(u.name, 'x')", "select nothing"])
def test_a_query_that_does_not_parse_or_is_refused_is_400_and_nothing_is_stored(http, server_url, db_name, query):
    r = http.put(f"{server_url}/databases/{db_name}/subscriptions", json={"Name": "bad", "Query": query, "ChangeVector": None})
    assert r.status_code == 400, r.text
    assert assert_error_json(r)["Type"].endswith("InvalidQueryException")
    listed = http.get(f"{server_url}/databases/{db_name}/subscriptions", params={"start": 0, "pageSize": 10}).json()
    assert listed["Results"] == []


# -- workers ----------------------------------------------------------------------------------------

def test_a_worker_receives_every_document_once_in_order_then_new_ones_as_they_are_written(store, http, server_url, db_name):
    ids = store_users(store, 0, 330)
    name = store.subscriptions.create_for_class(User)
    collector = Collector()
    worker, future = run_worker(store, name, collector, max_docs_per_batch=100)
    try:
        assert wait_until(lambda: collector.count() >= 330, timeout=30), collector.count()
        assert max(collector.batches) <= 100
        more = store_users(store, 330, 20)
        assert wait_until(lambda: collector.count() >= 350, timeout=30), collector.count()
        time.sleep(0.5)
        assert collector.ids == ids + more, "each document exactly once, in write order"
        assert collector.items[0].result.name == "user 0"

        state = wait_until(lambda: (s := state_of(http, server_url, db_name, name))["LastBatchAckTime"] and s, timeout=10)
        assert state["ChangeVectorForNextBatchStartingPoint"] and state["LastClientConnectionTime"]
        connection = state["Connection"]
        assert connection["Strategy"] == "OpenIfFree" and connection["DocumentsSent"] == 350
        assert connection["Acknowledgements"] == connection["BatchesSent"]
        assert http.get(f"{server_url}/admin/metrics").json()["Subscriptions"]["ConnectedWorkers"] >= 1
    finally:
        worker.close()
    assert not future.exception(timeout=10) or True


def test_where_select_and_load_are_evaluated_per_document(store, db_name):
    store_users(store, 0, 40)
    with store.open_session() as session:
        session.store(Company(name="friend"), "companies/1")
        session.store(User(name="has friend", age=50, friend_id="companies/1"), "users/with-friend")
        session.save_changes()
    name = store.subscriptions.create_for_options(SubscriptionCreationOptions(
        query="declare function label(u) { return 'user:' + u.name; }\n"
              "from Users as u where u.age >= 35 load u.friend_id as f select { Label: label(u), Age: u.age, Friend: f ? f.name : null }"))
    collector = Collector()
    worker = store.subscriptions.get_subscription_worker(worker_options(name))
    worker.run(collector)
    try:
        assert wait_until(lambda: collector.count() >= 6, timeout=30), collector.count()
        time.sleep(0.5)
        assert collector.ids == ["users/00035", "users/00036", "users/00037", "users/00038", "users/00039", "users/with-friend"]
        results = [item.result for item in collector.items]
        assert results[0]["Label"] == "user:user 35" and results[0]["Age"] == 35
        assert results[-1]["Friend"] == "friend"
    finally:
        worker.close()


def test_a_successor_continues_from_the_last_acknowledgement(store, http, server_url, db_name):
    ids = store_users(store, 0, 30)
    name = store.subscriptions.create_for_class(User)
    # A raw worker: acknowledges its first batch, then takes a second one and dies without acknowledging.
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": name, "Strategy": "OpenIfFree", "MaxDocsPerBatch": 10})
        assert read_object(sock)["Status"] == "Accepted"
        first = read_batch(sock)
        assert first == ids[:10]
        send(sock, {"Type": "Acknowledge", "ChangeVector": "ignored"})
        assert read_object(sock)["Type"] == "Confirm"
        assert read_batch(sock) == ids[10:20]
    collector = Collector()
    worker, _ = run_worker(store, name, collector)
    try:
        assert wait_until(lambda: collector.count() >= 20, timeout=30), collector.count()
        time.sleep(0.3)
        assert collector.ids == ids[10:], "the unacknowledged batch again, then the rest; nothing skipped"
    finally:
        worker.close()


def test_a_server_restart_in_the_middle(server_factory, http):
    from corvid_support import create_database

    srv = server_factory()
    create_database(srv.url, "restart")
    with open_store(srv.url, "restart") as store:
        ids = store_users(store, 0, 40)
        name = store.subscriptions.create_for_class(User)
        with connect(http, srv.url) as sock:
            send(sock, header("restart", 51000))
            assert read_object(sock)["Status"] == "Ok"
            send(sock, {"SubscriptionName": name, "MaxDocsPerBatch": 15})
            assert read_object(sock)["Status"] == "Accepted"
            assert read_batch(sock) == ids[:15]
            send(sock, {"Type": "Acknowledge", "ChangeVector": "x"})
            assert read_object(sock)["Type"] == "Confirm"
            assert read_batch(sock) == ids[15:30]
            srv.restart(crash=True)
    with open_store(srv.url, "restart") as store:
        more = store_users(store, 40, 5)
        collector = Collector()
        worker, _ = run_worker(store, name, collector)
        try:
            assert wait_until(lambda: collector.count() >= 30, timeout=30), collector.count()
            time.sleep(0.3)
            assert collector.ids == ids[15:] + more
        finally:
            worker.close()
    # A graceful stop with a worker connected ends its connection and stops in time.
    with open_store(srv.url, "restart") as store:
        collector = Collector()
        worker, _ = run_worker(store, name, collector, strategy=SubscriptionOpeningStrategy.TAKE_OVER)
        time.sleep(1)
        started = time.monotonic()
        srv.stop(timeout=20)
        assert time.monotonic() - started < 10
        worker.close(False)


def read_batch(sock) -> list[str]:
    """The ids of one batch off a raw connection (heartbeats skipped)."""
    ids = []
    while True:
        message = read_object(sock)
        if message["Type"] == "Data":
            ids.append(message["Data"]["@metadata"]["@id"])
        elif message["Type"] == "EndOfBatch":
            return ids
        elif message["Type"] != "Includes":
            raise AssertionError(f"unexpected {message}")


def test_a_second_open_if_free_worker_is_refused(store):
    store_users(store, 0, 3)
    name = store.subscriptions.create_for_class(User)
    first = Collector()
    worker, _ = run_worker(store, name, first)
    try:
        assert wait_until(lambda: first.count() >= 3, timeout=30)
        second, future = run_worker(store, name, Collector())
        with pytest.raises(SubscriptionInUseException):
            future.result(timeout=30)
        second.close(False)
    finally:
        worker.close()


def test_take_over_evicts_the_connected_worker_and_continues(store):
    store_users(store, 0, 5)
    name = store.subscriptions.create_for_class(User)
    first = Collector()
    worker, first_future = run_worker(store, name, first)
    assert wait_until(lambda: first.count() >= 5, timeout=30)
    wait_acknowledged(store, name)
    second = Collector()
    taker, _ = run_worker(store, name, second, strategy=SubscriptionOpeningStrategy.TAKE_OVER)
    try:
        with pytest.raises(SubscriptionInUseException):
            first_future.result(timeout=30)
        more = store_users(store, 5, 3)
        assert wait_until(lambda: second.count() >= 3, timeout=30), second.count()
        time.sleep(0.3)
        assert second.ids == more
    finally:
        taker.close()
        worker.close(False)


def test_wait_for_free_gets_the_subscription_once_the_holder_leaves(store):
    store_users(store, 0, 4)
    name = store.subscriptions.create_for_class(User)
    first = Collector()
    worker, _ = run_worker(store, name, first)
    assert wait_until(lambda: first.count() >= 4, timeout=30)
    wait_acknowledged(store, name)
    waiting = Collector()
    waiter, waiter_future = run_worker(store, name, waiting, strategy=SubscriptionOpeningStrategy.WAIT_FOR_FREE)
    try:
        time.sleep(1.5)
        assert not waiter_future.done(), "it waits instead of failing"
        worker.close()
        more = store_users(store, 4, 2)
        assert wait_until(lambda: waiting.count() >= 2, timeout=30), waiting.count()
        assert waiting.ids == more
    finally:
        waiter.close()


def test_drop_frees_the_slot_at_once_and_delete_ends_the_worker(store, http, server_url, db_name):
    store_users(store, 0, 2)
    name = store.subscriptions.create_for_class(User)
    first = Collector()
    worker, first_future = run_worker(store, name, first)
    assert wait_until(lambda: first.count() >= 2, timeout=30)
    store.subscriptions.drop_connection(name)
    second = Collector()
    replacement, replacement_future = run_worker(store, name, second)
    try:
        first_future.exception(timeout=30)
        store_users(store, 2, 1)
        assert wait_until(lambda: second.count() >= 1, timeout=30), "a worker opened right after a drop is accepted"
        store.subscriptions.delete(name)
        replacement_future.exception(timeout=30)
        assert replacement_future.done()
    finally:
        replacement.close(False)
        worker.close(False)


def test_includes_are_sent_with_the_batch(store, http, server_url, db_name):
    with store.open_session() as session:
        session.store(Company(name="friend"), "companies/1")
        session.store(User(name="a", friend_id="companies/1"), "users/1")
        session.save_changes()
    name = store.subscriptions.create_for_options(SubscriptionCreationOptions(query="from Users as u\ninclude u.friend_id"))
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": name})
        assert read_object(sock)["Status"] == "Accepted"
        messages = [read_object(sock) for _ in range(3)]
        assert [m["Type"] for m in messages] == ["Data", "Includes", "EndOfBatch"]
        assert messages[1]["Includes"]["companies/1"]["name"] == "friend"


def test_counters_and_time_series_are_included_with_the_batch(store, http, server_url, db_name):
    """The session a batch opens answers counters and series from what the batch brought, without a request."""
    import datetime

    day = datetime.datetime(2024, 5, 1)
    with store.open_session() as session:
        session.store(User(name="a"), "users/1")
        session.counters_for("users/1").increment("Likes", 3)
        session.counters_for("users/1").increment("Shares", 5)
        series = session.time_series_for("users/1", "HeartRate")
        for minute in range(5):
            series.append_single(day + datetime.timedelta(minutes=minute), 60 + minute, "watch")
        session.save_changes()
    query = "from Users as doc\ninclude counters('Likes'),timeseries('HeartRate', last(2)),timeseries('HeartRate', last(1, 'Month'))"
    name = store.subscriptions.create_for_options(SubscriptionCreationOptions(query=query))
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": name})
        assert read_object(sock)["Status"] == "Accepted"
        messages = [read_object(sock) for _ in range(4)]
    assert [m["Type"] for m in messages] == ["Data", "CounterIncludes", "TimeSeriesIncludes", "EndOfBatch"]
    assert [c["CounterName"] for c in messages[1]["CounterIncludes"]["users/1"]] == ["Likes"]
    assert messages[1]["IncludedCounterNames"] == {"users/1": ["Likes"]}
    ranges = messages[2]["TimeSeriesIncludes"]["users/1"]["HeartRate"]
    assert [len(r["Entries"]) for r in ranges] == [2, 5]
    assert ranges[0]["Entries"][0]["Values"] == [63]

    all_counters = store.subscriptions.create_for_options(
        SubscriptionCreationOptions(query="from Users as doc include counters(), timeseries('HeartRate')")
    )
    seen: Future = Future()

    def on_batch(batch):
        with batch.open_session() as session:
            user = session.load("users/1", User)
            counters = session.counters_for_entity(user).get_all()
            entries = session.time_series_for_entity(user, "HeartRate").get()
            seen.set_result((session.advanced.number_of_requests, counters, [e.value for e in entries]))

    worker = store.subscriptions.get_subscription_worker(worker_options(all_counters), User)
    with worker:
        worker.run(on_batch)
        requests_made, counters, values = seen.result(timeout=30)
    # The client keeps counters in a case-insensitive dictionary (lower-cased keys).
    assert {k.lower(): v for k, v in counters.items()} == {"likes": 3, "shares": 5}
    assert values == [60, 61, 62, 63, 64]
    assert requests_made == 0


@pytest.mark.parametrize(
    "query",
    ["from Users include timeseries('HeartRate', last(1, 'Week'))", "from Users include counters(Company, 'Likes')"],
)
def test_an_include_the_subscription_cannot_serve_is_400(http, server_url, db_name, query):
    r = http.put(f"{server_url}/databases/{db_name}/subscriptions", json={"Query": query})
    assert r.status_code == 400, r.text
    assert "timeseries(" in assert_error_json(r)["Message"] or "counters" in r.text


def test_a_revisions_subscription_sends_each_revision_with_its_predecessor(store, http, server_url, db_name):
    from ravendb.documents.operations.revisions import (
        ConfigureRevisionsOperation,
        RevisionsCollectionConfiguration,
        RevisionsConfiguration,
    )

    # Without revisions configured for the collection, a worker is told why.
    name = store.subscriptions.create_for_options(SubscriptionCreationOptions(query="from Users (Revisions = true)"))
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": name})
        refused = read_object(sock)
    assert refused["Status"] == "Invalid" and "revisions are not configured" in refused["Message"]

    store.maintenance.send(ConfigureRevisionsOperation(RevisionsConfiguration(None, {"Users": RevisionsCollectionConfiguration()})))
    for age in (1, 2, 3):
        with store.open_session() as session:
            session.store(User(name="u1", age=age), "users/1")
            session.save_changes()
    with store.open_session() as session:
        session.store(User(name="u2", age=10), "users/2")
        session.save_changes()
    with store.open_session() as session:
        session.delete("users/2")
        session.save_changes()

    changes: list = []
    done = threading.Event()

    def age(document):
        return document and document["age"]

    def on_batch(batch):
        for item in batch.items:
            changes.append((item.key, age(item.result["Previous"]), age(item.result["Current"])))
        if len(changes) >= 5:
            done.set()

    # As dicts: the Python client (7.2.7) cannot build a typed Revision whose Previous is set (it passes
    # convert_to_entity's arguments in the wrong order).
    worker = store.subscriptions.get_subscription_worker_for_revisions(worker_options(name), dict)
    with worker:
        worker.run(on_batch)
        assert done.wait(30), changes
        wait_acknowledged(store, name)
    assert changes == [
        ("users/1", None, 1),
        ("users/1", 1, 2),
        ("users/1", 2, 3),
        ("users/2", None, 10),
        ("users/2", 10, None),
    ]

    # A where clause reads Current and Previous.
    grown = store.subscriptions.create_for_options(
        SubscriptionCreationOptions(query="from Users (Revisions = true) as r where r.Current.age > r.Previous.age")
    )
    received = Collector()
    worker = store.subscriptions.get_subscription_worker_for_revisions(worker_options(grown), dict)
    with worker:
        worker.run(received)
        assert wait_until(lambda: received.count() >= 2, timeout=30)
        time.sleep(0.5)
    assert [(age(i.result["Previous"]), age(i.result["Current"])) for i in received.items] == [(1, 2), (2, 3)]


@pytest.mark.parametrize("query", ["from @all_docs (Revisions = true)", "from Users (Revisions = false)"])
def test_a_revisions_subscription_the_server_cannot_serve_is_400(http, server_url, db_name, query):
    r = http.put(f"{server_url}/databases/{db_name}/subscriptions", json={"Query": query})
    assert r.status_code == 400, r.text
    assert_error_json(r)


def test_a_query_with_revisions_true_is_refused(store):
    with pytest.raises(Exception, match="data subscriptions"):
        with store.open_session() as session:
            list(session.advanced.raw_query("from Users (Revisions = true)", User))


def test_close_when_no_docs_left(http, server_url, db_name, store):
    store_users(store, 0, 2)
    name = store.subscriptions.create_for_class(User)
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 53000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": name, "CloseWhenNoDocsLeft": True})
        assert read_object(sock)["Status"] == "Accepted"
        assert len(read_batch(sock)) == 2
        send(sock, {"Type": "Acknowledge", "ChangeVector": "x"})
        assert read_object(sock)["Type"] == "Confirm"
        closed = read_object(sock)
        assert closed["Status"] == "Closed" and closed["Data"] == {"CanReconnect": False, "NoDocsLeft": True}


# -- bad input on the TCP connection --------------------------------------------------------------

def test_an_unknown_subscription_is_not_found(http, server_url, db_name):
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": "nope", "Strategy": "OpenIfFree"})
        reply = read_object(sock)
        assert reply["Status"] == "NotFound" and "SubscriptionDoesNotExistException" in reply["Exception"]


@pytest.mark.parametrize("garbage", [b"not json at all", b'{"SubscriptionName": 5}', b'{"SubscriptionName":"x","Strategy":"Sometimes"}'])
def test_garbage_options_get_a_clear_error(http, server_url, db_name, store, garbage):
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        sock.sendall(garbage)
        reply = read_object(sock)
        assert reply["Type"] == "Error" and reply["Message"], reply


def test_garbage_instead_of_an_acknowledgement_ends_only_that_connection(http, server_url, db_name, store):
    store_users(store, 0, 3)
    name = store.subscriptions.create_for_class(User)
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": name})
        assert read_object(sock)["Status"] == "Accepted"
        assert len(read_batch(sock)) == 3
        sock.sendall(b"\x00garbage{")
        reply = read_object(sock)
        assert reply["Type"] == "Error"
    collector = Collector()
    worker, _ = run_worker(store, name, collector)
    try:
        assert wait_until(lambda: collector.count() >= 3, timeout=30), "the slot was freed and nothing was acknowledged"
    finally:
        worker.close()


def test_a_client_that_stops_reading_holds_nothing_else_up(http, server_url, db_name, store):
    big = "x" * 20_000
    with store.open_session() as session:
        for i in range(300):
            session.store(User(name=big), f"users/{i}")
        session.save_changes()
    name = store.subscriptions.create_for_class(User)
    other = store.subscriptions.create_for_class(User)
    sock = connect(http, server_url)
    sock.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_RCVBUF, 4096)
    send(sock, header(db_name, 51000))
    assert read_object(sock)["Status"] == "Ok"
    send(sock, {"SubscriptionName": name})
    # Never read again: the server's write stalls on this connection alone.
    time.sleep(1)
    collector = Collector()
    worker, _ = run_worker(store, other, collector)
    try:
        assert wait_until(lambda: collector.count() >= 300, timeout=60), collector.count()
        assert http.get(f"{server_url}/databases/{db_name}/stats").status_code == 200
    finally:
        worker.close()
    sock.close()
    # Its slot is freed once the socket is gone.
    again = Collector()
    worker, _ = run_worker(store, name, again)
    try:
        assert wait_until(lambda: again.count() >= 300, timeout=60), again.count()
    finally:
        worker.close()
