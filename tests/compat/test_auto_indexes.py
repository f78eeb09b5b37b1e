"""Automatic indexes: RavenDB's names, extension to wider indexes, staleness and write-to-visible,
the index management endpoints (through the official client where it has an operation), and the
errors for bad or not yet supported RQL. Expected answers are computed from the documents written."""

from __future__ import annotations

import random
import re

import pytest
import requests
from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.indexes import (
    DeleteIndexOperation,
    GetIndexErrorsOperation,
    GetIndexNamesOperation,
    GetIndexOperation,
    GetIndexStatisticsOperation,
    GetIndexesStatisticsOperation,
    ResetIndexOperation,
)
from ravendb.exceptions.documents.indexes import IndexDoesNotExistException

from corvid_support import User, assert_error_json, stats, wait_until


# -- helpers ------------------------------------------------------------------------------------------
def put_docs(http, url, db, docs: dict, collection: str, batch: int = 2000) -> None:
    items = list(docs.items())
    for i in range(0, len(items), batch):
        commands = [
            {"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": collection}}}
            for k, v in items[i : i + batch]
        ]
        r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=120)
        assert r.status_code == 201, r.text


def delete_docs(http, url, db, ids) -> None:
    r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": [{"Id": i, "ChangeVector": None, "Type": "DELETE"} for i in ids]})
    assert r.status_code == 201, r.text


def query(http, url, db, rql, params=None, wait=True, **body) -> dict:
    payload = {"Query": rql, "QueryParameters": params, **body}
    if wait:
        payload["WaitForNonStaleResults"] = True
        payload["WaitForNonStaleResultsTimeout"] = "00:00:30"
    r = http.post(f"{url}/databases/{db}/queries", json=payload, timeout=60)
    assert r.status_code == 200, f"{rql} -> {r.status_code} {r.text[:500]}"
    out = r.json()
    if wait:
        assert out["IsStale"] is False, rql
    return out


def ids_of(body) -> list[str]:
    return sorted(x["@metadata"]["@id"] for x in body["Results"])


def index_names(http, url, db) -> list[str]:
    r = http.get(f"{url}/databases/{db}/indexes", params={"start": 0, "pageSize": 1024, "namesOnly": "true"})
    assert r.status_code == 200, r.text
    return sorted(r.json()["Results"])



def wait_for_indexing(http, url, db, timeout=30.0) -> dict:
    """The client's wait_for_indexing: GET /stats until no index is stale."""

    def done():
        s = http.get(f"{url}/databases/{db}/stats").json()
        return s if all(not i["IsStale"] for i in s["Indexes"]) else None

    result = wait_until(done, timeout)
    assert result, f"indexes still stale after {timeout}s"
    return result


def users(n: int, seed: int) -> dict:
    rng = random.Random(seed)
    return {
        f"users/{i}": {"Name": rng.choice(["Ann", "bob", "CAROL", "dan"]) + str(rng.randint(0, 9)), "Age": rng.randint(1, 99), "City": rng.choice(["Oslo", "Rome"])}
        for i in range(1, n + 1)
    }


# -- names --------------------------------------------------------------------------------------------
# Each case has its own collection (Users0, Users1, ...) so that one database holds them all without one
# index extending another.
NAMES = [
    ("Users", "from {c} where Name = 'x'", "Auto/{c}/ByName"),
    ("Users", "from {c} where Name = 'x' and Age > 3", "Auto/{c}/ByAgeAndName"),
    ("Users", "from {c} where Age > 3 or Name = 'x'", "Auto/{c}/ByAgeAndName"),
    ("Users", "from {c} order by Age as long", "Auto/{c}/ByAge"),
    ("Users", "from {c} where search(Name, 'x')", "Auto/{c}/BySearch(Name)"),
    ("Users", "from {c} where exact(Name = 'x')", "Auto/{c}/ByExact(Name)"),
    ("Users", "from {c} where startsWith(Name, 'x') select Name", "Auto/{c}/ByName"),
    ("Users", "from {c} where Name = 'x' order by Name desc", "Auto/{c}/ByName"),
    ("Orders", "from {c} where ShipTo.City = 'x'", "Auto/{c}/ByShipTo.City"),
    ("Orders", "from {c} where ShipTo.City = 'x' order by Freight as double desc", "Auto/{c}/ByFreightAndShipTo.City"),
    ("Orders", "from '{c}' where exists(Lines)", "Auto/{c}/ByLines"),
]


