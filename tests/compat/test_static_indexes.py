"""Static JavaScript indexes through the official client (AbstractJavaScriptIndexCreationTask): creation,
queries on their fields, multi-map, fan-out, load(), errors per document, replacement and bad definitions.
Expected answers are computed from the documents the test wrote."""

from __future__ import annotations

import time

import pytest
from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractJavaScriptIndexCreationTask
from ravendb.documents.operations.indexes import GetIndexOperation, PutIndexesOperation
from ravendb.documents.indexes.definitions import IndexDefinition

from corvid_support import Company, Order, Product, User, assert_error_json


class UsersByAge(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Users', function (u) { return { age: u.age, name: u.name, initial: u.name.substring(0, 1) }; })"}


class UsersAndProductsByName(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {
            "map('Users', function (u) { return { name: u.name }; })",
            "map('Products', function (p) { return { name: p.name }; })",
        }


class OrdersByProduct(AbstractJavaScriptIndexCreationTask):
    """Fan-out: one entry per order line; and load() of the company."""

    def __init__(self):
        super().__init__()
        self.maps = {
            "map('Orders', function (o) { var c = load(o.company, 'Companies'); "
            "return o.lines.map(function (l) { return { product: l.product, company_name: c ? c.name : null }; }); })"
        }


def _users(store, n=40):
    with store.open_session() as s:
        for i in range(n):
            s.store(User(name=f"user{i:02d}", age=i % 10), f"users/{i}")
        s.save_changes()
    return {f"users/{i}": (f"user{i:02d}", i % 10) for i in range(n)}


def test_javascript_map_index_answers_queries(store):
    users = _users(store)
    UsersByAge().execute(store)
    with store.open_session() as s:
        got = list(s.query_index_type(UsersByAge, User).wait_for_non_stale_results().where_greater_than("age", 6).order_by_descending("age"))
        expected = sorted((v for v in users.values() if v[1] > 6), key=lambda v: -v[1])
        assert [u.age for u in got] == [v[1] for v in expected]
        got = list(s.query_index("UsersByAge", User).where_equals("initial", "U").where_equals("age", 3))
        assert sorted(u.name for u in got) == sorted(v[0] for v in users.values() if v[1] == 3)


def test_definition_round_trips_and_stats_show_the_type(store):
    UsersByAge().execute(store)
    definition = store.maintenance.send(GetIndexOperation("UsersByAge"))
    assert definition.name == "UsersByAge"
    assert "map('Users'" in list(definition.maps)[0]
    stats = store.maintenance.send(GetIndexOperation("UsersByAge"))
    assert stats is not None


def test_multi_map_index_covers_both_collections(store):
    _users(store, 5)
    with store.open_session() as s:
        for i in range(3):
            s.store(Product(name=f"user{i:02d}-product", price=i), f"products/{i}")
        s.save_changes()
    UsersAndProductsByName().execute(store)
    with store.open_session() as s:
        names = sorted(r["name"] for r in s.advanced.raw_query("from index 'UsersAndProductsByName' where startsWith(name, 'user0')", dict).wait_for_non_stale_results())
    assert names == sorted([f"user{i:02d}" for i in range(5)] + [f"user{i:02d}-product" for i in range(3)])


def test_fan_out_and_load(store):
    with store.open_session() as s:
        s.store(Company(name="Acme"), "companies/1")
        s.store(Order(company="companies/1", lines=[{"product": "apple"}, {"product": "pear"}]), "orders/1")
        s.store(Order(company="companies/404", lines=[{"product": "plum"}]), "orders/2")
        s.save_changes()
    OrdersByProduct().execute(store)
    with store.open_session() as s:
        q = lambda rql: sorted(r.company for r in s.advanced.raw_query(rql, Order).wait_for_non_stale_results())
        assert q("from index 'OrdersByProduct' where product = 'pear'") == ["companies/1"]
        assert q("from index 'OrdersByProduct' where product = 'plum'") == ["companies/404"]
        assert q("from index 'OrdersByProduct' where company_name = 'acme'") == ["companies/1"]


def test_a_failing_document_is_an_index_error_not_a_stopped_index(store, server_url, db_name, http):
    with store.open_session() as s:
        s.store(User(name="ok", age=1), "users/1")
        s.store(User(name=None, age=2), "users/2")  # name.substring fails for this one
        s.save_changes()
    UsersByAge().execute(store)
    with store.open_session() as s:
        assert [u.name for u in s.query_index("UsersByAge", User).wait_for_non_stale_results()] == ["ok"]
    errors = http.get(f"{server_url}/databases/{db_name}/indexes/errors", params={"name": "UsersByAge"}).json()["Results"][0]["Errors"]
    assert [e["Document"] for e in errors] == ["users/2"]


def test_changing_a_definition_rebuilds_the_index(store):
    _users(store, 10)
    UsersByAge().execute(store)
    changed = IndexDefinition(name="UsersByAge", maps={"map('Users', function (u) { return u.age >= 5 ? { age: u.age } : null; })"})
    store.maintenance.send(PutIndexesOperation(changed))
    # The new definition is built side by side (`ReplacementOf/UsersByAge`) and answers once swapped in.
    from ravendb.documents.operations.statistics import GetStatisticsOperation
    import time

    deadline = time.monotonic() + 30
    while any(i.name.startswith("ReplacementOf/") for i in store.maintenance.send(GetStatisticsOperation()).indexes):
        assert time.monotonic() < deadline, "the replacement never swapped in"
        time.sleep(0.05)
    with store.open_session() as s:
        assert sorted(u.age for u in s.query_index("UsersByAge", User).wait_for_non_stale_results()) == [5, 6, 7, 8, 9]


@pytest.mark.parametrize(
    "maps,expect",
    [
        (["map('Users', function (u) { return { ; })"], "does not compile"),
        (["function helper() { return 1; }"], "no map"),
        ([], "no map"),
    ],
)
def test_bad_definitions_are_refused_and_nothing_is_created(server_url, db_name, http, maps, expect):
    r = http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [{"Name": "Bad", "Maps": maps}]})
    body = assert_error_json(r)
    assert body["Type"].endswith("IndexCompilationException") and expect in body["Message"], body
    assert http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "Bad"}).status_code == 404


