"""RQL queries against a seeded, deterministic data set: every result is compared with the answer
computed in Python from the very documents the test wrote (never with hand-copied constants).

The data set (module fixture `seeded`): a few hundred `Items` with mixed-case names, integer ages,
double prices, tag arrays, nested `Address.City`, explicit nulls, missing fields and empty strings,
plus a few `People` referenced by `Items.Owner` (for includes and `@all_docs`).
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
import requests
from ravendb.documents.queries.misc import SearchOperator
from ravendb.documents.session.misc import OrderingType

from corvid_support import assert_error_json, create_database, delete_database, open_store, unique_db_name

N_ITEMS = 320
N_PEOPLE = 20
FIRST = ["alice", "Bob", "CHARLIE", "dave", "Eve", "Frank", "grace", "Heidi", "ivan", "JUDY", "Mallory", "oscar"]
LAST = ["Smith", "jones", "BROWN", "Taylor", "wilson", "Davies"]
CITIES = ["Paris", "paris", "PARIS", "London", "Berlin", "berlin", "Rome", "New York"]
TAGS = ["red", "Green", "BLUE", "yellow", "Black", "white"]

MISSING = object()


# -- the data set ---------------------------------------------------------------------------------
def _variant(rng: random.Random, s: str) -> str:
    return rng.choice([s, s.lower(), s.upper(), s.capitalize()])


def make_items(seed: int = 20261122) -> dict[str, dict]:
    rng = random.Random(seed)
    serials = list(range(1, N_ITEMS + 1))
    rng.shuffle(serials)
    docs = {}
    for i in range(1, N_ITEMS + 1):
        d: dict = {}
        r = rng.random()
        if r < 0.05:
            pass  # Name missing
        elif r < 0.09:
            d["Name"] = None
        elif r < 0.13:
            d["Name"] = ""
        else:
            d["Name"] = f"{_variant(rng, rng.choice(FIRST))} {_variant(rng, rng.choice(LAST))}"
        r = rng.random()
        if r < 0.06:
            pass
        elif r < 0.10:
            d["Age"] = None
        else:
            d["Age"] = rng.randint(1, 90)
        if rng.random() >= 0.05:
            d["Price"] = float(round(rng.uniform(0, 1000), 2))
        r = rng.random()
        if r < 0.10:
            pass
        elif r < 0.15:
            d["Tags"] = []
        else:
            d["Tags"] = [_variant(rng, t) for t in rng.sample(TAGS, rng.randint(1, 3))]
        r = rng.random()
        if r < 0.08:
            pass
        elif r < 0.12:
            d["Address"] = {"Zip": str(rng.randint(10000, 99999))}
        elif r < 0.15:
            d["Address"] = {"City": None}
        else:
            d["Address"] = {"City": rng.choice(CITIES), "Zip": str(rng.randint(10000, 99999))}
        serial = serials[i - 1]
        d["Serial"] = serial
        d["Code"] = f"{rng.choice('ab')}{serial}"
        d["Active"] = rng.random() < 0.5
        d["Owner"] = f"people/{rng.randint(1, N_PEOPLE + 8)}"  # some point to people that do not exist
        docs[f"items/{i}"] = d
    return docs


def make_people() -> dict[str, dict]:
    return {f"people/{i}": {"Name": f"Person {i}", "Age": 100 + i} for i in range(1, N_PEOPLE + 1)}


def _put_all(url: str, db: str, docs: dict, collection: str) -> None:
    commands = [
        {"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": collection}}}
        for k, v in docs.items()
    ]
    r = requests.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=60)
    assert r.status_code == 201, r.text


class Seeded:
    def __init__(self, url: str, db: str, items: dict, people: dict):
        self.url, self.db, self.items, self.people = url, db, items, people
        self.http = requests.Session()

    def query(self, rql: str, params: dict | None = None, **body) -> dict:
        payload = {"Query": rql, "QueryParameters": params, "WaitForNonStaleResults": True, **body}
        r = self.http.post(f"{self.url}/databases/{self.db}/queries", json=payload, timeout=60)
        assert r.status_code == 200, f"{rql} {params} -> {r.status_code} {r.text[:500]}"
        result = r.json()
        assert result["IsStale"] is False, rql
        return result

    def ids(self, rql: str, params: dict | None = None, **body) -> list[str]:
        return [x["@metadata"]["@id"] for x in self.query(rql, params, **body)["Results"]]

    def expect(self, predicate) -> list[str]:
        return sorted(k for k, d in self.items.items() if predicate(d))


@pytest.fixture(scope="module")
def seeded(server_url):
    db = unique_db_name("queries")
    create_database(server_url, db)
    items, people = make_items(), make_people()
    _put_all(server_url, db, items, "Items")
    _put_all(server_url, db, people, "People")
    s = Seeded(server_url, db, items, people)
    yield s
    s.http.close()
    delete_database(server_url, db)


@pytest.fixture(scope="module")
def seeded_store(seeded):
    store = open_store(seeded.url, seeded.db)
    yield store
    store.close()


# -- Python semantics (sections 1.4 and 7 of rql-and-indexes.md) ---------------------------------------
def get(doc: dict, path: str):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return MISSING
        cur = cur[part]
    return cur


def _vals(v):
    return v if isinstance(v, list) else [v]


def is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def eq(v, q, exact: bool = False) -> bool:
    """`Field = q` on a default (lower-cased keyword) field, or inside exact()."""
    if v is MISSING:
        return False
    for x in _vals(v):
        if q is None and x is None:
            return True
        if isinstance(q, str) and isinstance(x, str) and (x == q if exact else x.lower() == q.lower()):
            return True
        if isinstance(q, bool) and isinstance(x, bool) and x == q:
            return True
        if is_num(q) and is_num(x) and x == q:
            return True
    return False


def num_cmp(v, op) -> bool:
    return v is not MISSING and any(is_num(x) and op(x) for x in _vals(v))


def str_any(v, op) -> bool:
    return v is not MISSING and any(isinstance(x, str) and op(x.lower()) for x in _vals(v))


def tokens(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


def some_names(seeded, k: int, seed: int) -> list[str]:
    names = sorted({d["Name"] for d in seeded.items.values() if isinstance(d.get("Name"), str) and d["Name"]})
    return random.Random(seed).sample(names, k)


# -- raw RQL filters ----------------------------------------------------------------------------------
def _name_cases(seeded):
    name = some_names(seeded, 1, 1)[0]
    return name


FILTERS = [
    # (id, rql, parameters, predicate)
    ("eq_lower", "from Items where Name = $v", lambda s: {"v": _name_cases(s).lower()},
     lambda d, p: eq(get(d, "Name"), p["v"])),
    ("eq_upper", "from Items where Name = $v", lambda s: {"v": _name_cases(s).upper()},
     lambda d, p: eq(get(d, "Name"), p["v"])),
    ("eq_literal", "from Items where Name == 'ALICE SMITH'", lambda s: {},
     lambda d, p: eq(get(d, "Name"), "alice smith")),
    ("neq", "from Items where Name != $v", lambda s: {"v": _name_cases(s)},
     lambda d, p: not eq(get(d, "Name"), p["v"])),
    ("neq_diamond", "from Items where Address.City <> 'paris'", lambda s: {},
     lambda d, p: not eq(get(d, "Address.City"), "paris")),
    ("eq_null", "from Items where Name = null", lambda s: {}, lambda d, p: get(d, "Name") is None),
    ("eq_null_param", "from Items where Age = $v", lambda s: {"v": None}, lambda d, p: get(d, "Age") is None),
    ("eq_empty", "from Items where Name = ''", lambda s: {}, lambda d, p: get(d, "Name") == ""),
    ("nested_null", "from Items where Address.City = null", lambda s: {},
     lambda d, p: get(d, "Address.City") is None),
    ("gt_long", "from Items where Age > $v", lambda s: {"v": 40}, lambda d, p: num_cmp(get(d, "Age"), lambda x: x > 40)),
    ("gte_long", "from Items where Age >= 40", lambda s: {}, lambda d, p: num_cmp(get(d, "Age"), lambda x: x >= 40)),
    ("lt_long", "from Items where Age < 12", lambda s: {}, lambda d, p: num_cmp(get(d, "Age"), lambda x: x < 12)),
    ("lte_long", "from Items where Age <= 12", lambda s: {}, lambda d, p: num_cmp(get(d, "Age"), lambda x: x <= 12)),
    ("eq_long", "from Items where Age = 33", lambda s: {}, lambda d, p: eq(get(d, "Age"), 33)),
    ("gt_double", "from Items where Price > $v", lambda s: {"v": 500.5},
     lambda d, p: num_cmp(get(d, "Price"), lambda x: x > 500.5)),
    ("lte_double", "from Items where Price <= 99.99", lambda s: {},
     lambda d, p: num_cmp(get(d, "Price"), lambda x: x <= 99.99)),
    ("eq_double", "from Items where Price = $v",
     lambda s: {"v": sorted(d["Price"] for d in s.items.values() if "Price" in d)[7]},
     lambda d, p: num_cmp(get(d, "Price"), lambda x: x == p["v"])),
    ("between_long", "from Items where Age between 20 and 40", lambda s: {},
     lambda d, p: num_cmp(get(d, "Age"), lambda x: 20 <= x <= 40)),
    ("between_double", "from Items where Price between $a and $b", lambda s: {"a": 100.0, "b": 250.5},
     lambda d, p: num_cmp(get(d, "Price"), lambda x: 100.0 <= x <= 250.5)),
    ("between_string", "from Items where Name between 'b' and 'dz'", lambda s: {},
     lambda d, p: str_any(get(d, "Name"), lambda x: "b" <= x <= "dz")),
    ("in_strings", "from Items where Name in ($a, $b, $c)",
     lambda s: dict(zip("abc", [n.upper() for n in some_names(s, 3, 2)])),
     lambda d, p: any(eq(get(d, "Name"), v) for v in p.values())),
    ("in_array_param", "from Items where Address.City in ($cities)", lambda s: {"cities": ["PARIS", "rome"]},
     lambda d, p: any(eq(get(d, "Address.City"), c) for c in p["cities"])),
    ("in_longs", "from Items where Age in (1, 2, 3, 50, 90)", lambda s: {},
     lambda d, p: any(eq(get(d, "Age"), v) for v in (1, 2, 3, 50, 90))),
    ("array_eq", "from Items where Tags = 'blue'", lambda s: {}, lambda d, p: eq(get(d, "Tags"), "blue")),
    ("array_in", "from Items where Tags in ('RED', 'white')", lambda s: {},
     lambda d, p: eq(get(d, "Tags"), "red") or eq(get(d, "Tags"), "white")),
    ("array_all_in", "from Items where Tags all in ('red', 'GREEN')", lambda s: {},
     lambda d, p: eq(get(d, "Tags"), "red") and eq(get(d, "Tags"), "green")),
    ("nested_eq", "from Items where Address.City = 'PARIS'", lambda s: {},
     lambda d, p: eq(get(d, "Address.City"), "paris")),
    ("bool_eq", "from Items where Active = true", lambda s: {}, lambda d, p: get(d, "Active") is True),
    ("exists", "from Items where exists(Name)", lambda s: {}, lambda d, p: get(d, "Name") is not MISSING),
    ("exists_nested", "from Items where exists(Address.City)", lambda s: {},
     lambda d, p: get(d, "Address.City") is not MISSING),
    ("starts_with", "from Items where startsWith(Name, $v)", lambda s: {"v": "AL"},
     lambda d, p: str_any(get(d, "Name"), lambda x: x.startswith("al"))),
    ("ends_with", "from Items where endsWith(Name, 'smith')", lambda s: {},
     lambda d, p: str_any(get(d, "Name"), lambda x: x.endswith("smith"))),
    ("regex", "from Items where regex(Name, $re)", lambda s: {"re": "^[a-c].*h$"},
     lambda d, p: str_any(get(d, "Name"), lambda x: re.search("^[a-c].*h$", x) is not None)),
    ("search_one", "from Items where search(Name, 'ALICE')", lambda s: {},
     lambda d, p: str_any(get(d, "Name"), lambda x: "alice" in tokens(x))),
    ("search_or", "from Items where search(Name, $t)", lambda s: {"t": "alice jones"},
     lambda d, p: str_any(get(d, "Name"), lambda x: bool({"alice", "jones"} & set(tokens(x))))),
    ("search_and", "from Items where search(Name, $t, and)", lambda s: {"t": "alice jones"},
     lambda d, p: str_any(get(d, "Name"), lambda x: {"alice", "jones"} <= set(tokens(x)))),
    ("search_prefix", "from Items where search(Name, 'da*')", lambda s: {},
     lambda d, p: str_any(get(d, "Name"), lambda x: any(t.startswith("da") for t in tokens(x)))),
    ("exact_eq", "from Items where exact(Name = $v)", lambda s: {"v": _name_cases(s)},
     lambda d, p: eq(get(d, "Name"), p["v"], exact=True)),
    ("exact_in", "from Items where exact(Address.City in ('Paris', 'berlin'))", lambda s: {},
     lambda d, p: get(d, "Address.City") in ("Paris", "berlin")),
    ("and_or_precedence", "from Items where Age < 20 or Age > 80 and Active = true", lambda s: {},
     lambda d, p: num_cmp(get(d, "Age"), lambda x: x < 20) or (num_cmp(get(d, "Age"), lambda x: x > 80) and get(d, "Active") is True)),
    ("parentheses", "from Items where (Age < 20 or Age > 80) and Active = true", lambda s: {},
     lambda d, p: (num_cmp(get(d, "Age"), lambda x: x < 20 or x > 80)) and get(d, "Active") is True),
    ("and_not", "from Items where exists(Age) and not Age < 50", lambda s: {},
     lambda d, p: get(d, "Age") is not MISSING and not num_cmp(get(d, "Age"), lambda x: x < 50)),
    ("true_and_not", "from Items where true and not (Address.City = 'paris' or Tags = 'red')", lambda s: {},
     lambda d, p: not (eq(get(d, "Address.City"), "paris") or eq(get(d, "Tags"), "red"))),
    ("or_not", "from Items where Active = true or not Name = null", lambda s: {},
     lambda d, p: get(d, "Active") is True or get(d, "Name") is not None),
    ("boost_in_where", "from Items where boost(Name = $v, 10) or Age = 5", lambda s: {"v": _name_cases(s)},
     lambda d, p: eq(get(d, "Name"), p["v"]) or eq(get(d, "Age"), 5)),
    ("mixed_methods", "from Items where startsWith(Code, 'a') and search(Name, 'bob') and Price < 600.0", lambda s: {},
     lambda d, p: d["Code"].startswith("a") and str_any(get(d, "Name"), lambda x: "bob" in tokens(x)) and num_cmp(get(d, "Price"), lambda x: x < 600.0)),
    ("keywords_case", "FROM Items WHERE Age BETWEEN 10 AND 20 AND NOT Active = false", lambda s: {},
     lambda d, p: num_cmp(get(d, "Age"), lambda x: 10 <= x <= 20) and get(d, "Active") is not False),
    ("quoted_collection", "from 'Items' where Tags = 'Black'", lambda s: {}, lambda d, p: eq(get(d, "Tags"), "black")),
]


@pytest.mark.parametrize("rql,params_fn,predicate", [f[1:] for f in FILTERS], ids=[f[0] for f in FILTERS])
def test_filter_matches_python(seeded, rql, params_fn, predicate):
    params = params_fn(seeded)
    body = seeded.query(rql, params)
    got = [x["@metadata"]["@id"] for x in body["Results"]]
    expected = seeded.expect(lambda d: predicate(d, params))
    assert len(got) == len(set(got)), f"duplicates in {rql}"
    assert sorted(got) == expected, f"{rql} {params}: missing {sorted(set(expected) - set(got))[:10]}, extra {sorted(set(got) - set(expected))[:10]}"
    assert body["TotalResults"] == len(expected)
    assert body["IndexName"].startswith("Auto/Items/By"), body["IndexName"]


def test_filters_are_not_trivial():
    """Guard against a data set where the comparisons above would pass vacuously."""
    items = make_items()
    names = [d.get("Name", MISSING) for d in items.values()]
    assert any(n is MISSING for n in names) and any(n is None for n in names) and any(n == "" for n in names)
    lowered = Counter(n.lower() for n in names if isinstance(n, str) and n)
    exact = Counter(n for n in names if isinstance(n, str) and n)
    assert len(exact) > len(lowered), "several case variants of the same name"


def test_case_insensitive_equality_vs_exact(seeded):
    variants: dict[str, set] = {}
    for d in seeded.items.values():
        if isinstance(d.get("Name"), str) and d["Name"]:
            variants.setdefault(d["Name"].lower(), set()).add(d["Name"])
    lower, spellings = next((k, v) for k, v in sorted(variants.items()) if len(v) > 1)
    all_ci = seeded.ids("from Items where Name = $v", {"v": lower.upper()})
    assert sorted(all_ci) == seeded.expect(lambda d: isinstance(d.get("Name"), str) and d["Name"].lower() == lower)
    for spelling in sorted(spellings):
        ex = seeded.ids("from Items where exact(Name = $v)", {"v": spelling})
        assert sorted(ex) == seeded.expect(lambda d: d.get("Name") == spelling)
        assert 0 < len(ex) < len(all_ci)
    assert seeded.ids("from Items where exact(Name = $v)", {"v": lower.upper() + "x"}) == []


def test_numbers_as_strings(store, server_url, db_name):
    """A long value compares numerically, a string value against the term (numbers are also terms)."""
    docs = {"n/1": {"Num": 7}, "n/2": {"Num": "7"}, "n/3": {"Num": 70}, "n/4": {"Num": "07"}, "n/5": {"Num": 8}, "n/6": {}}
    _put_all(server_url, db_name, docs, "Nums")
    s = Seeded(server_url, db_name, docs, {})
    assert sorted(s.ids("from Nums where Num = 7")) == ["n/1"]
    assert sorted(s.ids("from Nums where Num = '7'")) == ["n/1", "n/2"]
    assert sorted(s.ids("from Nums where Num > 7")) == ["n/3", "n/5"]
    assert sorted(s.ids("from Nums where Num in (7, 8)")) == ["n/1", "n/5"]
    assert sorted(s.ids("from Nums where Num = $p", {"p": "07"})) == ["n/4"]


# -- the typed client API -------------------------------------------------------------------------------
def _client_ids(seeded_store, build) -> tuple[list[str], object, str]:
    captured = []
    with seeded_store.open_session() as session:
        q = build(session.query_collection("Items", dict)).wait_for_non_stale_results()
        q.add_after_query_executed_listener(lambda qr: captured.append(qr))
        docs = list(q)
        rql = q.index_query.query
    qr = captured[-1]
    ids = [r["@metadata"]["@id"] for r in qr.results]
    assert len(ids) == len(docs)
    return ids, qr, rql


CLIENT = [
    ("where_equals", lambda q: q.where_equals("Name", "ALICE SMITH"), lambda d: eq(get(d, "Name"), "alice smith")),
    ("where_equals_exact", lambda q: q.where_equals("Address.City", "Paris", exact=True), lambda d: get(d, "Address.City") == "Paris"),
    ("where_not_equals", lambda q: q.where_not_equals("Address.City", "berlin"), lambda d: not eq(get(d, "Address.City"), "berlin")),
    ("where_greater_than", lambda q: q.where_greater_than("Age", 70), lambda d: num_cmp(get(d, "Age"), lambda x: x > 70)),
    ("where_greater_than_or_equal", lambda q: q.where_greater_than_or_equal("Price", 900.0), lambda d: num_cmp(get(d, "Price"), lambda x: x >= 900.0)),
    ("where_less_than", lambda q: q.where_less_than("Price", 50.5), lambda d: num_cmp(get(d, "Price"), lambda x: x < 50.5)),
    ("where_less_than_or_equal", lambda q: q.where_less_than_or_equal("Age", 5), lambda d: num_cmp(get(d, "Age"), lambda x: x <= 5)),
    ("where_between", lambda q: q.where_between("Age", 30, 35), lambda d: num_cmp(get(d, "Age"), lambda x: 30 <= x <= 35)),
    ("where_in", lambda q: q.where_in("Address.City", ["LONDON", "new york"]), lambda d: eq(get(d, "Address.City"), "london") or eq(get(d, "Address.City"), "new york")),
    ("contains_any", lambda q: q.contains_any("Tags", ["yellow", "BLACK"]), lambda d: eq(get(d, "Tags"), "yellow") or eq(get(d, "Tags"), "black")),
    ("contains_all", lambda q: q.contains_all("Tags", ["blue", "WHITE"]), lambda d: eq(get(d, "Tags"), "blue") and eq(get(d, "Tags"), "white")),
    ("where_starts_with", lambda q: q.where_starts_with("Name", "Ju"), lambda d: str_any(get(d, "Name"), lambda x: x.startswith("ju"))),
    ("where_ends_with", lambda q: q.where_ends_with("Name", "NES"), lambda d: str_any(get(d, "Name"), lambda x: x.endswith("nes"))),
    ("where_exists", lambda q: q.where_exists("Age"), lambda d: "Age" in d),
    ("where_regex", lambda q: q.where_regex("Code", "^b1.*"), lambda d: d["Code"].startswith("b1")),
    ("search", lambda q: q.search("Name", "eve wilson"), lambda d: str_any(get(d, "Name"), lambda x: bool({"eve", "wilson"} & set(tokens(x))))),
    ("search_and", lambda q: q.search("Name", "eve wilson", SearchOperator.AND), lambda d: str_any(get(d, "Name"), lambda x: {"eve", "wilson"} <= set(tokens(x)))),
    ("boost", lambda q: q.search("Name", "oscar").boost(5).or_else().where_equals("Tags", "red"), lambda d: str_any(get(d, "Name"), lambda x: "oscar" in tokens(x)) or eq(get(d, "Tags"), "red")),
    ("not_", lambda q: q.where_exists("Name").and_also().not_().where_equals("Name", None), lambda d: "Name" in d and d["Name"] is not None),
    ("subclause", lambda q: q.open_subclause().where_less_than("Age", 10).or_else().where_greater_than("Age", 85).close_subclause().and_also().where_equals("Active", False),
     lambda d: num_cmp(get(d, "Age"), lambda x: x < 10 or x > 85) and get(d, "Active") is False),
]


@pytest.mark.parametrize("build,predicate", [c[1:] for c in CLIENT], ids=[c[0] for c in CLIENT])
def test_client_query_matches_python(seeded, seeded_store, build, predicate):
    ids, qr, rql = _client_ids(seeded_store, build)
    expected = seeded.expect(predicate)
    assert sorted(ids) == expected, f"{rql}: missing {sorted(set(expected) - set(ids))[:10]}, extra {sorted(set(ids) - set(expected))[:10]}"
    assert qr.total_results == len(expected)
    assert qr.is_stale is False


def test_statistics_callback(seeded, seeded_store):
    stats = []
    with seeded_store.open_session() as session:
        result = list(
            session.query_collection("Items", dict).where_greater_than("Age", 45).wait_for_non_stale_results().statistics(stats.append).take(5)
        )
    assert len(result) == 5
    assert stats[0].total_results == len(seeded.expect(lambda d: num_cmp(get(d, "Age"), lambda x: x > 45)))
    assert stats[0].index_name.startswith("Auto/Items/By") and "Age" in stats[0].index_name
    assert stats[0].is_stale is False


def test_collection_scan_and_all_docs(seeded):
    body = seeded.query("from Items")
    assert body["IndexName"] == "collection/Items"
    assert sorted(x["@metadata"]["@id"] for x in body["Results"]) == sorted(seeded.items)
    assert body["TotalResults"] == len(seeded.items)
    all_ids = seeded.ids("from @all_docs")
    assert sorted(all_ids) == sorted(list(seeded.items) + list(seeded.people))
    # A filter over @all_docs spans the collections: people have ages above 100.
    got = seeded.ids("from @all_docs where Age >= 85")
    want = sorted([k for k, d in seeded.items.items() if num_cmp(get(d, "Age"), lambda x: x >= 85)] + list(seeded.people))
    assert sorted(got) == want


def test_id_queries(seeded):
    pick = sorted(seeded.items)[5:9]
    body = seeded.query("from Items where id() = $id", {"id": pick[0].upper()})
    assert [x["@metadata"]["@id"] for x in body["Results"]] == [pick[0]]
    assert body["IndexName"] == "collection/Items"
    got = seeded.ids("from Items where id() in ($ids)", {"ids": pick + ["items/none"]})
    assert sorted(got) == sorted(pick)


def test_get_query_endpoint(seeded):
    r = seeded.http.get(
        f"{seeded.url}/databases/{seeded.db}/queries",
        params={"query": "from Items where Age > $a", "parameters": '{"a": 60}', "waitForNonStaleResults": "true"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    got = sorted(x["@metadata"]["@id"] for x in r.json()["Results"])
    assert got == seeded.expect(lambda d: num_cmp(get(d, "Age"), lambda x: x > 60))


# -- sorting ------------------------------------------------------------------------------------------
def _docs_of(seeded, ids):
    return [seeded.items[i] for i in ids]


def test_order_by_long_unique_keys(seeded):
    got = seeded.ids("from Items order by Serial as long")
    assert got == sorted(seeded.items, key=lambda k: seeded.items[k]["Serial"])
    got = seeded.ids("from Items order by Serial as long desc")
    assert got == sorted(seeded.items, key=lambda k: -seeded.items[k]["Serial"])


def test_order_by_long_with_ties(seeded):
    got = seeded.ids("from Items where Age >= 0 order by Age as long")
    assert sorted(got) == seeded.expect(lambda d: is_num(d.get("Age")))
    assert [seeded.items[i]["Age"] for i in got] == sorted(d["Age"] for d in _docs_of(seeded, got))
    got = seeded.ids("from Items where Age >= 0 order by Age as long descending")
    assert [seeded.items[i]["Age"] for i in got] == sorted((d["Age"] for d in _docs_of(seeded, got)), reverse=True)


def test_order_by_double(seeded):
    got = seeded.ids("from Items where exists(Price) order by Price as double")
    assert sorted(got) == seeded.expect(lambda d: "Price" in d)
    assert [seeded.items[i]["Price"] for i in got] == sorted(d["Price"] for d in _docs_of(seeded, got))
    got = seeded.ids("from Items where Price > 0.0 order by Price as double desc")
    assert [seeded.items[i]["Price"] for i in got] == sorted((d["Price"] for d in _docs_of(seeded, got)), reverse=True)


def test_order_by_string_is_case_insensitive(seeded):
    for desc in (False, True):
        got = seeded.ids("from Items where exists(Name) order by Name" + (" desc" if desc else ""))
        assert sorted(got) == seeded.expect(lambda d: "Name" in d)
        keys = [seeded.items[i]["Name"].lower() for i in got if seeded.items[i]["Name"]]
        assert keys == sorted(keys, reverse=desc)
    # A string sort on a numeric field compares the terms: "10" < "9".
    got = seeded.ids("from Items where Age >= 0 order by Age as string")
    keys = [str(seeded.items[i]["Age"]) for i in got]
    assert keys == sorted(keys)


def test_order_by_alphanumeric(seeded):
    def natural(code: str):
        return (code[0], int(code[1:]))

    got = seeded.ids("from Items order by Code as alphaNumeric")
    assert got == sorted(seeded.items, key=lambda k: natural(seeded.items[k]["Code"]))
    got = seeded.ids("from Items order by Code as alphaNumeric desc")
    assert got == sorted(seeded.items, key=lambda k: natural(seeded.items[k]["Code"]), reverse=True)
    # Plain string order differs on the same field ("a10" < "a9").
    got = seeded.ids("from Items order by Code")
    assert got == sorted(seeded.items, key=lambda k: seeded.items[k]["Code"])


def test_order_by_two_keys(seeded):
    cities = sorted({c for c in CITIES})
    got = seeded.ids("from Items where Address.City in ($c) and Age >= 0 order by Address.City, Age as long desc", {"c": cities})
    expected = seeded.expect(lambda d: isinstance(get(d, "Address.City"), str) and is_num(d.get("Age")))
    assert sorted(got) == expected
    keys = [(seeded.items[i]["Address"]["City"].lower(), -seeded.items[i]["Age"]) for i in got]
    assert keys == sorted(keys)
    # Third key that is unique: the whole order is determined.
    got = seeded.ids(
        "from Items where Address.City in ($c) and Age >= 0 order by Address.City desc, Age as long, Serial as long desc", {"c": cities}
    )
    want = sorted(expected, key=lambda k: (seeded.items[k]["Address"]["City"].lower(), -seeded.items[k]["Age"], seeded.items[k]["Serial"]), reverse=True)
    assert got == want


def test_client_order_by(seeded, seeded_store):
    ids, _, rql = _client_ids(seeded_store, lambda q: q.where_greater_than("Price", 0.0).order_by_descending("Price", OrderingType.FLOAT).order_by("Serial", OrderingType.LONG))
    want = sorted(seeded.expect(lambda d: num_cmp(get(d, "Price"), lambda x: x > 0)), key=lambda k: (-seeded.items[k]["Price"], seeded.items[k]["Serial"]))
    assert ids == want, rql
    ids, _, rql = _client_ids(seeded_store, lambda q: q.order_by("Code", OrderingType.ALPHA_NUMERIC))
    assert ids == sorted(seeded.items, key=lambda k: (seeded.items[k]["Code"][0], int(seeded.items[k]["Code"][1:]))), rql


def test_order_by_score_puts_boosted_matches_first(seeded):
    rql = "from Items where search(Name, 'grace') or boost(search(Name, 'taylor'), 100) order by score()"
    got = seeded.ids(rql)
    taylor = set(seeded.expect(lambda d: str_any(get(d, "Name"), lambda x: "taylor" in tokens(x))))
    grace = set(seeded.expect(lambda d: str_any(get(d, "Name"), lambda x: "grace" in tokens(x))))
    assert taylor and grace - taylor
    assert sorted(got) == sorted(taylor | grace)
    assert set(got[: len(taylor)]) == taylor, f"{rql}: the boosted matches come first"


# -- paging -------------------------------------------------------------------------------------------
def _expected_by_serial(seeded, predicate):
    return sorted(seeded.expect(predicate), key=lambda k: seeded.items[k]["Serial"])


def test_paging_with_limit_and_offset(seeded):
    pred = lambda d: num_cmp(get(d, "Age"), lambda x: x > 15)  # noqa: E731
    full = _expected_by_serial(seeded, pred)
    pages, size = [], 23
    for start in range(0, len(full) + size, size):
        body = seeded.query("from Items where Age > 15 order by Serial as long limit $s, $t", {"s": start, "t": size})
        assert body["TotalResults"] == len(full)
        pages.append([x["@metadata"]["@id"] for x in body["Results"]])
    assert [i for p in pages for i in p] == full
    assert pages[-1] == []
    # limit n offset m form, and offset alone
    assert seeded.ids("from Items where Age > 15 order by Serial as long limit 10 offset 5") == full[5:15]
    assert seeded.ids("from Items where Age > 15 order by Serial as long offset 200") == full[200:]
    assert seeded.ids("from Items where Age > 15 order by Serial as long limit 0") == []


def test_paging_with_start_and_page_size(seeded):
    full = sorted(seeded.items, key=lambda k: seeded.items[k]["Serial"])
    got = []
    for start in range(0, len(full), 50):
        body = seeded.query("from Items order by Serial as long", Start=start, PageSize=50)
        assert body["TotalResults"] == len(full)
        got += [x["@metadata"]["@id"] for x in body["Results"]]
    assert got == full
    # collection scans page too (storage order, every document exactly once)
    got = []
    for start in range(0, len(full), 64):
        got += seeded.ids("from Items", Start=start, PageSize=64)
    assert sorted(got) == sorted(full) and len(got) == len(full)


def test_client_skip_take(seeded, seeded_store):
    pred = lambda d: get(d, "Active") is True  # noqa: E731
    full = _expected_by_serial(seeded, pred)
    got = []
    for start in range(0, len(full), 17):
        ids, qr, _ = _client_ids(seeded_store, lambda q: q.where_equals("Active", True).order_by("Serial", OrderingType.LONG).skip(start).take(17))
        assert qr.total_results == len(full)
        got += ids
    assert got == full


# -- projections, includes, parameters -----------------------------------------------------------------
def _py(v):
    return None if v is MISSING else v


def test_select_fields_with_aliases(seeded):
    body = seeded.query("from Items where Age > 60 order by Serial as long select Name, Address.City as City, Tags, Price as Cost")
    want = _expected_by_serial(seeded, lambda d: num_cmp(get(d, "Age"), lambda x: x > 60))
    assert len(body["Results"]) == len(want) == body["TotalResults"]
    for doc_id, r in zip(want, body["Results"]):
        d = seeded.items[doc_id]
        assert r["@metadata"].get("@projection") is True
        assert r["@metadata"].get("@id") == doc_id
        projected = {k: v for k, v in r.items() if k != "@metadata"}
        assert set(projected) <= {"Name", "City", "Tags", "Cost"}
        for key, path in (("Name", "Name"), ("City", "Address.City"), ("Tags", "Tags"), ("Cost", "Price")):
            assert projected.get(key) == _py(get(d, path)), (doc_id, key)
        assert "Age" not in projected and "Address" not in projected


def test_client_select_fields(seeded, seeded_store):
    class NameAndAge:
        def __init__(self, Name=None, Age=None):
            self.Name = Name
            self.Age = Age

    with seeded_store.open_session() as session:
        q = (
            session.query_collection("Items", dict)
            .where_less_than("Age", 20)
            .order_by("Serial", OrderingType.LONG)
            .select_fields(NameAndAge, "Name", "Age")
            .wait_for_non_stale_results()
        )
        got = [(x.Name, x.Age) for x in q]
    want = [(_py(get(seeded.items[k], "Name")), seeded.items[k]["Age"]) for k in _expected_by_serial(seeded, lambda d: num_cmp(get(d, "Age"), lambda x: x < 20))]
    assert got == want


def test_include_paths(seeded):
    body = seeded.query("from Items where Age > 75 include Owner")
    matched = seeded.expect(lambda d: num_cmp(get(d, "Age"), lambda x: x > 75))
    assert sorted(x["@metadata"]["@id"] for x in body["Results"]) == matched
    owners = {seeded.items[k]["Owner"] for k in matched}
    existing = {o for o in owners if o in seeded.people}
    assert existing and owners - existing, "the data set has both kinds of reference"
    includes = body["Includes"]
    present = {k for k, v in includes.items() if v is not None}
    assert present == existing
    assert set(includes) <= owners
    for k in present:
        assert includes[k]["Name"] == seeded.people[k]["Name"]
        assert includes[k]["@metadata"]["@id"] == k


def test_client_include_avoids_extra_requests(seeded, seeded_store):
    with seeded_store.open_session() as session:
        items = list(session.query_collection("Items", dict).where_equals("Active", True).where_greater_than("Age", 70).include("Owner").wait_for_non_stale_results())
        assert items
        before = session.advanced.number_of_requests
        owners = sorted({i["Owner"] for i in items if i["Owner"] in seeded.people})
        loaded = session.load(owners, dict)
        assert {k: v["Name"] for k, v in loaded.items()} == {k: seeded.people[k]["Name"] for k in owners}
        assert session.advanced.number_of_requests == before


def test_raw_query_parameters(seeded, seeded_store):
    names = some_names(seeded, 4, 9)
    with seeded_store.open_session() as session:
        q = (
            session.advanced.raw_query("from Items where Name in ($names) and Age between $lo and $hi or Code = $code", dict)
            .add_parameter("names", [n.lower() for n in names])
            .add_parameter("lo", 10)
            .add_parameter("hi", 70)
            .add_parameter("code", "A17")
            .wait_for_non_stale_results()
        )
        got = sorted(session.advanced.get_document_id(x) for x in q)
    want = seeded.expect(
        lambda d: (any(eq(get(d, "Name"), n) for n in names) and num_cmp(get(d, "Age"), lambda x: 10 <= x <= 70)) or eq(d["Code"], "a17")
    )
    assert got == want and want


def test_missing_parameter_is_an_error(seeded):
    r = seeded.http.post(f"{seeded.url}/databases/{seeded.db}/queries", json={"Query": "from Items where Name = $nope", "QueryParameters": {}})
    assert r.status_code == 400, r.text
    body = assert_error_json(r)
    assert body["Type"].endswith("InvalidQueryException") and "nope" in body["Message"]


def test_select_distinct(seeded):
    body = seeded.query("from Items where exists(Address.City) select distinct Address.City as City")
    got = [r.get("City") for r in body["Results"]]
    want = {get(d, "Address.City") for d in seeded.items.values() if get(d, "Address.City") is not MISSING}
    assert len(got) == len(set(got)), got
    assert set(got) == want
    assert body["TotalResults"] == len(want)