def test_auto_index_names(server_url, db_name, http):
    expected_names = []
    for i, (prefix, rql, name) in enumerate(NAMES):
        coll = f"{prefix}{i}"
        rql, name = rql.format(c=coll), name.format(c=coll)
        put_docs(http, server_url, db_name, {f"{coll.lower()}/1": {"Name": "x", "Age": 5, "ShipTo": {"City": "x"}, "Freight": 1.5, "Lines": [{"Product": "p"}]}}, coll)
        body = query(http, server_url, db_name, rql)
        assert (rql, body["IndexName"]) == (rql, name)
        assert body["TotalResults"] == 1, rql
        expected_names.append(name)
        assert index_names(http, server_url, db_name) == sorted(expected_names)
    body = query(http, server_url, db_name, "from @all_docs where Name = 'x'")
    assert body["IndexName"] == "Auto/AllDocs/ByName" and body["TotalResults"] == len(NAMES)


@pytest.mark.parametrize("rql", ["from Users", "from Users where id() = 'users/1'", "from Users where id() in ('users/1', 'users/2')", "from Users limit 1"])
def test_collection_queries_create_no_index(server_url, db_name, http, rql):
    put_docs(http, server_url, db_name, users(5, 1), "Users")
    body = query(http, server_url, db_name, rql)
    assert body["IndexName"] == "collection/Users"
    assert index_names(http, server_url, db_name) == []


def test_client_reports_index_name_and_waits(store):
    with store.open_session() as session:
        for i in range(30):
            session.store(User(f"n{i % 3}", i), f"users/{i}")
        session.save_changes()
    stats_holder = []
    with store.open_session() as session:
        got = list(session.query(object_type=User).where_equals("name", "N1").wait_for_non_stale_results().statistics(stats_holder.append))
    assert stats_holder[0].is_stale is False
    assert sorted(u.age for u in got) == [i for i in range(30) if i % 3 == 1]
    assert stats_holder[0].index_name == "Auto/Users/Byname"
    assert stats_holder[0].total_results == 10


# -- extension ----------------------------------------------------------------------------------------
def test_query_on_new_field_extends_the_index_and_retires_the_narrow_one(server_url, db_name, http):
    docs = users(400, 2)
    put_docs(http, server_url, db_name, docs, "Users")
    b1 = query(http, server_url, db_name, "from Users where Name = 'ann3'")
    assert b1["IndexName"] == "Auto/Users/ByName"
    assert ids_of(b1) == sorted(k for k, d in docs.items() if d["Name"].lower() == "ann3")

    b2 = query(http, server_url, db_name, "from Users where Age >= 50")
    assert b2["IndexName"] == "Auto/Users/ByAgeAndName"
    assert ids_of(b2) == sorted(k for k, d in docs.items() if d["Age"] >= 50)

    assert wait_until(lambda: index_names(http, server_url, db_name) == ["Auto/Users/ByAgeAndName"], timeout=15.0), index_names(http, server_url, db_name)
    # The narrow query is now answered by the wider index.
    b3 = query(http, server_url, db_name, "from Users where Name = 'ann3'")
    assert b3["IndexName"] == "Auto/Users/ByAgeAndName"
    assert ids_of(b3) == ids_of(b1)

    # A search on Name adds the analyzed form to the same index.
    b4 = query(http, server_url, db_name, "from Users where search(Name, 'bob1') and City = 'rome'")
    assert b4["IndexName"] == "Auto/Users/ByAgeAndCityAndSearch(Name)"
    assert ids_of(b4) == sorted(k for k, d in docs.items() if d["Name"].lower() == "bob1" and d["City"] == "Rome")
    assert wait_until(lambda: index_names(http, server_url, db_name) == ["Auto/Users/ByAgeAndCityAndSearch(Name)"], timeout=15.0), index_names(http, server_url, db_name)


def test_existing_covering_index_is_reused(server_url, db_name, http):
    put_docs(http, server_url, db_name, users(50, 3), "Users")
    assert query(http, server_url, db_name, "from Users where Name = 'x' and Age = 1")["IndexName"] == "Auto/Users/ByAgeAndName"
    for rql in ("from Users where Age > 3", "from Users where Name = 'bob1'", "from Users order by Name", "from Users where Age = 1 order by Name desc"):
        assert query(http, server_url, db_name, rql)["IndexName"] == "Auto/Users/ByAgeAndName", rql
    assert index_names(http, server_url, db_name) == ["Auto/Users/ByAgeAndName"]


