"""Dump-format backups (issue 22, `BackupType: Backup`): a periodic task's full backup and three incremental
ones, with changes and deletes between them (documents, attachments, counters, compare-exchange values,
revisions, indexes), laid out as RavenDB lays them out, reported in the task's status and history, and
restored through `POST /admin/restore/database` into a new database equal to the source; a restore cut at
`LastFileNameToRestore` stops there; a one-time `Backup` is a full dump a RavenDB client can import."""

from __future__ import annotations

from pathlib import Path

from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.compare_exchange.operations import (
    DeleteCompareExchangeValueOperation,
    GetCompareExchangeValueOperation,
    PutCompareExchangeValueOperation,
)
from ravendb.documents.operations.indexes import PutIndexesOperation

from corvid_support import User, open_store, unique_db_name, wait_until
from test_backups import backup, restore, run_cli, wait_operation
from test_smuggler import _cmpxchg, _counters, _documents, _fill, _identities, _index_names, _revisions

FULL = ".ravendb-full-backup"
INCREMENTAL = ".ravendb-incremental-backup"


def _task(http, url: str, db: str, folder: Path) -> int:
    config = {
        "Name": "dumps", "TaskId": 0, "Disabled": False, "BackupType": "Backup",
        "LocalSettings": {"Disabled": False, "FolderPath": str(folder)},
        # Yearly: the test runs the task itself.
        "FullBackupFrequency": "0 0 1 1 *", "IncrementalBackupFrequency": "0 0 1 1 *",
    }
    r = http.post(f"{url}/databases/{db}/admin/periodic-backup", json=config)
    assert r.status_code == 200, r.text
    return r.json()["TaskId"]


def _run(http, url: str, db: str, task_id: int, full: bool) -> dict:
    r = http.post(f"{url}/databases/{db}/admin/backup/database", params={"taskId": task_id, "isFullBackup": str(full).lower()})
    assert r.status_code == 200, r.text
    state = wait_operation(http, f"{url}/databases/{db}/operations/state?id={r.json()['OperationId']}")
    assert state["Status"] == "Completed", state
    status = http.get(f"{url}/periodic-backup/status", params={"name": db, "taskId": task_id}).json()["Status"]
    assert status["Error"] is None and status["IsFull"] is full, status
    return status


def _counter_op(http, url, db, doc_id, ops):
    body = {"Documents": [{"DocumentId": doc_id, "Operations": ops}], "ReplyWithAllNodesValues": False}
    http.post(f"{url}/databases/{db}/counters", json=body, timeout=30).raise_for_status()


def _batch(http, url, db, commands):
    http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=30).raise_for_status()


def _put(doc_id: str, body: dict, collection: str = "Orders") -> dict:
    return {"Id": doc_id, "Type": "PUT", "Document": {**body, "@metadata": {"@collection": collection}}}


def _delete(doc_id: str) -> dict:
    return {"Id": doc_id, "Type": "DELETE"}


def _state(http, url: str, db: str) -> dict:
    docs = _documents(http, url, db)
    return {
        "docs": docs,
        "revisions": {d: _revisions(http, url, db, d) for d in ["orders/1", "orders/2", "orders/3", "orders/9"]},
        "counters": {d: _counters(http, url, db, d) for d in ["users/1", "users/3", "users/4"]},
        "cmpxchg": _cmpxchg(http, url, db),
        "identities": _identities(http, url, db),
        "indexes": _index_names(http, url, db),
        "attachments": {
            (d, a["Name"]): http.get(f"{url}/databases/{db}/attachments", params={"id": d, "name": a["Name"]}, timeout=60).content
            for d, doc in docs.items()
            for a in doc["@metadata"].get("@attachments", [])
        },
    }


