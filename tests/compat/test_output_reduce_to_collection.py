"""OutputReduceToCollection: a map-reduce index (JavaScript or C# LINQ) writes its reduce results as artificial
documents of another collection, kept equal to a recomputation from the source documents through inserts,
updates and deletes, and removed with the index."""

from __future__ import annotations

import random

import pytest
from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractIndexCreationTask, AbstractJavaScriptIndexCreationTask

from corvid_support import assert_error_json, wait_until

JS_MAP = "map('Sales', s => ({ product: s.product, total: s.amount, count: 1 }))"
JS_REDUCE = (
    "groupBy(x => x.product).aggregate(g => ({ product: g.key, "
    "total: g.values.reduce((t, v) => t + v.total, 0), count: g.values.reduce((t, v) => t + v.count, 0) }))"
)
LINQ_MAP = "from s in docs.Sales select new { product = s.product, total = s.amount, count = 1 }"
LINQ_REDUCE = "from r in results group r by r.product into g select new { product = g.Key, total = g.Sum(x => x.total), count = g.Sum(x => x.count) }"


def put_index(http, url, db, name, maps, reduce, output, **extra):
    definition = {"Name": name, "Maps": [maps], "Reduce": reduce, "OutputReduceToCollection": output, **extra}
    return http.put(f"{url}/databases/{db}/admin/indexes", json={"Indexes": [definition]})


def bulk(http, url, db, commands):
    if commands:
        r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands})
        assert r.status_code == 201, r.text


def sale(doc_id, product, amount):
    return {"Type": "PUT", "Id": doc_id, "ChangeVector": None,
            "Document": {"product": product, "amount": amount, "@metadata": {"@collection": "Sales"}}}


def expected_from(sales: dict) -> dict:
    out = {}
    for product, amount in sales.values():
        e = out.setdefault(product, [0, 0])
        e[0] += amount
        e[1] += 1
    return out


def output_documents(http, url, db, collection):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": f"from '{collection}'"})
    assert r.status_code == 200, r.text
    return r.json()["Results"]



def wait_for_indexing(http, url, db):
    def done():
        indexes = http.get(f"{url}/databases/{db}/stats").json()["Indexes"]
        return all(not i["IsStale"] and not i["Name"].startswith("ReplacementOf/") for i in indexes)

    assert wait_until(done)


def outputs_as_totals(docs):
    return {d["product"]: [d["total"], d["count"]] for d in docs}


@pytest.mark.parametrize("language", ["javascript", "linq"])
def test_output_documents_follow_inserts_updates_and_deletes(server_url, db_name, http, language):
    maps, reduce = (JS_MAP, JS_REDUCE) if language == "javascript" else (LINQ_MAP, LINQ_REDUCE)
    r = put_index(http, server_url, db_name, "Sales/ByProduct", maps, reduce, "ProductTotals")
    assert r.status_code == 201, r.text
    rng = random.Random(11)
    sales = {}
    for round_ in range(4):
        commands = []
        for _ in range(30):
            doc_id = f"sales/{rng.randrange(50)}"
            if doc_id in sales and rng.random() < 0.3:
                commands.append({"Type": "DELETE", "Id": doc_id, "ChangeVector": None})
                del sales[doc_id]
            else:
                sales[doc_id] = (rng.choice(["apple", "pear", "plum", "fig"]), rng.randrange(1, 100))
                commands.append(sale(doc_id, *sales[doc_id]))
        bulk(http, server_url, db_name, commands)
        wait_for_indexing(http, server_url, db_name)
        expected = expected_from(sales)
        docs = wait_until(lambda: (d := output_documents(http, server_url, db_name, "ProductTotals"))
                          and outputs_as_totals(d) == expected and d) or output_documents(http, server_url, db_name, "ProductTotals")
        assert outputs_as_totals(docs) == expected, f"round {round_}"
        assert len(docs) == len(expected)
        for d in docs:
            metadata = d["@metadata"]
            assert metadata["@collection"] == "ProductTotals"
            assert metadata["@flags"] == "Artificial, FromIndex"
            prefix, output_index, key_hash = metadata["@id"].split("/")
            assert prefix == "ProductTotals" and output_index.isdigit() and key_hash.isdigit()

    # Everything sold out: the output documents go away.
    bulk(http, server_url, db_name, [{"Type": "DELETE", "Id": i, "ChangeVector": None} for i in sales])
    wait_for_indexing(http, server_url, db_name)
    assert wait_until(lambda: output_documents(http, server_url, db_name, "ProductTotals") == [])


