"""Backup retention end to end (`RetentionPolicy.MinimumBackupAgeToKeep` of a periodic task): a task run now
(`POST /databases/{db}/admin/backup/database?taskId=`) applies the policy after its run as a scheduled run
does, so the test needs no scheduler minute: with a 1-second age (backup names count whole seconds), a backup folder 3 seconds old goes when
the next one is written, the newest one always stays, and without a policy nothing is removed."""

from __future__ import annotations

import time

from corvid_support import User
from test_backups import wait_operation


def _task(http, url, db, folder, backup_type, retention) -> int:
    config = {
        "Name": "kept", "TaskId": 0, "Disabled": False, "BackupType": backup_type,
        "LocalSettings": {"Disabled": False, "FolderPath": str(folder)},
        "FullBackupFrequency": "0 0 1 1 *", "IncrementalBackupFrequency": None,
        "RetentionPolicy": retention,
    }
    r = http.post(f"{url}/databases/{db}/admin/periodic-backup", json=config)
    assert r.status_code == 200, r.text
    return r.json()["TaskId"]


def _run_now(http, url, db, task_id) -> str:
    r = http.post(f"{url}/databases/{db}/admin/backup/database", params={"taskId": task_id, "isFullBackup": "true"})
    assert r.status_code == 200, r.text
    state = wait_operation(http, f"{url}/databases/{db}/operations/state?id={r.json()['OperationId']}")
    assert state["Status"] == "Completed", state
    return http.get(f"{url}/periodic-backup/status", params={"name": db, "taskId": task_id}).json()["Status"]["FolderName"]


def _folders(folder) -> list:
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def test_old_backups_go_and_the_newest_stays(store, server_url, db_name, http, tmp_path):
    with store.open_session() as s:
        s.store(User(name="kept"), "users/1")
        s.save_changes()
    for backup_type in ("Backup", "Snapshot"):
        folder = tmp_path / backup_type
        task_id = _task(http, server_url, db_name, folder, backup_type, {"Disabled": False, "MinimumBackupAgeToKeep": "00:00:01"})
        first = _run_now(http, server_url, db_name, task_id)
        assert _folders(folder) == [first], "the newest backup stays, however old"
        time.sleep(3)
        second = _run_now(http, server_url, db_name, task_id)
        assert first != second and _folders(folder) == [second], (backup_type, _folders(folder))

    # Without a policy (or with it disabled) every folder stays.
    folder = tmp_path / "kept-all"
    task_id = _task(http, server_url, db_name, folder, "Backup", {"Disabled": True, "MinimumBackupAgeToKeep": "00:00:01"})
    first = _run_now(http, server_url, db_name, task_id)
    time.sleep(1.5)
    second = _run_now(http, server_url, db_name, task_id)
    assert _folders(folder) == sorted([first, second])