# -- staleness and write-to-visible -------------------------------------------------------------------
def test_staleness_then_complete_results(server_url, db_name, http):
    docs = users(12000, 4)
    put_docs(http, server_url, db_name, docs, "Users", batch=3000)
    expected = sorted(k for k, d in docs.items() if d["Age"] > 70)
    body = query(http, server_url, db_name, "from Users where Age > 70", wait=False)
    assert body["IndexName"] == "Auto/Users/ByAge"
    got = ids_of(body)
    assert set(got) <= set(expected), "a stale answer may miss documents but never invents them"
    if body["IsStale"] is False:
        assert got == expected, "a non-stale answer is complete"
    else:
        assert body["TotalResults"] == len(got)
    body = query(http, server_url, db_name, "from Users where Age > 70")
    assert ids_of(body) == expected and body["TotalResults"] == len(expected)
    s = wait_for_indexing(http, server_url, db_name)
    assert [i["Name"] for i in s["Indexes"]] == ["Auto/Users/ByAge"]


def test_stale_flag_in_stats_while_indexing(server_url, db_name, http):
    """Large writes behind an existing index: a non-stale answer is always complete, a stale one is
    a subset; /stats reports IsStale until the index catches up."""
    current = users(100, 5)
    put_docs(http, server_url, db_name, current, "Users")
    query(http, server_url, db_name, "from Users where Age > 1")
    items = list(users(15000, 6).items())
    for i in range(0, len(items), 5000):
        chunk = dict(items[i : i + 5000])
        put_docs(http, server_url, db_name, chunk, "Users", batch=5000)
        current.update(chunk)
        s = http.get(f"{server_url}/databases/{db_name}/stats").json()
        assert isinstance(s["Indexes"][0]["IsStale"], bool)
        r = query(http, server_url, db_name, "from Users where Age > 1", wait=False)
        expected = sorted(k for k, d in current.items() if d["Age"] > 1)
        if r["IsStale"] is False:
            assert ids_of(r) == expected
        else:
            assert r["TotalResults"] <= len(current)
    wait_for_indexing(http, server_url, db_name)
    body = query(http, server_url, db_name, "from Users where Age > 1", wait=False)
    assert body["IsStale"] is False
    assert ids_of(body) == sorted(k for k, d in current.items() if d["Age"] > 1)


def test_updates_and_deletes_become_visible(server_url, db_name, http):
    rng = random.Random(7)
    docs = users(300, 7)
    put_docs(http, server_url, db_name, docs, "Users")
    rql = "from Users where City = 'oslo' and Age between 20 and 60 order by Age as long, Name"
    for round_ in range(5):
        commands = []
        for _ in range(60):
            op = rng.random()
            doc_id = f"users/{rng.randint(1, 360)}"
            if op < 0.7:
                d = {"Name": rng.choice(["Ann", "bob"]) + str(rng.randint(0, 9)), "Age": rng.randint(1, 99), "City": rng.choice(["Oslo", "Rome", "OSLO"])}
                docs[doc_id] = d
                commands.append({"Id": doc_id, "ChangeVector": None, "Type": "PUT", "Document": {**d, "@metadata": {"@collection": "Users"}}})
            else:
                docs.pop(doc_id, None)
                commands.append({"Id": doc_id, "ChangeVector": None, "Type": "DELETE"})
        r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands})
        assert r.status_code == 201
        body = query(http, server_url, db_name, rql)
        expected = sorted(
            (k for k, d in docs.items() if d["City"].lower() == "oslo" and 20 <= d["Age"] <= 60),
            key=lambda k: (docs[k]["Age"], docs[k]["Name"].lower()),
        )
        got = [x["@metadata"]["@id"] for x in body["Results"]]
        assert sorted(got) == sorted(expected), f"round {round_}"
        assert [(docs[k]["Age"], docs[k]["Name"].lower()) for k in got] == [(docs[k]["Age"], docs[k]["Name"].lower()) for k in expected]
        # the returned documents are the current versions
        for x in body["Results"]:
            assert {k: x[k] for k in ("Name", "Age", "City")} == docs[x["@metadata"]["@id"]]


def test_client_sees_its_own_writes_with_wait(store):
    with store.open_session() as session:
        for i in range(50):
            session.store(User("w", i), f"users/{i}")
        session.save_changes()
    with store.open_session() as session:
        assert len(list(session.query(object_type=User).where_greater_than("age", 24).wait_for_non_stale_results())) == 25
    with store.open_session() as session:
        for i in range(0, 50, 2):
            session.delete(f"users/{i}")
        session.save_changes()
    with store.open_session() as session:
        got = list(session.query(object_type=User).where_greater_than("age", 24).wait_for_non_stale_results())
        assert sorted(x.age for x in got) == [i for i in range(25, 50) if i % 2]