class FanoutSum(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Fanouts', function (f) { return f.numbers.map(function (n) { return { foo: f.foo, sum: n, count: 1 }; }); })"}
        self.reduce = "groupBy(f => f.foo).aggregate(g => ({ foo: g.key, sum: g.values.reduce((t, v) => t + v.sum, 0), count: g.values.reduce((t, v) => t + v.count, 0) }))"


class Fanout:
    def __init__(self, foo: str = None, numbers: list = None):
        self.foo = foo
        self.numbers = numbers


def test_javascript_map_reduce_follows_random_writes(store, server_url, db_name, http):
    """Random inserts, updates (moving numbers between groups) and deletes; after each round the reduce
    results equal a recomputation from all documents, and filtering/sorting on results works."""
    import random

    rng = random.Random(7)
    docs = {}
    FanoutSum().execute(store)
    for round_ in range(4):
        commands = []
        for _ in range(40):
            doc_id = f"fanouts/{rng.randrange(60)}"
            if doc_id in docs and rng.random() < 0.25:
                commands.append({"Type": "DELETE", "Id": doc_id, "ChangeVector": None})
                del docs[doc_id]
            else:
                value = Fanout(foo=rng.choice("abcde"), numbers=[rng.randrange(100) for _ in range(rng.randrange(1, 4))])
                docs[doc_id] = value
                document = {"foo": value.foo, "numbers": value.numbers, "@metadata": {"@collection": "Fanouts"}}
                commands.append({"Type": "PUT", "Id": doc_id, "ChangeVector": None, "Document": document})
        assert http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}).status_code == 201
        expected = {}
        for d in docs.values():
            e = expected.setdefault(d.foo, [0, 0])
            e[0] += sum(d.numbers)
            e[1] += len(d.numbers)
        r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'FanoutSum' order by foo", "WaitForNonStaleResults": True})
        assert r.status_code == 200, r.text
        got = {x["foo"]: [x["sum"], x["count"]] for x in r.json()["Results"]}
        assert got == expected, f"round {round_}"
        assert [x["foo"] for x in r.json()["Results"]] == sorted(expected)
    big = [k for k, v in expected.items() if v[0] > 150]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'FanoutSum' where sum > 150", "WaitForNonStaleResults": True})
    assert sorted(x["foo"] for x in r.json()["Results"]) == sorted(big)
    with store.open_session() as s:
        typed = list(s.query_index("FanoutSum", dict).where_equals("foo", "a"))
        assert [t["sum"] for t in typed] == ([expected["a"][0]] if "a" in expected else [])


