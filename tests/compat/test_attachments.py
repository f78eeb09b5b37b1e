"""Attachments through the official client: session API, operations, batches, sizes up to 100 MB (hash,
bytes and server memory checked), document deletes, and durability across kill -9."""

from __future__ import annotations

import base64
import hashlib
import os
import random

import pytest
import requests
from ravendb import PutAttachmentOperation, GetAttachmentOperation, DeleteAttachmentOperation
from ravendb.data.operation import AttachmentType

from corvid_support import User, create_database, open_store, stats


def ravendb_hash(data: bytes) -> str:
    """RavenDB's attachment hash: base64 of the 32-byte BLAKE2b digest."""
    return base64.b64encode(hashlib.blake2b(data, digest_size=32).digest()).decode()


def payload(size: int, seed: int = 7) -> bytes:
    return random.Random(seed + size).randbytes(size)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_session_store_get_exists_names_delete(store):
    data = payload(1000)
    with store.open_session() as session:
        user = User(name="Ann")
        session.store(user, "users/1")
        session.advanced.attachments.store(user, "photo.png", data, "image/png")
        session.advanced.attachments.store("users/1", "notes.txt", b"hello", "text/plain")
        session.save_changes()

    with store.open_session() as session:
        user = session.load("users/1", User)
        metadata = session.advanced.get_metadata_for(user)
        assert "HasAttachments" in metadata["@flags"]
        names = sorted(a.name for a in session.advanced.attachments.get_names(user))
        assert names == ["notes.txt", "photo.png"]
        assert session.advanced.attachments.exists("users/1", "photo.png")
        assert not session.advanced.attachments.exists("users/1", "missing.png")
        with session.advanced.attachments.get("users/1", "photo.png") as result:
            assert result.data == data
            assert result.details.hash == ravendb_hash(data)
            assert result.details.content_type == "image/png"
            assert int(result.details.size) == len(data)

    with store.open_session() as session:
        session.advanced.attachments.delete("users/1", "photo.png")
        session.save_changes()
    with store.open_session() as session:
        user = session.load("users/1", User)
        assert [a.name for a in session.advanced.attachments.get_names(user)] == ["notes.txt"]
        assert not session.advanced.attachments.exists("users/1", "photo.png")


@pytest.mark.parametrize("size", [1, 2, 1000, 65_536, 1_000_003, 10_000_000])
def test_operations_round_trip_sizes(store, size):
    data = payload(size)
    with store.open_session() as session:
        session.store(User(name="Bob"), "users/2")
        session.save_changes()
    details = store.operations.send(PutAttachmentOperation("users/2", "blob.bin", data, "application/octet-stream"))
    assert details.hash == ravendb_hash(data)
    assert details.size == size
    with store.operations.send(GetAttachmentOperation("users/2", "blob.bin", AttachmentType.document, None)) as result:
        got = result.data
    assert len(got) == size and got == data
    assert result.details.hash == ravendb_hash(data)
    store.operations.send(DeleteAttachmentOperation("users/2", "blob.bin"))
    with store.open_session() as session:
        assert not session.advanced.attachments.exists("users/2", "blob.bin")


def test_missing_attachment_and_document(store, server_url, http):
    with store.open_session() as session:
        session.store(User(name="C"), "users/3")
        session.save_changes()
    base = f"{server_url}/databases/{store.database}/attachments"
    assert http.get(base, params={"id": "users/3", "name": "nope"}).status_code == 404
    assert http.head(base, params={"id": "users/3", "name": "nope"}).status_code == 404
    r = http.put(base, params={"id": "users/404", "name": "a"}, data=b"x")
    assert r.status_code == 404
    assert r.json()["Type"].endswith("DocumentDoesNotExistException")


def test_content_stored_once_and_removed_with_last_reference(store, corvid_server):
    data = payload(4096, seed=99)
    h = ravendb_hash(data)
    with store.open_session() as session:
        for i in range(3):
            session.store(User(name=f"u{i}"), f"users/d{i}")
        session.save_changes()
    for i in range(3):
        store.operations.send(PutAttachmentOperation(f"users/d{i}", "same.bin", data, "application/octet-stream"))
    files = [p for p in corvid_server.data_dir.rglob("attachments/*") if p.is_file() and p.name == h.replace("/", "_").replace("+", "-")]
    assert len(files) == 1 and files[0].stat().st_size == len(data)
    s = stats(store)
    assert (s.count_of_attachments, s.count_of_unique_attachments) == (3, 1)
    with store.open_session() as session:
        session.delete("users/d0")  # deleting a document deletes its attachments
        session.save_changes()
    store.operations.send(DeleteAttachmentOperation("users/d1", "same.bin"))
    assert files[0].exists()
    with store.open_session() as session:
        session.advanced.attachments.delete("users/d2", "same.bin")
        session.save_changes()
    assert not files[0].exists()


def test_copy_move_rename_in_session(store):
    data = b"copy me"
    with store.open_session() as session:
        session.store(User(name="src"), "users/s")
        session.store(User(name="dst"), "users/t")
        session.advanced.attachments.store("users/s", "a.txt", data, "text/plain")
        session.save_changes()
    with store.open_session() as session:
        session.load(["users/s", "users/t"], User)  # the client moves only tracked documents
        session.advanced.attachments.copy("users/s", "a.txt", "users/t", "b.txt")
        session.save_changes()
    with store.open_session() as session:
        session.load(["users/s", "users/t"], User)  # the client moves only tracked documents
        session.advanced.attachments.move("users/s", "a.txt", "users/t", "c.txt")
        session.save_changes()
    with store.open_session() as session:
        session.load(["users/s", "users/t"], User)  # the client moves only tracked documents
        session.advanced.attachments.rename("users/t", "b.txt", "d.txt")
        session.save_changes()
    with store.open_session() as session:
        assert session.advanced.attachments.get_names(session.load("users/s", User)) == []
        t = session.load("users/t", User)
        assert sorted(a.name for a in session.advanced.attachments.get_names(t)) == ["c.txt", "d.txt"]
        with session.advanced.attachments.get("users/t", "d.txt") as r:
            assert r.data == data


