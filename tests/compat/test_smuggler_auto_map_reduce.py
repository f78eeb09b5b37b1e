"""Automatic map-reduce indexes in dumps: the index a `group by` query made is exported in RavenDB's
AutoMapReduce shape (`MapFields` with their aggregation, `GroupByFields`) and recreated on import, so the
same query in the new database uses it and answers the same."""

from __future__ import annotations

import gzip
import json

from ravendb.documents.smuggler.common import DatabaseSmugglerExportOptions, DatabaseSmugglerImportOptions

from corvid_support import create_database, delete_database, open_store, unique_db_name, wait_until

QUERY = "from Orders group by Company select Company, count(), sum(Total)"
INDEX = "Auto/Orders/ByCountAndTotalReducedByCompany"


def _query(http, url, db) -> dict:
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": QUERY}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _settled(http, url, db) -> dict:
    answers = []

    def fresh():
        body = _query(http, url, db)
        answers.append(body)
        return not body["IsStale"]

    wait_until(fresh)
    return answers[-1]


def _rows(body) -> list:
    return sorted((row["Company"], row["Count"], row["Total"]) for row in body["Results"])


def _dump_indexes(path) -> list:
    return json.loads(gzip.open(path).read())["Indexes"]


def test_an_auto_map_reduce_index_survives_a_round_trip(store, server_url, db_name, http, tmp_path):
    commands = [{"Id": f"orders/{i}", "Type": "PUT",
                 "Document": {"Company": f"companies/{i % 3}", "Total": i, "@metadata": {"@collection": "Orders"}}} for i in range(1, 31)]
    http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}, timeout=30).raise_for_status()
    before = _settled(http, server_url, db_name)
    assert before["IndexName"] == INDEX

    dump = tmp_path / "mr.ravendbdump"
    result = store.smuggler.export(DatabaseSmugglerExportOptions(), str(dump)).wait_for_completion()
    assert result.indexes.read_count == 1
    [item] = _dump_indexes(dump)
    assert item["Type"] == "AutoMapReduce"
    definition = item["IndexDefinition"]
    assert definition["Name"] == INDEX and definition["Collections"] == ["Orders"]
    assert sorted((f["Name"], f["Aggregation"]) for f in definition["MapFields"]) == [("Count", 1), ("Total", 2)]
    assert [(f["Name"], f["GroupByArrayBehavior"]) for f in definition["GroupByFields"]] == [("Company", "NotApplicable")]

    target = unique_db_name("mr")
    create_database(server_url, target)
    try:
        with open_store(server_url, target) as other:
            imported = other.smuggler.import_data(DatabaseSmugglerImportOptions(), str(dump)).wait_for_completion()
            assert imported.indexes.read_count == 1 and imported.indexes.errored_count == 0
        names = [i["Name"] for i in http.get(f"{server_url}/databases/{target}/indexes", timeout=30).json()["Results"]]
        assert names == [INDEX], "created by the import, before any query"
        after = _settled(http, server_url, target)
        assert after["IndexName"] == INDEX
        assert _rows(after) == _rows(before) and len(_rows(after)) == 3
    finally:
        delete_database(server_url, target)
