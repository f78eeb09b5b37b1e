"""C# LINQ indexes through the official client (AbstractIndexCreationTask, multi-map, map-reduce,
LoadDocument) evaluated natively; expected answers computed from the documents the test wrote."""

from __future__ import annotations

import datetime
import random
from collections import defaultdict

from ravendb import AbstractIndexCreationTask
from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractMultiMapIndexCreationTask

from corvid_support import Company, Order, User, assert_error_json


class UsersByNameAndAge(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "from u in docs.Users select new { u.name, u.age, Decade = u.age / 10, Upper = u.name.ToUpper() }"


class OrdersTotals(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "docs.Orders.SelectMany(o => o.lines, (o, l) => new { Product = l.product, Quantity = l.qty, Count = 1 })"
        self.reduce = (
            "from r in results group r by r.Product into g "
            "select new { Product = g.Key, Quantity = g.Sum(x => x.Quantity), Count = g.Sum(x => x.Count) }"
        )


class OrdersByCompanyName(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "from o in docs.Orders let c = LoadDocument<Company>(o.company) select new { CompanyName = c.name }"


class PeopleAndCompanies(AbstractMultiMapIndexCreationTask):
    def __init__(self):
        super().__init__()
        self._add_map("from u in docs.Users select new { Name = u.name }")
        self._add_map("from c in docs.Companies select new { Name = c.name }")


def test_map_index_with_computed_fields(store):
    with store.open_session() as s:
        for i in range(30):
            s.store(User(name=f"user{i}", age=i), f"users/{i}")
        s.save_changes()
    UsersByNameAndAge().execute(store)
    with store.open_session() as s:
        got = list(s.query_index_type(UsersByNameAndAge, User).wait_for_non_stale_results().where_equals("Decade", 2).order_by("age"))
        assert [u.age for u in got] == list(range(20, 30))
        got = list(s.query_index_type(UsersByNameAndAge, User).where_equals("Upper", "USER7"))
        assert [u.name for u in got] == ["user7"]


class Shipment:
    def __init__(self, name: str = None, ordered_at: datetime.datetime = None, shipped_at: datetime.datetime = None):
        self.name = name
        self.ordered_at = ordered_at
        self.shipped_at = shipped_at


class ShipmentDelays(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "from s in docs.Shipments select new { Delay = s.shipped_at - ((DateTime?)s.ordered_at) }"


def test_date_differences_compare_with_timespan_parameters(store):
    """`DateTime - DateTime` is a TimeSpan: the client sends timedelta parameters as ticks, and ranges on the
    difference compare them (official suite: test_query_with_duration)."""
    now = datetime.datetime(2026, 11, 25, 12, 0, 0)
    delays = {f"s{i}": datetime.timedelta(minutes=random.randint(1, 10_000)) for i in range(40)}
    with store.open_session() as s:
        for name, delay in delays.items():
            s.store(Shipment(name=name, ordered_at=now - delay, shipped_at=now), f"shipments/{name}")
        s.save_changes()
    ShipmentDelays().execute(store)
    bound = datetime.timedelta(hours=48)
    with store.open_session() as s:
        short = list(s.query_index_type(ShipmentDelays, Shipment).wait_for_non_stale_results().where_less_than("Delay", bound))
        long = list(s.query_index_type(ShipmentDelays, Shipment).where_greater_than_or_equal("Delay", bound))
    assert sorted(x.name for x in short) == sorted(n for n, d in delays.items() if d < bound)
    assert sorted(x.name for x in long) == sorted(n for n, d in delays.items() if d >= bound)


def test_map_reduce_follows_random_writes(store, server_url, db_name, http):
    rng = random.Random(5)
    orders = {}
    OrdersTotals().execute(store)
    for round_ in range(3):
        commands = []
        for _ in range(30):
            doc_id = f"orders/{rng.randrange(40)}"
            if doc_id in orders and rng.random() < 0.3:
                del orders[doc_id]
                commands.append({"Type": "DELETE", "Id": doc_id, "ChangeVector": None})
            else:
                lines = [{"product": rng.choice("abcd"), "qty": rng.randrange(1, 9)} for _ in range(rng.randrange(1, 4))]
                orders[doc_id] = lines
                commands.append({"Type": "PUT", "Id": doc_id, "ChangeVector": None, "Document": {"lines": lines, "@metadata": {"@collection": "Orders"}}})
        assert http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}).status_code == 201
        expected = defaultdict(lambda: [0, 0])
        for lines in orders.values():
            for line in lines:
                expected[line["product"]][0] += line["qty"]
                expected[line["product"]][1] += 1
        r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'OrdersTotals' order by Product", "WaitForNonStaleResults": True})
        got = {x["Product"]: [x["Quantity"], x["Count"]] for x in r.json()["Results"]}
        assert got == dict(expected), f"round {round_}"


def test_load_document_and_multi_map(store):
    with store.open_session() as s:
        s.store(Company(name="Acme"), "companies/1")
        s.store(Order(company="companies/1"), "orders/1")
        s.store(User(name="Acme"), "users/1")
        s.save_changes()
    OrdersByCompanyName().execute(store)
    PeopleAndCompanies().execute(store)
    with store.open_session() as s:
        assert len(list(s.query_index_type(OrdersByCompanyName, Order).wait_for_non_stale_results().where_equals("CompanyName", "acme"))) == 1
        both = list(s.advanced.raw_query("from index 'PeopleAndCompanies' where Name = 'acme'", dict).wait_for_non_stale_results())
        assert len(both) == 2
    with store.open_session() as s:
        s.load("companies/1", Company).name = "Initech"
        s.save_changes()
    with store.open_session() as s:
        assert len(list(s.query_index_type(OrdersByCompanyName, Order).wait_for_non_stale_results().where_equals("CompanyName", "initech"))) == 1


def test_constructs_outside_the_subset_are_refused_with_a_position(server_url, db_name, http):
    r = http.put(
        f"{server_url}/databases/{db_name}/admin/indexes",
        json={"Indexes": [{"Name": "Bad", "Maps": ["from u in docs.Users\nselect new { T = typeof(u) }"]}]},
    )
    body = assert_error_json(r)
    assert body["Type"].endswith("IndexCompilationException")
    assert "typeof" in body["Message"] and "line 2" in body["Message"], body["Message"]
