"""Databases: isolation, missing database errors, create/delete/list, statistics."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from ravendb.exceptions.exceptions import DatabaseDoesNotExistException
from ravendb.exceptions.raven_exceptions import ConcurrencyException
from ravendb.serverwide.database_record import DatabaseRecord
from ravendb.serverwide.operations.common import (
    CreateDatabaseOperation,
    DeleteDatabaseOperation,
    GetDatabaseNamesOperation,
)

from corvid_support import User, create_database, delete_database, open_store, stats, unique_db_name


def _names(url: str) -> list[str]:
    with open_store(url) as admin:
        return admin.maintenance.server.send(GetDatabaseNamesOperation(0, 10_000))


def test_databases_are_isolated(server_url):
    """The same id in two databases holds different content; deleting in one leaves the other."""
    a, b = unique_db_name("iso_a"), unique_db_name("iso_b")
    create_database(server_url, a)
    create_database(server_url, b)
    try:
        with open_store(server_url, a) as sa, open_store(server_url, b) as sb:
            for st, name in ((sa, "in A"), (sb, "in B")):
                with st.open_session() as s:
                    s.store(User(name=name), "users/same")
                    s.store(User(name=name + " only"), f"users/only-{st.database}")
                    s.save_changes()
            with sa.open_session() as s:
                assert s.load("users/same", User).name == "in A"
                assert s.load(f"users/only-{b}", User) is None
            with sb.open_session() as s:
                assert s.load("users/same", User).name == "in B"
                s.delete("users/same")
                s.save_changes()
            with sa.open_session() as s:
                assert s.load("users/same", User).name == "in A"
            assert stats(sa).count_of_documents == 2
            assert stats(sb).count_of_documents == 1
    finally:
        delete_database(server_url, a)
        delete_database(server_url, b)


def test_unknown_database_raises(server_url, http):
    """Any call on a database that does not exist -> DatabaseDoesNotExistException (503 + Database-Missing)."""
    missing = unique_db_name("missing")
    with open_store(server_url, missing) as st:
        with pytest.raises(DatabaseDoesNotExistException):
            with st.open_session() as s:
                s.load("users/1", User)
        with pytest.raises(DatabaseDoesNotExistException):
            with st.open_session() as s:
                s.store(User(name="x"), "users/1")
                s.save_changes()
        with pytest.raises(DatabaseDoesNotExistException):
            stats(st)

    r = http.get(f"{server_url}/databases/{missing}/docs?id=users/1")
    assert r.status_code == 503
    assert unquote(r.headers.get("Database-Missing", "")).lower() == missing.lower()
    assert r.json()["Message"]


def test_create_existing_database_conflicts(server_url, db_name):
    """Creating a database that already exists -> 409 ConcurrencyException."""
    with open_store(server_url) as admin:
        with pytest.raises(ConcurrencyException):
            admin.maintenance.server.send(CreateDatabaseOperation(DatabaseRecord(db_name)))
        with pytest.raises(ConcurrencyException):  # names are case-insensitive
            admin.maintenance.server.send(CreateDatabaseOperation(DatabaseRecord(db_name.upper())))


def test_database_names_case_insensitive(server_url, store):
    """A database reached with a different casing of its name is the same database."""
    with store.open_session() as s:
        s.store(User(name="cased"), "users/c")
        s.save_changes()
    with open_store(server_url, store.database.upper()) as other:
        with other.open_session() as s:
            assert s.load("users/c", User).name == "cased"


def test_database_list(server_url):
    """GetDatabaseNamesOperation lists created databases and forgets deleted ones."""
    created = [unique_db_name("list") for _ in range(3)]
    for name in created:
        create_database(server_url, name)
    try:
        names = _names(server_url)
        assert all(n in names for n in created), (created, names)
        delete_database(server_url, created[1])
        names = _names(server_url)
        assert created[0] in names and created[2] in names
        assert created[1] not in names
    finally:
        for name in (created[0], created[2]):
            delete_database(server_url, name)
    names = _names(server_url)
    assert not any(n in names for n in created)


def test_delete_unknown_database(server_url):
    """Deleting a database that does not exist raises DatabaseDoesNotExistException or succeeds quietly."""
    with open_store(server_url) as admin:
        try:
            admin.maintenance.server.send(DeleteDatabaseOperation(unique_db_name("never"), hard_delete=True))
        except DatabaseDoesNotExistException:
            pass


def test_statistics_count_and_etag(store):
    """CountOfDocuments follows stores and deletes; LastDocEtag grows with every put, LastDatabaseEtag with deletes."""
    s0 = stats(store)
    assert s0.count_of_documents == 0

    ids = [f"docs/{i}" for i in range(7)]
    with store.open_session() as s:
        for i in ids:
            s.store(User(name=i), i)
        s.save_changes()
    s1 = stats(store)
    assert s1.count_of_documents == len(ids)
    assert s1.last_doc_etag > (s0.last_doc_etag or 0)

    with store.open_session() as s:
        s.load(ids[0], User).name = "changed"
        s.save_changes()
    s2 = stats(store)
    assert s2.count_of_documents == len(ids)
    assert s2.last_doc_etag > s1.last_doc_etag

    deleted = ids[:3]
    with store.open_session() as s:
        for i in deleted:
            s.delete(i)
        s.save_changes()
    s3 = stats(store)
    assert s3.count_of_documents == len(ids) - len(deleted)
    # LastDocEtag is the newest live document's etag (may drop when that doc is deleted);
    # LastDatabaseEtag also counts tombstones, so it must grow.
    assert s3.last_database_etag > s2.last_database_etag


def test_statistics_count_hilo_documents(store):
    """HiLo state documents (Raven/Hilo/<tag>) are real documents and count in CountOfDocuments."""
    n = 5
    with store.open_session() as s:
        for i in range(n):
            s.store(User(name=str(i)))
        s.save_changes()
    assert stats(store).count_of_documents == n + 1  # + Raven/Hilo/users


def test_drop_and_recreate_is_empty(server_url):
    """A database dropped and re-created at once under the same name starts empty."""
    name = unique_db_name("recreate")
    create_database(server_url, name)
    try:
        with open_store(server_url, name) as st:
            with st.open_session() as s:
                for i in range(5):
                    s.store(User(name=str(i)), f"users/{i}")
                s.save_changes()
            assert stats(st).count_of_documents == 5

        delete_database(server_url, name)
        create_database(server_url, name)

        with open_store(server_url, name) as st:
            assert stats(st).count_of_documents == 0
            with st.open_session() as s:
                assert s.load("users/0", User) is None
                s.store(User(name="after"), "users/0")
                s.save_changes()
            with st.open_session() as s:
                assert s.load("users/0", User).name == "after"
    finally:
        delete_database(server_url, name)
