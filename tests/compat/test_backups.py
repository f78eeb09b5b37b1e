"""Backups and restore (issue 22): a snapshot backup taken while writes run restores into a database equal to
the source at the backup point; periodic backup tasks round-trip through the record and run on their cron
schedule; a kill -9 during a backup leaves a folder that is refused as incomplete and a sound database;
RavenDB snapshots are refused with messages that say what to do; the
`corvid backup` / `corvid restore` command lines report progress and trustworthy exit codes."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.compare_exchange.operations import PutCompareExchangeValueOperation
from ravendb.documents.operations.indexes import PutIndexesOperation
from ravendb.documents.operations.revisions import ConfigureRevisionsOperation, RevisionsCollectionConfiguration, RevisionsConfiguration

from corvid_support import User, corvid_bin, open_store, unique_db_name, wait_until

MANIFEST = "corvid-snapshot.json"


def wait_operation(http, url: str, timeout: float = 120.0) -> dict:
    """Polls an operation's state URL until it ends; returns the final state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = http.get(url).json()
        if state["Status"] != "InProgress":
            return state
        time.sleep(0.05)
    raise AssertionError(f"operation at {url} still running after {timeout}s")


def backup(http, server_url: str, db: str, folder: Path, kind: str = "Snapshot") -> dict:
    r = http.post(
        f"{server_url}/databases/{db}/admin/backup",
        json={"BackupType": kind, "LocalSettings": {"Disabled": False, "FolderPath": str(folder)}},
    )
    assert r.status_code == 200, r.text
    return wait_operation(http, f"{server_url}/databases/{db}/operations/state?id={r.json()['OperationId']}")


def restore(http, server_url: str, location: Path, name: str) -> dict:
    r = http.post(f"{server_url}/admin/restore/database", json={"DatabaseName": name, "BackupLocation": str(location), "Type": "Local"})
    assert r.status_code == 200, r.text
    return wait_operation(http, f"{server_url}/operations/state?id={r.json()['OperationId']}")


def all_docs(http, server_url: str, db: str) -> dict:
    results = http.get(f"{server_url}/databases/{db}/docs", params={"start": 0, "pageSize": 1_000_000}).json()["Results"]
    return {doc["@metadata"]["@id"]: doc for doc in results}


def fill(store, http, server_url: str, db: str) -> None:
    """Documents, attachments, counters, revisions, time series, compare-exchange values and an index."""
    store.maintenance.send(ConfigureRevisionsOperation(RevisionsConfiguration(RevisionsCollectionConfiguration(minimum_revisions_to_keep=10))))
    with store.bulk_insert() as bulk:
        for i in range(500):
            bulk.store_as(User(name=f"user {i}", age=i % 70), f"users/{i}")
    for version in range(3):
        with store.open_session() as s:
            s.store(User(name=f"versioned {version}", age=version), "users/versioned")
            s.save_changes()
    with store.open_session() as s:
        s.advanced.attachments.store("users/1", "photo.png", b"\x89PNG" + bytes(range(256)) * 40, "image/png")
        s.advanced.attachments.store("users/2", "notes.txt", b"hello backups", "text/plain")
        s.counters_for("users/1").increment("likes", 42)
        s.counters_for("users/2").increment("views", 7)
        ts = s.time_series_for("users/1", "HeartRate")
        for minute in range(30):
            ts.append_single(__import__("datetime").datetime(2026, 11, 1, 12, minute), 60 + minute, "watch")
        s.save_changes()
    store.operations.send(PutCompareExchangeValueOperation("names/ayende", "users/1", 0))
    store.maintenance.send(PutIndexesOperation(IndexDefinition(name="Users/ByAge", maps={"from u in docs.Users select new { u.age }"})))


