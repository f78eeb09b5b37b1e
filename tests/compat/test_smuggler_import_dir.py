"""`GET /databases/{db}/admin/smuggler/import-dir?dir=` (RavenDB's server-side import of a folder): a full
dump backup and incremental ones written by our periodic backup task, with changes and deletes between
them, imported into a fresh database in order, equal to the source; plain dumps are imported too, and a
folder without dumps is a clear error."""

from __future__ import annotations

from ravendb.documents.operations.compare_exchange.operations import (
    DeleteCompareExchangeValueOperation,
    GetCompareExchangeValueOperation,
)
from ravendb.documents.smuggler.common import DatabaseSmugglerExportOptions

from corvid_support import create_database, delete_database, unique_db_name
from test_dump_backups import _batch, _counter_op, _delete, _put, _run, _state, _task
from test_smuggler import _documents, _fill


def _import_dir(http, url, db, folder, **params):
    operation_id = http.get(f"{url}/databases/{db}/operations/next-operation-id").json()["Id"]
    r = http.get(f"{url}/databases/{db}/admin/smuggler/import-dir", params={"dir": str(folder), "operationId": operation_id, **params},
                 timeout=120)
    return r, operation_id


def test_a_backup_folder_imported_with_import_dir_equals_the_source(store, server_url, db_name, http, tmp_path):
    url = server_url
    _fill(store, http, url, db_name)
    folder = tmp_path / "dumps"
    task_id = _task(http, url, db_name, folder)
    _run(http, url, db_name, task_id, full=True)
    _batch(http, url, db_name, [_put("orders/1", {"Total": 11}), _put("orders/9", {"Total": 9}), _delete("users/5")])
    _counter_op(http, url, db_name, "users/1", [{"Type": "Increment", "CounterName": "Likes", "Delta": 10}])
    _run(http, url, db_name, task_id, full=False)
    _batch(http, url, db_name, [_delete("orders/2"), _put("users/6", {"Name": "changed"}, "Users")])
    http.delete(f"{url}/databases/{db_name}/attachments?id=users/1&name=note.txt").raise_for_status()
    _counter_op(http, url, db_name, "users/1", [{"Type": "Delete", "CounterName": "Views"}])
    index = store.operations.send(GetCompareExchangeValueOperation("config/a", dict)).index
    store.operations.send(DeleteCompareExchangeValueOperation(dict, "config/a", index))
    _run(http, url, db_name, task_id, full=False)
    expected = _state(http, url, db_name)
    [chain] = list(folder.iterdir())

    target = unique_db_name("importdir")
    create_database(url, target)
    try:
        r, operation_id = _import_dir(http, url, target, chain)
        assert r.status_code == 200, r.text
        assert r.json()["Documents"]["ReadCount"] >= 57 and r.json()["Tombstones"]["ReadCount"] >= 2
        state = http.get(f"{url}/databases/{target}/operations/state?id={operation_id}").json()
        assert state["Status"] == "Completed", state
        got = _state(http, url, target)
        for part in expected:
            assert got[part] == expected[part], part
        assert "orders/2" not in got["docs"] and "users/5" not in got["docs"] and got["docs"]["users/6"]["Name"] == "changed"
    finally:
        delete_database(url, target)


def test_plain_dumps_and_errors(store, server_url, db_name, http, tmp_path):
    _fill(store, http, server_url, db_name)
    folder = tmp_path / "exports"
    folder.mkdir()
    store.smuggler.export(DatabaseSmugglerExportOptions(), str(folder / "a.ravendbdump")).wait_for_completion()
    target = unique_db_name("importdir")
    create_database(server_url, target)
    try:
        r, _ = _import_dir(http, server_url, target, folder, TransformScript="this.Seen = true;")
        assert r.status_code == 200 and r.json()["Documents"]["ReadCount"] == 57, r.text
        docs = _documents(http, server_url, target)
        assert len(docs) == 57 and all(doc["Seen"] is True for doc in docs.values())
        empty = tmp_path / "empty"
        empty.mkdir()
        r, _ = _import_dir(http, server_url, target, empty)
        assert r.status_code == 400 and "holds no" in r.json()["Message"], r.text
        r, _ = _import_dir(http, server_url, target, tmp_path / "missing")
        assert r.status_code == 400 and "cannot be read" in r.json()["Message"], r.text
        r = http.get(f"{server_url}/databases/{target}/admin/smuggler/import-dir", timeout=30)
        assert r.status_code == 400 and "dir" in r.json()["Message"]
    finally:
        delete_database(server_url, target)
