"""Test patches (`PATCH /docs?id=&test=true`): the patch runs and answers what it would do (modified and
original document, debug output), and nothing is written: not the document, its change vector or etag, not
documents it puts or deletes, not counters."""

from __future__ import annotations

import random

from ravendb import PatchOperation, PatchRequest, PatchStatus

from corvid_support import User


def _raw(http, url, db, doc_id):
    r = http.get(f"{url}/databases/{db}/docs", params={"id": doc_id})
    return r.json()["Results"][0] if r.status_code == 200 else None


def _last_etag(http, url, db):
    return http.get(f"{url}/databases/{db}/stats").json()["LastDocEtag"]


def test_official_client_test_patch_changes_nothing(store, server_url, db_name, http):
    age = random.Random(2).randint(10, 90)
    with store.open_session() as s:
        s.store(User(name="a", age=age), "users/1")
        s.store(User(name="victim", age=1), "users/2")
        s.counters_for("users/1").increment("Likes", 3)
        s.save_changes()
    before = _raw(http, server_url, db_name, "users/1")
    etag_before = _last_etag(http, server_url, db_name)
    script = (
        "output('age was ' + this.age); this.age += args.n; this.name = 'changed';"
        "put('users/new', { Name: 'created' }); del('users/2'); incrementCounter(this, 'Likes', 100);"
    )
    command = PatchOperation.PatchCommand(
        store.conventions, "users/1", None, PatchRequest(script, {"n": 5}), None, False, True, True
    )
    store.get_request_executor().execute_command(command)
    result = command.result
    assert result.status == PatchStatus.PATCHED
    assert result.modified_document["age"] == age + 5 and result.modified_document["name"] == "changed"
    assert result.original_document["age"] == age and result.original_document["name"] == "a"
    assert result.debug["Info"] == [f"age was {age}"]

    # Nothing was written.
    after = _raw(http, server_url, db_name, "users/1")
    assert after == before
    assert _last_etag(http, server_url, db_name) == etag_before
    assert _raw(http, server_url, db_name, "users/new") is None
    assert _raw(http, server_url, db_name, "users/2")["name"] == "victim"
    with store.open_session() as s:
        assert s.counters_for("users/1").get("Likes") == 3

    # The same patch without test=true does write.
    store.operations.send_patch_operation(PatchOperation("users/1", None, PatchRequest("this.age += args.n", {"n": 5})), None)
    assert _raw(http, server_url, db_name, "users/1")["age"] == age + 5


def test_raw_test_patch_shapes(server_url, db_name, http, store):
    with store.open_session() as s:
        s.store(User(name="a", age=1), "users/1")
        s.save_changes()
    url = f"{server_url}/databases/{db_name}/docs"
    r = http.patch(url, params={"id": "users/1", "test": "true"}, json={"Patch": {"Script": "this.age = 7", "Values": {}}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["Status"] == "Patched" and body["ModifiedDocument"]["age"] == 7 and body["OriginalDocument"]["age"] == 1
    assert body["Debug"] == {"Info": []}
    # A missing document: 404, and PatchIfMissing is not applied for real.
    r = http.patch(
        url,
        params={"id": "users/404", "test": "true"},
        json={"Patch": {"Script": "this.x = 1", "Values": {}}, "PatchIfMissing": {"Script": "this.x = 2; this['@metadata'] = {'@collection': 'Users'}", "Values": {}}},
    )
    assert r.status_code == 201 and r.json()["Status"] == "Created" and r.json()["ModifiedDocument"]["x"] == 2
    assert _raw(http, server_url, db_name, "users/404") is None
    r = http.patch(url, params={"id": "users/405", "test": "true"}, json={"Patch": {"Script": "this.x = 1", "Values": {}}})
    assert r.status_code == 404
    # A failing script is an error, as without test.
    r = http.patch(url, params={"id": "users/1", "test": "true"}, json={"Patch": {"Script": "throw new Error('nope')", "Values": {}}})
    assert r.status_code >= 400 and "nope" in r.json()["Message"]
    assert _raw(http, server_url, db_name, "users/1")["age"] == 1
