"""Bad input over raw HTTP: every rejection is a 4xx with RavenDB error JSON, stores nothing, and the server keeps serving."""

from __future__ import annotations

import json

import pytest
import requests

from corvid_support import assert_error_json, create_database, doc_url, open_store, raw_get_docs, stats

MAX_ID_BYTES = 512


def _count(url: str, db: str) -> int:
    with open_store(url, db) as st:
        return stats(st).count_of_documents


def _assert_still_serves(http, url: str, db: str) -> None:
    """The server still answers: build version, a write and a read in the same database."""
    assert http.get(f"{url}/build/version", timeout=10).status_code == 200
    r = http.put(doc_url(url, db, "health/check"), json={"ok": True}, timeout=10)
    assert r.status_code == 201, r.text
    assert raw_get_docs(http, url, db, ["health/check"])[0]["ok"] is True
    assert http.delete(doc_url(url, db, "health/check"), timeout=10).status_code == 204


def _bulk(http, url, db, data: bytes | str):
    return http.post(f"{url}/databases/{db}/bulk_docs", data=data, timeout=10)


@pytest.mark.parametrize(
    "body",
    [
        b'{"Commands": [{"Id": "users/1", "Type": "PUT", "Document": {"a": 1',  # truncated
        b"this is not json",
        b'{"Commands": [{"Id": "users/1", "Type": "PUT", "Document": {"a": 1}},]}',  # trailing comma
        b'{"Commands": "not a list"}',
        b"\xff\xfe\x00garbage",
        b"",
    ],
    ids=["truncated", "text", "trailing-comma", "commands-not-list", "binary", "empty"],
)
def test_malformed_bulk_docs(server_url, db_name, http, body):
    """Malformed batch JSON -> 400 with Type and Message; nothing stored."""
    r = _bulk(http, server_url, db_name, body)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert_error_json(r)
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


def test_malformed_single_put(server_url, db_name, http):
    """PUT /docs with a body that is not a JSON object -> 400 error JSON; nothing stored."""
    for body in (b'{"a": ', b"[1, 2, 3]", b'"just a string"'):
        r = http.put(doc_url(server_url, db_name, "users/bad"), data=body)
        assert r.status_code == 400, (body, r.status_code, r.text[:300])
        assert_error_json(r)
    assert raw_get_docs(http, server_url, db_name, ["users/bad"]) == [None]
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


def test_unknown_command_type_in_batch(server_url, db_name, http):
    """An unknown command Type -> 400; the valid PUT before it in the same batch is not stored."""
    batch = {
        "Commands": [
            {"Id": "users/ok", "Type": "PUT", "ChangeVector": None, "Document": {"a": 1}},
            {"Id": "users/x", "Type": "FROBNICATE", "ChangeVector": None},
        ]
    }
    r = _bulk(http, server_url, db_name, json.dumps(batch))
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert_error_json(r)
    assert raw_get_docs(http, server_url, db_name, ["users/ok", "users/x"]) == [None, None]
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


def test_put_command_without_document(server_url, db_name, http):
    """A PUT command with no Document -> 400; nothing stored."""
    batch = {"Commands": [{"Id": "users/nodoc", "Type": "PUT", "ChangeVector": None}]}
    r = _bulk(http, server_url, db_name, json.dumps(batch))
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert_error_json(r)
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


@pytest.mark.parametrize("extra", [1, 100])
def test_id_too_long_rejected(server_url, db_name, http, extra):
    """An id longer than 512 bytes -> 4xx error JSON, by single PUT and in a batch; nothing stored."""
    long_id = "users/" + "x" * (MAX_ID_BYTES - len("users/") + extra)
    assert len(long_id.encode()) == MAX_ID_BYTES + extra

    r = http.put(doc_url(server_url, db_name, long_id), json={"a": 1})
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert_error_json(r)

    batch = {
        "Commands": [
            {"Id": "users/short", "Type": "PUT", "ChangeVector": None, "Document": {"a": 1}},
            {"Id": long_id, "Type": "PUT", "ChangeVector": None, "Document": {"a": 2}},
        ]
    }
    r = _bulk(http, server_url, db_name, json.dumps(batch))
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert_error_json(r)
    assert raw_get_docs(http, server_url, db_name, ["users/short"]) == [None]
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


def test_id_too_long_multibyte(server_url, db_name, http):
    """The id limit is in UTF-8 bytes: 300 two-byte characters (600 bytes) are rejected."""
    long_id = "é" * 300
    r = http.put(doc_url(server_url, db_name, long_id), json={"a": 1})
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert_error_json(r)
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


