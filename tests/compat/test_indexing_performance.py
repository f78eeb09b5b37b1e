"""Indexing performance (`/indexes/performance` and its live websocket) and repeatable indexing traces
(`/admin/indexes/trace` recorded live, replayed by `corvid replay-trace` with other commit points)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from urllib.parse import urlparse

import websocket

from corvid_support import corvid_bin, wait_until


def wait_for_indexing(http, url, db, timeout=30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        stats = http.get(f"{url}/databases/{db}/stats").json()
        if all(not i["IsStale"] for i in stats["Indexes"]) or time.monotonic() > deadline:
            return stats
        time.sleep(0.05)


def put_index(http, url, db, name, maps, reduce=None):
    definition = {"Name": name, "Maps": maps, "Type": "JavaScriptMap" if reduce is None else "JavaScriptMapReduce"}
    if reduce is not None:
        definition["Reduce"] = reduce
    r = http.put(f"{url}/databases/{db}/admin/indexes", json={"Indexes": [definition]})
    assert r.status_code in (200, 201), r.text


def write_batch(http, url, db, commands):
    r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands})
    assert r.status_code == 201, r.text


def put(doc_id, body, collection="Users"):
    return {"Type": "PUT", "Id": doc_id, "Document": {**body, "@metadata": {"@collection": collection}}, "ChangeVector": None}


def delete(doc_id):
    return {"Type": "DELETE", "Id": doc_id, "ChangeVector": None}


def test_performance_batches_sum_to_the_documents_indexed(http, server_url, db_name):
    put_index(http, server_url, db_name, "Users/ByName", ["map('Users', u => ({ Name: u.Name, Age: u.Age }))"])
    total = 0
    for round_no in range(6):
        write_batch(http, server_url, db_name, [put(f"users/{round_no}-{i}", {"Name": f"n{i}", "Age": i}) for i in range(40)])
        total += 40
        wait_for_indexing(http, server_url, db_name)
    r = http.get(f"{server_url}/databases/{db_name}/indexes/performance", params={"name": "Users/ByName"})
    assert r.status_code == 200, r.text
    results = r.json()["Results"]
    assert [x["Name"] for x in results] == ["Users/ByName"]
    batches = results[0]["Performance"]
    assert batches, results
    assert sum(b["InputCount"] for b in batches) == total
    assert sum(b["SuccessCount"] for b in batches) == total
    assert sum(b["OutputCount"] for b in batches) == total
    assert results[0]["Etag"] > 0
    ids = [b["Id"] for b in batches]
    assert ids == sorted(ids)
    for batch in batches:
        assert batch["DurationInMs"] >= 0 and batch["Started"] and batch["Completed"]
        stages = {op["Name"]: op for op in batch["Details"]["Operations"]}
        assert {"Storage/DocumentRead", "Map", "Storage/Commit", "Merge"} <= set(stages)
        assert stages["Map"]["MapDetails"]["BatchCompleteReason"] == "No more documents to index"
        assert stages["Map"]["MapDetails"]["ProcessWorkingSet"] > 0
    # Every index when no name is given; an unknown one is RavenDB's 404.
    all_results = http.get(f"{server_url}/databases/{db_name}/indexes/performance").json()["Results"]
    assert "Users/ByName" in [x["Name"] for x in all_results]
    assert http.get(f"{server_url}/databases/{db_name}/indexes/performance", params={"name": "Nope"}).status_code == 404


def test_map_reduce_batches_report_reduce_work(http, server_url, db_name):
    put_index(
        http, server_url, db_name, "Users/CountByAge",
        ["map('Users', u => ({ Age: u.Age, Count: 1 }))"],
        "groupBy(x => x.Age).aggregate(g => ({ Age: g.key, Count: g.values.reduce((a, v) => a + v.Count, 0) }))",
    )
    write_batch(http, server_url, db_name, [put(f"users/{i}", {"Age": i % 5}) for i in range(30)])
    wait_for_indexing(http, server_url, db_name)
    batches = http.get(f"{server_url}/databases/{db_name}/indexes/performance", params={"name": "Users/CountByAge"}).json()["Results"][0]["Performance"]
    assert sum(b["InputCount"] for b in batches) == 30
    reduces = [op for b in batches for op in b["Details"]["Operations"] if op["Name"] == "Reduce"]
    assert reduces and sum(op["ReduceDetails"]["ReduceAttempts"] for op in reduces) >= 5


def test_live_performance_sends_the_batches(http, server_url, db_name):
    put_index(http, server_url, db_name, "Users/Live", ["map('Users', u => ({ Name: u.Name }))"])
    host = urlparse(server_url).netloc
    ws = websocket.create_connection(f"ws://{host}/databases/{db_name}/indexes/performance/live", timeout=10)
    try:
        first = json.loads(ws.recv())
        assert "Users/Live" in [x["Name"] for x in first]
        write_batch(http, server_url, db_name, [put(f"users/{i}", {"Name": "x"}) for i in range(10)])
        seen = 0
        deadline = time.monotonic() + 10
        while seen < 10 and time.monotonic() < deadline:
            frame = json.loads(ws.recv())
            seen += sum(b["InputCount"] for x in frame if x["Name"] == "Users/Live" for b in x["Performance"])
        assert seen == 10
    finally:
        ws.close()


def replay(trace_file, *options):
    out = subprocess.run([str(corvid_bin()), "replay-trace", trace_file, *options], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    match = re.search(r"^digest: (\S+)$", out.stdout, re.M)
    assert match, out.stdout
    return match.group(1), out.stdout


def traced_workload(http, url, db):
    """Writes, updates and deletes in several batches, waiting for the index between them."""
    write_batch(http, url, db, [put(f"users/{i}", {"Name": f"user {i}", "Age": i % 7, "Tags": ["a", f"t{i % 3}"]}) for i in range(60)])
    wait_for_indexing(http, url, db)
    write_batch(http, url, db, [put(f"users/{i}", {"Name": f"renamed {i}", "Age": 100 + i}) for i in range(0, 60, 4)])
    write_batch(http, url, db, [delete(f"users/{i}") for i in range(1, 60, 5)])
    wait_for_indexing(http, url, db)
    write_batch(http, url, db, [put(f"users/{i}", {"Name": f"back {i}", "Age": 1}) for i in range(1, 30, 5)])
    write_batch(http, url, db, [put(f"companies/{i}", {"Name": f"c{i}"}, "Companies") for i in range(5)])
    wait_for_indexing(http, url, db)


def trace(http, url, db, name, action):
    r = http.post(f"{url}/databases/{db}/admin/indexes/trace", params={"name": name, "action": action})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_replayed_trace_gives_the_live_index_digest_with_any_commit_frequency(http, server_url, db_name):
    put_index(http, server_url, db_name, "Users/Search", ["map('Users', u => ({ Name: u.Name, Age: u.Age, Tags: u.Tags }))"])
    put_index(
        http, server_url, db_name, "Users/ByAge",
        ["map('Users', u => ({ Age: u.Age, Count: 1 }))"],
        "groupBy(x => x.Age).aggregate(g => ({ Age: g.key, Count: g.values.reduce((a, v) => a + v.Count, 0) }))",
    )
    wait_for_indexing(http, server_url, db_name)
    started = [trace(http, server_url, db_name, name, "start") for name in ("Users/Search", "Users/ByAge")]
    assert all(s["File"].endswith(".trace") for s in started)
    # A second start of the same index is refused while it is traced.
    assert http.post(f"{server_url}/databases/{db_name}/admin/indexes/trace", params={"name": "Users/Search", "action": "start"}).status_code >= 400
    traced_workload(http, server_url, db_name)
    for name in ("Users/Search", "Users/ByAge"):
        stopped = trace(http, server_url, db_name, name, "stop")
        assert stopped["Batches"] >= 3, stopped
        live = stopped["Digest"]
        for options in ([], ["--commit-every", "1"], ["--commit-every", "7"], ["--commit-every", "1000"], ["--commit-every", "3", "--restart-every", "2"]):
            digest, report = replay(stopped["File"], *options)
            assert digest == live, f"{name} {options}: replay {digest} != live {live}\n{report}"
    # The digest changes with the content: a digest of nothing differs.
    assert not live.startswith("0:")


def test_replay_trace_refuses_bad_arguments_and_files(tmp_path):
    out = subprocess.run([str(corvid_bin()), "replay-trace", "--commit-every", "x"], capture_output=True, text=True)
    assert out.returncode == 2
    bad = tmp_path / "bad.trace"
    bad.write_text("{\"not\": \"a trace\"}\n")
    out = subprocess.run([str(corvid_bin()), "replay-trace", str(bad)], capture_output=True, text=True)
    assert out.returncode == 1 and "bad.trace" in out.stderr
