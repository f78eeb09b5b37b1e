"""Counters and attachments inside a bulk-insert stream, through the official client's
`counters_for(...).increment(...)` and `attachments_for(...).store(...)`, and the raw wire shape (attachment
content raw after its command). Time series in a bulk insert are refused with an error, never ignored."""

from __future__ import annotations

import base64
import hashlib
import json
import random

import pytest
from ravendb.exceptions.raven_exceptions import RavenException

from corvid_support import User, assert_error_json


def ravendb_hash(data: bytes) -> str:
    return base64.b64encode(hashlib.blake2b(data, digest_size=32).digest()).decode()


def test_counters_in_bulk_insert(store):
    rng = random.Random(5)
    expected: dict[str, dict[str, int]] = {}
    with store.bulk_insert() as bulk:
        for i in range(300):
            doc_id = f"users/{i}"
            bulk.store_as(User(name=f"u{i}"), doc_id)
            counters = bulk.counters_for(doc_id)
            for _ in range(rng.randint(0, 5)):
                name = rng.choice(["Likes", "Views", "Shares"])
                delta = rng.randint(-3, 50)
                counters.increment(name, delta)
                expected.setdefault(doc_id, {})
                expected[doc_id][name] = expected[doc_id].get(name, 0) + delta
        # More than the client's 1024 operations per counters command: it splits them.
        for _ in range(2500):
            bulk.counters_for("users/0").increment("Clicks")
        expected.setdefault("users/0", {})["Clicks"] = 2500
    for i in range(300):
        doc_id = f"users/{i}"
        with store.open_session() as session:
            got = session.counters_for(doc_id).get_all()
            assert {k.lower(): v for k, v in got.items()} == {k.lower(): v for k, v in expected.get(doc_id, {}).items()}, doc_id
            user = session.load(doc_id, User)
            names = session.advanced.get_metadata_for(user).get("@counters") or []
            assert sorted(n.lower() for n in names) == sorted(k.lower() for k in expected.get(doc_id, {}))


def test_attachments_in_bulk_insert(store):
    rng = random.Random(9)
    contents = {f"users/{i}": rng.randbytes(rng.choice([0, 1, 17, 70_000, 300_000])) for i in range(20)}
    shared = b"the same bytes for every document"
    with store.bulk_insert() as bulk:
        for doc_id, data in contents.items():
            bulk.store_as(User(name=doc_id), doc_id)
            bulk.attachments_for(doc_id).store("blob.bin", data, "application/octet-stream")
            bulk.attachments_for(doc_id).store("shared.txt", shared)
            bulk.counters_for(doc_id).increment("Downloads", len(data) % 7)
    for doc_id, data in contents.items():
        with store.open_session() as session:
            user = session.load(doc_id, User)
            assert sorted(a.name for a in session.advanced.attachments.get_names(user)) == ["blob.bin", "shared.txt"]
            with session.advanced.attachments.get(doc_id, "blob.bin") as result:
                assert result.data == data
                assert result.details.hash == ravendb_hash(data)
                assert result.details.content_type == "application/octet-stream"
                assert int(result.details.size) == len(data)
            with session.advanced.attachments.get(doc_id, "shared.txt") as result:
                assert result.data == shared
            assert session.counters_for(doc_id).get("Downloads") == len(data) % 7


def test_raw_stream_with_attachment_bytes_that_look_like_json(server_url, db_name, http):
    """The content follows its command raw; bytes like `]`, `,` and quotes inside it are content, not syntax."""
    content = b'],{"Id":"x"}\x00\xff"' * 100
    body = (
        b'[{"Id":"users/1","Type":"PUT","Document":{"Name":"a","@metadata":{"@collection":"Users"}}},'
        + b'{"Id":"users/1","Type":"AttachmentPUT","Name":"raw.bin","ContentType":"x/y","ContentLength":'
        + str(len(content)).encode()
        + b"}"
        + content
        + b',{"Id":"users/1","Type":"Counters","Counters":{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"c","Delta":4},{"Type":"Increment","CounterName":"c","Delta":-1}]}}]'
    )
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 41}, data=body)
    assert r.status_code == 201 and r.text == "", r.text
    got = http.get(f"{server_url}/databases/{db_name}/attachments", params={"id": "users/1", "name": "raw.bin"})
    assert got.status_code == 200 and got.content == content
    assert got.headers["Content-Type"] == "x/y"
    counters = http.get(f"{server_url}/databases/{db_name}/counters", params={"docId": "users/1", "counter": "c"}).json()
    assert counters["Counters"][0]["TotalValue"] == 4 - 1
    state = http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": 41}).json()
    assert state["Status"] == "Completed"
    assert (state["Result"]["DocumentsProcessed"], state["Result"]["AttachmentsProcessed"], state["Result"]["CountersProcessed"]) == (1, 1, 2)


