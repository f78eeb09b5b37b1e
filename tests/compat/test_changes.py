"""The Changes API (`/databases/{db}/changes`, a websocket): document, collection, prefix, counter and index
notifications through the official client's `store.changes()`, unsubscribing, operation notifications (progress
and completion), and raw-socket checks of the protocol (confirmations, array frames, bad commands, a stalled
client, time-series watches, a throttled connection) and of `/changes/debug` and `DELETE /changes?id=`."""

from __future__ import annotations

import json
import queue
import socket
import time

import websocket
from ravendb.changes.observers import ActionObserver

WAIT = 10


class User:
    def __init__(self, name: str = ""):
        self.name = name


def _collect(observable):
    """Subscribes to `observable`; returns the queue its changes arrive in and the unsubscribe function."""
    got: queue.Queue = queue.Queue()
    close = observable.subscribe_with_observer(ActionObserver(on_next=got.put))
    observable.ensure_subscribe_now()
    return got, close


def _store_users(store, *ids):
    with store.open_session() as session:
        for i in ids:
            session.store(User(i), i)
        session.save_changes()


def _ws(server_url, db):
    return websocket.create_connection(server_url.replace("http://", "ws://") + f"/databases/{db}/changes", timeout=WAIT)


def _frames_until(ws, wanted, limit=WAIT):
    """Reads frames (each must be a JSON array) until a message satisfies `wanted`; returns that message."""
    deadline = time.time() + limit
    while time.time() < deadline:
        frame = json.loads(ws.recv())
        assert isinstance(frame, list), frame
        for message in frame:
            if wanted(message):
                return message
    raise AssertionError("the wanted message never came")


def test_document_changes_reach_their_observers(store):
    changes = store.changes()
    try:
        one, _ = _collect(changes.for_document("users/1"))
        everything, _ = _collect(changes.for_all_documents())
        _store_users(store, "users/1", "users/2")
        change = one.get(timeout=WAIT)
        assert (change.key, change.type_of_change.value, change.collection_name) == ("users/1", "Put", "Users")
        assert change.change_vector
        seen = {everything.get(timeout=WAIT).key for _ in range(2)}
        assert seen == {"users/1", "users/2"}
        with store.open_session() as session:
            session.delete("users/1")
            session.save_changes()
        deleted = one.get(timeout=WAIT)
        assert deleted.type_of_change.value == "Delete"
        assert deleted.change_vector != change.change_vector
    finally:
        changes.close()


def test_collection_and_prefix_filters(store):
    changes = store.changes()
    try:
        users, _ = _collect(changes.for_documents_in_collection("Users"))
        prefixed, _ = _collect(changes.for_documents_start_with("orders/"))
        with store.open_session() as session:
            session.store(User("a"), "users/7")
            session.store({"total": 1}, "orders/1")
            session.store({"total": 2}, "items/1")
            session.save_changes()
        assert users.get(timeout=WAIT).key == "users/7"
        assert prefixed.get(timeout=WAIT).key == "orders/1"
        time.sleep(0.5)
        assert users.empty() and prefixed.empty()
    finally:
        changes.close()


def test_unsubscribed_observers_hear_nothing_more(store):
    changes = store.changes()
    try:
        got, close = _collect(changes.for_document("users/1"))
        _store_users(store, "users/1")
        got.get(timeout=WAIT)
        close()
        _store_users(store, "users/1")
        time.sleep(1)
        assert got.empty()
    finally:
        changes.close()


def test_index_changes(store):
    from ravendb import AbstractIndexCreationTask

    class UsersByName(AbstractIndexCreationTask):
        def __init__(self):
            super().__init__()
            self.map = "from u in docs.Users select new { u.name }"

    changes = store.changes()
    try:
        got, _ = _collect(changes.for_all_indexes())
        UsersByName().execute(store)
        change = got.get(timeout=WAIT)
        assert (change.name, change.type_of_change.value) == ("UsersByName", "IndexAdded")
    finally:
        changes.close()


def test_database_name_matches_case_insensitively(server_url, db_name):
    ws = _ws(server_url, db_name.upper())
    try:
        ws.send(json.dumps({"CommandId": 1, "Command": "watch-docs", "Param": None}))
        assert _frames_until(ws, lambda m: m.get("Type") == "Confirm") == {"Type": "Confirm", "CommandId": 1}
    finally:
        ws.close()