def test_a_snapshot_taken_while_writes_run_restores_an_equal_database(store, server_url, db_name, http, tmp_path):
    fill(store, http, server_url, db_name)
    stop = threading.Event()
    written = []

    def writer():
        with open_store(server_url, db_name) as live:
            i = 0
            while not stop.is_set():
                with live.open_session() as s:
                    s.store(User(name=f"live {i}"), f"live/{i}")
                    s.save_changes()
                written.append(i)
                i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_until(lambda: len(written) >= 20)
        state = backup(http, server_url, db_name, tmp_path / "backups")
    finally:
        stop.set()
        thread.join()
    assert state["Status"] == "Completed", state
    folder = Path(state["Result"]["LocalBackup"]["BackupDirectory"])
    assert folder.parent == tmp_path / "backups" and (folder / MANIFEST).is_file()
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["Format"] == "corvid-snapshot" and manifest["DatabaseName"] == db_name
    assert {f["Path"] for f in manifest["Files"]} >= {"data.mdb"}

    copy = unique_db_name("restored")
    state = restore(http, server_url, folder, copy)
    assert state["Status"] == "Completed", state
    try:
        source, restored = all_docs(http, server_url, db_name), all_docs(http, server_url, copy)
        # The live writes the snapshot holds are a prefix of those acknowledged: nothing torn, nothing skipped.
        live = sorted(int(k.split("/")[1]) for k in restored if k.startswith("live/"))
        assert live == list(range(len(live))) and len(live) <= len(written)
        assert len(live) >= 20, "writes acknowledged before the backup started are in it"
        # Every other document is byte for byte the source's (metadata and change vectors included).
        expected = {k: v for k, v in source.items() if not k.startswith("live/")}
        assert {k: v for k, v in restored.items() if not k.startswith("live/")} == expected
        for doc_id in [f"live/{i}" for i in live]:
            assert restored[doc_id] == source[doc_id]

        def get(db, path, **params):
            r = http.get(f"{server_url}/databases/{db}/{path}", params=params)
            assert r.status_code == 200, (path, r.status_code, r.text[:200])
            return r

        for doc_id, name in [("users/1", "photo.png"), ("users/2", "notes.txt")]:
            assert get(copy, "attachments", id=doc_id, name=name).content == get(db_name, "attachments", id=doc_id, name=name).content
        for doc_id, counter in [("users/1", "likes"), ("users/2", "views")]:
            assert get(copy, "counters", docId=doc_id, counter=counter).json() == get(db_name, "counters", docId=doc_id, counter=counter).json()
        assert get(copy, "revisions", id="users/versioned").json() == get(db_name, "revisions", id="users/versioned").json()
        assert len(get(copy, "revisions", id="users/versioned").json()["Results"]) == 3
        assert get(copy, "timeseries", docId="users/1", name="HeartRate").json() == get(db_name, "timeseries", docId="users/1", name="HeartRate").json()
        assert get(copy, "cmpxchg", key="names/ayende").json() == get(db_name, "cmpxchg", key="names/ayende").json()
        # The index definition came along; its data is rebuilt from the restored documents.
        with open_store(server_url, copy) as restored_store, store.open_session() as original:
            with restored_store.open_session() as s:
                ages = s.query_index("Users/ByAge", User).wait_for_non_stale_results().where_equals("age", 7).count()
            assert ages == original.query_index("Users/ByAge", User).wait_for_non_stale_results().where_equals("age", 7).count() > 0
            # The copy is a database of its own: it takes writes.
            with restored_store.open_session() as s:
                s.store(User(name="after restore"), "users/after")
                s.save_changes()
        assert "users/after" not in all_docs(http, server_url, db_name)
    finally:
        http.delete(f"{server_url}/admin/databases", json={"DatabaseNames": [copy], "HardDelete": True})


