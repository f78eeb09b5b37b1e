"""JavaScript projections (`select { ... }`, `declare function`) run in QuickJS with limits."""

from __future__ import annotations

import time


def _seed(http, url, db, n=40):
    commands = [
        {"Id": f"users/{i}", "ChangeVector": None, "Type": "PUT",
         "Document": {"Name": f"user{i}", "Age": i, "Tags": ["a", "b"][: i % 3], "@metadata": {"@collection": "Users"}}}
        for i in range(n)
    ]
    assert http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}).status_code == 201
    return {f"users/{i}": {"Name": f"user{i}", "Age": i, "Tags": ["a", "b"][: i % 3]} for i in range(n)}


def _query(http, url, db, rql, parameters=None):
    return http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "QueryParameters": parameters, "WaitForNonStaleResults": True})


def test_object_literal_projection_with_declared_function(server_url, db_name, http):
    docs = _seed(http, server_url, db_name)
    r = _query(http, server_url, db_name,
               "declare function label(u) { return u.Name.toUpperCase() + ':' + u.Tags.length; } "
               "from Users as u where u.Age >= $min order by u.Age as long select { Label: label(u), Id: id(u), Next: u.Age + 1 }",
               {"min": 30})
    assert r.status_code == 200, r.text
    results = r.json()["Results"]
    expected = sorted((d for d in docs.items() if d[1]["Age"] >= 30), key=lambda kv: kv[1]["Age"])
    assert [x["Id"] for x in results] == [k for k, _ in expected]
    for got, (_, doc) in zip(results, expected):
        assert got["Label"] == f"{doc['Name'].upper()}:{len(doc['Tags'])}"
        assert got["Next"] == doc["Age"] + 1
        assert got["@metadata"]["@projection"] is True


def test_infinite_loop_in_projection_is_stopped_and_server_keeps_serving(server_url, db_name, http):
    _seed(http, server_url, db_name, 3)
    started = time.monotonic()
    r = _query(http, server_url, db_name, "from Users as u select { x: (function () { while (true) {} })() }")
    assert r.status_code == 400
    assert r.json()["Type"].endswith("JavaScriptException")
    assert "limit" in r.json()["Message"]
    assert time.monotonic() - started < 10
    assert _query(http, server_url, db_name, "from Users as u select { n: u.Name }").status_code == 200


def test_projection_that_allocates_without_bound_is_stopped(server_url, db_name, http):
    _seed(http, server_url, db_name, 1)
    r = _query(http, server_url, db_name, "from Users as u select { x: (function () { let a = []; while (true) { a.push(new Array(100000).fill(7)); } })() }")
    assert r.status_code == 400
    assert r.json()["Type"].endswith("JavaScriptException")


def test_syntax_error_in_projection_is_refused(server_url, db_name, http):
    _seed(http, server_url, db_name, 1)
    r = _query(http, server_url, db_name, "from Users as u select { x: u.Name + }")
    assert r.status_code == 400
    assert r.json()["Type"].endswith("JavaScriptException")


def test_load_related_documents_in_projections(server_url, db_name, http):
    companies = {f"companies/{i}": f"Company {i}" for i in range(5)}
    orders = {f"orders/{i}": {"Company": f"companies/{i % 7}", "Total": i} for i in range(20)}  # some companies missing
    commands = [{"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {"Name": v, "@metadata": {"@collection": "Companies"}}} for k, v in companies.items()]
    commands += [{"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": "Orders"}}} for k, v in orders.items()]
    assert http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}).status_code == 201

    r = _query(http, server_url, db_name, "from Orders as o load o.Company as c select c.Name as CompanyName, o.Total as Total")
    assert r.status_code == 200, r.text
    got = {(x["@metadata"]["@id"], x["CompanyName"], x["Total"]) for x in r.json()["Results"]}
    assert got == {(k, companies.get(v["Company"]), v["Total"]) for k, v in orders.items()}

    r = _query(http, server_url, db_name, "from Orders as o load o.Company as c select { Label: (c ? c.Name : 'missing') + '/' + o.Total }")
    assert r.status_code == 200, r.text
    got = {x["@metadata"]["@id"]: x["Label"] for x in r.json()["Results"]}
    assert got == {k: f"{companies.get(v['Company'], 'missing')}/{v['Total']}" for k, v in orders.items()}
