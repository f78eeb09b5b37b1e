"""Monitoring endpoints (/admin/monitoring/v1/*): the Prometheus exposition parsed with the ecosystem's own
parser, RavenDB's JSON shapes, and the rule that a scrape never opens an unloaded database."""

from __future__ import annotations

import os
from pathlib import Path

import requests
from prometheus_client.parser import text_string_to_metric_families

from corvid_support import Company, CorvidServer, User, create_database, open_store, unique_db_name, wait_until

PROMETHEUS = "/admin/monitoring/v1/prometheus"


def scrape(url: str, query: str = "") -> dict:
    """Family name -> list of (labels, value) samples, from the real Prometheus parser."""
    r = requests.get(f"{url}{PROMETHEUS}{query}", timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers["Content-Type"]
    families = {}
    for family in text_string_to_metric_families(r.text):
        families[family.name] = family
    return families


def sample(families: dict, name: str, **labels) -> float:
    family = families[name]
    for s in family.samples:
        # The parser names a counter's sample `<name>_total` whatever the exposition called it.
        if s.name in (name, f"{name}_total") and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no sample {name}{labels}: {family.samples}")


def test_prometheus_reports_server_database_index_and_collection(server_url, store, db_name):
    with store.open_session() as session:
        for i in range(30):
            session.store(User(name=f"user{i}", age=i), f"users/{i}")
        for i in range(7):
            session.store(Company(name=f"company{i}"), f"companies/{i}")
        session.save_changes()
    with store.open_session() as session:
        assert len(list(session.query(object_type=User).where_equals("name", "user3").wait_for_non_stale_results())) == 1

    families = scrape(server_url)
    # Server
    assert sample(families, "ravendb_server_uptime_seconds") >= 0
    assert families["ravendb_server_uptime_seconds"].type == "counter"
    assert sample(families, "ravendb_network_total_requests") > 0
    assert sample(families, "ravendb_server_process_id") > 0
    assert sample(families, "ravendb_memory_allocated_bytes") > 1024 * 1024
    assert sample(families, "corvid_server_threads") > 1
    assert sample(families, "ravendb_databases_total_count") >= 1
    assert sample(families, "ravendb_databases_loaded_count") >= 1
    # Database
    assert sample(families, "corvid_database_loaded", database_name=db_name) == 1
    assert sample(families, "ravendb_database_documents_count", database_name=db_name) == 37
    assert sample(families, "ravendb_database_indexes_count", database_name=db_name) == 1
    assert sample(families, "ravendb_database_indexes_auto_count", database_name=db_name) == 1
    assert sample(families, "corvid_database_merged_commands", database_name=db_name) >= 1
    assert sample(families, "ravendb_database_storage_documents_allocated_data_file_bytes", database_name=db_name) > 0
    flush = families["corvid_database_journal_flush_seconds"]
    assert flush.type == "histogram"
    count = [s.value for s in flush.samples if s.name.endswith("_count") and s.labels["database_name"] == db_name]
    assert count and count[0] >= 1, flush.samples
    # Index
    [index_name] = {s.labels["index_name"] for s in families["ravendb_index_entries_count"].samples if s.labels["database_name"] == db_name}
    assert index_name == "Auto/Users/Byname"
    assert sample(families, "ravendb_index_entries_count", database_name=db_name, index_name=index_name) == 30
    assert sample(families, "ravendb_index_type", database_name=db_name, index_name=index_name) == 1  # AutoMap
    assert sample(families, "ravendb_index_state", database_name=db_name, index_name=index_name) == 0  # Normal
    assert sample(families, "corvid_index_is_stale", database_name=db_name, index_name=index_name) == 0
    assert sample(families, "ravendb_index_errors", database_name=db_name, index_name=index_name) == 0
    # Collections
    assert sample(families, "ravendb_collection_documents_count", database_name=db_name, collection_name="Users") == 30
    assert sample(families, "ravendb_collection_documents_count", database_name=db_name, collection_name="Companies") == 7


def test_prometheus_skips_sections(server_url, store, db_name):
    with store.open_session() as session:
        session.store(User(name="a"), "users/1")
        session.save_changes()
    only_server = scrape(server_url, "?skipDatabasesMetrics=true&skipIndexesMetrics=true&skipCollectionsMetrics=true")
    assert "ravendb_server_uptime_seconds" in only_server
    assert not any(name.startswith(("ravendb_database_", "ravendb_index_", "ravendb_collection_")) for name in only_server)
    no_server = scrape(server_url, "?skipServerMetrics=true")
    assert "ravendb_server_uptime_seconds" not in no_server
    assert sample(no_server, "ravendb_collection_documents_count", database_name=db_name, collection_name="Users") == 1


def test_monitoring_json_shapes(server_url, store, db_name):
    with store.open_session() as session:
        for i in range(5):
            session.store(User(name=f"u{i}"), f"users/{i}")
        session.save_changes()
    with store.open_session() as session:
        list(session.query(object_type=User).where_equals("name", "u1").wait_for_non_stale_results())

    server = requests.get(f"{server_url}/admin/monitoring/v1/server", timeout=30).json()
    for key in ("ServerVersion", "UpTimeInSec", "ServerProcessId", "Cpu", "Memory", "Network", "Databases", "Cluster"):
        assert key in server, key
    assert server["Memory"]["AllocatedMemoryInMb"] > 0
    assert server["Network"]["TotalRequests"] > 0
    assert server["Databases"]["LoadedCount"] >= 1

    databases = requests.get(f"{server_url}/admin/monitoring/v1/databases?name={db_name}", timeout=30).json()
    [db] = databases["Results"]
    assert db["DatabaseName"] == db_name
    assert db["Counts"]["Documents"] == 5
    assert db["Indexes"]["Count"] == 1 and db["Indexes"]["AutoCount"] == 1
    assert set(db["Storage"]) >= {"DocumentsAllocatedDataFileInMb", "TotalAllocatedStorageFileInMb", "TotalFreeSpaceInMb"}
    assert set(db["Statistics"]) >= {"DocPutsPerSec", "MapIndexIndexesPerSec", "RequestsPerSec"}

    indexes = requests.get(f"{server_url}/admin/monitoring/v1/indexes?name={db_name}", timeout=30).json()
    [entry] = indexes["Results"]
    [index] = entry["Indexes"]
    assert index["IndexName"] == "Auto/Users/Byname" and index["EntriesCount"] == 5
    assert index["State"] == "Normal" and index["Type"] == "AutoMap" and index["Status"] == "Running"

    collections = requests.get(f"{server_url}/admin/monitoring/v1/collections?name={db_name}", timeout=30).json()
    [entry] = collections["Results"]
    assert {c["CollectionName"]: c["DocumentsCount"] for c in entry["Collections"]} == {"Users": 5}

    unknown = requests.get(f"{server_url}/admin/monitoring/v1/databases?name=no_such_db", timeout=30).json()
    assert unknown["Results"] == []


def open_database_files(pid: int, data_dir: Path) -> list:
    """Files under the data directory's `databases/` that the process holds open."""
    databases = str((data_dir / "databases").resolve())
    held = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(databases):
            held.append(target)
    return held


def test_scrapes_never_open_unloaded_databases(tmp_path):
    server = CorvidServer(tmp_path / "data")
    url = server.start()
    try:
        names = [unique_db_name(f"mon{i}") for i in range(50)]
        for name in names:
            create_database(url, name)
        with open_store(url, names[0]) as store:
            with store.open_session() as session:
                session.store(User(name="x"), "users/1")
                session.save_changes()
        url = server.restart()
        assert open_database_files(server.proc.pid, server.data_dir) == []

        listed = requests.get(f"{url}/databases", timeout=30).json()["Databases"]
        assert {d["Name"] for d in listed} >= set(names)
        # Unloaded databases answer from the info record written when they closed at the stop.
        by_name = {d["Name"]: d for d in listed}
        assert by_name[names[0]]["DocumentsCount"] == 1 and by_name[names[0]]["CachedDatabaseInfo"] is True
        assert by_name[names[0]]["TotalSize"]["SizeInBytes"] > 0
        assert all(by_name[n]["DocumentsCount"] == 0 and by_name[n]["LoadState"] == "Unloaded" for n in names[1:])
        families = scrape(url)
        assert sample(families, "ravendb_databases_total_count") == 50
        assert sample(families, "ravendb_databases_loaded_count") == 0
        assert {s.labels["database_name"] for s in families["corvid_database_loaded"].samples} == set(names)
        assert all(s.value == 0 for s in families["corvid_database_loaded"].samples)
        assert "ravendb_database_documents_count" not in families
        for part in ("server", "databases", "indexes", "collections"):
            r = requests.get(f"{url}/admin/monitoring/v1/{part}", timeout=30)
            assert r.status_code == 200, r.text
        assert open_database_files(server.proc.pid, server.data_dir) == []

        # A request opens one database; the scrape reports it and only it.
        with open_store(url, names[0]) as store:
            with store.open_session() as session:
                assert session.load("users/1", User).name == "x"
        families = wait_until(lambda: (f := scrape(url)) and "ravendb_database_documents_count" in f and f)
        assert sample(families, "ravendb_database_documents_count", database_name=names[0]) == 1
        assert sample(families, "ravendb_databases_loaded_count") == 1
        held = open_database_files(server.proc.pid, server.data_dir)
        assert held and all(names[0] in path for path in held), held
    finally:
        server.stop()
