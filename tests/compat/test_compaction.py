"""Compaction (`CompactDatabaseOperation`, `POST /admin/compact`): a server-level operation the client waits
on; the data file shrinks after deletes, every remaining document is intact, and the database serves again."""

from __future__ import annotations

import os

from ravendb.documents.operations.compact import CompactDatabaseOperation
from ravendb.serverwide.misc import CompactSettings

from corvid_support import User, assert_error_json, open_store


def _data_file(srv, name):
    databases = srv.data_dir / "databases"
    [directory] = [d for d in databases.iterdir() if d.name.lower().startswith(name.lower() + "-")]
    return directory / "data.mdb"


def test_compaction_shrinks_the_data_file_and_keeps_every_document(server_factory, http):
    srv = server_factory()
    http.put(f"{srv.url}/admin/databases", json={"DatabaseName": "squash"}).raise_for_status()
    store = open_store(srv.url, "squash")
    try:
        with store.bulk_insert() as bulk:
            for i in range(20_000):
                bulk.store_as(User(name=f"user {i} " + "x" * 400, age=i % 90), f"users/{i}")
        with store.open_session() as s:
            for i in range(19_000):
                s.delete(f"users/{i}")
            s.save_changes()
        before = os.path.getsize(_data_file(srv, "squash"))
        operation = store.maintenance.server.send_async(CompactDatabaseOperation(CompactSettings("squash", documents=True)))
        operation.wait_for_completion()
        after = os.path.getsize(_data_file(srv, "squash"))
        assert after * 3 < before, (before, after)
        with store.open_session() as s:
            assert s.load("users/19999", User).name.startswith("user 19999 ")
            assert s.load("users/5", User) is None
            assert s.query(object_type=User).count() == 1_000
            s.store(User(name="after"), "users/after")
            s.save_changes()
        # The database was open again for writes; a restart finds everything.
        srv.restart()
        assert http.get(f"{srv.url}/databases/squash/docs", params={"id": "users/after"}).status_code == 200
    finally:
        store.close()


def test_compacting_a_missing_database_is_refused(server_url, http):
    r = http.post(f"{server_url}/admin/compact", json={"DatabaseName": "no-such-db", "Documents": True})
    body = assert_error_json(r)
    assert r.status_code == 503 and body["Type"].endswith("DatabaseDoesNotExistException") and "no-such-db" in body["Message"]
    r = http.post(f"{server_url}/admin/compact", json={"Documents": True})
    assert r.status_code == 400
