"""Dynamic group-by queries: automatic map-reduce indexes with count() and sum(), kept up to date
incrementally. Expected answers are recomputed in the test from the documents it wrote."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest


def _query(http, url, db, rql, parameters=None):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "QueryParameters": parameters, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["IsStale"] is False
    return body


def _batch(http, url, db, commands):
    r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands})
    assert r.status_code == 201, r.text


def _expected(docs):
    groups = defaultdict(lambda: [0, 0.0])
    for doc in docs.values():
        g = groups[doc["Company"]]
        g[0] += 1
        g[1] += doc["Total"]
    return {k: (c, round(t, 6)) for k, (c, t) in groups.items()}


def _actual(body):
    return {r["Company"]: (r["Count"], round(r["Sum"], 6)) for r in body["Results"]}


def test_group_by_counts_and_sums_follow_random_writes(server_url, db_name, http):
    """Random inserts, updates (moving documents between groups) and deletes; after each round the reduce
    results equal a recomputation from all documents."""
    rng = random.Random(42)
    docs: dict[str, dict] = {}
    rql = "from Orders group by Company select Company, count() as Count, sum(Total) as Sum"
    for round_ in range(6):
        commands = []
        for _ in range(80):
            op = rng.random()
            if op < 0.6 or not docs:
                doc_id = f"orders/{rng.randrange(200)}"
                doc = {"Company": f"companies/{rng.randrange(7)}", "Total": rng.randrange(1, 1000) / 4}
                docs[doc_id] = doc
                commands.append({"Id": doc_id, "ChangeVector": None, "Type": "PUT", "Document": {**doc, "@metadata": {"@collection": "Orders"}}})
            else:
                doc_id = rng.choice(sorted(docs))
                del docs[doc_id]
                commands.append({"Id": doc_id, "ChangeVector": None, "Type": "DELETE"})
        _batch(http, server_url, db_name, commands)
        body = _query(http, server_url, db_name, rql)
        assert body["IndexName"] == "Auto/Orders/ByCountAndTotalReducedByCompany"
        assert _actual(body) == _expected(docs), f"round {round_}"
        assert body["TotalResults"] == len(_expected(docs))


def test_group_by_where_order_and_paging(server_url, db_name, http):
    rng = random.Random(7)
    docs = {}
    commands = []
    for i in range(150):
        doc = {"Company": f"c{rng.randrange(12)}", "Total": rng.randrange(100)}
        docs[f"orders/{i}"] = doc
        commands.append({"Id": f"orders/{i}", "ChangeVector": None, "Type": "PUT", "Document": {**doc, "@metadata": {"@collection": "Orders"}}})
    _batch(http, server_url, db_name, commands)
    expected = _expected(docs)
    body = _query(http, server_url, db_name, "from Orders group by Company where count() >= $min order by count() desc, Company select Company, count() as Count", {"min": 12})
    want = sorted(((k, c) for k, (c, _) in expected.items() if c >= 12), key=lambda kv: (-kv[1], kv[0].lower()))
    assert [(r["Company"], r["Count"]) for r in body["Results"]] == want
    page = _query(http, server_url, db_name, "from Orders group by Company order by Company select Company, count() as Count limit 3, 4")
    assert [r["Company"] for r in page["Results"]] == sorted(expected, key=str.lower)[3:7]
    assert page["TotalResults"] == len(expected)


def test_group_by_survives_restart(server_factory, http):
    server = server_factory()
    url = server.url
    db = "gb_restart"
    assert http.put(f"{url}/admin/databases?name={db}", json={"DatabaseName": db}).status_code == 201
    docs = {f"orders/{i}": {"Company": f"c{i % 5}", "Total": i} for i in range(300)}
    _batch(http, url, db, [{"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": "Orders"}}} for k, v in docs.items()])
    rql = "from Orders group by Company select Company, count() as Count, sum(Total) as Sum"
    assert _actual(_query(http, url, db, rql)) == _expected(docs)
    url = server.restart(crash=True)
    for i in range(0, 300, 3):
        docs.pop(f"orders/{i}")
    _batch(http, url, db, [{"Id": f"orders/{i}", "ChangeVector": None, "Type": "DELETE"} for i in range(0, 300, 3)])
    assert _actual(_query(http, url, db, rql)) == _expected(docs)


@pytest.mark.parametrize("rql", ["from Orders group by Company select avg(Total)", "from Orders group by Company select Total"])
def test_unsupported_group_by_forms_are_refused(server_url, db_name, http, rql):
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql})
    assert r.status_code == 400
    assert r.json()["Type"].endswith("InvalidQueryException")


def _orders_with_lines(seed=1605):
    rng = random.Random(seed)
    products = [f"products/{i}" for i in range(1, 6)]
    docs = {}
    for i in range(1, 41):
        lines = [{"Product": p, "Quantity": rng.randint(1, 9)} for p in rng.sample(products, rng.randint(1, 3))]
        docs[f"orders/{i}"] = {"Company": rng.choice(["companies/1", "companies/2"]), "Lines": lines, "Total": 1}
    return docs


def _put_orders(http, url, db, docs):
    _batch(http, url, db, [{"Type": "PUT", "Id": k, "Document": {**v, "@metadata": {"@collection": "Orders"}}} for k, v in docs.items()])


def test_group_by_array_content_counts_each_distinct_array(server_url, db_name, http):
    """`array(Lines[].Product)` groups by the whole array of products (RavenDB's ByContent): one group
    per distinct list, in the order the lines hold them."""
    docs = _orders_with_lines()
    _put_orders(http, server_url, db_name, docs)
    body = _query(http, server_url, db_name, "from Orders group by array(Lines[].Product) select key() as Products, count()")
    assert body["IndexName"] == "Auto/Orders/ByCountReducedByArray(Lines[].Product)"
    expected = defaultdict(int)
    for d in docs.values():
        expected[tuple(line["Product"] for line in d["Lines"])] += 1
    assert {tuple(r["Products"]): r["Count"] for r in body["Results"]} == expected
    assert body["TotalResults"] == len(expected)


def test_group_by_array_content_with_another_key_and_a_sum(server_url, db_name, http):
    """`array(...)` beside a plain key; `sum(Lines[].Quantity)` adds every line of each document."""
    docs = _orders_with_lines(seed=77)
    _put_orders(http, server_url, db_name, docs)
    rql = "from Orders group by array(Lines[].Product), Company select Lines[].Product as P, Company, count() as N, sum(Lines[].Quantity) as Q"
    body = _query(http, server_url, db_name, rql)
    assert body["IndexName"] == "Auto/Orders/ByCountAndLines[].QuantityReducedByArray(Lines[].Product)AndCompany"
    expected = defaultdict(lambda: [0, 0])
    for d in docs.values():
        g = expected[(tuple(line["Product"] for line in d["Lines"]), d["Company"])]
        g[0] += 1
        g[1] += sum(line["Quantity"] for line in d["Lines"])
    assert {(tuple(r["P"]), r["Company"]): [r["N"], r["Q"]] for r in body["Results"]} == {k: v for k, v in expected.items()}
    # Changing a document moves its contribution to its new array.
    del docs["orders/1"]
    http.delete(f"{server_url}/databases/{db_name}/docs", params={"id": "orders/1"})
    body = _query(http, server_url, db_name, rql)
    assert sum(r["N"] for r in body["Results"]) == len(docs)