def test_operation_completion_is_notified(store, server_url, db_name, http):
    _store_users(store, "users/1", "users/2")
    ws = _ws(server_url, db_name)
    try:
        ws.send(json.dumps({"CommandId": 1, "Command": "watch-operations", "Param": None}))
        _frames_until(ws, lambda m: m.get("Type") == "Confirm")
        r = http.patch(f"{server_url}/databases/{db_name}/queries", json={"Query": {"Query": "from Users update { this.seen = true }"}})
        assert r.status_code == 200, r.text
        op_id = r.json()["OperationId"]
        # A progress report may come first; the completion always comes.
        message = _frames_until(ws, lambda m: m.get("Type") == "OperationStatusChange" and m["Value"]["State"]["Status"] != "InProgress")
        assert message["Value"]["OperationId"] == op_id
        assert message["Value"]["State"]["Status"] == "Completed"
        assert message["Value"]["State"]["Result"]["Total"] == 2
    finally:
        ws.close()


def test_bad_commands_get_an_error_and_the_connection_stays_usable(server_url, db_name, http):
    ws = _ws(server_url, db_name)
    try:
        ws.send("{not json")
        error = _frames_until(ws, lambda m: m.get("Type") == "Error")
        assert "parse" in error["Exception"]
        ws.send(json.dumps({"CommandId": 5, "Command": "watch-everything", "Param": None}))
        # The error and then the confirmation the client waits for, in one frame.
        frame = json.loads(ws.recv())
        while frame == []:
            frame = json.loads(ws.recv())
        assert frame[0]["Type"] == "Error" and "watch-everything" in frame[0]["Exception"]
        assert frame[1] == {"Type": "Confirm", "CommandId": 5}
        ws.send(json.dumps({"CommandId": 6, "Command": "watch-doc", "Param": None}))
        _frames_until(ws, lambda m: m.get("Type") == "Error")
        ws.send(json.dumps({"CommandId": 7, "Command": "watch-doc", "Param": "users/9"}))
        _frames_until(ws, lambda m: m == {"Type": "Confirm", "CommandId": 7})
        r = http.put(f"{server_url}/databases/{db_name}/docs", params={"id": "users/9"}, json={"@metadata": {"@collection": "Users"}})
        assert r.status_code == 201, r.text
        message = _frames_until(ws, lambda m: m.get("Type") == "DocumentChange")
        assert message["Value"]["Id"] == "users/9" and message["Value"]["Type"] == "Put"
    finally:
        ws.close()


def test_an_idle_connection_gets_empty_heartbeat_frames(server_url, db_name):
    ws = _ws(server_url, db_name)
    try:
        ws.settimeout(8)
        assert json.loads(ws.recv()) == []
    finally:
        ws.close()


def test_a_stalled_subscriber_does_not_block_writes(server_url, db_name, http):
    ws = _ws(server_url, db_name)
    try:
        ws.send(json.dumps({"CommandId": 1, "Command": "watch-docs", "Param": None}))
        _frames_until(ws, lambda m: m.get("Type") == "Confirm")
        # Stop reading (and shrink the receive buffer) while many writes arrive.
        ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        started = time.time()
        for batch in range(40):
            commands = [
                {"Type": "PUT", "Id": f"users/{batch}-{i}", "ChangeVector": None, "Document": {"pad": "x" * 200, "@metadata": {"@collection": "Users"}}}
                for i in range(250)
            ]
            r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands})
            assert r.status_code == 201, r.text
        assert time.time() - started < 30
        metrics = http.get(f"{server_url}/admin/metrics").json()
        assert metrics["Changes"]["Connected"] >= 1
    finally:
        ws.close()


def _bulk_users(http, server_url, db_name, n, prefix="users/"):
    for start in range(0, n, 500):
        commands = [
            {"Type": "PUT", "Id": f"{prefix}{i}", "ChangeVector": None, "Document": {"n": i, "@metadata": {"@collection": "Users"}}}
            for i in range(start, min(n, start + 500))
        ]
        r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands})
        assert r.status_code == 201, r.text


