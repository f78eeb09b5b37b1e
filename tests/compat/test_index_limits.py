"""Indexes that cannot take the server down: a runaway C# map stops at its budget for the document that
runs away (an index error of that document, the other documents indexed), an index that fails too often
becomes errored as in RavenDB (`State: Error`, its queries refused), deleting a busy index answers at
once, the database opens after a restart, and a dynamic query cannot create a giant automatic index."""

from __future__ import annotations

import time

import pytest
import requests
from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.indexes import EnableIndexOperation, PutIndexesOperation

from corvid_support import User, assert_error_json, create_database, open_store, unique_db_name, wait_until

DOUBLING = "from d in docs.Lqs let v1 = d.s + d.s " + " ".join(f"let v{i} = v{i - 1} + v{i - 1}" for i in range(2, 26)) + (
    " select new { x = v25.Length }"
)
CROSS = "from d in docs.Lqs from a in d.arr from b in d.arr from c in d.arr select new { x = a + b + c }"
RECURSE = "from d in docs.Lqs select new { n = Recurse(d, x => x).Count() }"

BIG = {"s": "a" * 1000, "arr": list(range(1000))}
SMALL = {"s": "", "arr": [1, 2]}


def put_docs(http, url, db, docs: dict, collection: str) -> None:
    commands = [
        {"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": collection}}}
        for k, v in docs.items()
    ]
    r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=60)
    assert r.status_code == 201, r.text


def put_index(url, db, name: str, map_: str) -> None:
    with open_store(url, db) as store:
        store.maintenance.send(PutIndexesOperation(IndexDefinition(name=name, maps={map_})))


def index_stats(http, url, db, name: str) -> dict:
    return http.get(f"{url}/databases/{db}/indexes/stats", params={"name": name}, timeout=10).json()["Results"][0]


def index_errors(http, url, db, name: str) -> list:
    return http.get(f"{url}/databases/{db}/indexes/errors", params={"name": name}, timeout=10).json()["Results"][0]["Errors"]


def raw_query(http, url, db, rql: str, wait: bool = True) -> requests.Response:
    payload = {"Query": rql}
    if wait:
        payload.update(WaitForNonStaleResults=True, WaitForNonStaleResultsTimeout="00:01:00")
    return http.post(f"{url}/databases/{db}/queries", json=payload, timeout=90)


def test_runaway_linq_maps_fail_their_document_only_and_the_server_stays_up(server_factory, http):
    server = server_factory()
    url, db = server.url, unique_db_name("runaway")
    create_database(url, db)
    docs = {"lqs/big": BIG, **{f"lqs/{i}": SMALL for i in range(10)}}
    put_docs(http, url, db, docs, "Lqs")
    put_index(url, db, "Doubling", DOUBLING)
    put_index(url, db, "Cross", CROSS)
    put_index(url, db, "Recursing", RECURSE)

    for name, where in [("Doubling", "x = 0"), ("Cross", "x = 3")]:
        r = raw_query(http, url, db, f"from index '{name}' where {where}")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["IsStale"] is False and sorted(d["@metadata"]["@id"] for d in body["Results"]) == [f"lqs/{i}" for i in range(10)]
        errors = index_errors(http, url, db, name)
        assert [e["Document"] for e in errors] == ["lqs/big"], errors
        assert "budget" in errors[0]["Error"], errors
        stats = index_stats(http, url, db, name)
        assert stats["State"] == "Normal" and stats["MapErrors"] == 1 and stats["MapAttempts"] == 11, stats
    assert server.running

    # Every document of this one runs away: the index becomes errored and refuses queries.
    assert wait_until(lambda: index_stats(http, url, db, "Recursing")["State"] == "Error", timeout=60)
    assert len(index_errors(http, url, db, "Recursing")) == 11
    r = raw_query(http, url, db, "from index 'Recursing'", wait=False)
    assert r.status_code == 500 and assert_error_json(r)["Type"] == "System.InvalidOperationException"
    assert "is invalid, out of 11 map attempts, 11 has failed" in r.json()["Message"]

    started = time.monotonic()
    r = http.delete(f"{url}/databases/{db}/indexes", params={"name": "Doubling"}, timeout=30)
    assert r.status_code in (200, 204) and time.monotonic() - started < 10

    url = server.restart()
    r = raw_query(http, url, db, "from index 'Cross' where x = 6")
    assert r.status_code == 200 and r.json()["TotalResults"] == 10, r.text
    assert index_stats(http, url, db, "Recursing")["State"] == "Error", "the errored state survives a restart"
    names = [s["Name"] for s in http.get(f"{url}/databases/{db}/indexes/stats", timeout=10).json()["Results"]]
    assert sorted(names) == ["Cross", "Recursing"]


