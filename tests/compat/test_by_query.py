"""Patch by query and delete by query as tracked operations, through the official client: results equal a
recomputation from the data the test wrote; progress, cancellation, rate limits and bad input."""

from __future__ import annotations

import time

import pytest
from ravendb import DeleteByQueryOperation, PatchByQueryOperation
from ravendb.documents.operations.misc import QueryOperationOptions
from ravendb.documents.queries.index_query import IndexQuery

from corvid_support import assert_error_json


def _put_many(http, url, db, docs):
    commands = [{"Type": "PUT", "Id": i, "ChangeVector": None, "Document": {**d, "@metadata": {"@collection": "Users"}}} for i, d in docs.items()]
    for k in range(0, len(commands), 500):
        r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands[k : k + 500]})
        assert r.status_code == 201, r.text


def _all(http, url, db):
    r = http.get(f"{url}/databases/{db}/docs", params={"startsWith": "users/", "pageSize": 100000})
    return {d["@metadata"]["@id"]: d for d in r.json()["Results"]}


def _wait(http, url, db, op_id, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = http.get(f"{url}/databases/{db}/operations/state", params={"id": op_id}).json()
        if state["Status"] != "InProgress":
            return state
        time.sleep(0.05)
    raise AssertionError("operation did not finish")


def test_patch_by_query_with_filter_and_parameters(store, server_url, db_name, http):
    docs = {f"users/{i}": {"Name": f"u{i}", "Age": i % 50} for i in range(1, 1201)}
    _put_many(http, server_url, db_name, docs)
    query = IndexQuery("from Users as u where u.Age >= $min update { u.Age = u.Age + args.add; u.Touched = true; }")
    query.query_parameters = {"min": 40, "add": 1000}
    query.wait_for_non_stale_results = True
    op = store.operations.send_async(PatchByQueryOperation(query, QueryOperationOptions(allow_stale=False, retrieve_details=True)))
    op.wait_for_completion()
    after = _all(http, server_url, db_name)
    for doc_id, before in docs.items():
        if before["Age"] >= 40:
            assert after[doc_id]["Age"] == before["Age"] + 1000 and after[doc_id]["Touched"] is True, doc_id
        else:
            assert after[doc_id]["Age"] == before["Age"] and "Touched" not in after[doc_id], doc_id
    state = op.fetch_operations_status()
    expected = sum(1 for d in docs.values() if d["Age"] >= 40)
    assert state["Result"]["Total"] == expected
    assert len(state["Result"]["Details"]) == expected
    assert {d["Status"] for d in state["Result"]["Details"]} == {"Patched"}


def test_patch_whole_collection_and_declared_functions(store, server_url, db_name, http):
    docs = {f"users/{i}": {"Name": f"u{i}", "Age": i} for i in range(1, 301)}
    _put_many(http, server_url, db_name, docs)
    q = "declare function twice(x) { return x * 2; }\nfrom Users update { this.Age = twice(this.Age); }"
    store.operations.send_async(PatchByQueryOperation(q)).wait_for_completion()
    after = _all(http, server_url, db_name)
    assert {k: v["Age"] for k, v in after.items()} == {k: v["Age"] * 2 for k, v in docs.items()}


def test_delete_by_query(store, server_url, db_name, http):
    docs = {f"users/{i}": {"Name": f"u{i}", "Age": i % 7} for i in range(1, 701)}
    _put_many(http, server_url, db_name, docs)
    query = IndexQuery("from Users where Age = 3 or Age = 5")
    query.wait_for_non_stale_results = True
    store.operations.send_async(DeleteByQueryOperation(query, QueryOperationOptions(allow_stale=False))).wait_for_completion()
    after = _all(http, server_url, db_name)
    assert set(after) == {k for k, v in docs.items() if v["Age"] not in (3, 5)}


def test_progress_rate_limit_and_kill(server_url, db_name, http):
    docs = {f"users/{i}": {"Age": 1} for i in range(1, 2001)}
    _put_many(http, server_url, db_name, docs)
    r = http.patch(
        f"{server_url}/databases/{db_name}/queries",
        params={"allowStale": "true", "maxOpsPerSec": "200"},
        json={"Query": {"Query": "from Users update { this.Age = 2 }"}},
    )
    assert r.status_code == 200, r.text
    op_id = r.json()["OperationId"]
    assert r.json()["OperationNodeTag"] == "A"
    time.sleep(1.0)
    state = http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": op_id}).json()
    assert state["Status"] == "InProgress"
    assert state["Progress"]["Total"] == 2000
    assert 0 < state["Progress"]["Processed"] < 2000  # throttled to 200/s
    listed = http.get(f"{server_url}/databases/{db_name}/operations").json()["Results"]
    assert any(o["Id"] == op_id and o["TaskType"] == "UpdateByQuery" for o in listed)
    assert http.post(f"{server_url}/databases/{db_name}/operations/kill", params={"id": op_id}).status_code == 204
    final = _wait(http, server_url, db_name, op_id)
    assert final["Status"] == "Canceled"
    after = _all(http, server_url, db_name)
    patched = sum(1 for d in after.values() if d["Age"] == 2)
    assert 0 < patched < 2000  # committed batches stay, the rest never ran


@pytest.mark.parametrize(
    "method,body,expect",
    [
        ("patch", {"Query": {"Query": "from Users where"}}, "InvalidQueryException"),
        ("patch", {"Query": {"Query": "from Users"}}, "InvalidQueryException"),
        ("patch", {"Query": {"Query": "from Users update { this.x = ; }"}}, "JavaScriptException"),
        ("patch", {"Query": {"Query": "from index 'Nope' update { this.x = 1 }"}}, "IndexDoesNotExistException"),
        ("delete", {"Query": "from Users select Name"}, "InvalidQueryException"),
        ("delete", {"Query": "from Users update { this.x = 1 }"}, "InvalidQueryException"),
    ],
)
def test_bad_operations_are_refused_up_front(server_url, db_name, http, method, body, expect):
    _put_many(http, server_url, db_name, {"users/1": {"Age": 1}})
    r = getattr(http, method)(f"{server_url}/databases/{db_name}/queries", json=body)
    assert assert_error_json(r)["Type"].endswith(expect), r.text
    assert _all(http, server_url, db_name)["users/1"]["Age"] == 1


def test_failing_script_faults_the_operation(server_url, db_name, http):
    _put_many(http, server_url, db_name, {f"users/{i}": {"Age": i} for i in range(1, 11)})
    r = http.patch(f"{server_url}/databases/{db_name}/queries", json={"Query": {"Query": "from Users update { throw new Error('nope ' + this.Age); }"}})
    state = _wait(http, server_url, db_name, r.json()["OperationId"])
    assert state["Status"] == "Faulted"
    assert "nope" in state["Result"]["Message"] and state["Result"]["Type"].endswith("JavaScriptException")
    assert http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": 987654}).status_code == 404


def test_an_operation_that_creates_its_index_waits_for_it(store, server_url, db_name, http):
    """The first filtered delete on a collection creates the automatic index; with the default allowStale
    the operation must still see every matching document (it waits for the new index, as a query does)."""
    _put_many(http, server_url, db_name, {f"users/{i}": {"age": i % 4} for i in range(1, 401)})
    store.operations.send_async(DeleteByQueryOperation(IndexQuery("from users where age == 1"))).wait_for_completion()
    after = _all(http, server_url, db_name)
    assert sorted(after) == sorted(f"users/{i}" for i in range(1, 401) if i % 4 != 1)
