"""`queries?debug=explain`: which automatic index a dynamic query uses and why, through the official client's
ExplainQueryCommand and over HTTP. Explaining never runs the query and never creates an index."""

from __future__ import annotations

from ravendb import IndexQuery
from ravendb.documents.commands.explain import ExplainQueryCommand

from corvid_support import assert_error_json

from test_auto_indexes import put_docs, query


def explain(http, url, db, rql, params=None):
    return http.post(f"{url}/databases/{db}/queries?debug=explain", json={"Query": rql, "QueryParameters": params}, timeout=30)


def index_names(http, url, db) -> list[str]:
    r = http.get(f"{url}/databases/{db}/indexes", params={"start": 0, "pageSize": 100})
    assert r.status_code == 200, r.text
    return sorted(i["Name"] for i in r.json()["Results"])


def test_explain_of_a_collection_query_says_it_reads_the_collection(store):
    command = ExplainQueryCommand(store.conventions, IndexQuery("from Users"))
    store.get_request_executor().execute_command(command)
    assert len(command.result) == 1
    assert command.result[0].index == "collection/Users"
    assert "without an index" in command.result[0].reason


def test_explain_picks_the_covering_index_and_says_why_others_are_not_used(server_url, db_name, http, store):
    put_docs(http, server_url, db_name, {f"users/{i}": {"Name": f"n{i}", "Age": i, "City": "Oslo" if i % 2 else "Rome"} for i in range(20)}, "Users")
    query(http, server_url, db_name, "from Users where Name = 'n1'")
    query(http, server_url, db_name, "from Orders where Total > 3")  # another collection: never considered
    before = index_names(http, server_url, db_name)
    assert before == ["Auto/Orders/ByTotal", "Auto/Users/ByName"]

    # Covered: the existing index is selected.
    command = ExplainQueryCommand(store.conventions, IndexQuery("from Users where Name = 'n3'"))
    store.get_request_executor().execute_command(command)
    assert [(e.index, e.reason.split(":")[0]) for e in command.result] == [("Auto/Users/ByName", "Selected")]

    # Not covered: the existing index lacks Age (the reason names it), and the index the query would create
    # extends it; nothing is created by explaining.
    r = explain(http, server_url, db_name, "from Users where Name = 'n3' and Age > 5 order by City")
    assert r.status_code == 200, r.text
    body = r.json()
    by_index = {e["Index"]: e["Reason"] for e in body["Results"]}
    assert set(by_index) == {"Auto/Users/ByName", "Auto/Users/ByAgeAndCityAndName"}, body
    assert "'Age'" in by_index["Auto/Users/ByName"] and "'City'" in by_index["Auto/Users/ByName"], by_index
    assert "'Name'" not in by_index["Auto/Users/ByName"], by_index
    assert "extending 'Auto/Users/ByName'" in by_index["Auto/Users/ByAgeAndCityAndName"], by_index
    assert body["IndexName"] == "Auto/Users/ByAgeAndCityAndName"
    assert index_names(http, server_url, db_name) == before

    # Running the query creates exactly the index explain named, and explain then selects it.
    out = query(http, server_url, db_name, "from Users where Name = 'n3' and Age > 5 order by City")
    assert out["IndexName"] == "Auto/Users/ByAgeAndCityAndName"
    r = explain(http, server_url, db_name, "from Users where search(Name, 'n3')")
    by_index = {e["Index"]: e["Reason"] for e in r.json()["Results"]}
    assert all("full-text" in reason for reason in by_index.values() if reason.startswith("Not selected: it does not")), by_index


def test_explain_group_by_queries(server_url, db_name, http):
    put_docs(http, server_url, db_name, {f"orders/{i}": {"Company": f"c{i % 3}", "Total": i} for i in range(12)}, "Orders")
    query(http, server_url, db_name, "from Orders group by Company select Company, count()")
    before = index_names(http, server_url, db_name)
    r = explain(http, server_url, db_name, "from Orders group by Company select Company, sum(Total)")
    assert r.status_code == 200, r.text
    results = r.json()["Results"]
    reasons = {e["Index"]: e["Reason"] for e in results}
    [existing] = [i for i in before if i.startswith("Auto/Orders/ByCount")]
    assert "sum(Total)" in reasons[existing], reasons
    assert len(results) == 2, results
    assert index_names(http, server_url, db_name) == before
    r = explain(http, server_url, db_name, "from Orders group by Company select count()")
    assert [e["Reason"].split(":")[0] for e in r.json()["Results"]] == ["Selected"], r.text


def test_explain_refuses_named_indexes_and_bad_rql(server_url, db_name, http):
    r = explain(http, server_url, db_name, "from index 'Whatever'")
    assert r.status_code == 400, r.text
    assert "names its index" in assert_error_json(r)["Message"]
    r = explain(http, server_url, db_name, "from Users where")
    assert r.status_code == 400, r.text
    assert_error_json(r)
    assert index_names(http, server_url, db_name) == []