def test_truncated_attachment_fails_and_stores_nothing_of_it(server_url, db_name, http):
    body = (
        b'[{"Id":"users/1","Type":"PUT","Document":{"Name":"a","@metadata":{"@collection":"Users"}}},'
        b'{"Id":"users/1","Type":"AttachmentPUT","Name":"cut.bin","ContentLength":1000}'
        + b"x" * 10
    )
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 42}, data=body)
    assert r.status_code == 400
    assert_error_json(r)
    got = http.get(f"{server_url}/databases/{db_name}/attachments", params={"id": "users/1", "name": "cut.bin"})
    assert got.status_code == 404


def test_counters_for_a_missing_document_fail_the_insert(server_url, db_name, http):
    body = json.dumps(
        [{"Id": "users/404", "Type": "Counters", "Counters": {"DocumentId": "users/404", "Operations": [{"Type": "Increment", "CounterName": "c", "Delta": 1}]}}]
    )
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 43}, data=body)
    assert r.status_code == 404
    assert "users/404" in assert_error_json(r)["Message"]


def test_time_series_in_bulk_insert_are_written_and_counted(server_url, db_name, http):
    body = json.dumps(
        [
            {"Id": "users/1", "Type": "PUT", "Document": {"Name": "a", "@metadata": {"@collection": "Users"}}},
            {"Id": "users/1", "Type": "TimeSeriesBulkInsert", "TimeSeries": {"Name": "HR", "TimeFormat": "UnixTimeInMs", "Appends": [[0, 1, 60], [60000, 2, 61, 5, "watches/1"]]}},
        ]
    )
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 44}, data=body)
    assert r.status_code == 201, r.text
    state = http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": 44}).json()
    assert state["Status"] == "Completed" and state["Result"]["TimeSeriesProcessed"] == 2
    got = http.get(f"{server_url}/databases/{db_name}/timeseries", params={"docId": "users/1", "name": "hr"}).json()
    assert [(e["Timestamp"], e["Values"], e["Tag"]) for e in got["Entries"]] == [
        ("1970-01-01T00:00:00.0000000Z", [60], None),
        ("1970-01-01T00:01:00.0000000Z", [61, 5], "watches/1"),
    ]

    # A series of a document that does not exist fails the insert, as in RavenDB.
    missing = json.dumps([{"Id": "users/404", "Type": "TimeSeriesBulkInsert", "TimeSeries": {"Name": "HR", "TimeFormat": "UnixTimeInMs", "Appends": [[0, 1, 1]]}}])
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 45}, data=missing)
    assert "Cannot operate on time series of a missing document" in assert_error_json(r)["Message"]


def test_bulk_insert_attachment_size_limit(server_factory):
    from corvid_support import create_database

    import requests

    srv = server_factory(extra_args=["--max-attachment-bytes", "1000"])
    create_database(srv.url, "bulklimit")

    def stream(size):
        return (
            b'[{"Id":"users/1","Type":"PUT","Document":{"Name":"a","@metadata":{"@collection":"Users"}}},'
            + b'{"Id":"users/1","Type":"AttachmentPUT","Name":"a.bin","ContentLength":'
            + str(size).encode()
            + b"}"
            + b"z" * size
            + b"]"
        )

    url = f"{srv.url}/databases/bulklimit"
    assert requests.post(f"{url}/bulk_insert", params={"id": 1}, data=stream(1000)).status_code == 201
    r = requests.post(f"{url}/bulk_insert", params={"id": 2}, data=stream(1001))
    assert r.status_code == 400 and "limit" in assert_error_json(r)["Message"]
    got = requests.get(f"{url}/attachments", params={"id": "users/1", "name": "a.bin"})
    assert got.status_code == 200 and got.content == b"z" * 1000
