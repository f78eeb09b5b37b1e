"""A full disk and a full LMDB map: clear errors in RavenDB's shape, deletes still work, writes and indexes
recover by themselves once space returns, and every acknowledged write survives a restart.

The disk-full test needs a small file system of its own (a tmpfs, mounted as root); it is skipped where
mounting is not permitted."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from corvid_support import assert_error_json, create_database, wait_until

DB = "diskdb"
TMPFS_BYTES = 64 << 20
FILLER_BYTES = 12 << 20
DOCS_PER_BATCH = 40
BODY_CHARS = 2000  # one batch is about 80 KB


def _mount_tmpfs(where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no `mount` command on this machine")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {done.stderr.strip()}")


def _unmount(where: Path) -> None:
    if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _doc(doc_id: str, tag: str) -> dict:
    # Random text so nothing compresses or deduplicates.
    return {"Tag": tag, "Body": uuid.uuid4().hex * (BODY_CHARS // 32), "@metadata": {"@collection": "Users"}}


def _batch(http: requests.Session, url: str, docs: dict[str, dict]) -> requests.Response:
    commands = [{"Type": "PUT", "Id": i, "Document": d, "ChangeVector": None} for i, d in docs.items()]
    return http.post(f"{url}/databases/{DB}/bulk_docs", json={"Commands": commands}, timeout=30)


def _query(http: requests.Session, url: str, rql: str, wait: bool = False) -> dict:
    body = {"Query": rql}
    if wait:
        body.update({"WaitForNonStaleResults": True, "WaitForNonStaleResultsTimeout": "00:00:30"})
    r = http.post(f"{url}/databases/{DB}/queries", json=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def _index_stats(http: requests.Session, url: str, name: str) -> dict:
    r = http.get(f"{url}/databases/{DB}/indexes/stats", params={"name": name}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["Results"][0]


def test_disk_full_is_reported_deletes_work_and_everything_recovers(server_factory, tmp_path, http):
    disk = tmp_path / "disk"
    _mount_tmpfs(disk)
    server = None
    try:
        filler = disk / "filler"
        filler.write_bytes(os.urandom(FILLER_BYTES))
        server = server_factory(data_dir=disk / "data")
        url = server.url
        create_database(url, DB)
        # An automatic index that is built while the disk fills.
        assert _query(http, url, "from Users where Tag = 'a'")["TotalResults"] == 0
        index = "Auto/Users/ByTag"

        acked: dict[str, str] = {}

        def write_batches(first: int, count: int):
            for n in range(first, first + count):
                docs = {f"users/{n}/{i}": _doc(f"users/{n}/{i}", "ab"[i % 2]) for i in range(DOCS_PER_BATCH)}
                r = _batch(http, url, docs)
                if r.status_code != 201:
                    return r
                acked.update({i: d["Tag"] for i, d in docs.items()})
            return None

        # Some data, indexed in memory; then something else takes the rest of the disk, so the index's
        # next checkpoint finds no room.
        assert write_batches(0, 60) is None
        stuffing = disk / "stuffing"
        with open(stuffing, "wb") as f:
            try:
                while True:
                    f.write(os.urandom(1 << 20))
                    f.flush()
            except OSError:
                pass

        def checkpoint_error():
            r = http.get(f"{url}/databases/{DB}/indexes/errors", params={"name": index}, timeout=30)
            errors = r.json()["Results"][0]["Errors"] if r.status_code == 200 and r.json()["Results"] else []
            return [e for e in errors if e["Action"] == "Checkpoint"]

        assert wait_until(checkpoint_error, timeout=15, interval=0.2), "the index did not report its failed checkpoint"
        assert "space" in checkpoint_error()[0]["Error"].lower()

        full = write_batches(60, 2000)
        assert full is not None, "the disk never filled"
        body = assert_error_json(full)
        assert full.status_code == 503, (full.status_code, body)
        assert body["Type"] == "Voron.Exceptions.DiskFullException", body
        assert "space" in body["Message"].lower(), body
        assert len(acked) > 100

        # A single PUT is refused the same way.
        r = http.put(f"{url}/databases/{DB}/docs", params={"id": "users/late"}, json=_doc("users/late", "a"), timeout=30)
        assert r.status_code == 503 and assert_error_json(r)["Type"] == "Voron.Exceptions.DiskFullException", r.text

        # Deletes still work, one by one and in a batch, and their space becomes free inside the database.
        merger = http.get(f"{url}/admin/metrics", timeout=30).json()["Databases"][DB]
        assert merger["LowDiskSpace"] is True and merger["DiskFullErrors"] >= 1, merger
        free_before = merger["DataFileFreeBytes"]
        doomed = sorted(acked)[:200]
        for doc_id in doomed[:20]:
            r = http.delete(f"{url}/databases/{DB}/docs", params={"id": doc_id}, timeout=30)
            assert r.status_code == 204, r.text
        commands = [{"Type": "DELETE", "Id": i, "ChangeVector": None} for i in doomed[20:]]
        r = http.post(f"{url}/databases/{DB}/bulk_docs", json={"Commands": commands}, timeout=30)
        assert r.status_code == 201, r.text
        for doc_id in doomed:
            del acked[doc_id]
        assert http.get(f"{url}/databases/{DB}/docs", params={"id": doomed[0]}, timeout=30).status_code == 404
        free_after = http.get(f"{url}/admin/metrics", timeout=30).json()["Databases"][DB]["DataFileFreeBytes"]
        assert free_after > free_before, (free_before, free_after)

        # Space returns: writes work again without a restart.
        filler.unlink()
        stuffing.unlink()

        def write_works() -> bool:
            docs = {f"users/again/{i}": _doc(f"users/again/{i}", "a") for i in range(DOCS_PER_BATCH)}
            r = _batch(http, url, docs)
            if r.status_code == 201:
                acked.update({i: d["Tag"] for i, d in docs.items()})
                return True
            assert r.status_code == 503, r.text
            return False

        assert wait_until(write_works, timeout=15, interval=0.2), "writes did not resume after space returned"

        # The index that was building while the disk filled catches up by itself and answers correctly.
        expected = sorted(i for i, tag in acked.items() if tag == "a")
        result = _query(http, url, "from Users where Tag = 'a' select id() as Id", wait=True)
        assert result["IsStale"] is False
        assert result["TotalResults"] == len(expected)
        stats = _index_stats(http, url, index)
        assert stats["State"] != "Error", stats

        # Every acknowledged write survives a crash and restart.
        url = server.restart(crash=True)
        for start in range(0, len(acked), 500):
            ids = sorted(acked)[start : start + 500]
            r = http.get(f"{url}/databases/{DB}/docs", params={"id": ids, "metadataOnly": "true"}, timeout=60)
            assert r.status_code == 200, r.text
            found = [d for d in r.json()["Results"] if d is not None]
            assert len(found) == len(ids)
        assert http.get(f"{url}/databases/{DB}/docs", params={"id": doomed[-1]}, timeout=30).status_code == 404
    finally:
        if server is not None:
            server.kill()
        _unmount(disk)


def test_a_small_map_grows_instead_of_failing(server_factory, http):
    server = server_factory(extra_args=["--map-size-bytes", str(1 << 20)])
    url = server.url
    create_database(url, DB)
    written = []
    for n in range(40):  # about 3 MiB in all, three times the starting map
        docs = {f"users/{n}/{i}": _doc(f"users/{n}/{i}", "a") for i in range(DOCS_PER_BATCH)}
        r = _batch(http, url, docs)
        assert r.status_code == 201, r.text
        written.extend(docs)
    metrics = http.get(f"{url}/admin/metrics", timeout=30).json()
    merger = metrics["Databases"][DB]
    assert merger["MapSizeBytes"] > (1 << 20) and merger["MapResizes"] >= 1, merger
    url = server.restart()
    r = http.get(f"{url}/databases/{DB}/docs", params={"id": written[-50:]}, timeout=30)
    assert r.status_code == 200 and all(d is not None for d in r.json()["Results"])
