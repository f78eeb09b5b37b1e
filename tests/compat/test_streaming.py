"""Streaming (`/streams/queries`, `/streams/docs`) and lazy operations (`multi_get`) through the official
client and the raw protocol: every result arrives once, in order, and the server's memory stays flat while
500k documents stream."""

from __future__ import annotations

import json

import pytest

from corvid_support import User


def _bulk(http, url, db, count, pad=0):
    commands = [
        {"Id": f"users/{i}", "Type": "PUT", "Document": {"name": f"user {i}", "age": i % 100, "pad": "x" * pad, "@metadata": {"@collection": "Users"}}}
        for i in range(count)
    ]
    r = http.post(f"{url}/databases/{db}/bulk_insert", params={"id": 1}, data=json.dumps(commands))
    assert r.status_code == 201, r.text


def _rss_anon_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon")


def test_session_stream_of_a_filtered_query_with_statistics(store, server_url, db_name, http):
    _bulk(http, server_url, db_name, 2000)
    with store.open_session() as s:
        # The first query creates the automatic index and waits for it; streaming never waits.
        expected = sorted(i for i in range(2000) if i % 100 >= 50)
        assert s.query(object_type=User).where_greater_than_or_equal("age", 50).count() == len(expected)
        stats = []
        query = s.query(object_type=User).where_greater_than_or_equal("age", 50)
        got = [r.document.name for r in s.advanced.stream_with_statistics(query, stats.append)]
    assert sorted(got) == sorted(f"user {i}" for i in expected)
    assert stats[0].total_results == len(expected)
    assert stats[0].index_name.startswith("Auto/Users/")


def test_session_stream_starting_with(store, server_url, db_name, http):
    _bulk(http, server_url, db_name, 300)
    with store.open_session() as s:
        got = [r.key for r in s.advanced.stream_starting_with("users/1", object_type=User)]
    assert got == sorted(f"users/{i}" for i in range(300) if str(i).startswith("1"))


def test_streaming_500k_documents_keeps_memory_flat(corvid_server, server_url, db_name, http):
    n = 500_000
    for start in range(0, n, 100_000):
        commands = [
            {"Id": f"users/{i}", "Type": "PUT", "Document": {"name": f"user {i}", "pad": "y" * 300, "@metadata": {"@collection": "Users"}}}
            for i in range(start, start + 100_000)
        ]
        assert http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": start + 1}, data=json.dumps(commands)).status_code == 201
    pid = corvid_server.proc.pid
    before = _rss_anon_kb(pid)
    peak = before
    seen = 0
    total_bytes = 0
    with http.post(f"{server_url}/databases/{db_name}/streams/queries", params={"format": "jsonl"}, json={"Query": "from Users"}, stream=True) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        stats = json.loads(next(lines))["Stats"]
        assert stats["TotalResults"] == n and stats["IsStale"] is False
        ids = set()
        for line in lines:
            if not line:
                continue
            total_bytes += len(line)
            item = json.loads(line)["Item"]
            ids.add(item["@metadata"]["@id"])
            seen += 1
            if seen % 50_000 == 0:
                peak = max(peak, _rss_anon_kb(pid))
    assert seen == n and len(ids) == n
    # ~180 MB of JSON went out; the server's private memory grew by far less than that.
    assert total_bytes > 150_000_000
    assert peak - before < 64 * 1024, f"server anonymous memory grew by {(peak - before) // 1024} MB while streaming"


def test_stream_docs_json_format_and_errors(server_url, db_name, http):
    _bulk(http, server_url, db_name, 50)
    r = http.get(f"{server_url}/databases/{db_name}/streams/docs", params={"startsWith": "users/", "format": "json", "pageSize": 10, "start": 5})
    assert r.status_code == 200
    body = r.json()
    assert [d["@metadata"]["@id"] for d in body["Results"]] == sorted(f"users/{i}" for i in range(50))[5:15]
    r = http.post(f"{server_url}/databases/{db_name}/streams/queries", json={"Query": "from index 'Missing'"})
    assert r.status_code == 404 and r.json()["Type"].endswith("IndexDoesNotExistException")
    r = http.post(f"{server_url}/databases/{db_name}/streams/queries", json={"Query": "from Users where"})
    assert r.status_code == 400 and r.json()["Type"].endswith("InvalidQueryException")


def test_lazy_operations_use_multi_get(store, server_url, db_name, http):
    _bulk(http, server_url, db_name, 20)
    with store.open_session() as s:
        lazy_one = s.advanced.lazily.load(["users/3"], User)
        lazy_many = s.advanced.lazily.load(["users/4", "users/5", "users/404"], User)
        lazy_query = s.query(object_type=User).where_equals("age", 7).lazily()
        lazy_count = s.query(object_type=User).count_lazily()
        before = s.advanced.number_of_requests
        assert lazy_one.value["users/3"].name == "user 3"
        assert s.advanced.number_of_requests == before + 1  # all four went in one multi_get
        many = lazy_many.value
        assert many["users/4"].name == "user 4" and many["users/404"] is None
        assert [u.name for u in lazy_query.value] == ["user 7"]
        assert lazy_count.value == 20


def test_multi_get_raw_statuses_and_bad_input(server_url, db_name, http):
    _bulk(http, server_url, db_name, 3)
    requests_ = [
        {"Url": f"/databases/{db_name}/docs", "Query": "?id=users/1", "Method": "GET", "Headers": {}},
        {"Url": f"/databases/{db_name}/docs", "Query": "?id=users/99", "Method": "GET", "Headers": {}},
        {"Url": f"/databases/{db_name}/queries", "Query": "?queryHash=1", "Method": "POST", "Headers": {}, "Content": {"Query": "from Users where"}},
    ]
    r = http.post(f"{server_url}/databases/{db_name}/multi_get", json={"Requests": requests_})
    assert r.status_code == 200, r.text
    first, missing, bad = r.json()["Results"]
    assert first["StatusCode"] == 200 and first["Result"]["Results"][0]["name"] == "user 1" and first["Headers"]["ETag"]
    assert missing["StatusCode"] == 404 and missing["Result"] is None
    assert bad["StatusCode"] == 400 and bad["Result"]["Type"].endswith("InvalidQueryException")
    # The ETag of a sub-request makes the next one a 304.
    etag = first["Headers"]["ETag"]
    again = [{**requests_[0], "Headers": {"If-None-Match": etag}}]
    r = http.post(f"{server_url}/databases/{db_name}/multi_get", json={"Requests": again})
    assert r.json()["Results"][0]["StatusCode"] == 304
    r = http.post(f"{server_url}/databases/{db_name}/multi_get", json={"Requests": [{"Url": "/databases/other/docs", "Query": ""}]})
    assert r.status_code == 400