def test_deleting_an_index_that_is_busy_with_runaway_documents_answers_at_once(server_factory, http):
    server = server_factory()
    url, db = server.url, unique_db_name("busy")
    create_database(url, db)
    put_docs(http, url, db, {f"lqs/{i}": BIG for i in range(60)}, "Lqs")
    put_index(url, db, "Cross", CROSS)
    assert wait_until(lambda: index_stats(http, url, db, "Cross")["MapAttempts"] > 0, timeout=30)
    working = index_stats(http, url, db, "Cross")
    assert working["IsStale"] and working["MapAttempts"] < 60, f"the index is not working anymore: {working}"
    started = time.monotonic()
    r = http.delete(f"{url}/databases/{db}/indexes", params={"name": "Cross"}, timeout=30)
    assert r.status_code in (200, 204)
    assert time.monotonic() - started < 5, f"the delete took {time.monotonic() - started:.1f}s"
    assert http.get(f"{url}/databases/{db}/indexes/stats", timeout=10).json()["Results"] == []
    assert server.running


def test_a_javascript_index_whose_map_always_throws_becomes_errored(store, server_url, db_name, http):
    with store.open_session() as s:
        for i in range(10):
            s.store(User(name=f"u{i}", age=i), f"users/{i}")
        s.save_changes()
    definition = IndexDefinition(name="AlwaysThrows", maps={"map('Users', function (u) { throw new Error('boom'); })"})
    store.maintenance.send(PutIndexesOperation(definition))
    assert wait_until(lambda: index_stats(http, server_url, db_name, "AlwaysThrows")["State"] == "Error", timeout=30)
    stats = index_stats(http, server_url, db_name, "AlwaysThrows")
    assert stats["MapAttempts"] == 10 and stats["MapErrors"] == 10, stats
    with store.open_session() as s:
        with pytest.raises(Exception) as raised:
            list(s.query_index("AlwaysThrows", User))
    assert "is invalid, out of 10 map attempts, 10 has failed" in str(raised.value)
    # Enabling it again clears the errored state (and its count of failures), as RavenDB's enable does.
    store.maintenance.send(EnableIndexOperation("AlwaysThrows"))
    assert wait_until(lambda: index_stats(http, server_url, db_name, "AlwaysThrows")["State"] == "Normal", timeout=10)
    with store.open_session() as s:
        assert list(s.query_index("AlwaysThrows", User)) == []


def test_a_dynamic_query_cannot_create_a_giant_automatic_index(server_url, db_name, http):
    base = f"{server_url}/databases/{db_name}"
    put_docs(http, server_url, db_name, {"users/1": {"f0": 1}}, "Users")
    many_fields = "from Users where f0 = 1 order by " + ", ".join(f"f{i}" for i in range(1000))
    long_name = "from Users where " + " and ".join(f"{c * 75_000} = 1" for c in "abc")
    for rql, problem in [(many_fields, "1000 fields; at most 128"), (long_name, "characters; at most 4096")]:
        r = http.post(f"{base}/queries", json={"Query": rql}, timeout=60)
        assert r.status_code == 400, r.text[:300]
        body = assert_error_json(r)
        assert body["Type"].endswith("InvalidQueryException") and problem in body["Message"], body["Message"][:300]
    assert http.get(f"{base}/indexes/stats", timeout=10).json()["Results"] == [], "nothing was created"
    # A query within the limits still gets its automatic index.
    r = http.post(f"{base}/queries", json={"Query": "from Users where f0 = 1", "WaitForNonStaleResults": True}, timeout=60)
    assert r.status_code == 200 and r.json()["TotalResults"] == 1
