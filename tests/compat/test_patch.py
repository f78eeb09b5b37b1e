"""JavaScript patches through the official client: PatchOperation, the session's patch/increment helpers,
batch patches, concurrency, and bad scripts (each a clear error, the document unchanged, the server fine)."""

from __future__ import annotations

import concurrent.futures

import pytest
import requests
from ravendb import PatchOperation, PatchRequest, PatchStatus

from corvid_support import User, assert_error_json, open_store


def _store_user(store, doc_id="users/1", name="Jo", age=30):
    with store.open_session() as s:
        s.store(User(name=name, age=age), doc_id)
        s.save_changes()


def _raw(http, url, db, doc_id):
    r = http.get(f"{url}/databases/{db}/docs", params={"id": doc_id})
    return r.json()["Results"][0] if r.status_code == 200 else None


def test_patch_operation_statuses(store):
    _store_user(store)
    ops = store.operations
    result = ops.send_patch_operation(PatchOperation("users/1", None, PatchRequest("this.age = args.a + 1", {"a": 41})), None)
    assert result == PatchStatus.PATCHED
    # Same value again: nothing changes.
    assert ops.send_patch_operation(PatchOperation("users/1", None, PatchRequest("this.age = 42")), None) == PatchStatus.NOT_MODIFIED
    assert ops.send_patch_operation(PatchOperation("users/404", None, PatchRequest("this.age = 1")), None) == PatchStatus.DOCUMENT_DOES_NOT_EXIST
    with store.open_session() as s:
        assert s.load("users/1", User).age == 42


def test_patch_if_missing_creates_and_change_vector_mismatch_skips(store, server_url, db_name, http):
    ops = store.operations
    op = PatchOperation("users/9", None, PatchRequest("this.age++"), PatchRequest("this.name = 'new'; this['@metadata'] = {'@collection': 'Users'}"))
    assert ops.send_patch_operation(op, None) == PatchStatus.CREATED
    doc = _raw(http, server_url, db_name, "users/9")
    assert doc["name"] == "new" and doc["@metadata"]["@collection"] == "Users"
    skipped = PatchOperation("users/9", "A:999-nothere", PatchRequest("this.age = 5"), skip_patch_if_change_vector_mismatch=True)
    assert ops.send_patch_operation(skipped, None) == PatchStatus.NOT_MODIFIED  # the client reports Skipped as 304
    assert "age" not in _raw(http, server_url, db_name, "users/9")
    with pytest.raises(Exception) as failure:
        ops.send_patch_operation(PatchOperation("users/9", "A:999-nothere", PatchRequest("this.age = 5")), None)
    assert "concurrency" in str(failure.value).lower() or "change vector" in str(failure.value).lower()


def test_patch_response_shape_and_debug_output(server_url, db_name, http, store):
    _store_user(store)
    r = http.patch(
        f"{server_url}/databases/{db_name}/docs",
        params={"id": "users/1", "debug": "true"},
        json={"Patch": {"Script": "output('before ' + this.age); this.age += args.n; console.log('after', this.age)", "Values": {"n": 2}}},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["Status"] == "Patched"
    assert body["ModifiedDocument"]["age"] == 32
    assert body["OriginalDocument"]["age"] == 30
    assert body["Collection"] == "Users"
    assert body["ChangeVector"] == body["ModifiedDocument"]["@metadata"]["@change-vector"]
    assert body["Debug"]["Info"] == ["before 30", "after 32"]


def test_session_patch_increment_and_add_or_increment(store, server_url, db_name, http):
    _store_user(store, age=10)
    with store.open_session() as s:
        s.advanced.increment("users/1", "age", 5)
        s.advanced.patch("users/1", "name", "Renamed")
        s.save_changes()
    with store.open_session() as s:
        u = s.load("users/1", User)
        assert (u.name, u.age) == ("Renamed", 15)
    with store.open_session() as s:
        s.advanced.add_or_increment("users/2", User(name="Fresh", age=1), "age", 3)
        s.advanced.add_or_increment("users/1", User(name="Ignored", age=1), "age", 3)
        s.save_changes()
    with store.open_session() as s:
        assert s.load("users/2", User).age == 1  # created as given
        assert s.load("users/1", User).age == 18  # incremented


def test_patch_load_put_and_del_run_in_the_same_transaction(server_url, db_name, http, store):
    _store_user(store, "users/1", "A", 1)
    _store_user(store, "users/2", "B", 2)
    script = "var other = load(args.other); this.friendAge = other.age; put('logs/1', {text: 'patched ' + id(this), '@metadata': {'@collection': 'Logs'}}); del(args.gone);"
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [{"Type": "PATCH", "Id": "users/1", "ChangeVector": None, "Patch": {"Script": script, "Values": {"other": "users/2", "gone": "users/2"}}, "ReturnDocument": True}]},
    )
    assert r.status_code == 201, r.text
    reply = r.json()["Results"][0]
    assert reply["Type"] == "PATCH" and reply["PatchStatus"] == "Patched"
    assert reply["ModifiedDocument"]["friendAge"] == 2
    assert _raw(http, server_url, db_name, "logs/1")["text"] == "patched users/1"
    assert _raw(http, server_url, db_name, "users/2") is None


