"""Durability: SIGKILL the server in the middle of concurrent writes; every acknowledged write must survive, and
the files the kill left hold every storage invariant (`corvid check`)."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import threading
import time

import requests

from corvid_support import create_database, doc_url, open_store, raw_get_docs, stats

ROUNDS = 3
WRITERS = 6  # even threads: single-doc PUT, odd threads: bulk_docs batches
WRITE_SECONDS = 3.0
BATCH_SIZE = 5
DB = "crashdb"


def _make_doc(doc_id: str, rnd: random.Random) -> dict:
    payload = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rnd.randint(10, 400)))
    nums = [rnd.randint(-(10**9), 10**9) for _ in range(rnd.randint(0, 8))]
    content = {"id": doc_id, "payload": payload, "nums": nums}
    checksum = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
    return {**content, "checksum": checksum, "@metadata": {"@collection": "Crash"}}


def _checksum_ok(doc: dict) -> bool:
    content = {k: doc.get(k) for k in ("id", "payload", "nums")}
    return doc.get("checksum") == hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def _user_fields(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "@metadata"}


class Writer(threading.Thread):
    """Writes new documents until stopped or the server goes away; records each acknowledged one."""

    def __init__(self, url: str, round_no: int, t: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.url, self.round_no, self.t, self.stop = url, round_no, t, stop
        self.acked: dict[str, dict] = {}
        self.attempted: dict[str, dict] = {}
        self.unexpected: list[str] = []
        self.rnd = random.Random(f"{round_no}/{t}")

    def run(self) -> None:
        http = requests.Session()
        n = 0
        try:
            while not self.stop.is_set():
                if self.t % 2 == 0:
                    ids = [f"crash/r{self.round_no}/t{self.t}/{n}"]
                else:
                    ids = [f"crash/r{self.round_no}/t{self.t}/{n + i}" for i in range(BATCH_SIZE)]
                n += len(ids)
                docs = {i: _make_doc(i, self.rnd) for i in ids}
                self.attempted.update(docs)
                try:
                    if len(ids) == 1:
                        r = http.put(doc_url(self.url, DB, ids[0]), json=docs[ids[0]], timeout=10)
                    else:
                        cmds = [{"Id": i, "Type": "PUT", "ChangeVector": None, "Document": d} for i, d in docs.items()]
                        r = http.post(f"{self.url}/databases/{DB}/bulk_docs", json={"Commands": cmds}, timeout=10)
                except requests.RequestException:
                    if self.stop.is_set():
                        return  # the server was killed under us: expected
                    self.unexpected.append("connection error before the kill")
                    return
                if 200 <= r.status_code < 300:
                    self.acked.update(docs)
                elif not self.stop.is_set():
                    self.unexpected.append(f"{r.status_code}: {r.text[:200]}")
                    return
        finally:
            http.close()


def _fetch_all(url: str, ids: list[str]) -> dict[str, dict | None]:
    found: dict[str, dict | None] = {}
    with requests.Session() as http:
        for i in range(0, len(ids), 100):
            chunk = ids[i : i + 100]
            found.update(zip(chunk, raw_get_docs(http, url, DB, chunk)))
    return found


def test_acknowledged_writes_survive_sigkill(server_factory):
    """Several rounds of: concurrent writers, SIGKILL mid-write, check the storage, restart, verify every
    acknowledged doc."""
    srv = server_factory()
    create_database(srv.url, DB)
    all_acked: dict[str, dict] = {}
    all_attempted: dict[str, dict] = {}
    report = []

    for round_no in range(ROUNDS):
        stop = threading.Event()
        writers = [Writer(srv.url, round_no, t, stop) for t in range(WRITERS)]
        for w in writers:
            w.start()
        time.sleep(WRITE_SECONDS)
        acked_before_kill = sum(len(w.acked) for w in writers)
        stop.set()
        srv.kill()  # SIGKILL while the writers are still sending
        for w in writers:
            w.join(timeout=30)
            assert not w.is_alive(), "writer thread hung after the kill"
            assert not w.unexpected, f"writer {w.t} saw errors before the kill: {w.unexpected}"

        round_acked = {k: v for w in writers for k, v in w.acked.items()}
        round_attempted = {k: v for w in writers for k, v in w.attempted.items()}
        assert acked_before_kill > 0, "no write was acknowledged in the whole round"
        all_acked.update(round_acked)
        all_attempted.update(round_attempted)
        report.append(f"round {round_no}: {len(round_acked)} acknowledged, {len(round_attempted)} attempted")

        print(srv.check_storage().strip())  # every storage invariant holds in what the kill left
        srv.start()  # same data dir, new port

        found = _fetch_all(srv.url, sorted(all_acked))
        missing = [i for i, d in found.items() if d is None]
        assert not missing, f"{len(missing)} acknowledged docs lost after crash {round_no}, e.g. {missing[:5]}"
        wrong = [i for i, d in found.items() if _user_fields(d) != _user_fields(all_acked[i])]
        assert not wrong, f"{len(wrong)} acknowledged docs changed after crash {round_no}, e.g. {wrong[:5]}"
        assert all(found[i]["@metadata"]["@id"] == i for i in found)

        # Writes in flight at the kill may or may not exist, but never torn.
        unacked = sorted(set(round_attempted) - set(round_acked))
        for i, d in _fetch_all(srv.url, unacked).items():
            assert d is None or (_checksum_ok(d) and _user_fields(d) == _user_fields(round_attempted[i])), i

        with open_store(srv.url, DB) as st:
            count = stats(st).count_of_documents
        assert len(all_acked) <= count <= len(all_attempted), (len(all_acked), count, len(all_attempted))

    print("\n".join(report))


def test_graceful_restart_keeps_data_and_databases(server_factory):
    """SIGTERM then restart on the same data dir: databases and documents are all still there."""
    srv = server_factory()
    dbs = {"keep_a": 25, "keep_b": 10}
    written: dict[str, dict[str, dict]] = {}
    with requests.Session() as http:
        for db, n in dbs.items():
            create_database(srv.url, db)
            written[db] = {}
            rnd = random.Random(db)
            for i in range(n):
                doc_id = f"items/{i}"
                doc = _make_doc(doc_id, rnd)
                r = http.put(doc_url(srv.url, db, doc_id), json=doc)
                assert r.status_code == 201, r.text
                written[db][doc_id] = doc

        code = srv.stop()
        assert code == 0, f"graceful stop exited with {code}"
        srv.start()

        for db, docs in written.items():
            got = raw_get_docs(http, srv.url, db, list(docs))
            assert [_user_fields(d) if d else None for d in got] == [_user_fields(d) for d in docs.values()]
            with open_store(srv.url, db) as st:
                assert stats(st).count_of_documents == len(docs)


def test_a_second_server_on_the_same_data_dir_is_refused(server_factory):
    """Two processes on one data directory would both write its journals and LMDB files: the second refuses to
    start, and so does `corvid check` while the first runs; after a kill -9 the directory is free again."""
    first = server_factory()
    create_database(first.url, "locked")
    second = server_factory(data_dir=first.data_dir, start=False)
    try:
        second.start(timeout=20)
        raise AssertionError("a second server started on a data directory in use")
    except RuntimeError as e:
        assert "in use by another Corvid process" in str(e), str(e)
    done = subprocess.run(
        [str(first.binary), "check", "--data-dir", str(first.data_dir)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "in use by another Corvid process" in done.stderr, done.stderr
    assert requests.get(f"{first.url}/databases", timeout=10).json()["Databases"][0]["Name"] == "locked"
    first.kill()
    first.check_storage()
    second.start()
    assert [d["Name"] for d in requests.get(f"{second.url}/databases", timeout=10).json()["Databases"]] == ["locked"]