def test_periodic_backup_tasks_round_trip_and_run_on_schedule(store, server_url, db_name, http, tmp_path):
    with store.open_session() as s:
        s.store(User(name="scheduled"), "users/1")
        s.save_changes()
    folder = tmp_path / "periodic"
    config = {
        "Name": None, "TaskId": 0, "Disabled": False, "MentorNode": None, "PinToMentorNode": False,
        "BackupType": "Snapshot", "SnapshotSettings": None, "BackupEncryptionSettings": None,
        "LocalSettings": {"Disabled": False, "GetBackupConfigurationScript": None, "FolderPath": str(folder)},
        "S3Settings": None, "GlacierSettings": None, "AzureSettings": None, "FtpSettings": None, "GoogleCloudSettings": None,
        "RetentionPolicy": {"Disabled": False, "MinimumBackupAgeToKeep": "1.00:00:00"},
        "FullBackupFrequency": "* * * * *", "IncrementalBackupFrequency": None,
    }
    r = http.post(f"{server_url}/databases/{db_name}/admin/periodic-backup", json=config)
    assert r.status_code == 200, r.text
    task_id = r.json()["TaskId"]
    assert task_id > 0
    record = http.get(f"{server_url}/admin/databases", params={"name": db_name}).json()
    [stored] = record["PeriodicBackups"]
    assert stored["TaskId"] == task_id and stored["FullBackupFrequency"] == "* * * * *" and stored["Name"] == f"Backup #{task_id}"
    assert http.get(f"{server_url}/periodic-backup", params={"name": db_name, "taskId": task_id}).json() == stored
    assert http.get(f"{server_url}/periodic-backup/status", params={"name": db_name, "taskId": task_id}).json() == {"Status": None}
    # The scheduler reports the task and its next run.
    timers = wait_until(lambda: [t for t in http.get(f"{server_url}/admin/debug/periodic-backup/timers").json()["Timers"] if t["DatabaseName"] == db_name])
    assert timers[0]["TaskId"] == task_id and timers[0]["NextBackup"]["DateTime"] is not None and timers[0]["Problem"] is None

    # Updating by TaskId replaces the task rather than adding one.
    r = http.post(f"{server_url}/databases/{db_name}/admin/periodic-backup", json={**stored, "Name": "nightly"})
    assert r.status_code == 200 and r.json()["TaskId"] == task_id
    [renamed] = http.get(f"{server_url}/admin/databases", params={"name": db_name}).json()["PeriodicBackups"]
    assert renamed["Name"] == "nightly"

    # A per-minute schedule: the first run comes within a minute (and a little).
    status = wait_until(
        lambda: http.get(f"{server_url}/periodic-backup/status", params={"name": db_name, "taskId": task_id}).json()["Status"],
        timeout=90,
        interval=1,
    )
    assert status["Error"] is None, status
    assert status["TaskId"] == task_id and status["BackupType"] == "Snapshot" and status["LastFullBackup"]
    [made] = [p for p in folder.iterdir() if p.is_dir()]
    assert made.name == status["FolderName"] and (made / MANIFEST).is_file()
    history = http.get(f"{server_url}/databases/{db_name}/periodic-backup/history").json()["Results"]
    assert history[-1]["FolderName"] == made.name
    runs = [t for t in http.get(f"{server_url}/admin/debug/periodic-backup/timers").json()["Timers"] if t["DatabaseName"] == db_name]
    assert runs[0]["Runs"] >= 1 and runs[0]["Failures"] == 0


def test_bad_configurations_are_refused(server_url, db_name, http, tmp_path):
    url = f"{server_url}/databases/{db_name}/admin/periodic-backup"
    base = {"BackupType": "Snapshot", "LocalSettings": {"Disabled": False, "FolderPath": str(tmp_path)}}
    r = http.post(url, json={**base, "FullBackupFrequency": "61 * * * *"})
    assert r.status_code >= 400 and "outside 0-59" in r.json()["Message"]
    r = http.post(url, json={"BackupType": "Snapshot", "FullBackupFrequency": "0 2 * * *"})
    assert r.status_code >= 400 and "LocalSettings.FolderPath" in r.json()["Message"]
    r = http.post(url, json={**base, "FullBackupFrequency": "0 2 * * *", "S3Settings": {"Disabled": False, "BucketName": "b"}})
    assert r.status_code == 501 and "S3Settings" in r.json()["Message"]


def test_ravendb_snapshots_and_unknown_folders_are_refused_with_what_to_do(server_url, http, tmp_path):
    ravendb = tmp_path / "from-ravendb"
    ravendb.mkdir()
    (ravendb / "2026-11-26-10-00.ravendb-snapshot").write_bytes(b"PK\x03\x04 not ours")
    state = restore(http, server_url, ravendb, unique_db_name("nope"))
    assert state["Status"] == "Faulted"
    assert "RavenDB snapshot" in state["Result"]["Message"] and "export" in state["Result"]["Message"]
    empty = tmp_path / "empty"
    empty.mkdir()
    state = restore(http, server_url, empty, unique_db_name("nope"))
    assert state["Status"] == "Faulted" and "no Corvid snapshot" in state["Result"]["Message"]
    names = http.get(f"{server_url}/databases", params={"namesOnly": "true"}).json()["Databases"]
    assert not [n for n in names if n.startswith("nope")], "a refused restore registers nothing"