def test_disable_enable_stop_start_priority_and_lock(store, server_url, db_name, http):
    from ravendb.documents.indexes.definitions import IndexLockMode, IndexPriority
    from ravendb.documents.operations.indexes import (
        DisableIndexOperation,
        EnableIndexOperation,
        GetIndexingStatusOperation,
        GetIndexStatisticsOperation,
        SetIndexesLockOperation,
        SetIndexesPriorityOperation,
        StartIndexingOperation,
        StopIndexingOperation,
    )

    _users(store, 3)
    UsersByAge().execute(store)
    count = lambda: len(list(store.open_session().query_index("UsersByAge", User).wait_for_non_stale_results()))
    assert count() == 3
    store.maintenance.send(StopIndexingOperation())
    status = store.maintenance.send(GetIndexingStatusOperation())
    assert [i.status.value for i in status.indexes] == ["Paused"]
    with store.open_session() as s:
        s.store(User(name="late", age=1), "users/late")
        s.save_changes()
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'UsersByAge'"})
    assert r.json()["IsStale"] is True and len(r.json()["Results"]) == 3  # paused: the new user is not indexed
    store.maintenance.send(StartIndexingOperation())
    assert count() == 4
    store.maintenance.send(DisableIndexOperation("UsersByAge"))
    assert store.maintenance.send(GetIndexStatisticsOperation("UsersByAge")).state.value == "Disabled"
    store.maintenance.send(EnableIndexOperation("UsersByAge"))
    store.maintenance.send(SetIndexesPriorityOperation(IndexPriority.HIGH, "UsersByAge"))
    store.maintenance.send(SetIndexesLockOperation(IndexLockMode.LOCKED_IGNORE, "UsersByAge"))
    stats = store.maintenance.send(GetIndexStatisticsOperation("UsersByAge"))
    assert (stats.priority.value, stats.lock_mode.value) == ("High", "LockedIgnore")
    # A locked (ignore) index keeps its definition when a changed one is put.
    changed = IndexDefinition(name="UsersByAge", maps={"map('Users', function (u) { return { other: 1 }; })"})
    store.maintenance.send(PutIndexesOperation(changed))
    assert "initial" in list(store.maintenance.send(GetIndexOperation("UsersByAge")).maps)[0]
    r = http.post(f"{server_url}/databases/{db_name}/indexes/set-priority", json={"IndexNames": ["UsersByAge"], "Priority": "Urgent"})
    assert assert_error_json(r)["Message"].startswith("Unknown index priority")
    r = http.post(f"{server_url}/databases/{db_name}/indexes/set-lock", json={"IndexNames": ["Nope"], "Mode": "Unlock"})
    assert r.status_code == 404


def test_database_record_lists_static_and_automatic_indexes(store, server_url, db_name, http):
    _users(store, 3)
    UsersByAge().execute(store)
    with store.open_session() as s:
        list(s.query(object_type=User).where_equals("name", "user01"))
    record = http.get(f"{server_url}/admin/databases", params={"name": db_name}).json()
    assert list(record["Indexes"]) == ["UsersByAge"]
    assert record["Indexes"]["UsersByAge"]["Type"] == "JavaScriptMap"
    assert list(record["AutoIndexes"]) == ["Auto/Users/Byname"]
    assert record["AutoIndexes"]["Auto/Users/Byname"]["MapFields"]["name"]["Indexing"] == "Default"


def test_a_change_to_a_loaded_document_reindexes_the_documents_that_loaded_it(store):
    with store.open_session() as s:
        s.store(Company(name="Acme"), "companies/1")
        s.store(Company(name="Globex"), "companies/2")
        s.store(Order(company="companies/1", lines=[{"product": "apple"}]), "orders/1")
        s.store(Order(company="companies/1", lines=[{"product": "pear"}]), "orders/2")
        s.store(Order(company="companies/2", lines=[{"product": "plum"}]), "orders/3")
        s.save_changes()
    OrdersByProduct().execute(store)
    q = lambda name: sorted(
        o.lines[0]["product"]
        for o in store.open_session().advanced.raw_query(f"from index 'OrdersByProduct' where company_name = '{name}'", Order).wait_for_non_stale_results()
    )
    assert q("acme") == ["apple", "pear"]
    with store.open_session() as s:
        c = s.load("companies/1", Company)
        c.name = "Initech"
        s.save_changes()
    assert q("acme") == []
    assert q("initech") == ["apple", "pear"]
    with store.open_session() as s:
        s.delete("companies/2")
        s.save_changes()
    # The order that loaded a deleted company is indexed again, now without a company name.
    assert q("globex") == []
    with store.open_session() as s:
        s.store(Company(name="Globex"), "companies/2")
        s.save_changes()
    assert q("globex") == ["plum"]


