"""HTTP compression: request bodies in gzip, deflate, br and zstd (the C# client gzips every JSON body) are
read as if sent plain, byte for byte; a decompression bomb meets the body limit (413) and changes nothing;
responses are compressed when the client asks, and not when it does not or the server is told not to."""

from __future__ import annotations

import gzip
import json
import zlib

import brotli
import pytest
import requests
import zstandard

from corvid_support import assert_error_json, open_store, raw_get_docs, stats

ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # HTTP's deflate is the zlib format
    "br": brotli.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
}

# Numbers whose text must survive exactly (issue 15), and enough text for a response worth compressing.
DOCUMENT_TEXT = (
    '{"Price": 1.50, "Tiny": 1E-7, "Big": 123456789012345678901234567890, "Neg": -0.0, '
    '"Name": "caf\\u00e9 \\u2603", "Notes": "' + "compressible " * 200 + '", '
    '"@metadata": {"@collection": "Items"}}'
)


def _batch(doc_id: str) -> bytes:
    return ('{"Commands": [{"Id": "' + doc_id + '", "Type": "PUT", "Document": ' + DOCUMENT_TEXT + "}]}").encode()


def _raw_document_text(url: str, db: str, doc_id: str, accept_encoding: str = "identity") -> tuple[str, requests.Response]:
    r = requests.get(f"{url}/databases/{db}/docs", params={"id": doc_id}, headers={"Accept-Encoding": accept_encoding}, timeout=10)
    assert r.status_code == 200, r.text
    return r.text, r


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_compressed_batch_reads_back_byte_for_byte(server_url, db_name, http, coding):
    doc_id = f"items/{coding}"
    body = ENCODERS[coding](_batch(doc_id))
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=body, headers={"Content-Encoding": coding, "Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    plain_id = "items/plain"
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=_batch(plain_id), headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    compressed_text, _ = _raw_document_text(server_url, db_name, doc_id)
    plain_text, _ = _raw_document_text(server_url, db_name, plain_id)
    # The stored body of the compressed write is exactly the plain write's (ids and change vectors aside).
    for number in ("1.50", "1E-7", "123456789012345678901234567890", "-0.0"):
        assert number in compressed_text
    strip = lambda text: json.loads(text)["Results"][0]  # noqa: E731
    compressed, plain = strip(compressed_text), strip(plain_text)
    for key in ("Price", "Tiny", "Big", "Neg", "Name", "Notes"):
        assert compressed[key] == plain[key]
    assert compressed_text.split('"@metadata"')[0].split('"Price"', 1)[1] == plain_text.split('"@metadata"')[0].split('"Price"', 1)[1]


def test_spelling_of_the_coding_does_not_matter(server_url, db_name, http):
    body = gzip.compress(_batch("items/spelled"))
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=body, headers={"Content-Encoding": "GZip"})
    assert r.status_code == 201, r.text
    assert raw_get_docs(http, server_url, db_name, ["items/spelled"])[0]["Price"] == 1.5


def test_compressed_single_put_and_query(server_url, db_name, http):
    body = zstandard.ZstdCompressor().compress(b'{"Name": "zed", "@metadata": {"@collection": "People"}}')
    r = http.put(f"{server_url}/databases/{db_name}/docs", params={"id": "people/1"}, data=body, headers={"Content-Encoding": "zstd"})
    assert r.status_code == 201, r.text
    query = gzip.compress(json.dumps({"Query": "from People where Name = $n", "QueryParameters": {"n": "zed"}}).encode())
    r = http.post(f"{server_url}/databases/{db_name}/queries", data=query, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 200, r.text
    assert [d["Name"] for d in r.json()["Results"]] == ["zed"]


def test_unknown_coding_is_415_and_changes_nothing(server_url, db_name, http):
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=_batch("items/x"), headers={"Content-Encoding": "compress"})
    assert r.status_code == 415, r.text
    assert "compress" in assert_error_json(r)["Message"]
    with open_store(server_url, db_name) as st:
        assert stats(st).count_of_documents == 0


