"""Counter includes of related documents in queries, counter names answered as asked for, and moving or
renaming an attachment onto an existing name (refused, nothing changes)."""

from __future__ import annotations

import random

import pytest

from corvid_support import assert_error_json


class Order:
    def __init__(self, employee=None, Id=None):
        self.employee = employee
        self.Id = Id


class Employee:
    def __init__(self, name=None):
        self.name = name


def test_query_includes_counters_of_related_documents(store):
    rng = random.Random(8)
    employees = {f"employees/{i}": {"downloads": rng.randint(1, 999), "likes": rng.randint(1, 999)} for i in range(4)}
    orders = {f"orders/{i}": f"employees/{rng.randrange(4)}" for i in range(10)}
    with store.open_session() as s:
        for doc_id, counters in employees.items():
            s.store(Employee(name=doc_id), doc_id)
            for name, value in counters.items():
                s.counters_for(doc_id).increment(name, value)
        for doc_id, employee in orders.items():
            s.store(Order(employee=employee), doc_id)
            s.counters_for(doc_id).increment("likes", int(doc_id.split("/")[1]) + 1)
        s.save_changes()

    with store.open_session() as s:
        query = s.query(object_type=Order).include(lambda i: i.include_counters("likes").include_counters("downloads", path="employee"))
        results = list(query)
        assert len(results) == len(orders)
        for doc_id, employee in orders.items():
            assert s.counters_for(doc_id).get("likes") == int(doc_id.split("/")[1]) + 1
            assert s.counters_for(employee).get("downloads") == employees[employee]["downloads"]
        assert s.advanced.number_of_requests == 1

    # All counters of the related documents, raw.
    with store.open_session() as s:
        body = s.advanced.raw_query("from Orders include counters(employee)")
        list(body)
        referenced = set(orders.values())
        for employee in referenced:
            got = {k.lower(): v for k, v in s.counters_for(employee).get_all().items()}
            assert got == employees[employee]
        assert s.advanced.number_of_requests == 1


def test_raw_related_counter_includes_are_merged_per_document(store, server_url, db_name, http):
    with store.open_session() as s:
        s.store(Employee(name="e"), "employees/1")
        s.counters_for("employees/1").increment("a", 1)
        s.counters_for("employees/1").increment("b", 2)
        for i in range(3):
            s.store(Order(employee="employees/1"), f"orders/{i}")
        s.store(Order(employee="employees/missing"), "orders/9")
        s.save_changes()
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Orders include counters(employee, 'a'), counters(employee, 'b')"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body["CounterIncludes"]) == {"employees/1"}
    assert sorted((c["CounterName"], c["TotalValue"]) for c in body["CounterIncludes"]["employees/1"]) == [("a", 1), ("b", 2)]
    assert sorted(body["IncludedCounterNames"]["employees/1"]) == ["a", "b"]



def test_counters_named_with_the_query_alias_are_the_results_own(store, server_url, db_name, http):
    """With an alias the clients write `include counters(e, 'a')`: `e` is the result document itself, not a
    path to a related one."""
    with store.open_session() as s:
        s.store(Employee(name="e"), "employees/1")
        s.counters_for("employees/1").increment("a", 5)
        s.save_changes()
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Employees as e include counters(e, 'a')"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [(c["CounterName"], c["TotalValue"]) for c in body["CounterIncludes"]["employees/1"]] == [("a", 5)]
    with store.open_session() as s:
        employees = list(s.query(object_type=Employee).include(lambda i: i.include_counter("a")))
        assert len(employees) == 1 and s.counters_for(employees[0]).get("a") == 5
        assert s.advanced.number_of_requests == 1

