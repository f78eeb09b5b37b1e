"""Optimistic concurrency, batch atomicity, HiLo uniqueness and concurrent writers."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from ravendb.documents.commands.crud import DeleteDocumentCommand, PutDocumentCommand
from ravendb.exceptions.raven_exceptions import ConcurrencyException

from corvid_support import User, open_store, raw_get_docs, stats


def test_conflicting_sessions_second_save_fails(store):
    """Two sessions modify the same loaded doc with optimistic concurrency: the second save raises."""
    with store.open_session() as s:
        s.store(User(name="orig", age=1), "users/oc")
        s.save_changes()

    s1, s2 = store.open_session(), store.open_session()
    for s in (s1, s2):
        s.advanced.use_optimistic_concurrency = True
    u1, u2 = s1.load("users/oc", User), s2.load("users/oc", User)
    u1.name, u2.name = "first", "second"
    s1.save_changes()
    with pytest.raises(ConcurrencyException):
        s2.save_changes()

    with store.open_session() as s:
        assert s.load("users/oc", User).name == "first"


def test_without_optimistic_concurrency_last_write_wins(store):
    """With the check off, both saves succeed and the later one is kept."""
    with store.open_session() as s:
        s.store(User(name="orig"), "users/lww")
        s.save_changes()
    s1, s2 = store.open_session(), store.open_session()
    u1, u2 = s1.load("users/lww", User), s2.load("users/lww", User)
    u1.name, u2.name = "first", "second"
    s1.save_changes()
    s2.save_changes()
    with store.open_session() as s:
        assert s.load("users/lww", User).name == "second"


def test_new_entity_with_optimistic_concurrency_fails_if_exists(store):
    """use_optimistic_concurrency sends ChangeVector "" for a new entity: an existing doc makes it fail."""
    with store.open_session() as s:
        s.store(User(name="existing"), "users/dup")
        s.save_changes()

    with store.open_session() as s:
        s.advanced.use_optimistic_concurrency = True
        s.store(User(name="intruder"), "users/dup")
        with pytest.raises(ConcurrencyException):
            s.save_changes()

    with store.open_session() as s:
        assert s.load("users/dup", User).name == "existing"
        s.advanced.use_optimistic_concurrency = True
        s.store(User(name="fresh"), "users/fresh")  # "" on a missing doc succeeds
        s.save_changes()
    with store.open_session() as s:
        assert s.load("users/fresh", User).name == "fresh"


def test_store_with_explicit_change_vector(store):
    """store(entity, id, change_vector): the right CV succeeds, a stale one raises."""
    with store.open_session() as s:
        u = User(name="v1")
        s.store(u, "users/ecv")
        s.save_changes()
        cv1 = s.advanced.get_change_vector_for(u)

    with store.open_session() as s:
        s.store(User(name="v2"), "users/ecv", cv1)
        s.save_changes()

    with store.open_session() as s:
        s.store(User(name="v3"), "users/ecv", cv1)  # cv1 is stale now
        with pytest.raises(ConcurrencyException):
            s.save_changes()

    with store.open_session() as s:
        assert s.load("users/ecv", User).name == "v2"


def test_raw_put_and_delete_with_if_match(store, server_url, http):
    """Single-doc PUT/DELETE honour If-Match: mismatch -> 409 error JSON, match -> success."""
    executor = store.get_request_executor()
    put = PutDocumentCommand("things/1", None, {"v": 1})
    executor.execute_command(put)
    cv = put.result.change_vector

    stale = PutDocumentCommand("things/1", cv + "x" if not cv.endswith("x") else cv + "y", {"v": 2})
    with pytest.raises(ConcurrencyException):
        executor.execute_command(stale)

    ok = PutDocumentCommand("things/1", cv, {"v": 3})
    executor.execute_command(ok)
    assert ok.result.change_vector != cv

    with pytest.raises(ConcurrencyException):
        executor.execute_command(DeleteDocumentCommand("things/1", cv))  # stale CV
    r = http.delete(f"{server_url}/databases/{store.database}/docs?id=things/1", headers={"If-Match": f'"{cv}"'})
    assert r.status_code == 409
    body = r.json()
    assert body["Type"].endswith("ConcurrencyException") and body["Message"]

    executor.execute_command(DeleteDocumentCommand("things/1", ok.result.change_vector))
    assert raw_get_docs(http, server_url, store.database, ["things/1"]) == [None]


def test_raw_put_if_match_empty_requires_missing(store, server_url, http):
    """PUT with If-Match "" creates a missing doc but gets 409 on an existing one."""
    url = f"{server_url}/databases/{store.database}/docs?id=things/new"
    first = http.put(url, json={"v": 1}, headers={"If-Match": '""'})
    assert first.status_code == 201, first.text
    second = http.put(url, json={"v": 2}, headers={"If-Match": '""'})
    assert second.status_code == 409, (second.status_code, second.text)
    assert second.json()["Type"].endswith("ConcurrencyException")
    assert raw_get_docs(http, server_url, store.database, ["things/new"])[0]["v"] == 1


def test_batch_change_vector_empty_requires_missing(store, server_url, http):
    """A bulk_docs PUT with ChangeVector "" fails with 409 when the document exists."""
    url = f"{server_url}/databases/{store.database}/bulk_docs"
    cmd = {"Id": "things/b", "Type": "PUT", "ChangeVector": "", "Document": {"v": 1}}
    assert http.post(url, json={"Commands": [cmd]}).status_code == 201
    cmd["Document"] = {"v": 2}
    r = http.post(url, json={"Commands": [cmd]})
    assert r.status_code == 409, (r.status_code, r.text)
    assert raw_get_docs(http, server_url, store.database, ["things/b"])[0]["v"] == 1


def test_batch_is_atomic_on_concurrency_failure(store):
    """A save_changes where one command fails its concurrency check stores nothing of that batch."""
    with store.open_session() as s:
        s.store(User(name="guarded", age=1), "users/guarded")
        s.store(User(name="to-delete"), "users/victim")
        s.save_changes()
    before = stats(store)

    s1 = store.open_session()
    s1.advanced.use_optimistic_concurrency = True
    guarded = s1.load("users/guarded", User)
    victim = s1.load("users/victim", User)

    with store.open_session() as other:  # makes s1's view of users/guarded stale
        other.load("users/guarded", User).age = 2
        other.save_changes()

    s1.store(User(name="new1"), "users/new1")
    s1.store(User(name="new2"), "users/new2")
    s1.delete(victim)
    guarded.name = "changed"
    with pytest.raises(ConcurrencyException):
        s1.save_changes()

    with store.open_session() as s:
        assert s.load("users/new1", User) is None
        assert s.load("users/new2", User) is None
        assert s.load("users/victim", User).name == "to-delete"
        g = s.load("users/guarded", User)
        assert (g.name, g.age) == ("guarded", 2)
    assert stats(store).count_of_documents == before.count_of_documents


def test_hilo_unique_across_concurrent_stores(server_url, store):
    """4 independent DocumentStores in threads, 200 docs each with HiLo ids: all ids distinct, all present."""
    n_stores, per_store, batch = 4, 200, 25
    db = store.database
    barrier = threading.Barrier(n_stores)

    def worker(w: int) -> list[str]:
        ids = []
        with open_store(server_url, db) as st:
            barrier.wait()
            for b in range(0, per_store, batch):
                with st.open_session() as s:
                    users = [User(name=f"w{w}-{i}", age=w) for i in range(b, b + batch)]
                    for u in users:
                        s.store(u)
                    s.save_changes()
                    ids += [s.advanced.get_document_id(u) for u in users]
        return ids

    with ThreadPoolExecutor(n_stores) as pool:
        per_worker = list(pool.map(worker, range(n_stores)))

    all_ids = [i for ids in per_worker for i in ids]
    assert len(all_ids) == n_stores * per_store
    dupes = [i for i, n in Counter(all_ids).items() if n > 1]
    assert not dupes, f"HiLo handed out duplicate ids: {sorted(dupes)[:10]}"

    with store.open_session() as s:
        for w, ids in enumerate(per_worker):
            loaded = s.load(ids, User)
            assert [loaded[i].name for i in ids] == [f"w{w}-{i}" for i in range(per_store)]
    with store.open_session() as s:
        found, page = [], 256
        while True:
            chunk = s.advanced.load_starting_with("users/", User, start=len(found), page_size=page)
            found += [s.advanced.get_document_id(u) for u in chunk]
            if len(chunk) < page:
                break
        assert sorted(found) == sorted(all_ids)


def test_many_concurrent_writers_all_acknowledged(server_url, store):
    """8 threads each saving 40 single-doc sessions at once: every acknowledged doc is present."""
    n_threads, per_thread = 8, 40
    barrier = threading.Barrier(n_threads)
    errors: list[BaseException] = []

    def worker(t: int) -> list[str]:
        done = []
        barrier.wait()
        for i in range(per_thread):
            doc_id = f"writes/{t}/{i}"
            try:
                with store.open_session() as s:
                    s.store(User(name=doc_id, age=t * 1000 + i), doc_id)
                    s.save_changes()
                done.append(doc_id)
            except BaseException as e:  # noqa: BLE001 - collected and reported below
                errors.append(e)
        return done

    with ThreadPoolExecutor(n_threads) as pool:
        acked = [i for ids in pool.map(worker, range(n_threads)) for i in ids]

    assert not errors, f"{len(errors)} writes failed, first: {errors[0]!r}"
    assert len(acked) == n_threads * per_thread
    with store.open_session() as s:
        loaded = s.load(acked, User)
        missing = [i for i in acked if loaded[i] is None or loaded[i].name != i]
    assert not missing, f"acknowledged but missing/wrong: {missing[:10]}"
    assert stats(store).count_of_documents == len(acked)