def test_a_full_and_three_incremental_dump_backups_restore_to_the_source(store, server_url, db_name, http, tmp_path):
    url = server_url
    _fill(store, http, url, db_name)
    folder = tmp_path / "dumps"
    task_id = _task(http, url, db_name, folder)
    full = _run(http, url, db_name, task_id, full=True)

    def first():
        _batch(http, url, db_name, [_put("orders/1", {"Total": 11}), _put("orders/9", {"Total": 9}), _delete("users/5")])
        http.put(f"{url}/databases/{db_name}/attachments?id=users/4&name=new.txt&contentType=text/plain", data=b"added later").raise_for_status()
        _counter_op(http, url, db_name, "users/1", [{"Type": "Increment", "CounterName": "Likes", "Delta": 10}])
        store.operations.send(PutCompareExchangeValueOperation("config/c", {"N": 3}, 0))

    def second():
        _batch(http, url, db_name, [_delete("orders/2"), _delete("users/6"), _put("users/6", {"Name": "again"}, "Users")])
        http.delete(f"{url}/databases/{db_name}/attachments?id=users/1&name=note.txt").raise_for_status()
        _counter_op(http, url, db_name, "users/1", [{"Type": "Delete", "CounterName": "Views"}])
        _counter_op(http, url, db_name, "users/4", [{"Type": "Increment", "CounterName": "New", "Delta": 4}])
        index = store.operations.send(GetCompareExchangeValueOperation("config/a", dict)).index
        store.operations.send(DeleteCompareExchangeValueOperation(dict, "config/a", index))

    def third():
        _batch(http, url, db_name, [_put("orders/1", {"Total": 12}), _delete("orders/9")])
        _counter_op(http, url, db_name, "users/3", [{"Type": "Delete", "CounterName": "Likes"}])
        definition = IndexDefinition()
        definition.name = "Orders/ByTotal"
        definition.maps = {"from o in docs.Orders select new { o.Total }"}
        store.maintenance.send(PutIndexesOperation(definition))

    statuses = []
    for change in (first, second, third):
        change()
        statuses.append(_run(http, url, db_name, task_id, full=False))
    expected = _state(http, url, db_name)
    # After the last backup: not restored.
    _batch(http, url, db_name, [_put("orders/later", {"Total": 0})])

    # RavenDB's layout: one folder per full backup, the incrementals next to it, nothing half-written.
    [chain] = [p for p in folder.iterdir()]
    assert chain.name.endswith(f".ravendb-{db_name}-A-backup") and chain.name == full["FolderName"]
    # RavenDB's order: by name without extension (runs in one second get `-2`, `-3`), full first.
    names = sorted((p.name for p in chain.iterdir()), key=lambda n: (n.split(".")[0], not n.endswith(FULL)))
    assert [n.endswith(FULL) for n in names] == [True, False, False, False] and all(n.endswith((FULL, INCREMENTAL)) for n in names)
    assert full["LocalBackup"]["FileName"] == names[0] and [s["LocalBackup"]["FileName"] for s in statuses] == names[1:]
    last = statuses[-1]
    assert last["FolderName"] == chain.name and last["LastIncrementalBackup"] and last["LastFullBackup"] == full["LastFullBackup"]
    assert last["LastEtag"] > full["LastEtag"] and last["LastRaftIndex"]["LastEtag"] >= full["LastRaftIndex"]["LastEtag"]
    history = http.get(f"{url}/databases/{db_name}/periodic-backup/history").json()["Results"]
    assert [run["IsFull"] for run in history if run["TaskId"] == task_id] == [True, False, False, False]

    target = unique_db_name("fromdumps")
    state = restore(http, url, chain, target)
    assert state["Status"] == "Completed", state
    got = _state(http, url, target)
    for part in expected:
        assert got[part] == expected[part], part
    assert "orders/2" not in got["docs"] and "users/5" not in got["docs"] and got["docs"]["users/6"]["Name"] == "again"
    assert "config/a" not in got["cmpxchg"] and got["counters"]["users/3"] == {}
    assert "Orders/ByTotal" in got["indexes"]

    # Cut after the first incremental: the state then (orders/9 still there, no index on orders).
    cut = unique_db_name("cut")
    r = http.post(f"{url}/admin/restore/database",
                  json={"DatabaseName": cut, "BackupLocation": str(chain), "LastFileNameToRestore": names[1], "Type": "Local"})
    assert r.status_code == 200, r.text
    state = wait_operation(http, f"{url}/operations/state?id={r.json()['OperationId']}")
    assert state["Status"] == "Completed", state
    docs = _documents(http, url, cut)
    assert docs["orders/9"]["Total"] == 9 and docs["orders/1"]["Total"] == 11 and "orders/2" in docs
    assert "Orders/ByTotal" not in _index_names(http, url, cut)