def test_counter_asked_by_name_answers_that_spelling(store, server_url, db_name, http):
    with store.open_session() as s:
        s.store(Employee(name="e"), "employees/1")
        s.counters_for("employees/1").increment("Likes", 999)
        s.save_changes()
    with store.open_session() as s:
        employee = s.load("employees/1", Employee)
        assert s.counters_for(employee).get_many(["likes"]) == {"likes": 999}
    got = http.get(f"{server_url}/databases/{db_name}/counters", params={"docId": "employees/1", "counter": "LIKES"}).json()
    assert [(c["CounterName"], c["TotalValue"]) for c in got["Counters"]] == [("LIKES", 999)]
    # Without names, the stored spelling.
    got = http.get(f"{server_url}/databases/{db_name}/counters", params={"docId": "employees/1"}).json()
    assert [c["CounterName"] for c in got["Counters"]] == ["Likes"]


def test_moving_an_attachment_onto_an_existing_name_is_refused(store, server_url, db_name, http):
    with store.open_session() as s:
        s.store(Employee(name="e"), "employees/1")
        s.store(Employee(name="f"), "employees/2")
        s.advanced.attachments.store("employees/1", "a.txt", b"first", "text/plain")
        s.advanced.attachments.store("employees/1", "b.txt", b"second", "text/plain")
        s.advanced.attachments.store("employees/2", "c.txt", b"third", "text/plain")
        s.save_changes()
    for command in [
        {"Type": "AttachmentMOVE", "Id": "employees/1", "Name": "a.txt", "DestinationId": "employees/1", "DestinationName": "B.TXT"},
        {"Type": "AttachmentMOVE", "Id": "employees/1", "Name": "a.txt", "DestinationId": "employees/2", "DestinationName": "c.txt"},
    ]:
        r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": [command]})
        assert r.status_code == 409, r.text
        assert assert_error_json(r)["Type"].endswith("ConcurrencyException")
    with store.open_session() as s:
        with s.advanced.attachments.get("employees/1", "b.txt") as got:
            assert got.data == b"second"
        with s.advanced.attachments.get("employees/2", "c.txt") as got:
            assert got.data == b"third"
        assert s.advanced.attachments.exists("employees/1", "a.txt")
    # Renaming onto itself (another case) is fine; to a free name too.
    with store.open_session() as s:
        s.advanced.attachments.rename("employees/1", "a.txt", "A.txt")
        s.save_changes()
    with store.open_session() as s:
        s.advanced.attachments.rename("employees/1", "a.txt", "d.txt")
        s.save_changes()
    with store.open_session() as s:
        names = sorted(a.name for a in s.advanced.attachments.get_names(s.load("employees/1", Employee)))
        assert names == ["b.txt", "d.txt"]


def test_full_counter_values(store, server_url, db_name, http):
    """`full=true` / `ReplyWithAllNodesValues`: each counter with its per-database values (one database)."""
    from ravendb import GetCountersOperation

    names = [f"c{i}" for i in range(60)]
    with store.open_session() as s:
        s.store(Employee(name="e"), "employees/1")
        for i, name in enumerate(names):
            s.counters_for("employees/1").increment(name, i + 1)
        s.save_changes()
    # Few names go by GET, many by POST: both carry the values per database.
    for asked in (names[:3] + ["missing"], names + ["missing"]):
        counters = store.operations.send(GetCountersOperation("employees/1", asked, True)).counters
        assert len(counters) == len(asked)
        assert counters.count(None) == 1  # "missing"
        found = [d for d in counters if d is not None]
        assert sorted(d.counter_name for d in found) == sorted(asked[:-1])
        for detail in found:
            assert list(detail.counter_values.values()) == [names.index(detail.counter_name) + 1] == [detail.total_value]
    plain = http.get(f"{server_url}/databases/{db_name}/counters", params={"docId": "employees/1", "counter": "c0"}).json()
    assert plain["Counters"][0]["CounterValues"] is None


def test_lazy_query_of_a_missing_index(store):
    from ravendb.exceptions.documents.indexes import IndexDoesNotExistException

    with store.open_session() as s:
        lazy = s.query_index("NoSuchIndex", Employee).lazily()
        with pytest.raises(IndexDoesNotExistException):
            lazy.value