def test_output_documents_are_loadable_and_queryable(store, server_url, db_name, http):
    bulk(http, server_url, db_name, [sale(f"sales/{i}", ["a", "b"][i % 2], i) for i in range(10)])
    put_index(http, server_url, db_name, "Sales/ByProduct", JS_MAP, JS_REDUCE, "ProductTotals")
    wait_for_indexing(http, server_url, db_name)
    wait_until(lambda: len(output_documents(http, server_url, db_name, "ProductTotals")) == 2)
    r = http.post(f"{server_url}/databases/{db_name}/queries",
                  json={"Query": "from 'ProductTotals' where product = 'b'", "WaitForNonStaleResults": True})
    (b,) = r.json()["Results"]
    assert (b["total"], b["count"]) == (sum(i for i in range(10) if i % 2), 5)
    with store.open_session() as s:
        loaded = s.load(b["@metadata"]["@id"], dict)
        assert loaded["total"] == b["total"]
    stats = http.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": "Sales/ByProduct"}).json()["Results"][0]
    assert stats["ReduceOutputCollection"] == "ProductTotals"
    definition = http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "Sales/ByProduct"}).json()["Results"][0]
    assert definition["OutputReduceToCollection"] == "ProductTotals" and isinstance(definition["ReduceOutputIndex"], int)


def test_deleting_or_resetting_the_index_removes_its_output(server_url, db_name, http):
    bulk(http, server_url, db_name, [sale(f"sales/{i}", f"p{i % 3}", i) for i in range(9)])
    put_index(http, server_url, db_name, "Sales/ByProduct", JS_MAP, JS_REDUCE, "ProductTotals")
    wait_for_indexing(http, server_url, db_name)
    assert wait_until(lambda: len(output_documents(http, server_url, db_name, "ProductTotals")) == 3)
    r = http.request("RESET", f"{server_url}/databases/{db_name}/indexes", params={"name": "Sales/ByProduct"})
    assert r.status_code == 204
    wait_for_indexing(http, server_url, db_name)
    assert wait_until(lambda: len(output_documents(http, server_url, db_name, "ProductTotals")) == 3)
    assert http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": "Sales/ByProduct"}).status_code == 204
    assert output_documents(http, server_url, db_name, "ProductTotals") == []


def test_a_changed_definition_swaps_its_output_documents(server_url, db_name, http):
    bulk(http, server_url, db_name, [sale(f"sales/{i}", f"p{i % 3}", i) for i in range(9)])
    put_index(http, server_url, db_name, "Sales/ByProduct", JS_MAP, JS_REDUCE, "ProductTotals")
    wait_for_indexing(http, server_url, db_name)
    before = wait_until(lambda: (d := output_documents(http, server_url, db_name, "ProductTotals")) and len(d) == 3 and d)
    doubled = JS_MAP.replace("total: s.amount", "total: s.amount * 2")
    assert put_index(http, server_url, db_name, "Sales/ByProduct", doubled, JS_REDUCE, "ProductTotals").status_code == 201
    wait_for_indexing(http, server_url, db_name)
    expected = {f"p{k}": [2 * sum(i for i in range(9) if i % 3 == k), 3] for k in range(3)}
    after = wait_until(lambda: (d := output_documents(http, server_url, db_name, "ProductTotals"))
                       and outputs_as_totals(d) == expected and len(d) == 3 and d)
    assert after, output_documents(http, server_url, db_name, "ProductTotals")
    old_ids = {d["@metadata"]["@id"] for d in before}
    assert not old_ids & {d["@metadata"]["@id"] for d in after}, "the replaced index's documents are gone"


@pytest.mark.parametrize(
    "output,expect",
    [("Sales", "which it indexes"), ("sales", "which it indexes")],
)
def test_outputting_to_the_source_collection_is_refused(server_url, db_name, http, output, expect):
    body = assert_error_json(put_index(http, server_url, db_name, "Loop", JS_MAP, JS_REDUCE, output))
    assert expect in body["Message"], body
    assert http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "Loop"}).status_code == 404