def test_a_one_time_backup_is_a_full_dump_the_client_imports(store, server_url, db_name, http, tmp_path):
    _fill(store, http, server_url, db_name)
    state = backup(http, server_url, db_name, tmp_path / "once", kind="Backup")
    assert state["Status"] == "Completed", state
    result = state["Result"]
    folder = Path(result["LocalBackup"]["BackupDirectory"])
    [file] = list(folder.iterdir())
    assert file.name == result["FileName"] and file.name.endswith(FULL) and result["IsIncremental"] is False
    # The file is a .ravendbdump: the client's smuggler imports it.
    from ravendb.documents.smuggler.common import DatabaseSmugglerImportOptions

    target = unique_db_name("imported")
    http.put(f"{server_url}/admin/databases", json={"DatabaseName": target}).raise_for_status()
    with open_store(server_url, target) as other:
        other.smuggler.import_data(DatabaseSmugglerImportOptions(), str(file)).wait_for_completion()
    assert _documents(http, server_url, target) == _documents(http, server_url, db_name)

    # The command line takes and restores one too.
    cli = tmp_path / "cli"
    r = run_cli("backup", "--url", server_url, "--database", db_name, "--folder", str(cli), "--type", "Backup")
    assert r.returncode == 0, r.stderr
    [folder] = list(cli.iterdir())
    restored = unique_db_name("clirestored")
    r = run_cli("restore", "--url", server_url, "--folder", str(folder), "--database", restored)
    assert r.returncode == 0 and "(1 files)" in r.stdout, (r.stdout, r.stderr)
    assert _documents(http, server_url, restored) == _documents(http, server_url, db_name)


def test_kill_during_a_dump_backup_leaves_no_file_that_looks_complete(server_factory, http, tmp_path):
    srv = server_factory()
    http.put(f"{srv.url}/admin/databases", json={"DatabaseName": "big"}).raise_for_status()
    with open_store(srv.url, "big") as big:
        with big.bulk_insert() as bulk:
            for i in range(60_000):
                bulk.store_as(User(name=f"user {i} " + "x" * 1000, age=i % 90), f"users/{i}")
    destination = tmp_path / "interrupted"
    r = http.post(f"{srv.url}/databases/big/admin/backup", json={"BackupType": "Backup", "LocalSettings": {"FolderPath": str(destination)}})
    assert r.status_code == 200
    # Killed as soon as the backup's file exists: mid-export.
    wait_until(lambda: destination.exists() and any(p.is_dir() and any(p.iterdir()) for p in destination.iterdir()), timeout=30, interval=0.001)
    srv.kill()
    [folder] = list(destination.iterdir())
    files = [p.name for p in folder.iterdir()]
    assert files and all(n.endswith(".in-progress") for n in files), f"the backup finished before the kill; make it larger: {files}"
    srv.check_storage()
    srv.start()
    state = restore(http, srv.url, folder, "fromkilled")
    assert state["Status"] == "Faulted" and "interrupted" in state["Result"]["Message"], state
    # The next backup works and restores.
    state = backup(http, srv.url, "big", destination, kind="Backup")
    assert state["Status"] == "Completed", state
    new_folder = Path(state["Result"]["LocalBackup"]["BackupDirectory"])
    assert new_folder != folder and [p.name for p in new_folder.iterdir()] == [state["Result"]["FileName"]]
    state = restore(http, srv.url, new_folder, "fromnext")
    assert state["Status"] == "Completed", state
    with open_store(srv.url, "fromnext") as restored, restored.open_session() as s:
        assert s.load("users/59999", User).name.startswith("user 59999 ")