def test_a_damaged_backup_is_refused(store, server_url, db_name, http, tmp_path):
    with store.open_session() as s:
        s.store(User(name="x"), "users/1")
        s.save_changes()
    state = backup(http, server_url, db_name, tmp_path)
    folder = Path(state["Result"]["LocalBackup"]["BackupDirectory"])
    data = folder / "data.mdb"
    content = bytearray(data.read_bytes())
    content[len(content) // 2] ^= 0xFF
    data.write_bytes(bytes(content))
    state = restore(http, server_url, folder, unique_db_name("damaged"))
    assert state["Status"] == "Faulted" and "damaged" in state["Result"]["Message"] and "data.mdb" in state["Result"]["Message"]


def test_kill_during_a_backup_leaves_an_incomplete_folder_and_a_sound_database(server_factory, http, tmp_path):
    srv = server_factory()
    http.put(f"{srv.url}/admin/databases", json={"DatabaseName": "big"}).raise_for_status()
    with open_store(srv.url, "big") as big:
        with big.bulk_insert() as bulk:
            for i in range(60_000):
                bulk.store_as(User(name=f"user {i} " + "x" * 1000, age=i % 90), f"users/{i}")
    destination = tmp_path / "interrupted"
    r = http.post(f"{srv.url}/databases/big/admin/backup", json={"BackupType": "Snapshot", "LocalSettings": {"FolderPath": str(destination)}})
    assert r.status_code == 200
    # Killed as soon as the backup's folder exists: mid-copy.
    wait_until(lambda: destination.exists() and any(destination.iterdir()), timeout=30, interval=0.001)
    srv.kill()
    [folder] = list(destination.iterdir())
    assert not (folder / MANIFEST).exists(), "the backup finished before the kill; make the database larger"
    srv.check_storage()
    srv.start()
    with open_store(srv.url, "big") as big, big.open_session() as s:
        assert s.load("users/59999", User).name.startswith("user 59999 ")
    for location in (folder, destination):
        state = restore(http, srv.url, location, "fromkilled")
        assert state["Status"] == "Faulted" and "incomplete" in state["Result"]["Message"], state
    assert http.get(f"{srv.url}/databases", params={"namesOnly": "true"}).json()["Databases"] == ["big"]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(corvid_bin()), *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_command_line_backs_up_and_restores_with_exit_codes_scripts_can_trust(store, server_url, db_name, http, tmp_path):
    with store.open_session() as s:
        for i in range(50):
            s.store(User(name=f"cli {i}"), f"users/{i}")
        s.save_changes()
    done = run_cli("backup", "--url", server_url, "--database", db_name, "--folder", str(tmp_path / "cli"))
    assert done.returncode == 0, done.stderr
    assert "backup: started" in done.stdout and "backup: done: " in done.stdout
    [folder] = list((tmp_path / "cli").iterdir())
    assert str(folder) in done.stdout

    copy = unique_db_name("clicopy")
    done = run_cli("restore", "--url", server_url, "--folder", str(tmp_path / "cli"), "--database", copy)
    try:
        assert done.returncode == 0, done.stderr
        assert f"restore: done: database {copy}" in done.stdout
        assert all_docs(http, server_url, copy) == all_docs(http, server_url, db_name)
        # A name in use: the server refuses, exit status 1 with its message.
        again = run_cli("restore", "--url", server_url, "--folder", str(folder), "--database", copy)
        assert again.returncode == 1 and "already exists" in again.stderr
    finally:
        http.delete(f"{server_url}/admin/databases", json={"DatabaseNames": [copy], "HardDelete": True})

    missing = run_cli("backup", "--url", server_url, "--database", "no_such_db", "--folder", str(tmp_path / "x"))
    assert missing.returncode == 1 and "no_such_db" in missing.stderr
    failed = run_cli("restore", "--url", server_url, "--folder", str(tmp_path / "nothing"), "--database", unique_db_name("x"))
    assert failed.returncode == 1 and "restore failed" in failed.stderr
    usage = run_cli("backup", "--url", server_url)
    assert usage.returncode == 2 and "--database is required" in usage.stderr
    unreachable = run_cli("backup", "--url", "http://127.0.0.1:9", "--database", db_name, "--folder", str(tmp_path))
    assert unreachable.returncode == 3 and "cannot reach" in unreachable.stderr
