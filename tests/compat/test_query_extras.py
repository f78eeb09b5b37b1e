"""`select distinct` and `order by random()`: answers checked against the data written by the test."""

from __future__ import annotations


def _seed(http, url, db):
    docs = {f"users/{i}": {"City": f"city{i % 6}", "N": i} for i in range(60)}
    commands = [{"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": "Users"}}} for k, v in docs.items()]
    assert http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}).status_code == 201
    return docs


def _query(http, url, db, rql):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    return r.json()


def test_select_distinct_with_paging(server_url, db_name, http):
    docs = _seed(http, server_url, db_name)
    cities = sorted({d["City"] for d in docs.values()})
    body = _query(http, server_url, db_name, "from Users order by City select distinct City")
    assert [r["City"] for r in body["Results"]] == cities
    assert body["TotalResults"] == len(cities)
    page = _query(http, server_url, db_name, "from Users order by City select distinct City limit 2, 3")
    assert [r["City"] for r in page["Results"]] == cities[2:5]


def test_order_by_random_is_a_permutation_and_seeded_runs_repeat(server_url, db_name, http):
    docs = _seed(http, server_url, db_name)
    all_ns = sorted(d["N"] for d in docs.values())
    first = [r["N"] for r in _query(http, server_url, db_name, "from Users order by random('s1') select N")["Results"]]
    again = [r["N"] for r in _query(http, server_url, db_name, "from Users order by random('s1') select N")["Results"]]
    other = [r["N"] for r in _query(http, server_url, db_name, "from Users order by random('s2') select N")["Results"]]
    assert sorted(first) == all_ns
    assert first == again, "the same seed gives the same order"
    assert first != other and first != all_ns
    page = _query(http, server_url, db_name, "from Users where N >= 30 order by random() select N limit 10")
    assert page["TotalResults"] == 30 and len(page["Results"]) == 10
    assert all(r["N"] >= 30 for r in page["Results"])