def test_hundred_megabytes_flat_memory(store, corvid_server):
    size = 100 * 1024 * 1024
    data = payload(size, seed=1)
    expected = ravendb_hash(data)
    with store.open_session() as session:
        session.store(User(name="big"), "users/big")
        session.save_changes()
    pid = corvid_server.proc.pid
    before = rss_kib(pid)
    url = f"{corvid_server.url}/databases/{store.database}/attachments"
    r = requests.put(url, params={"id": "users/big", "name": "big.bin", "contentType": "application/octet-stream"}, data=data)
    assert r.status_code == 201, r.text
    assert r.json()["Hash"] == expected
    after_upload = rss_kib(pid)
    got = hashlib.blake2b(digest_size=32)
    total = 0
    with requests.get(url, params={"id": "users/big", "name": "big.bin"}, stream=True) as resp:
        assert resp.headers["Attachment-Hash"] == expected
        for chunk in resp.iter_content(1 << 20):
            got.update(chunk)
            total += len(chunk)
    after_download = rss_kib(pid)
    assert total == size
    assert base64.b64encode(got.digest()).decode() == expected
    grown_mib = (max(after_upload, after_download) - before) / 1024
    assert grown_mib < 40, f"server RSS grew by {grown_mib:.1f} MiB for a 100 MiB attachment"
    # and through the official client's session API
    with store.open_session() as session:
        with session.advanced.attachments.get("users/big", "big.bin") as result:
            assert result.details.hash == expected
            assert result.data == data


def test_acknowledged_attachments_survive_kill_9(server_factory):
    srv = server_factory()
    create_database(srv.url, "attcrash")
    written = {}
    with open_store(srv.url, "attcrash") as store:
        with store.open_session() as session:
            session.store(User(name="k"), "users/k")
            session.save_changes()
        for i in range(20):
            data = os.urandom(1 + i * 5000)
            store.operations.send(PutAttachmentOperation("users/k", f"f{i}", data, "application/octet-stream"))
            written[f"f{i}"] = data
    srv.kill()
    srv.start()
    with open_store(srv.url, "attcrash") as store:
        with store.open_session() as session:
            user = session.load("users/k", User)
            assert len(session.advanced.attachments.get_names(user)) == len(written)
            for name, data in written.items():
                with session.advanced.attachments.get("users/k", name) as r:
                    assert r.data == data
                    assert r.details.hash == ravendb_hash(data)


def test_attachment_size_limit(server_factory):
    srv = server_factory(extra_args=["--max-attachment-bytes", "10000", "--max-body-bytes", "4096"])
    create_database(srv.url, "attlimit")
    with open_store(srv.url, "attlimit") as store:
        with store.open_session() as session:
            session.store(User(name="L"), "users/l")
            session.save_changes()
        url = f"{srv.url}/databases/attlimit/attachments"
        # larger than the JSON body limit but within the attachment limit
        ok = requests.put(url, params={"id": "users/l", "name": "small"}, data=payload(10_000))
        assert ok.status_code == 201, ok.text
        too_big = requests.put(url, params={"id": "users/l", "name": "big"}, data=payload(10_001))
        assert too_big.status_code == 413
        with store.open_session() as session:
            names = [a.name for a in session.advanced.attachments.get_names(session.load("users/l", User))]
            assert names == ["small"]
    stored = [p for p in srv.data_dir.rglob("attachments/*") if p.is_file()]
    assert len(stored) == 1 and stored[0].stat().st_size == 10_000


def test_kill_9_during_concurrent_uploads(server_factory):
    """SIGKILL while several clients upload; every upload answered 201 must be there afterwards, intact."""
    import threading
    import time

    srv = server_factory()
    create_database(srv.url, "attcrash2")
    url = f"{srv.url}/databases/attcrash2/attachments"
    requests.put(f"{srv.url}/databases/attcrash2/docs", params={"id": "docs/1"}, json={"@metadata": {"@collection": "Docs"}})
    acknowledged: dict[str, bytes] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def upload(worker: int):
        rnd = random.Random(worker)
        n = 0
        while not stop.is_set():
            data = rnd.randbytes(rnd.choice([1, 100, 70_000, 1_500_000]))
            name = f"w{worker}-{n}"
            n += 1
            try:
                r = requests.put(url, params={"id": "docs/1", "name": name}, data=data, timeout=10)
            except requests.RequestException:
                return
            if r.status_code == 201:
                with lock:
                    acknowledged[name] = data

    threads = [threading.Thread(target=upload, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    srv.kill()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert acknowledged, "no upload was acknowledged before the kill"
    srv.start()
    url = f"{srv.url}/databases/attcrash2/attachments"
    for name, data in acknowledged.items():
        r = requests.get(url, params={"id": "docs/1", "name": name})
        assert r.status_code == 200, name
        assert r.content == data
        assert r.headers["Attachment-Hash"] == ravendb_hash(data)