@pytest.mark.parametrize(
    "analyzer,query,expected",
    [
        ("StandardAnalyzer", "quick", ["p1", "p2"]),
        ("StandardAnalyzer", "the", []),  # a stop word
        ("WhitespaceAnalyzer", "Quick", ["p2"]),  # case kept
        ("WhitespaceAnalyzer", "fox.", ["p1"]),  # punctuation stays part of the word
        ("KeywordAnalyzer", '"The quick brown fox."', ["p1"]),  # the whole value (quoted: one term), case kept
        ("KeywordAnalyzer", "quick", []),
        ("LowerCaseKeywordAnalyzer", '"the QUICK brown fox."', ["p1"]),
        ("SimpleAnalyzer", "the", ["p1"]),  # no stop words
    ],
)
def test_field_analyzers(server_url, db_name, http, analyzer, query, expected):
    docs = {"p1": "The quick brown fox.", "p2": "Quick thinking"}
    commands = [{"Type": "PUT", "Id": k, "ChangeVector": None, "Document": {"Text": v, "@metadata": {"@collection": "Phrases"}}} for k, v in docs.items()]
    assert http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}).status_code == 201
    definition = {"Name": "Phrases/Text", "Maps": ["map('Phrases', p => ({ Text: p.Text }))"], "Fields": {"Text": {"Indexing": "Search", "Analyzer": analyzer}}}
    assert http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [definition]}).status_code == 201
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'Phrases/Text' where search(Text, $q)", "QueryParameters": {"q": query}, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    assert sorted(d["@metadata"]["@id"] for d in r.json()["Results"]) == expected


def test_unknown_analyzers_are_refused(server_url, db_name, http):
    definition = {"Name": "X", "Maps": ["map('Phrases', p => ({ Text: p.Text }))"], "Fields": {"Text": {"Indexing": "Search", "Analyzer": "NGramAnalyzer"}}}
    r = http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [definition]})
    assert "NGramAnalyzer" in assert_error_json(r)["Message"]


def test_javascript_dynamic_fields(server_url, db_name, http):
    commands = [
        {"Type": "PUT", "Id": f"users/{i}", "ChangeVector": None, "Document": {"name": n, "@metadata": {"@collection": "Users"}}}
        for i, n in enumerate(["Brown Fox", "Lazy Dog"])
    ]
    assert http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}).status_code == 201
    definition = {
        "Name": "Dyn",
        "Maps": ["map('Users', u => ({ name: u.name, _: [{ $value: u.name, $name: 'analyzed', $options: { indexing: 'Search' } }, createField('len', u.name.length)] }))"],
        "Fields": {"__all_fields": {"Indexing": "Search"}},
    }
    assert http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [definition]}).status_code == 201
    run = lambda q: sorted(d["name"] for d in http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": q, "WaitForNonStaleResults": True}).json()["Results"])
    assert run("from index 'Dyn' where search(analyzed, 'fox')") == ["Brown Fox"]
    assert run("from index 'Dyn' where len = 8") == ["Lazy Dog"]


def test_database_last_indexing_time_follows_the_indexes_and_a_reset(store):
    from ravendb.documents.operations.indexes import ResetIndexOperation
    from ravendb.documents.operations.statistics import GetStatisticsOperation

    from corvid_support import wait_until

    # No index has indexed anything yet: RavenDB reports null.
    assert store.maintenance.send(GetStatisticsOperation()).last_indexing_time is None
    _users(store, 5)
    UsersByAge().execute(store)

    def indexed_time():
        stats = store.maintenance.send(GetStatisticsOperation())
        index = next(i for i in stats.indexes if i.name == "UsersByAge")
        return None if index.stale else stats.last_indexing_time

    first = wait_until(indexed_time)
    assert first is not None
    time.sleep(0.02)
    store.maintenance.send(ResetIndexOperation("UsersByAge"))
    second = wait_until(lambda: (t := indexed_time()) is not None and t > first and t)
    assert second > first
