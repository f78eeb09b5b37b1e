"""Idle unloading (RavenDB's Databases.MaxIdleTimeInSec): a database without requests or running work is
closed (its files released) and opens again on the next request; requests arriving around the closes all
succeed and see every acknowledged write."""

from __future__ import annotations

import random
import threading
import time

import requests

from corvid_support import CorvidServer, User, create_database, open_store, unique_db_name, wait_until
from test_monitoring import open_database_files


def idle_stats(url: str) -> dict:
    return requests.get(f"{url}/admin/metrics", timeout=30).json()["IdleUnloading"]


def test_idle_database_closes_and_reopens(tmp_path):
    server = CorvidServer(tmp_path / "data", extra_args=["--max-idle-time-sec", "1"])
    url = server.start()
    try:
        name = unique_db_name("idle")
        create_database(url, name)
        with open_store(url, name) as store:
            with store.open_session() as session:
                for i in range(20):
                    session.store(User(name=f"u{i}", age=i), f"users/{i}")
                session.save_changes()
            with store.open_session() as session:
                assert len(list(session.query(object_type=User).where_greater_than("age", 9).wait_for_non_stale_results())) == 10
            assert idle_stats(url)["MaxIdleTimeInSec"] == 1
            assert wait_until(lambda: idle_stats(url)["Unloads"] >= 1, timeout=20), idle_stats(url)
            assert wait_until(lambda: open_database_files(server.proc.pid, server.data_dir) == [], timeout=10), (
                open_database_files(server.proc.pid, server.data_dir)
            )
            r = requests.get(f"{url}/databases", timeout=30).json()["Databases"]
            [info] = [d for d in r if d["Name"] == name]
            assert info["LoadState"] == "Unloaded" and info["CachedDatabaseInfo"] is True
            assert info["DocumentsCount"] == 20 and info["IndexesCount"] == 1, info
            assert open_database_files(server.proc.pid, server.data_dir) == []
            # The next request opens it again with everything written before, indexes included.
            with store.open_session() as session:
                assert session.load("users/7", User).name == "u7"
                assert len(list(session.query(object_type=User).where_greater_than("age", 9).wait_for_non_stale_results())) == 10
    finally:
        server.stop()
    assert "idle database closed" in server.log_text()


def test_requests_around_idle_unloads_never_fail(tmp_path):
    server = CorvidServer(tmp_path / "data", extra_args=["--max-idle-time-sec", "1"])
    url = server.start()
    names = [unique_db_name(f"idle{i}") for i in range(3)]
    for name in names:
        create_database(url, name)
    failures = []
    written = {name: [] for name in names}
    stop = time.monotonic() + 12

    def worker(name: str, worker_id: int):
        session_http = requests.Session()
        n = 0
        rng = random.Random(worker_id)
        while time.monotonic() < stop:
            doc_id = f"users/{worker_id}-{n}"
            try:
                r = session_http.put(f"{url}/databases/{name}/docs?id={doc_id}", json={"name": doc_id, "@metadata": {"@collection": "Users"}}, timeout=60)
                if r.status_code != 201:
                    failures.append((name, "put", r.status_code, r.text[:200]))
                else:
                    written[name].append(doc_id)
                r = session_http.get(f"{url}/databases/{name}/docs?id={doc_id}", timeout=60)
                if r.status_code != 200:
                    failures.append((name, "get", r.status_code, r.text[:200]))
                r = session_http.get(f"{url}/databases/{name}/stats", timeout=60)
                if r.status_code != 200:
                    failures.append((name, "stats", r.status_code, r.text[:200]))
            except requests.RequestException as e:
                failures.append((name, "exception", repr(e)))
            n += 1
            # Pauses around the idle time: some requests land while the database is closing.
            time.sleep(rng.uniform(0.6, 2.0))

    try:
        before = idle_stats(url)["Unloads"]
        threads = [threading.Thread(target=worker, args=(name, i)) for i, name in enumerate(names * 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        assert idle_stats(url)["Unloads"] > before, idle_stats(url)
        for name in names:
            with open_store(url, name) as store:
                with store.open_session() as session:
                    loaded = session.load(written[name], User)
                    assert all(loaded[i] is not None for i in written[name]), name
    finally:
        server.stop()
