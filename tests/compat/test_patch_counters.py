"""Counters inside JavaScript patches: incrementCounter, deleteCounter, counter and counterRaw, in a single
PATCH, a PATCH command of bulk_docs, and patch by query; all inside the patch's transaction."""

from __future__ import annotations

import random

from ravendb import PatchByQueryOperation, PatchOperation, PatchRequest, PatchStatus

from corvid_support import User, assert_error_json


def _counters(store, doc_id):
    with store.open_session() as s:
        return {k.lower(): v for k, v in s.counters_for(doc_id).get_all().items()}


def _raw(http, url, db, doc_id):
    r = http.get(f"{url}/databases/{db}/docs", params={"id": doc_id})
    return r.json()["Results"][0] if r.status_code == 200 else None


def test_single_patch_increments_reads_and_deletes_counters(store, server_url, db_name, http):
    with store.open_session() as s:
        s.store(User(name="a", age=3), "users/1")
        s.store(User(name="b", age=4), "users/2")
        s.counters_for("users/1").increment("Old", 9)
        s.save_changes()
    deltas = [random.Random(3).randint(1, 100) for _ in range(3)]
    script = (
        "incrementCounter(this, 'Likes', args.d0);"
        "incrementCounter('users/1', 'likes', args.d1);"  # names are case-insensitive
        "incrementCounter(this, 'Views');"  # delta defaults to 1
        "incrementCounter('users/2', 'Seen', args.d2);"  # another document, same transaction
        "deleteCounter(this, 'Old');"
        "this.likes = counter(this, 'Likes'); this.views = counter('users/1', 'Views');"
        "this.missing = counter(this, 'Nope'); this.raw = counterRaw(this, 'Likes');"
    )
    result = store.operations.send_patch_operation(
        PatchOperation("users/1", None, PatchRequest(script, {f"d{i}": d for i, d in enumerate(deltas)})), None
    )
    assert result == PatchStatus.PATCHED
    assert _counters(store, "users/1") == {"likes": deltas[0] + deltas[1], "views": 1}
    assert _counters(store, "users/2") == {"seen": deltas[2]}
    doc = _raw(http, server_url, db_name, "users/1")
    assert doc["likes"] == deltas[0] + deltas[1] and doc["views"] == 1 and doc["missing"] is None
    assert list(doc["raw"].values()) == [deltas[0] + deltas[1]]
    assert sorted(n.lower() for n in doc["@metadata"]["@counters"]) == ["likes", "views"]
    assert "HasCounters" in doc["@metadata"]["@flags"]
    assert "@counters" in _raw(http, server_url, db_name, "users/2")["@metadata"]


def test_counter_patch_in_bulk_docs_and_a_failure_rolls_back(store, server_url, db_name, http):
    with store.open_session() as s:
        s.store(User(name="a"), "users/1")
        s.save_changes()
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [{"Type": "PATCH", "Id": "users/1", "Patch": {"Script": "incrementCounter(this, 'c', args.n)", "Values": {"n": 5}}}]},
    )
    assert r.status_code == 201, r.text
    assert _counters(store, "users/1") == {"c": 5}
    # The script increments, then throws: the increment is rolled back with the rest of the patch.
    r = http.post(
        f"{server_url}/databases/{db_name}/bulk_docs",
        json={"Commands": [{"Type": "PATCH", "Id": "users/1", "Patch": {"Script": "incrementCounter(this, 'c', 100); throw new Error('boom')", "Values": {}}}]},
    )
    assert r.status_code >= 400
    assert_error_json(r)
    assert _counters(store, "users/1") == {"c": 5}
    # A counter of a missing document, a bad delta, a missing name: errors.
    for script in ["incrementCounter('users/404', 'c', 1)", "incrementCounter(this, 'c', 'x')", "incrementCounter(this)", "counter(42, 'c')"]:
        r = http.patch(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, json={"Patch": {"Script": script, "Values": {}}})
        assert r.status_code >= 400, (script, r.text)
        assert_error_json(r)
    assert _counters(store, "users/1") == {"c": 5}


def test_session_patch_can_use_counters(store):
    with store.open_session() as s:
        s.store(User(name="a", age=1), "users/1")
        s.save_changes()
    with store.open_session() as s:
        s.advanced.defer(
            __import__("ravendb").PatchCommandData("users/1", None, PatchRequest("incrementCounter(this, 'Visits', 7); this.age = counter(this, 'Visits')"))
        )
        s.save_changes()
    with store.open_session() as s:
        assert s.load("users/1", User).age == 7
    assert _counters(store, "users/1") == {"visits": 7}


def test_patch_by_query_with_counters(store):
    rng = random.Random(11)
    ages = {f"users/{i}": rng.randint(1, 80) for i in range(40)}
    with store.open_session() as s:
        for doc_id, age in ages.items():
            s.store(User(name=doc_id, age=age), doc_id)
        s.save_changes()
    query = "from Users as u where u.age >= 40 update { incrementCounter(u, 'Seniority', u.age); u.seniority = counter(u, 'Seniority'); }"
    store.operations.send_async(PatchByQueryOperation(query)).wait_for_completion()
    for doc_id, age in ages.items():
        expected = {"seniority": age} if age >= 40 else {}
        assert _counters(store, doc_id) == expected, doc_id
    with store.open_session() as s:
        seniors = list(s.query(object_type=User).where_greater_than_or_equal("age", 40).wait_for_non_stale_results())
        assert len(seniors) == len([a for a in ages.values() if a >= 40])
    # Delete them again by query.
    store.operations.send_async(PatchByQueryOperation("from Users as u update { deleteCounter(u, 'Seniority') }")).wait_for_completion()
    assert all(_counters(store, doc_id) == {} for doc_id in ages)
