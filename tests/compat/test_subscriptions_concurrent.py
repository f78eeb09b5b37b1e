"""Concurrent subscription workers (RavenDB 6's `Concurrent` strategy), over raw TCP connections because the
official Python client 7.2.7 has no `Concurrent` strategy (its `SubscriptionOpeningStrategy` lacks it; the Node
client's workers are tested in tests/compat-node/test/subscriptions.test.js): several workers share one
subscription, each sent different documents; a worker that leaves without acknowledging has its documents
sent to another; a document changed while in flight is sent again after the acknowledgement; the stored
position never passes an unacknowledged document, so a crash loses nothing; the admission rules between
`Concurrent` and the other strategies; connection details and dropping one worker."""

from __future__ import annotations

import socket
import threading
import time

from corvid_support import User, create_database, open_store, wait_until
from test_subscriptions import read_batch, state_of, store_users
from test_tcp_listener import connect, header, read_object, send


def open_worker(http, url: str, db: str, name: str, strategy: str = "Concurrent", max_docs: int = 10, **extra):
    """A raw worker connection; returns (socket, the server's answer to the options)."""
    sock = connect(http, url)
    send(sock, header(db, 51000))
    assert read_object(sock)["Status"] == "Ok"
    send(sock, {"SubscriptionName": name, "Strategy": strategy, "MaxDocsPerBatch": max_docs, **extra})
    return sock, read_object(sock)


def concurrent_worker(http, url, db, name, **kwargs):
    sock, reply = open_worker(http, url, db, name, **kwargs)
    assert reply["Status"] == "Accepted", reply
    return sock


def read_batch_within(sock, seconds: float) -> list[str] | None:
    """The ids of the next batch, or None when none starts within `seconds` (heartbeats keep coming meanwhile)."""
    deadline = time.monotonic() + seconds
    decoder = __import__("json").JSONDecoder()
    while True:
        sock.pending = sock.pending.lstrip()
        try:
            first, end = decoder.raw_decode(sock.pending)
            sock.pending = sock.pending[end:]
        except ValueError:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                return None
            sock.pending += chunk.decode()
            continue
        sock.settimeout(10)
        ids = [first["Data"]["@metadata"]["@id"]] if first["Type"] == "Data" else []
        if first["Type"] == "EndOfBatch":
            return ids
        rest = read_batch(sock)
        return ids + rest


def acknowledge(sock) -> None:
    send(sock, {"Type": "Acknowledge", "ChangeVector": "x"})
    assert read_object(sock)["Type"] == "Confirm"


def position_etag(http, url, db, name) -> int:
    """The etag in the stored position's change vector (0: none yet)."""
    cv = state_of(http, url, db, name)["ChangeVectorForNextBatchStartingPoint"]
    return int(cv.split(":")[1].split("-")[0]) if cv else 0


def test_three_concurrent_workers_receive_every_document_of_2000_exactly_once(store, http, server_url, db_name):
    ids = store_users(store, 0, 2000)
    name = store.subscriptions.create_for_class(User)
    received: list[list[str]] = [[], [], []]
    socks = [concurrent_worker(http, server_url, db_name, name, max_docs=40) for _ in range(3)]
    details = http.get(f"{server_url}/databases/{db_name}/subscriptions/connection-details", params={"name": name}).json()
    assert details["SubscriptionMode"] == "Concurrent" and len(details["Results"]) == 3
    assert all(r["Strategy"] == "Concurrent" and r["WorkerId"] for r in details["Results"])
    stop = threading.Event()

    def work(index: int) -> None:
        sock = socks[index]
        sock.settimeout(1)
        batch: list[str] = []
        while not stop.is_set():
            try:
                message = read_object(sock)
            except (socket.timeout, OSError, EOFError):
                continue
            if message["Type"] == "Data":
                batch.append(message["Data"]["@metadata"]["@id"])
            elif message["Type"] == "EndOfBatch":
                received[index].extend(batch)
                batch = []
                time.sleep(0.01)  # a worker busy with its batch: the others take the next ones meanwhile
                send(sock, {"Type": "Acknowledge", "ChangeVector": "x"})

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    try:
        assert wait_until(lambda: sum(map(len, received)) >= 2000, timeout=90), sum(map(len, received))
        time.sleep(1.5)
        everything = [doc for part in received for doc in part]
        assert len(everything) == 2000, "no document sent twice"
        assert sorted(everything) == ids
        assert sum(1 for part in received if part) >= 2, [len(p) for p in received]
        assert wait_until(lambda: position_etag(http, server_url, db_name, name) >= 2000, timeout=10), "every ack moved the position"
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
        for sock in socks:
            sock.close()