def test_corrupt_stream_is_400_and_changes_nothing(server_url, db_name, http):
    good = gzip.compress(_batch("items/corrupt"))
    for body in (good[: len(good) // 2], b"\x1f\x8b\x08\x00garbage-after-a-gzip-magic"):
        r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=body, headers={"Content-Encoding": "gzip"})
        assert r.status_code == 400, (r.status_code, r.text)
        assert_error_json(r)
    with open_store(server_url, db_name) as st:
        assert stats(st).count_of_documents == 0


@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_decompression_bomb_is_413(server_factory, coding):
    """A small body that decodes to more than the body limit is refused like a large body, as it streams."""
    srv = server_factory(extra_args=["--max-body-bytes", str(1 << 20)])
    db = "bomb"
    from corvid_support import create_database

    create_database(srv.url, db)
    # 64 MiB of one repeated batch prefix: ~100 KB compressed, 64x the limit once decoded.
    inflated = b'{"Commands": [' + b" " * (64 << 20) + b"]}"
    body = ENCODERS[coding](inflated)
    assert len(body) < 1 << 20
    r = requests.post(f"{srv.url}/databases/{db}/bulk_docs", data=body, headers={"Content-Encoding": coding}, timeout=60)
    assert r.status_code == 413, (r.status_code, r.text[:300])
    assert_error_json(r)
    # The server is fine and the same request uncompressed but small still works.
    r = requests.post(f"{srv.url}/databases/{db}/bulk_docs", data=ENCODERS[coding](_batch("items/after")), headers={"Content-Encoding": coding}, timeout=10)
    assert r.status_code == 201, r.text


def test_bulk_insert_in_every_coding(server_url, db_name, http):
    for number, coding in enumerate(sorted(ENCODERS)):
        commands = [{"Id": f"bulk/{coding}/{i}", "Type": "PUT", "Document": {"N": i, "@metadata": {"@collection": "Bulk"}}} for i in range(500)]
        body = ENCODERS[coding](json.dumps(commands).encode())
        r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 900 + number}, data=body, headers={"Content-Encoding": coding})
        assert r.status_code == 201, (coding, r.text)
    with open_store(server_url, db_name) as st:
        assert stats(st).count_of_documents == 500 * len(ENCODERS)


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd", "deflate"])
def test_responses_are_compressed_when_asked(server_url, db_name, http, coding):
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=_batch("items/big"))
    assert r.status_code == 201, r.text
    raw = requests.get(
        f"{server_url}/databases/{db_name}/docs", params={"id": "items/big"}, headers={"Accept-Encoding": coding}, stream=True, timeout=10
    )
    assert raw.headers.get("Content-Encoding") == coding
    encoded = raw.raw.read(decode_content=False)
    decoders = {
        "gzip": gzip.decompress,
        "deflate": zlib.decompress,
        "br": brotli.decompress,
        "zstd": lambda data: zstandard.ZstdDecompressor().decompressobj().decompress(data),
    }
    plain, _ = _raw_document_text(server_url, db_name, "items/big")
    assert decoders[coding](encoded).decode() == plain
    assert len(encoded) < len(plain.encode()) / 4


def test_responses_are_plain_when_not_asked_small_or_disabled(server_url, db_name, http, server_factory):
    http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=_batch("items/big")).raise_for_status()
    _, r = _raw_document_text(server_url, db_name, "items/big", accept_encoding="identity")
    assert "Content-Encoding" not in r.headers
    small = requests.get(f"{server_url}/build/version", headers={"Accept-Encoding": "gzip"}, timeout=10)
    assert small.status_code == 200 and "Content-Encoding" not in small.headers
    srv = server_factory(extra_args=["--http-response-compression", "false"])
    from corvid_support import create_database

    create_database(srv.url, "plain")
    requests.post(f"{srv.url}/databases/plain/bulk_docs", data=_batch("items/big"), timeout=10).raise_for_status()
    _, r = _raw_document_text(srv.url, "plain", "items/big", accept_encoding="gzip, br, zstd")
    assert "Content-Encoding" not in r.headers


def test_streamed_query_results_are_compressed(server_url, db_name, http):
    commands = [{"Id": f"s/{i}", "Type": "PUT", "Document": {"N": i, "Text": "x" * 100, "@metadata": {"@collection": "S"}}} for i in range(300)]
    http.post(f"{server_url}/databases/{db_name}/bulk_docs", json={"Commands": commands}).raise_for_status()
    r = requests.get(
        f"{server_url}/databases/{db_name}/streams/queries", params={"query": "from S"}, headers={"Accept-Encoding": "gzip"}, timeout=30
    )
    assert r.status_code == 200, r.text
    assert r.headers.get("Content-Encoding") == "gzip"
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert sorted(line["Item"]["N"] for line in lines if "Item" in line) == list(range(300))