def test_counter_changes_reach_their_observers(store):
    _store_users(store, "users/1", "users/2")
    changes = store.changes()
    try:
        of_document, _ = _collect(changes.for_counters_of_document("users/1"))
        by_name, _ = _collect(changes.for_counter("Likes"))
        pair, _ = _collect(changes.for_counter_of_document("users/1", "likes"))
        everything, _ = _collect(changes.for_all_counters())
        with store.open_session() as session:
            session.counters_for("users/1").increment("likes", 3)
            session.save_changes()
        created = of_document.get(timeout=WAIT)
        assert (created.type_of_change.value, created.document_id, created.name, created.value) == ("Put", "users/1", "likes", 3)
        assert created.collection_name == "Users" and created.change_vector
        assert by_name.get(timeout=WAIT).value == 3
        assert pair.get(timeout=WAIT).value == 3
        assert everything.get(timeout=WAIT).name == "likes"
        with store.open_session() as session:
            session.counters_for("users/1").increment("likes", 2)
            session.counters_for("users/2").increment("views", 1)
            session.save_changes()
        incremented = of_document.get(timeout=WAIT)
        assert (incremented.type_of_change.value, incremented.value) == ("Increment", 5)
        assert pair.get(timeout=WAIT).value == 5
        seen = {(c.document_id, c.name) for c in (everything.get(timeout=WAIT), everything.get(timeout=WAIT))}
        assert seen == {("users/1", "likes"), ("users/2", "views")}
        with store.open_session() as session:
            session.counters_for("users/1").delete("likes")
            session.save_changes()
        deleted = pair.get(timeout=WAIT)
        assert deleted.type_of_change.value == "Delete" and deleted.name == "likes"
        time.sleep(0.5)
        assert of_document.qsize() == 1 and by_name.qsize() == 2 and pair.qsize() == 0
    finally:
        changes.close()


def test_counter_change_json_has_every_field(server_url, db_name, http):
    r = http.put(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, json={"@metadata": {"@collection": "Users"}})
    assert r.status_code == 201, r.text
    ws = _ws(server_url, db_name)
    try:
        ws.send(json.dumps({"CommandId": 1, "Command": "watch-document-counter", "Param": None, "Params": ["USERS/1", "Likes"]}))
        _frames_until(ws, lambda m: m == {"Type": "Confirm", "CommandId": 1})
        body = {"Documents": [{"DocumentId": "users/1", "Operations": [{"Type": "Increment", "CounterName": "Likes", "Delta": 7}]}]}
        r = http.post(f"{server_url}/databases/{db_name}/counters", json=body)
        assert r.status_code == 200, r.text
        message = _frames_until(ws, lambda m: m.get("Type") == "CounterChange")
        value = message["Value"]
        assert set(value) == {"Type", "DocumentId", "CollectionName", "Name", "Value", "ChangeVector"}
        assert (value["Type"], value["DocumentId"], value["Name"], value["Value"]) == ("Put", "users/1", "Likes", 7)
        # A failed batch raises no counter change: its increment of users/1 is rolled back with it.
        bad = {
            "Documents": [
                {"DocumentId": "users/1", "Operations": [{"Type": "Increment", "CounterName": "Likes", "Delta": 100}]},
                {"DocumentId": "users/404", "Operations": [{"Type": "Increment", "CounterName": "Likes", "Delta": 1}]},
            ]
        }
        assert http.post(f"{server_url}/databases/{db_name}/counters", json=bad).status_code >= 400
        good = {"Documents": [{"DocumentId": "users/1", "Operations": [{"Type": "Increment", "CounterName": "Likes", "Delta": 1}]}]}
        assert http.post(f"{server_url}/databases/{db_name}/counters", json=good).status_code == 200
        message = _frames_until(ws, lambda m: m.get("Type") == "CounterChange")
        assert (message["Value"]["Type"], message["Value"]["Value"]) == ("Increment", 8)
    finally:
        ws.close()


def test_index_batches_are_notified(store):
    from ravendb import AbstractIndexCreationTask

    class UsersByName(AbstractIndexCreationTask):
        def __init__(self):
            super().__init__()
            self.map = "from u in docs.Users select new { u.name }"

    UsersByName().execute(store)
    changes = store.changes()
    try:
        got, _ = _collect(changes.for_index("UsersByName"))
        _store_users(store, "users/1")
        deadline = time.time() + WAIT
        kinds = []
        while "BatchCompleted" not in kinds and time.time() < deadline:
            kinds.append(got.get(timeout=WAIT).type_of_change.value)
        assert "BatchCompleted" in kinds
    finally:
        changes.close()


