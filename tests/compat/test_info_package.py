"""GET /admin/debug/info-package: one zip with server and per-database parts."""

from __future__ import annotations

import io
import json
import zipfile


def test_info_package_unzips_with_each_part(http, server_url, db_name):
    r = http.put(f"{server_url}/databases/{db_name}/docs", params={"id": "users/1"}, json={"Name": "a", "@metadata": {"@collection": "Users"}})
    assert r.status_code == 201
    r = http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": [{"Name": "Users/ByName", "Maps": ["map('Users', u => ({ Name: u.Name }))"]}]})
    assert r.status_code in (200, 201), r.text
    r = http.get(f"{server_url}/admin/debug/info-package")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/zip"
    package = zipfile.ZipFile(io.BytesIO(r.content))
    assert package.testzip() is None
    names = set(package.namelist())
    for part in ("server/metrics.json", "server/threads.json", "server/memory.json", "server/settings.txt", "server/databases.json"):
        assert part in names, sorted(names)
    for part in ("stats.json", "indexes-stats.json", "indexes-performance.json", "indexes-errors.json", "merger.json", "io-metrics.json", "notifications.json"):
        assert f"databases/{db_name}/{part}" in names, sorted(names)
    threads = json.loads(package.read("server/threads.json"))
    thread_names = {t["Name"] for t in threads["Threads"]}
    assert threads["Count"] == len(threads["Threads"]) > 1
    assert any(n.startswith("merger") for n in thread_names), thread_names
    memory = json.loads(package.read("server/memory.json"))
    assert memory["Process"]["VmRSS"] > 0
    assert any(m["File"].endswith(".mdb") and m["MappedBytes"] > 0 for m in memory["LmdbMaps"]), memory["LmdbMaps"][:3]
    stats = json.loads(package.read(f"databases/{db_name}/stats.json"))
    assert stats["CountOfDocuments"] == 1
    indexes = json.loads(package.read(f"databases/{db_name}/indexes-stats.json"))
    assert [i["Name"] for i in indexes["Results"]] == ["Users/ByName"]
    io_metrics = json.loads(package.read(f"databases/{db_name}/io-metrics.json"))
    documents = [e for e in io_metrics["Environments"] if e["Type"] == "Documents"]
    assert any(e["Type"] == "JournalWrite" for f in documents[0]["Files"] for e in f["Recent"]), io_metrics
    settings = package.read("server/settings.txt").decode()
    assert "data_dir" in settings
    metrics = json.loads(package.read("server/metrics.json"))
    assert db_name in metrics["Databases"]