# -- management endpoints -----------------------------------------------------------------------------
STATS_KEYS = [
    "Name", "MapAttempts", "MapSuccesses", "MapErrors", "MapReferenceAttempts", "MapReferenceSuccesses", "MapReferenceErrors",
    "ReduceAttempts", "ReduceSuccesses", "ReduceErrors", "ReduceOutputCollection", "ReduceOutputReferencePattern",
    "PatternReferencesCollectionName", "MappedPerSecondRate", "ReducedPerSecondRate", "MaxNumberOfOutputsPerDocument",
    "Collections", "LastQueryingTime", "State", "Priority", "CreatedTimestamp", "LastIndexingTime", "IsStale", "LockMode",
    "Type", "Status", "EntriesCount", "ErrorsCount", "SourceType",
]
DEFINITION_KEYS = [
    "Name", "Priority", "State", "LockMode", "AdditionalSources", "AdditionalAssemblies", "Maps", "Fields", "Reduce",
    "Configuration", "OutputReduceToCollection", "ReduceOutputIndex", "PatternForOutputReduceToCollectionReferences",
    "PatternReferencesCollectionName",
]


def test_index_endpoints_shape(server_url, db_name, http, store):
    docs = users(120, 8)
    put_docs(http, server_url, db_name, docs, "Users")
    name = query(http, server_url, db_name, "from Users where Age > 10 and City = 'Rome'")["IndexName"]
    assert name == "Auto/Users/ByAgeAndCity"
    base = f"{server_url}/databases/{db_name}"

    all_stats = http.get(f"{base}/indexes/stats").json()["Results"]
    assert [s["Name"] for s in all_stats] == [name]
    one = http.get(f"{base}/indexes/stats", params={"name": name}).json()["Results"]
    assert len(one) == 1
    missing = [k for k in STATS_KEYS if k not in one[0]]
    assert not missing, missing
    s = one[0]
    assert s["Type"] == "AutoMap" and s["IsStale"] is False and s["State"] == "Normal" and s["Status"] == "Running"
    assert s["EntriesCount"] == len(docs) and s["ErrorsCount"] == 0 and s["MapErrors"] == 0
    assert "Users" in s["Collections"] and {"LastProcessedDocumentEtag", "LastProcessedTombstoneEtag", "DocumentLag", "TombstoneLag"} <= set(s["Collections"]["Users"])

    errors = http.get(f"{base}/indexes/errors").json()["Results"]
    assert errors == [{"Name": name, "Errors": []}]
    errors = http.get(f"{base}/indexes/errors", params={"name": name}).json()["Results"]
    assert [e["Name"] for e in errors] == [name]

    definition = http.get(f"{base}/indexes", params={"name": name}).json()["Results"]
    assert len(definition) == 1
    missing = [k for k in DEFINITION_KEYS if k not in definition[0]]
    assert not missing, missing

    db_stats = http.get(f"{base}/stats").json()
    assert db_stats["CountOfIndexes"] == 1
    assert [(i["Name"], i["IsStale"]) for i in db_stats["Indexes"]] == [(name, False)]

    # The same through the official client's operations (strict parsers).
    st = store.maintenance.send(GetIndexStatisticsOperation(name))
    assert st.name == name and st.stale is False and st.entries_count == len(docs)
    assert [x["Name"] for x in store.maintenance.send(GetIndexesStatisticsOperation())] == [name]
    errs = store.maintenance.send(GetIndexErrorsOperation())
    assert [(e.name, list(e.errors)) for e in errs] == [(name, [])]
    assert store.maintenance.send(GetIndexNamesOperation(0, 10)) == [name]
    d = store.maintenance.send(GetIndexOperation(name))
    assert isinstance(d, IndexDefinition) and d.name == name
    assert store.maintenance.send(GetIndexOperation("Auto/Users/ByNothing")) is None
    db = stats(store)
    assert [i.name for i in db.indexes] == [name]


def test_delete_index_then_query_again(server_url, db_name, http, store):
    docs = users(200, 9)
    put_docs(http, server_url, db_name, docs, "Users")
    rql = "from Users where Name in ('ann1', 'DAN2')"
    expected = sorted(k for k, d in docs.items() if d["Name"].lower() in ("ann1", "dan2"))
    name = query(http, server_url, db_name, rql)["IndexName"]
    r = http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": name})
    assert r.status_code in (200, 204), r.text
    assert index_names(http, server_url, db_name) == []
    body = query(http, server_url, db_name, rql)
    assert body["IndexName"] == name and ids_of(body) == expected
    store.maintenance.send(DeleteIndexOperation(name))
    assert index_names(http, server_url, db_name) == []
    assert ids_of(query(http, server_url, db_name, rql)) == expected