def test_operation_progress_is_notified_at_a_bounded_rate(server_url, db_name, http):
    _bulk_users(http, server_url, db_name, 3000)
    ws = _ws(server_url, db_name)
    try:
        ws.send(json.dumps({"CommandId": 1, "Command": "watch-operations", "Param": None}))
        _frames_until(ws, lambda m: m.get("Type") == "Confirm")
        # About 3 s of work at 1,000 documents/s.
        r = http.patch(
            f"{server_url}/databases/{db_name}/queries",
            params={"maxOpsPerSec": "1000"},
            json={"Query": {"Query": "from Users update { this.seen = true }"}},
        )
        assert r.status_code == 200, r.text
        op_id = r.json()["OperationId"]
        statuses = []
        deadline = time.time() + 30
        while time.time() < deadline and "Completed" not in statuses:
            for message in json.loads(ws.recv()):
                if message.get("Type") == "OperationStatusChange":
                    assert message["Value"]["OperationId"] == op_id
                    statuses.append(message["Value"]["State"]["Status"])
                    if message["Value"]["State"]["Status"] == "InProgress":
                        assert message["Value"]["State"]["Progress"] is not None
        assert statuses[-1] == "Completed"
        progress = statuses.count("InProgress")
        # Reported while it ran, but at most every 0.5 s (not once per batch of 512).
        assert 1 <= progress <= 10, statuses
    finally:
        ws.close()


def test_debug_lists_connections_and_delete_drops_one(server_url, db_name, http):
    ws = _ws(server_url, db_name)
    other = _ws(server_url, db_name)
    try:
        for n, command in enumerate(
            [
                {"Command": "watch-doc", "Param": "Users/1"},
                {"Command": "watch-counters", "Param": None},
                {"Command": "watch-document-counter", "Param": None, "Params": ["users/1", "likes"]},
                {"Command": "watch-timeseries", "Param": "HeartRate"},
            ],
            start=1,
        ):
            ws.send(json.dumps({"CommandId": n, **command}))
            _frames_until(ws, lambda m, n=n: m == {"Type": "Confirm", "CommandId": n})
        r = http.get(f"{server_url}/databases/{db_name}/changes/debug")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["NumberOfConnections"] == 2
        mine = [c for c in body["Connections"] if c["WatchDocuments"] == ["users/1"]]
        assert len(mine) == 1, body
        mine = mine[0]
        assert mine["WatchAllCounters"] is True and mine["WatchAllDocuments"] is False
        assert mine["WatchCounterOfDocument"] == [{"DocumentId": "users/1", "Name": "likes"}]
        assert mine["WatchTimeSeries"] == ["heartrate"]
        assert mine["State"] == "Open" and mine["Age"].startswith("00:")
        r = http.delete(f"{server_url}/databases/{db_name}/changes", params={"id": mine["Id"]})
        assert r.status_code == 204, r.text
        ws.settimeout(WAIT)
        closed = False
        try:
            while True:
                frame = ws.recv()
                if not frame:
                    closed = True
                    break
        except websocket.WebSocketConnectionClosedException:
            closed = True
        assert closed
        deadline = time.time() + WAIT
        while time.time() < deadline and http.get(f"{server_url}/databases/{db_name}/changes/debug").json()["NumberOfConnections"] != 1:
            time.sleep(0.1)
        assert http.get(f"{server_url}/databases/{db_name}/changes/debug").json()["NumberOfConnections"] == 1
        # The other connection is untouched.
        other.send(json.dumps({"CommandId": 1, "Command": "watch-docs", "Param": None}))
        _frames_until(other, lambda m: m == {"Type": "Confirm", "CommandId": 1})
        assert http.delete(f"{server_url}/databases/{db_name}/changes").status_code == 400
        assert http.delete(f"{server_url}/databases/{db_name}/changes", params={"id": "abc"}).status_code == 400
        assert http.delete(f"{server_url}/databases/{db_name}/changes", params={"id": "999999"}).status_code == 204
    finally:
        ws.close()
        other.close()


