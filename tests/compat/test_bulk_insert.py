"""Bulk insert through the official client (100k documents) and the raw protocol: gzip, aborts that keep
every committed batch, bad streams, and skipOverwriteIfUnchanged."""

from __future__ import annotations

import gzip
import json
import socket
import time
from urllib.parse import urlparse

import pytest

from corvid_support import User, assert_error_json


def _count(http, url, db, collection="Users"):
    r = http.get(f"{url}/databases/{db}/collections/stats")
    return r.json()["Collections"].get(collection, 0)


def test_official_bulk_insert_of_100k_documents(store, server_url, db_name, http):
    n = 100_000
    with store.bulk_insert() as bulk:
        for i in range(n):
            bulk.store_as(User(name=f"user {i}", age=i % 90), f"users/{i}")
    assert _count(http, server_url, db_name) == n
    for i in (0, 1, 4242, 99_999):
        with store.open_session() as s:
            u = s.load(f"users/{i}", User)
            assert (u.name, u.age) == (f"user {i}", i % 90)
    # The documents are queryable like any other.
    with store.open_session() as s:
        assert s.query(object_type=User).where_equals("age", 7).count() == len([i for i in range(n) if i % 90 == 7])


def _commands(start, count):
    return [{"Id": f"users/{i}", "Type": "PUT", "Document": {"Name": f"u{i}", "@metadata": {"@collection": "Users"}}} for i in range(start, start + count)]


def test_gzip_stream(server_url, db_name, http):
    body = gzip.compress(json.dumps(_commands(0, 5000)).encode())
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 77}, data=body, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 201 and r.text == "", r.text
    assert _count(http, server_url, db_name) == 5000
    state = http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": 77}).json()
    assert state["Status"] == "Completed" and state["Result"]["Total"] == 5000


def test_an_aborted_stream_keeps_every_committed_batch(server_url, db_name, http):
    """The client sends 20,000 documents and then dies mid-command: the batches completed before stay (the
    server commits 8,192 documents per batch), nothing half-written appears, and the server is fine."""
    url = urlparse(server_url)
    head = json.dumps(_commands(0, 20_000))[:-1] + ', {"Id": "users/broken", "Type": "PUT", "Document": {"Na'
    with socket.create_connection((url.hostname, url.port)) as sock:
        sock.sendall(
            f"POST /databases/{db_name}/bulk_insert?id=5 HTTP/1.1\r\nHost: {url.netloc}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        data = head.encode()
        sock.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        time.sleep(0.5)
    deadline = time.time() + 10
    while http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": 5}).json()["Status"] == "InProgress":
        assert time.time() < deadline
        time.sleep(0.05)
    state = http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": 5}).json()
    assert state["Status"] == "Faulted"
    r = http.get(f"{server_url}/databases/{db_name}/docs", params={"startsWith": "users/", "pageSize": 100000, "metadataOnly": "true"})
    present = {int(d["@metadata"]["@id"].split("/")[1]) for d in r.json()["Results"] if d["@metadata"]["@id"] != "users/broken"}
    assert present == set(range(16_384)), len(present)
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 6}, data=json.dumps(_commands(0, 10)))
    assert r.status_code == 201


@pytest.mark.parametrize(
    "body,expect",
    [
        (b"", "empty"),
        (b'{"Id": "users/1"}', "expected '['"),
        # A missing comma is tolerated (as RavenDB does); the second command is then refused for what it lacks.
        (b'[{"Id": "users/1", "Type": "PUT", "Document": {"a": 1}} {"Id": "users/2"}]', "needs a 'Document' object"),
        (b'[{"Id": "users/1", "Type": "PUT", "Document": {"a": 1}} 7]', "expected ','"),
        (b'[{"Id": "users/1", "Type": "PUT", "Document": {"a": tru}}]', "not valid JSON"),
        (b'[{"Id": "users/1", "Type": "TimeSeriesBulkInsert", "TimeSeries": {}}]', "Missing 'Name'"),
        (b'[{"Id": "users/1", "Type": "Revisions"}]', "unknown type"),
        (b'[{"Id": "users/1", "Type": "Counters", "Counters": {}}]', "does not exist"),
        (b'[{"Type": "PUT", "Document": {"a": 1}}]', "needs a non-empty 'Id'"),
    ],
)
def test_bad_streams_are_refused(server_url, db_name, http, body, expect):
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 9}, data=body)
    assert expect in assert_error_json(r)["Message"], r.text
    assert _count(http, server_url, db_name) == 0


def test_skip_overwrite_if_unchanged_keeps_change_vectors(server_url, db_name, http):
    body = json.dumps(_commands(0, 10))
    assert http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 1}, data=body).status_code == 201
    before = http.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/3"}).json()["Results"][0]["@metadata"]["@change-vector"]
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 2, "skipOverwriteIfUnchanged": "true"}, data=body)
    assert r.status_code == 201
    after = http.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/3"}).json()["Results"][0]["@metadata"]["@change-vector"]
    assert before == after
    assert http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 3}, data=body).status_code == 201
    again = http.get(f"{server_url}/databases/{db_name}/docs", params={"id": "users/3"}).json()["Results"][0]["@metadata"]["@change-vector"]
    assert again != before