def test_reset_index_rebuilds_same_results(server_url, db_name, http, store):
    docs = users(3000, 10)
    put_docs(http, server_url, db_name, docs, "Users")
    rql = "from Users where Age between 30 and 40 order by Age as long, Name"
    before = query(http, server_url, db_name, rql)
    name = before["IndexName"]
    r = requests.request("RESET", f"{server_url}/databases/{db_name}/indexes", params={"name": name})
    assert r.status_code in (200, 204), r.text
    assert index_names(http, server_url, db_name) == [name]
    after = query(http, server_url, db_name, rql)
    assert after["IndexName"] == name
    assert [x["@metadata"]["@id"] for x in after["Results"]] and ids_of(after) == ids_of(before)
    assert ids_of(after) == sorted(k for k, d in docs.items() if 30 <= d["Age"] <= 40)
    store.maintenance.send(ResetIndexOperation(name))
    assert ids_of(query(http, server_url, db_name, rql)) == ids_of(before)
    st = http.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": name}).json()["Results"][0]
    assert st["EntriesCount"] == len(docs)


def test_reset_or_delete_of_unknown_index(server_url, db_name, http):
    r = requests.request("RESET", f"{server_url}/databases/{db_name}/indexes", params={"name": "Auto/Nope/ByX"})
    assert r.status_code == 404, r.text
    r = http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": "Auto/Nope/ByX"})
    assert r.status_code in (204, 404), r.text


def test_query_on_missing_index(server_url, db_name, http, store):
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'Missing'"})
    assert r.status_code == 404
    with store.open_session() as session:
        with pytest.raises(IndexDoesNotExistException):
            list(session.query_index("Missing", dict))


# -- errors -------------------------------------------------------------------------------------------
UNSUPPORTED = [
    "from Users select timeseries(from HeartRate group by 1h, Tag)",
    "from Users where vector.search(Name, 'ann')",
]


def test_unsupported_constructs_are_refused(server_url, db_name, http):
    """Constructs the server does not implement yet are refused with a clear 4xx error, never answered wrongly."""
    put_docs(http, server_url, db_name, users(10, 11), "Users")
    for rql in UNSUPPORTED:
        r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql})
        assert 400 <= r.status_code < 500, f"{rql} -> {r.status_code} {r.text[:300]}"
        body = assert_error_json(r)
        assert body["Type"].endswith("InvalidQueryException"), (rql, body)
        assert "not supported" in body["Message"], (rql, body["Message"])
    # the server keeps serving normal queries on the same database
    assert query(http, server_url, db_name, "from Users where Age > 0")["TotalResults"] == 10


BAD_RQL = [
    ("from Users where Name = ", 25),
    ("from Users where Name = 'a' order", 34),
    ("from Users where (Name = 'a'", None),
    ("from Users wher Name = 'a'", None),
    ("from Users where Name = 'unterminated", None),
    ("from Users where Age between 1", None),
    ("from Users limit 'x'", None),
    ("select Name from Users", None),
    ("from Users where Name = 'a' order by Name as unknowntype", None),
]


@pytest.mark.parametrize("rql,column", BAD_RQL)
def test_bad_rql_reports_position(server_url, db_name, http, rql, column):
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql})
    assert r.status_code == 400, f"{rql} -> {r.status_code} {r.text[:300]}"
    body = assert_error_json(r)
    assert body["Type"].endswith("InvalidQueryException"), body
    m = re.search(r"line (\d+), column (\d+)|position (\d+)", body["Message"])
    assert m, f"no position in {body['Message']!r}"
    if column is not None and m.group(2):
        assert int(m.group(2)) == column, body["Message"]


def test_bad_rql_through_the_client(store):
    with store.open_session() as session:
        with pytest.raises(Exception) as info:
            list(session.advanced.raw_query("from Users where Name = ", dict))
    assert "InvalidQueryException" in str(info.value) and re.search(r"column \d+|position \d+", str(info.value))


def test_bad_rql_on_get_endpoint(server_url, db_name, http):
    r = http.get(f"{server_url}/databases/{db_name}/queries", params={"query": "from Users where and"})
    assert r.status_code == 400
    assert assert_error_json(r)["Type"].endswith("InvalidQueryException")