def test_time_series_watches_are_confirmed(store, server_url, db_name):
    changes = store.changes()
    try:
        # The official client's observables wait for each watch's confirmation.
        for observable in (
            changes.for_all_time_series(),
            changes.for_time_series("HeartRate"),
            changes.for_time_series_of_document("users/1"),
            changes.for_time_series_of_document("users/1", "HeartRate"),
        ):
            _collect(observable)
    finally:
        changes.close()
    ws = _ws(server_url, db_name)
    try:
        commands = [
            {"Command": "watch-all-timeseries", "Param": None},
            {"Command": "unwatch-all-timeseries", "Param": None},
            {"Command": "watch-timeseries", "Param": "HeartRate"},
            {"Command": "watch-all-document-timeseries", "Param": "users/1"},
            {"Command": "watch-document-timeseries", "Param": None, "Params": ["users/1", "HeartRate"]},
            {"Command": "unwatch-document-timeseries", "Param": None, "Params": ["users/1", "HeartRate"]},
        ]
        for n, command in enumerate(commands, start=1):
            ws.send(json.dumps({"CommandId": n, **command}))
            message = _frames_until(ws, lambda m: m.get("Type") in ("Confirm", "Error"))
            assert message == {"Type": "Confirm", "CommandId": n}
        # A watch missing its parameters: an error, then the confirmation the client waits for.
        for n, command in ((10, {"Command": "watch-document-timeseries", "Param": None, "Params": ["users/1"]}), (11, {"Command": "watch-timeseries", "Param": None})):
            ws.send(json.dumps({"CommandId": n, **command}))
            seen = []
            _frames_until(ws, lambda m, n=n: seen.append(m) or m == {"Type": "Confirm", "CommandId": n})
            errors = [m for m in seen if m.get("Type") == "Error"]
            assert len(errors) == 1 and command["Command"] in errors[0]["Exception"], seen
    finally:
        ws.close()


def test_a_throttled_connection_gets_the_newest_document_change_only(server_url, db_name, http):
    ws = websocket.create_connection(
        server_url.replace("http://", "ws://") + f"/databases/{db_name}/changes?throttleConnection=true", timeout=WAIT
    )
    try:
        ws.send(json.dumps({"CommandId": 1, "Command": "watch-docs", "Param": None}))
        ws.send(json.dumps({"CommandId": 2, "Command": "watch-operations", "Param": None}))
        _frames_until(ws, lambda m: m == {"Type": "Confirm", "CommandId": 2})
        for i in range(5):
            r = http.put(f"{server_url}/databases/{db_name}/docs", params={"id": f"users/{i}"}, json={"@metadata": {"@collection": "Users"}})
            assert r.status_code == 201, r.text
        # Operation changes are never held back.
        r = http.delete(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Orders"})
        assert r.status_code == 200, r.text
        documents, operations = [], []
        deadline = time.time() + 15
        ws.settimeout(15)
        while time.time() < deadline and not documents:
            for message in json.loads(ws.recv()):
                if message.get("Type") == "DocumentChange":
                    documents.append(message["Value"]["Id"])
                    assert operations, "the operation's completion came first"
                elif message.get("Type") == "OperationStatusChange":
                    operations.append(message)
        assert documents == ["users/4"]
        debug = http.get(f"{server_url}/databases/{db_name}/changes/debug").json()["Connections"][0]
        assert debug["Throttled"] is True and debug["NotificationsSkipped"] == 4
    finally:
        ws.close()


def test_time_series_changes_reach_their_observers(store):
    from datetime import datetime, timedelta

    _store_users(store, "users/1", "users/2")
    base = datetime(2026, 1, 1, 12, 0, 0)
    changes = store.changes()
    try:
        of_document, _ = _collect(changes.for_time_series_of_document("users/1"))
        by_name, _ = _collect(changes.for_time_series("HeartRate"))
        everything, _ = _collect(changes.for_all_time_series())
        with store.open_session() as session:
            series = session.time_series_for("users/1", "HeartRate")
            series.append_single(base, 70)
            series.append_single(base + timedelta(minutes=5), 72)
            session.save_changes()
        put = of_document.get(timeout=WAIT)
        assert (put.type_of_change.value, put.document_id, put.name, put.collection_name) == ("Put", "users/1", "HeartRate", "Users")
        assert (put.from_, put.to_) == (base, base + timedelta(minutes=5)) and put.change_vector
        assert by_name.get(timeout=WAIT).document_id == "users/1"
        assert everything.get(timeout=WAIT).name == "HeartRate"
        with store.open_session() as session:
            session.time_series_for("users/1", "HeartRate").delete(base, base + timedelta(minutes=1))
            session.time_series_for("users/2", "Steps").append_single(base, 10)
            session.save_changes()
        deleted = of_document.get(timeout=WAIT)
        assert (deleted.type_of_change.value, deleted.from_, deleted.to_) == ("Delete", base, base + timedelta(minutes=1))
        seen = {(c.document_id, c.name, c.type_of_change.value) for c in (everything.get(timeout=WAIT), everything.get(timeout=WAIT))}
        assert seen == {("users/1", "HeartRate", "Delete"), ("users/2", "Steps", "Put")}
        time.sleep(0.5)
        assert of_document.qsize() == 0 and by_name.qsize() == 1 and everything.qsize() == 0
    finally:
        changes.close()