def test_a_collection_with_documents_or_another_index_output_is_refused(server_url, db_name, http):
    bulk(http, server_url, db_name, [{"Type": "PUT", "Id": "totals/1", "ChangeVector": None,
                                      "Document": {"x": 1, "@metadata": {"@collection": "Totals"}}}])
    body = assert_error_json(put_index(http, server_url, db_name, "A", JS_MAP, JS_REDUCE, "Totals"))
    assert "already has documents" in body["Message"], body
    assert put_index(http, server_url, db_name, "A", JS_MAP, JS_REDUCE, "Other").status_code == 201
    body = assert_error_json(put_index(http, server_url, db_name, "B", JS_MAP, JS_REDUCE, "Other"))
    assert "already outputs" in body["Message"], body


class SalesByProduct(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = LINQ_MAP
        self.reduce = LINQ_REDUCE
        self._output_reduce_to_collection = "ClientTotals"


class SalesByProductJs(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {JS_MAP}
        self.reduce = JS_REDUCE
        self.output_reduce_to_collection = "ClientTotalsJs"


@pytest.mark.parametrize("task", [SalesByProduct, SalesByProductJs])
def test_the_official_client_defines_output_collections(store, server_url, db_name, http, task):
    bulk(http, server_url, db_name, [sale(f"sales/{i}", ["x", "y"][i % 2], 1) for i in range(6)])
    index = task()
    index.execute(store)
    collection = "ClientTotals" if task is SalesByProduct else "ClientTotalsJs"
    wait_for_indexing(http, server_url, db_name)
    docs = wait_until(lambda: (d := output_documents(http, server_url, db_name, collection)) and len(d) == 2 and d)
    assert docs and outputs_as_totals(docs) == {"x": [3, 3], "y": [3, 3]}


DAILY_MAP = "map('Orders', o => ({ date: o.date, product: o.product, total: o.amount }))"
DAILY_REDUCE = (
    "groupBy(x => ({ date: x.date, product: x.product })).aggregate(g => ({ date: g.key.date, product: g.key.product, "
    "total: g.values.reduce((t, v) => t + v.total, 0) }))"
)


def test_reference_documents_list_the_outputs_of_their_pattern(server_url, db_name, http):
    r = put_index(http, server_url, db_name, "Orders/Daily", DAILY_MAP, DAILY_REDUCE, "DailyTotals",
                  PatternForOutputReduceToCollectionReferences="daily/{date:yyyy-MM-dd}")
    assert r.status_code == 201, r.text
    rng = random.Random(5)
    orders = {}
    for round_ in range(3):
        commands = []
        for _ in range(25):
            doc_id = f"orders/{rng.randrange(40)}"
            if doc_id in orders and rng.random() < 0.3:
                del orders[doc_id]
                commands.append({"Type": "DELETE", "Id": doc_id, "ChangeVector": None})
            else:
                orders[doc_id] = (f"2024-01-0{rng.randrange(1, 4)}T00:00:00.0000000", rng.choice("ab"), rng.randrange(50))
                date, product, amount = orders[doc_id]
                commands.append({"Type": "PUT", "Id": doc_id, "ChangeVector": None, "Document": {
                    "date": date, "product": product, "amount": amount, "@metadata": {"@collection": "Orders"}}})
        bulk(http, server_url, db_name, commands)
        wait_for_indexing(http, server_url, db_name)
        expected_totals = {}
        for date, product, amount in orders.values():
            expected_totals[(date, product)] = expected_totals.get((date, product), 0) + amount

        def settled():
            outputs = output_documents(http, server_url, db_name, "DailyTotals")
            got = {(d["date"], d["product"]): d["total"] for d in outputs}
            return outputs if got == expected_totals else None

        outputs = wait_until(settled)
        assert outputs, f"round {round_}"
        expected_refs = {}
        for d in outputs:
            expected_refs.setdefault(f"daily/{d['date'][:10]}", set()).add(d["@metadata"]["@id"])
        refs = output_documents(http, server_url, db_name, "DailyTotals/References")
        got_refs = {d["@metadata"]["@id"]: set(d["ReduceOutputs"]) for d in refs}
        assert got_refs == expected_refs, f"round {round_}"
        assert all(d["@metadata"]["@flags"] == "Artificial, FromIndex" for d in refs)

    assert http.delete(f"{server_url}/databases/{db_name}/indexes", params={"name": "Orders/Daily"}).status_code == 204
    assert output_documents(http, server_url, db_name, "DailyTotals/References") == []
