"""The `filter` clause (RavenDB's exploration queries): a predicate evaluated on each document the query
selected, without an index; paging applies to what passes, `filter_limit` caps the documents scanned.
Expected answers are computed in Python from the documents the test wrote."""

from __future__ import annotations

import random

import pytest

from corvid_support import assert_error_json

COUNTRIES = ["USA", "UK", "France", "usa"]
TITLES = ["Sales", "Manager", "Engineer"]


def _employees(seed: int = 516) -> dict[str, dict]:
    rng = random.Random(seed)
    docs = {"employees/boss": {"Name": "Boss", "Age": 61, "Title": "Manager", "Address": {"Country": "UK"}}}
    for i in range(1, 61):
        doc = {"Name": f"e{i}", "Age": rng.randint(18, 65), "Title": rng.choice(TITLES), "Address": {"Country": rng.choice(COUNTRIES)}}
        if rng.random() < 0.5:
            doc["Manager"] = "employees/boss"
        docs[f"employees/{i}"] = doc
    return docs


@pytest.fixture
def employees(server_url, db_name, http):
    docs = _employees()
    commands = [{"Type": "PUT", "Id": k, "Document": {**v, "@metadata": {"@collection": "Employees"}}} for k, v in docs.items()]
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands})
    assert r.status_code == 201, r.text
    return list(docs.items())  # in write (etag) order


def _query(http, url, db, rql, parameters=None):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "QueryParameters": parameters or {}, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    return r.json()


def _ids(body):
    return [r["@metadata"]["@id"] for r in body["Results"]]


def test_filter_on_a_collection_scans_without_an_index(server_url, db_name, http, employees):
    body = _query(http, server_url, db_name, "from Employees filter Address.Country = $c and Age > $a", {"c": "USA", "a": 30})
    expected = [k for k, d in employees if d["Address"]["Country"] == "USA" and d["Age"] > 30]
    assert expected and _ids(body) == expected
    assert body["IndexName"] == "collection/Employees"
    assert body["TotalResults"] == len(expected)
    assert body["ScannedResults"] == len(employees)
    assert body["SkippedResults"] == len(employees) - len(expected)
    indexes = http.get(f"{server_url}/databases/{db_name}/indexes").json()["Results"]
    assert indexes == [], "a filter never creates an index"


def test_filter_after_where_uses_an_index_for_the_where_only(server_url, db_name, http, employees):
    rql = "from Employees as e where e.Title = $t filter e.Age >= 40 or startsWith(e.Address.Country, 'fr')"
    body = _query(http, server_url, db_name, rql, {"t": "Sales"})
    expected = {k for k, d in employees if d["Title"] == "Sales" and (d["Age"] >= 40 or d["Address"]["Country"].lower().startswith("fr"))}
    assert expected and set(_ids(body)) == expected
    assert body["IndexName"] == "Auto/Employees/ByTitle"
    assert body["TotalResults"] == len(expected)


def test_filter_limit_caps_the_documents_scanned(server_url, db_name, http, employees):
    body = _query(http, server_url, db_name, "from Employees filter Age > 30 filter_limit 10")
    expected = [k for k, d in employees[:10] if d["Age"] > 30]
    assert _ids(body) == expected
    assert body["ScannedResults"] == 10
    assert body["TotalResults"] == len(expected)


def test_paging_applies_to_the_filtered_results(server_url, db_name, http, employees):
    matching = [k for k, d in employees if d["Title"] != "Engineer"]
    body = _query(http, server_url, db_name, "from Employees filter Title != 'Engineer' limit $skip, $take", {"skip": 3, "take": 5})
    assert _ids(body) == matching[3:8]
    assert body["TotalResults"] == len(matching)


def test_filter_through_a_loaded_document_with_a_projection(server_url, db_name, http, employees):
    rql = "from Employees as e load e.Manager as m filter m.Name = $boss and e.Age in ($ages) select e.Name as Name, m.Name as Manager"
    ages = sorted({d["Age"] for _, d in employees})[::2]
    body = _query(http, server_url, db_name, rql, {"boss": "Boss", "ages": ages})
    expected = [d["Name"] for _, d in employees if d.get("Manager") == "employees/boss" and d["Age"] in ages]
    assert expected and [r["Name"] for r in body["Results"]] == expected
    assert {r["Manager"] for r in body["Results"]} == {"Boss"}


def test_filter_equality_keeps_case_as_ravendb_javascript_does(server_url, db_name, http, employees):
    body = _query(http, server_url, db_name, "from Employees filter Address.Country = 'usa'")
    assert set(_ids(body)) == {k for k, d in employees if d["Address"]["Country"] == "usa"}


def test_session_raw_query_with_filter_and_parameters(store, employees):
    with store.open_session() as session:
        rows = list(session.advanced.raw_query("from Employees filter Age between $lo and $hi", dict).add_parameter("lo", 30).add_parameter("hi", 40))
    assert sorted(r["Name"] for r in rows) == sorted(d["Name"] for _, d in employees if 30 <= d["Age"] <= 40)


@pytest.mark.parametrize(
    "rql",
    [
        "from Employees filter search(Name, 'e1')",
        "from Employees filter boost(Age > 3, 2)",
        "from Employees group by Title filter Age > 3 select key(), count()",
        "from Employees filter Age > 3 select facet(Title)",
        "from Employees where Age > 3 filter_limit 5",
    ],
)
def test_what_filter_cannot_do_is_refused(server_url, db_name, http, employees, rql):
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql})
    assert r.status_code == 400, r.text
    assert assert_error_json(r)["Type"].endswith("InvalidQueryException")