def test_batch_patch_over_many_ids(server_url, db_name, http, store):
    for i in range(1, 6):
        _store_user(store, f"users/{i}", f"U{i}", i)
    # The 7.2.7 client's BatchPatchCommandData cannot hold more than one id (a set.add bug): raw protocol.
    ids = [f"users/{i}" for i in range(1, 6)] + ["users/missing"]
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [{"Type": "BatchPATCH", "Ids": [{"Id": i} for i in ids], "Patch": {"Script": "this.age *= 10", "Values": {}}}]},
    )
    assert r.status_code == 201, r.text
    statuses = {e["Id"]: e["PatchStatus"] for e in r.json()["Results"][0]["Results"]}
    assert statuses == {**{f"users/{i}": "Patched" for i in range(1, 6)}, "users/missing": "DocumentDoesNotExist"}
    for i in range(1, 6):
        assert _raw(http, server_url, db_name, f"users/{i}")["age"] == i * 10
    assert _raw(http, server_url, db_name, "users/missing") is None


def test_a_failing_patch_rolls_back_the_whole_batch(server_url, db_name, http, store):
    _store_user(store, age=1)
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [
            {"Type": "PUT", "Id": "users/7", "ChangeVector": None, "Document": {"name": "x", "@metadata": {"@collection": "Users"}}},
            {"Type": "PATCH", "Id": "users/1", "ChangeVector": None, "Patch": {"Script": "this.age = 2; throw new Error('boom');", "Values": {}}},
        ]},
    )
    body = assert_error_json(r)
    assert "boom" in body["Message"]
    assert _raw(http, server_url, db_name, "users/7") is None
    assert _raw(http, server_url, db_name, "users/1")["age"] == 1


@pytest.mark.parametrize(
    "script,expect",
    [
        ("this.age = ;", "compile"),
        ("while (true) {}", "longer than the limit"),
        ("var a = []; while (true) { a.push(new Array(100000).fill(1)); }", "memory"),
    ],
)
def test_bad_scripts_are_clear_errors_and_change_nothing(server_url, db_name, http, store, script, expect):
    _store_user(store, age=1)
    before = _raw(http, server_url, db_name, "users/1")
    r = http.patch(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, json={"Patch": {"Script": script, "Values": {}}})
    body = assert_error_json(r)
    assert r.status_code == 400
    assert body["Type"].endswith("JavaScriptException")
    assert expect in body["Message"].lower() or (expect == "memory" and "limit" in body["Message"].lower()), body["Message"]
    assert _raw(http, server_url, db_name, "users/1") == before
    # The server is healthy: a good patch still works.
    ok = http.patch(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, json={"Patch": {"Script": "this.age = 2", "Values": {}}})
    assert ok.status_code == 200, ok.text


def test_concurrent_increments_lose_nothing(server_url, db_name, store):
    _store_user(store, age=0)
    clients, per_client = 16, 25

    def work(_):
        acknowledged = 0
        with requests.Session() as http:
            for _ in range(per_client):
                r = http.patch(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, json={"Patch": {"Script": "this.age += 1", "Values": {}}})
                if r.status_code == 200:
                    acknowledged += 1
        return acknowledged

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        acknowledged = sum(pool.map(work, range(clients)))
    assert acknowledged == clients * per_client
    with store.open_session() as s:
        assert s.load("users/1", User).age == acknowledged


def test_json_patch_operation_and_batch_command(store, server_url, db_name, http):
    from ravendb import JsonPatchDocument, JsonPatchOperation

    with store.open_session() as s:
        s.store(User(name="Jo", age=30), "users/1")
        s.save_changes()
    patch = JsonPatchDocument()
    patch.replace("/age", 31)
    patch.add("/tags", ["a"])
    patch.add("/tags/-", "b")
    result = store.operations.send(JsonPatchOperation("users/1", patch))
    assert str(result.status) in ("Patched", "PatchStatus.PATCHED") or result.status.value == "Patched"
    doc = _raw(http, server_url, db_name, "users/1")
    assert (doc["age"], doc["tags"], doc["@metadata"]["@collection"]) == (31, ["a", "b"], "Users")
    # A failed test changes nothing, in the batch as well.
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [{"Type": "JsonPatch", "Id": "users/1", "ChangeVector": None, "JsonPatch": {"Operations": [
            {"op": "remove", "path": "/tags"}, {"op": "test", "path": "/age", "value": 99}]}, "ReturnDocument": True}]},
    )
    assert r.status_code == 409, r.text
    assert _raw(http, server_url, db_name, "users/1")["tags"] == ["a", "b"]
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [{"Type": "JsonPatch", "Id": "users/1", "ChangeVector": None, "JsonPatch": {"Operations": [
            {"op": "move", "from": "/tags", "path": "/labels"}]}, "ReturnDocument": True}]},
    )
    reply = r.json()["Results"][0]
    assert reply["Type"] == "JsonPatch" and reply["PatchStatus"] == "Patched" and reply["ModifiedDocument"]["labels"] == ["a", "b"]
    r = http.patch(f"{server_url}/databases/{db_name}/json-patch", params={"id": "users/404"}, json={"Operations": []})
    assert r.status_code == 404
    r = http.patch(f"{server_url}/databases/{db_name}/json-patch", params={"id": "users/1"}, json={"Operations": [{"op": "fly", "path": "/a"}]})
    assert "unknown op" in assert_error_json(r)["Message"]
