"""`counter()` and `counterRaw()` in query projections: RQL field projections (`select counter(u, 'Likes')`,
`select name, counter('Likes') as L`) and JavaScript object-literal projections."""

from __future__ import annotations

import random

import pytest

from corvid_support import assert_error_json


class Row:
    def __init__(self, name=None, likes=None, views=None, raw=None, Likes=None):
        self.name = name
        self.likes = likes
        self.views = views
        self.raw = raw
        self.Likes = Likes


@pytest.fixture
def users(store):
    rng = random.Random(21)
    expected = {}
    with store.open_session() as s:
        for i in range(12):
            doc_id = f"users/{i}"
            s.store(Row(name=f"n{i}"), doc_id)
            counters = {}
            if rng.random() < 0.7:
                counters["Likes"] = rng.randint(-5, 500)
            if rng.random() < 0.5:
                counters["Views"] = rng.randint(0, 50)
            for name, value in counters.items():
                s.counters_for(doc_id).increment(name, value)
            expected[f"n{i}"] = counters
        s.save_changes()
    return expected


def _rows(store, rql, **params):
    with store.open_session() as s:
        q = s.advanced.raw_query(rql, object_type=Row)
        for k, v in params.items():
            q = q.add_parameter(k, v)
        return list(q)


def test_rql_counter_projections(store, users):
    rows = _rows(store, "from Rows as u select u.name as name, counter(u, 'Likes') as likes, counter('Views') as views")
    assert {r.name: (r.likes, r.views) for r in rows} == {n: (c.get("Likes"), c.get("Views")) for n, c in users.items()}
    # Without `as`, the field is named after the counter.
    rows = _rows(store, "from Rows select name, counter('Likes')")
    assert {r.name: r.Likes for r in rows} == {n: c.get("Likes") for n, c in users.items()}
    # Counter names from parameters, the raw form per database.
    rows = _rows(store, "from Rows as u select u.name as name, counterRaw(u, $c) as raw", c="Likes")
    for r in rows:
        want = users[r.name].get("Likes")
        assert (None if r.raw is None else list(r.raw.values())) == (None if want is None else [want])


def test_js_counter_projections(store, users):
    rows = _rows(
        store,
        "from Rows as u select { name: u.name, likes: counter(u, 'Likes'), views: counter(id(u), 'Views'), raw: counterRaw(u, 'Likes') }",
    )
    assert len(rows) == len(users)
    for r in rows:
        want = users[r.name]
        assert (r.likes, r.views) == (want.get("Likes"), want.get("Views"))
        assert (None if r.raw is None else list(r.raw.values())) == (None if "Likes" not in want else [want["Likes"]])
    # The one-argument form reads the result's own document; computed values work too.
    rows = _rows(store, "from Rows as u select { name: u.name, likes: (counter('Likes') || 0) + 1 }")
    assert {r.name: r.likes for r in rows} == {n: c.get("Likes", 0) + 1 for n, c in users.items()}


def test_counter_projection_result_etag_follows_counters(store, users, server_url, db_name, http):
    """A cached query answer must not hide a counter change (the result etag covers the counter values)."""
    rql = "from Rows select name, counter('Likes') as likes"
    first = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql}).json()
    with store.open_session() as s:
        s.counters_for("users/0").increment("Likes", 1000)
        s.save_changes()
    second = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql}).json()
    assert first["ResultEtag"] != second["ResultEtag"]
    likes = {r["name"]: r["likes"] for r in second["Results"]}
    assert likes["n0"] == users["n0"].get("Likes", 0) + 1000


@pytest.mark.parametrize("rql", ["from Rows as u select counter(x, 'Likes')", "from Rows select counter(1)", "from Rows select counter()"])
def test_bad_counter_projections_are_invalid_queries(server_url, db_name, http, rql):
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": rql})
    assert r.status_code == 400, r.text
    assert assert_error_json(r)["Type"].endswith("InvalidQueryException")