def test_a_worker_killed_mid_batch_has_its_documents_sent_to_another(store, http, server_url, db_name):
    ids = store_users(store, 0, 30)
    name = store.subscriptions.create_for_class(User)
    first = concurrent_worker(http, server_url, db_name, name)
    assert read_batch(first) == ids[:10]
    second = concurrent_worker(http, server_url, db_name, name)
    assert read_batch(second) == ids[10:20], "not the first worker's documents"
    acknowledge(second)
    assert read_batch(second) == ids[20:30]
    acknowledge(second)
    assert position_etag(http, server_url, db_name, name) == 0, "the position stays below the unacknowledged batch"
    first.close()  # killed without acknowledging
    second.settimeout(10)
    assert read_batch(second) == ids[:10], "its documents are sent to the other worker"
    acknowledge(second)
    assert wait_until(lambda: position_etag(http, server_url, db_name, name) == 30, timeout=10)
    second.close()


def test_a_document_changed_while_in_flight_is_sent_again_after_the_ack(store, http, server_url, db_name):
    ids = store_users(store, 0, 5)
    name = store.subscriptions.create_for_class(User)
    holder = concurrent_worker(http, server_url, db_name, name)
    assert read_batch(holder) == ids
    with store.open_session() as session:
        session.load("users/00002", User).name = "changed"
        session.save_changes()
    other = concurrent_worker(http, server_url, db_name, name)
    assert read_batch_within(other, 2.5) is None, "the changed document is held by the first worker: not sent meanwhile"
    acknowledge(holder)
    again = read_batch_within(holder, 3) or read_batch_within(other, 5)
    assert again == ["users/00002"]
    holder.close()
    other.close()


def test_a_crash_with_concurrent_workers_loses_nothing(server_factory, http):
    srv = server_factory()
    create_database(srv.url, "concurrent")
    with open_store(srv.url, "concurrent") as store:
        ids = store_users(store, 0, 100)
        name = store.subscriptions.create_for_class(User)
    first = concurrent_worker(http, srv.url, "concurrent", name, max_docs=20)
    assert read_batch(first) == ids[:20]  # never acknowledged
    second = concurrent_worker(http, srv.url, "concurrent", name, max_docs=20)
    acknowledged = []
    for _ in range(2):
        batch = read_batch(second)
        acknowledge(second)
        acknowledged += batch
    assert acknowledged == ids[20:60]
    srv.restart(crash=True)
    first.close()
    second.close()
    after = concurrent_worker(http, srv.url, "concurrent", name, max_docs=200)
    redelivered = read_batch(after)
    assert set(ids) - set(acknowledged) <= set(redelivered), "every unacknowledged document comes again"
    assert redelivered[:20] == ids[:20]
    acknowledge(after)
    after.close()


def test_concurrent_and_other_strategies_refuse_each_other(store, http, server_url, db_name):
    store_users(store, 0, 3)
    name = store.subscriptions.create_for_class(User)
    first = concurrent_worker(http, server_url, db_name, name)
    for strategy in ["OpenIfFree", "TakeOver", "WaitForFree"]:
        sock, reply = open_worker(http, server_url, db_name, name, strategy=strategy)
        assert reply["Status"] == "InUse" and "is currently concurrent" in reply["Message"], reply
        assert "SubscriptionInUseException" in reply["Exception"]
        sock.close()
    assert len(read_batch(first)) == 3, "a TakeOver does not evict concurrent workers"
    acknowledge(first)
    first.close()
    assert wait_until(lambda: not state_of(http, server_url, db_name, name)["Connections"], timeout=10)
    single, reply = open_worker(http, server_url, db_name, name, strategy="OpenIfFree")
    assert reply["Status"] == "Accepted"
    sock, reply = open_worker(http, server_url, db_name, name)
    assert reply["Status"] == "InUse" and "is not concurrent" in reply["Message"], reply
    sock.close()
    single.close()


def test_connection_details_and_a_drop_of_one_worker(store, http, server_url, db_name):
    name = store.subscriptions.create_for_class(User)
    w1 = concurrent_worker(http, server_url, db_name, name, WorkerId="w1")
    w2 = concurrent_worker(http, server_url, db_name, name, WorkerId="w2")
    url = f"{server_url}/databases/{db_name}/subscriptions"
    details = http.get(f"{url}/connection-details", params={"name": name}).json()
    assert sorted(r["WorkerId"] for r in details["Results"]) == ["w1", "w2"]
    assert http.post(f"{url}/drop", params={"name": name, "workerId": "w1"}).status_code == 204
    assert read_object(w1)["Status"] == "Closed"
    assert [r["WorkerId"] for r in http.get(f"{url}/connection-details", params={"name": name}).json()["Results"]] == ["w2"]
    assert http.post(f"{url}/drop", params={"name": name, "workerId": "nobody"}).status_code == 404
    assert http.post(f"{url}/drop", params={"name": name}).status_code == 204
    assert read_object(w2)["Status"] == "Closed"
    assert http.get(f"{url}/connection-details", params={"name": "nope"}).status_code == 404
    assert http.get(f"{url}/connection-details", params={"name": name}).json() == {"Results": [], "SubscriptionMode": "Single"}
    w1.close()
    w2.close()


def test_a_worker_id_that_is_not_a_string_is_a_clear_error(store, http, server_url, db_name):
    name = store.subscriptions.create_for_class(User)
    sock, reply = open_worker(http, server_url, db_name, name, WorkerId=5)
    assert reply["Type"] == "Error" and "WorkerId" in reply["Message"], reply
    sock.close()