def test_id_of_max_length_accepted(server_url, db_name, http):
    """An id of exactly 512 bytes is valid and round-trips (case-insensitively)."""
    doc_id = "users/" + "Ab" * ((MAX_ID_BYTES - len("users/")) // 2)
    assert len(doc_id.encode()) == MAX_ID_BYTES
    r = http.put(doc_url(server_url, db_name, doc_id), json={"a": 1})
    assert r.status_code == 201, (r.status_code, r.text[:300])
    assert r.json()["Id"] == doc_id
    got = raw_get_docs(http, server_url, db_name, [doc_id.lower()])[0]
    assert got["@metadata"]["@id"] == doc_id


def test_empty_id_rejected(server_url, db_name, http):
    """PUT /docs with an empty or missing id -> 400 error JSON; nothing stored."""
    for url in (
        f"{server_url}/databases/{db_name}/docs?id=",
        f"{server_url}/databases/{db_name}/docs",
    ):
        r = http.put(url, json={"a": 1})
        assert r.status_code == 400, (url, r.status_code, r.text[:300])
        assert_error_json(r)
    assert _count(server_url, db_name) == 0
    _assert_still_serves(http, server_url, db_name)


def test_oversized_body_413(server_factory, http):
    """With --max-body-bytes 1024, a 4 KB body -> 413 error JSON (single PUT and batch); nothing stored."""
    srv = server_factory(extra_args=["--max-body-bytes", "1024"])
    db = "bodylimit"
    create_database(srv.url, db)
    big = {"payload": "x" * 4096}

    r = http.put(doc_url(srv.url, db, "big/1"), json=big, timeout=10)
    assert r.status_code == 413, (r.status_code, r.text[:300])
    assert_error_json(r)

    batch = {"Commands": [{"Id": "big/2", "Type": "PUT", "ChangeVector": None, "Document": big}]}
    try:
        r = _bulk(http, srv.url, db, json.dumps(batch))
    except requests.ConnectionError as e:  # the server may close early, but must then still serve
        pytest.fail(f"server dropped the connection instead of answering 413: {e}")
    assert r.status_code == 413, (r.status_code, r.text[:300])
    assert_error_json(r)

    assert raw_get_docs(http, srv.url, db, ["big/1", "big/2"]) == [None, None]
    assert _count(srv.url, db) == 0
    small = http.put(doc_url(srv.url, db, "small/1"), json={"payload": "x" * 100}, timeout=10)
    assert small.status_code == 201, small.text
    _assert_still_serves(http, srv.url, db)


def test_unknown_route_is_4xx_json(server_url, db_name, http):
    """An unknown path -> 400/404 and never a crash; error bodies (if any) are JSON."""
    r = http.get(f"{server_url}/databases/{db_name}/no-such-endpoint")
    assert r.status_code in (400, 404), r.status_code
    if r.content:
        assert_error_json(r)
    _assert_still_serves(http, server_url, db_name)


def _put(http, url, db, doc_id, body):
    r = http.put(doc_url(url, db, doc_id), json=body, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()["ChangeVector"]


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
def test_non_ascii_if_match_is_400_and_changes_nothing(server_url, db_name, http, method):
    """An If-Match the server cannot read is refused, never taken as absent (which would make the write
    unconditional)."""
    _put(http, server_url, db_name, "guarded/1", {"v": 1})
    body = {"v": 2} if method == "PUT" else {"Patch": {"Script": "this.v = 3", "Values": {}}} if method == "PATCH" else None
    r = http.request(
        method, doc_url(server_url, db_name, "guarded/1"), json=body, headers={"If-Match": "ü:1-€".encode()}, timeout=10
    )
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert "If-Match" in assert_error_json(r)["Message"] or "if-match" in r.json()["Message"]
    assert raw_get_docs(http, server_url, db_name, ["guarded/1"])[0]["v"] == 1


def test_non_ascii_if_none_match_is_400(server_url, db_name, http):
    _put(http, server_url, db_name, "cached/1", {"v": 1})
    r = http.get(doc_url(server_url, db_name, "cached/1"), headers={"If-None-Match": "\xff\xfe".encode("latin-1")}, timeout=10)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert_error_json(r)


@pytest.mark.parametrize("encoded", ["bad/%FF", "bad/%FE", "bad%C3"])
def test_ids_that_are_not_utf8_once_decoded_are_400(server_url, db_name, http, encoded):
    """`bad/%FF` and `bad/%FE` must not both decode to `bad/\\ufffd` and overwrite each other."""
    r = http.put(f"{server_url}/databases/{db_name}/docs?id={encoded}", json={"a": 1}, timeout=10)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert "UTF-8" in assert_error_json(r)["Message"]
    r = http.get(f"{server_url}/databases/{db_name}/docs?id={encoded}", timeout=10)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert _count(server_url, db_name) == 0


def test_other_query_parameters_that_are_not_utf8_are_400(server_url, db_name, http):
    _put(http, server_url, db_name, "users/1", {"v": 1})
    for url in (
        f"{server_url}/databases/{db_name}/docs?startsWith=us%FF",
        f"{server_url}/databases/{db_name}/attachments?id=users/1&name=a%FF",
        f"{server_url}/databases/{db_name}/counters?docId=users/1&counter=c%FE",
        f"{server_url}/databases?name=%FF",
    ):
        r = http.get(url, timeout=10)
        assert r.status_code == 400, (url, r.status_code, r.text[:300])
        assert_error_json(r)


def test_a_database_name_that_is_not_utf8_is_an_error_json(server_url, http):
    for method in ("GET", "PUT"):
        r = http.request(method, f"{server_url}/databases/%FF/docs?id=a", json={}, timeout=10)
        assert r.status_code == 400, (r.status_code, r.text[:300])
        assert_error_json(r)


def test_multi_get_sub_request_with_an_invalid_header_is_refused(server_url, db_name, http):
    _put(http, server_url, db_name, "users/1", {"v": 1})
    body = {"Requests": [{"Url": f"/databases/{db_name}/docs", "Query": "?id=users/1", "Headers": {"If-None-Match": "ü"}}]}
    r = http.post(f"{server_url}/databases/{db_name}/multi_get", json=body, timeout=10)
    # Refused as a whole or as the sub-request, but never answered as if the header were absent.
    if r.status_code == 200:
        assert r.json()["Results"][0]["StatusCode"] == 400, r.text[:300]
    else:
        assert r.status_code == 400, (r.status_code, r.text[:300])
        assert_error_json(r)


MAX_NAME_BYTES = 512
LONG_NAME = "n" * 2000


def _assert_names_limit(r):
    assert r.status_code == 400, (r.status_code, r.text[:300])
    message = assert_error_json(r)["Message"]
    assert str(MAX_NAME_BYTES) in message and "2000" in message, message


def _metadata(http, url, db, doc_id):
    return raw_get_docs(http, url, db, [doc_id])[0]["@metadata"]


def test_long_attachment_names_are_400_naming_the_limit(server_url, db_name, http):
    _put(http, server_url, db_name, "files/1", {"v": 1})
    base = f"{server_url}/databases/{db_name}/attachments?id=files/1"
    _assert_names_limit(http.put(f"{base}&name={LONG_NAME}", data=b"content", timeout=10))
    _assert_names_limit(http.get(f"{base}&name={LONG_NAME}", timeout=10))
    _assert_names_limit(http.delete(f"{base}&name={LONG_NAME}", timeout=10))
    batch = {"Commands": [{"Id": "files/1", "Type": "AttachmentPUT", "Name": LONG_NAME, "ContentType": ""}]}
    _assert_names_limit(_bulk(http, server_url, db_name, json.dumps(batch)))
    assert "@attachments" not in _metadata(http, server_url, db_name, "files/1")

    # A name of exactly the limit is stored.
    longest = "é" * (MAX_NAME_BYTES // 2)
    r = http.put(f"{base}&name={requests.utils.quote(longest)}", data=b"content", timeout=10)
    assert r.status_code == 201, r.text
    assert [a["Name"] for a in _metadata(http, server_url, db_name, "files/1")["@attachments"]] == [longest]


def test_long_counter_names_are_400_naming_the_limit(server_url, db_name, http):
    _put(http, server_url, db_name, "counted/1", {"v": 1})
    ops = {"Documents": [{"DocumentId": "counted/1", "Operations": [{"Type": "Increment", "CounterName": LONG_NAME, "Delta": 1}]}]}
    _assert_names_limit(http.post(f"{server_url}/databases/{db_name}/counters", json=ops, timeout=10))
    batch = {"Commands": [{"Id": "counted/1", "Type": "Counters", "Counters": ops["Documents"][0]}]}
    _assert_names_limit(_bulk(http, server_url, db_name, json.dumps(batch)))
    r = http.get(f"{server_url}/databases/{db_name}/counters?docId=counted/1&counter={LONG_NAME}", timeout=10)
    _assert_names_limit(r)
    patch = {"Patch": {"Script": f"incrementCounter(this, '{LONG_NAME}', 1)", "Values": {}}}
    r = http.patch(doc_url(server_url, db_name, "counted/1"), json=patch, timeout=10)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert str(MAX_NAME_BYTES) in assert_error_json(r)["Message"]
    assert "@counters" not in _metadata(http, server_url, db_name, "counted/1")

    longest = "c" * MAX_NAME_BYTES
    ops["Documents"][0]["Operations"][0]["CounterName"] = longest
    r = http.post(f"{server_url}/databases/{db_name}/counters", json=ops, timeout=10)
    assert r.status_code == 200, r.text
    assert _metadata(http, server_url, db_name, "counted/1")["@counters"] == [longest]
