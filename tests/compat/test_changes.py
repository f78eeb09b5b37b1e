"""The Changes API (`/databases/{db}/changes`, a websocket): document, collection, prefix and index
notifications through the official client's `store.changes()`, unsubscribing, operation notifications,
and raw-socket checks of the protocol (confirmations, array frames, bad commands, a stalled client)."""

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
        message = _frames_until(ws, lambda m: m.get("Type") == "OperationStatusChange")
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
