"""Export and import (`store.smuggler`, RavenDB's .ravendbdump) through the official Python client: a round trip
of every item type into a fresh database, a hand-written dump in RavenDB 4.x's shape, truncated and garbage
dumps, and an import repeated after a kill -9 converging on the same data."""

from __future__ import annotations

import gzip
import io
import json
import os
import time

import pytest
import requests
from ravendb.documents.indexes.definitions import IndexDefinition
from ravendb.documents.operations.compare_exchange.operations import PutCompareExchangeValueOperation
from ravendb.documents.operations.indexes import PutIndexesOperation
from ravendb.documents.operations.revisions import ConfigureRevisionsOperation, RevisionsCollectionConfiguration, RevisionsConfiguration
from ravendb.documents.smuggler.common import (
    DatabaseItemType,
    DatabaseSmugglerExportOptions,
    DatabaseSmugglerImportOptions,
)

from corvid_support import User, create_database, delete_database, open_store, unique_db_name, wait_until


def _json(http: requests.Session, url: str) -> dict:
    r = http.get(url, timeout=30)
    r.raise_for_status()
    return r.json()


def _documents(http, url, db) -> dict:
    results = _json(http, f"{url}/databases/{db}/docs?pageSize=100000")["Results"]
    out = {}
    for doc in results:
        meta = dict(doc["@metadata"])
        meta.pop("@change-vector", None)
        out[meta["@id"]] = {**doc, "@metadata": meta}
    return out


def _revisions(http, url, db, doc_id) -> list:
    results = _json(http, f"{url}/databases/{db}/revisions?id={doc_id}")["Results"]
    return [({k: v for k, v in r.items() if k != "@metadata"}, r["@metadata"]["@flags"]) for r in results]


def _counters(http, url, db, doc_id) -> dict:
    body = _json(http, f"{url}/databases/{db}/counters?docId={doc_id}")
    return {c["CounterName"]: c["TotalValue"] for c in body["Counters"] if c}


def _cmpxchg(http, url, db) -> dict:
    body = _json(http, f"{url}/databases/{db}/cmpxchg?startsWith=&pageSize=1000")
    return {item["Key"]: item["Value"] for item in body["Results"]}


def _identities(http, url, db) -> dict:
    return _json(http, f"{url}/databases/{db}/debug/identities")


def _index_names(http, url, db) -> list:
    return sorted(i["Name"] for i in _json(http, f"{url}/databases/{db}/indexes")["Results"])


def _fill(store, http, url, db) -> None:
    store.maintenance.send(ConfigureRevisionsOperation(RevisionsConfiguration(None, {"Orders": RevisionsCollectionConfiguration()})))
    with store.open_session() as session:
        for i in range(1, 51):
            session.store(User(name=f"user {i}", age=i), f"users/{i}")
        session.save_changes()
    # Collections by metadata, identities by a `users|` id, big and small attachments.
    batch = [{"Id": f"orders/{i}", "Type": "PUT", "Document": {"Total": i, "@metadata": {"@collection": "Orders"}}} for i in range(1, 6)]
    batch.append({"Id": "people|", "Type": "PUT", "Document": {"Name": "p", "@metadata": {"@collection": "People"}}})
    batch.append({"Id": "people|", "Type": "PUT", "Document": {"Name": "q", "@metadata": {"@collection": "People"}}})
    http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": batch}, timeout=30).raise_for_status()
    for i in range(1, 6):
        http.post(
            f"{url}/databases/{db}/bulk_docs",
            json={"Commands": [{"Id": f"orders/{i}", "Type": "PUT", "Document": {"Total": i * 10, "@metadata": {"@collection": "Orders"}}}]},
            timeout=30,
        ).raise_for_status()
    big = os.urandom(3 * 1024 * 1024 + 17)
    for doc_id, name, content in [("users/1", "photo.bin", big), ("users/1", "note.txt", b"hello"), ("users/2", "same.txt", b"hello"),
                                  ("orders/1", "empty", b"")]:
        r = http.put(f"{url}/databases/{db}/attachments?id={doc_id}&name={name}&contentType=application/x-test", data=content, timeout=60)
        r.raise_for_status()
    for doc_id, counters in [("users/1", {"Likes": 5, "Views": -3}), ("users/3", {"Likes": 1})]:
        ops = [{"Type": "Increment", "CounterName": n, "Delta": v} for n, v in counters.items()]
        http.post(f"{url}/databases/{db}/counters", json={"Documents": [{"DocumentId": doc_id, "Operations": ops}], "ReplyWithAllNodesValues": False},
                  timeout=30).raise_for_status()
    store.operations.send(PutCompareExchangeValueOperation("config/a", {"Mode": "fast", "N": 1}, 0))
    store.operations.send(PutCompareExchangeValueOperation("config/b", "plain text", 0))
    definition = IndexDefinition()
    definition.name = "Users/ByName"
    definition.maps = {"from u in docs.Users select new { u.name }"}
    store.maintenance.send(PutIndexesOperation(definition))
    with store.open_session() as session:
        list(session.query_collection("Users").where_equals("age", 7))  # makes Auto/Users/Byage


def _export(store, path, **options):
    operation = store.smuggler.export(DatabaseSmugglerExportOptions(**options), str(path))
    return operation.wait_for_completion()


def _import(store, path, **options):
    operation = store.smuggler.import_data(DatabaseSmugglerImportOptions(**options), str(path))
    return operation.wait_for_completion()


def test_round_trip_into_a_fresh_database_equals_the_original(store, server_url, db_name, http, tmp_path):
    _fill(store, http, server_url, db_name)
    dump = tmp_path / "db.ravendbdump"
    result = _export(store, dump)
    assert result.documents.read_count == 57
    assert result.documents.attachments.read_count == 3, "contents are deduplicated by hash"
    assert result.compare_exchange.read_count == 2
    assert gzip.open(dump).read(30).startswith(b'{"BuildVersion":')

    target = unique_db_name("smuggled")
    create_database(server_url, target)
    try:
        with open_store(server_url, target) as other:
            imported = _import(other, dump)
            assert imported.documents.read_count == 57
            assert imported.revision_documents.read_count == result.revision_documents.read_count > 0
            assert imported.counters.read_count == 3
        assert _documents(http, server_url, target) == _documents(http, server_url, db_name)
        for doc_id in ["orders/1", "orders/3", "users/1"]:
            assert _revisions(http, server_url, target, doc_id) == _revisions(http, server_url, db_name, doc_id)
        for doc_id in ["users/1", "users/3"]:
            assert _counters(http, server_url, target, doc_id) == _counters(http, server_url, db_name, doc_id)
        assert _cmpxchg(http, server_url, target) == _cmpxchg(http, server_url, db_name)
        assert _identities(http, server_url, target) == _identities(http, server_url, db_name)
        assert _index_names(http, server_url, target) == _index_names(http, server_url, db_name)
        for doc_id, name in [("users/1", "photo.bin"), ("users/2", "same.txt"), ("orders/1", "empty")]:
            a = http.get(f"{server_url}/databases/{db_name}/attachments?id={doc_id}&name={name}", timeout=60)
            b = http.get(f"{server_url}/databases/{target}/attachments?id={doc_id}&name={name}", timeout=60)
            assert a.status_code == b.status_code == 200 and a.content == b.content
        # The identity goes on from where it was.
        r = http.post(f"{server_url}/databases/{target}/bulk_docs", json={"Commands": [
            {"Id": "people|", "Type": "PUT", "Document": {"@metadata": {"@collection": "People"}}}]}, timeout=30)
        assert r.json()["Results"][0]["@id"] == "people/3"
        # The static index answers in the new database.
        def indexed():
            body = http.post(f"{server_url}/databases/{target}/queries",
                             json={"Query": "from index 'Users/ByName' where name = 'user 7'"}, timeout=30).json()
            return not body["IsStale"] and len(body["Results"]) == 1
        wait_until(indexed)
    finally:
        delete_database(server_url, target)


def test_operate_on_types_and_zstd(store, server_url, db_name, http, tmp_path):
    _fill(store, http, server_url, db_name)
    from ravendb.documents.smuggler.common import ExportCompressionAlgorithm

    dump = tmp_path / "docs-only.ravendbdump"
    result = _export(store, dump, operate_on_types={DatabaseItemType.DOCUMENTS}, compression_algorithm=ExportCompressionAlgorithm.ZSTD)
    assert result.documents.read_count == 57 and result.compare_exchange.read_count == 0
    assert dump.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    target = unique_db_name("smuggled")
    create_database(server_url, target)
    try:
        with open_store(server_url, target) as other:
            imported = _import(other, dump, operate_on_types={DatabaseItemType.DOCUMENTS, DatabaseItemType.ATTACHMENTS})
            assert imported.documents.read_count == 57
        assert _cmpxchg(http, server_url, target) == {}
        assert len(_documents(http, server_url, target)) == 57
        # No revisions were in the dump, and none were made: the configuration was not imported.
        assert _revisions(http, server_url, target, "orders/1") == []
    finally:
        delete_database(server_url, target)


def _legacy_dump() -> bytes:
    """A dump in RavenDB 4.2's shape (BuildVersion 42xxx, one `Counters` item per counter), written by hand."""
    content = b"legacy attachment"
    docs = [
        b'{"@metadata":{"@export-type":"Attachment"},"Hash":"h1","Size":%d,"Tag":"x"}' % len(content) + content,
        json.dumps({"Name": "Old", "@metadata": {"@collection": "Users", "@id": "users/old", "@flags": "HasAttachments, HasCounters",
                    "@last-modified": "2019-01-02T03:04:05.1234567Z", "@change-vector": "A:1-abc",
                    "@attachments": [{"Name": "a.txt", "Hash": "h1", "ContentType": "text/plain", "Size": len(content)}],
                    "@counters": ["Hits"], "Raven-Python-Type": "x.User"}}).encode(),
    ]
    return (
        b'{"BuildVersion":42017,"DatabaseRecord":{"DatabaseName":"old"},"Docs":[' + b",".join(docs) + b'],'
        b'"RevisionDocuments":[],"Indexes":[{"Type":"Map","IndexDefinition":{"Name":"Old/ByName","Maps":["from u in docs.Users select new { u.Name }"]}}],'
        b'"Identities":[{"Key":"users|","Value":41}],"CompareExchange":[{"Key":"k1","Value":"{\\"Object\\":{\\"V\\":1}}"}],'
        b'"Counters":[{"DocId":"users/old","Name":"Hits","Value":7,"ChangeVector":"A:2-abc"}]}'
    )


def test_a_ravendb_4x_dump_written_by_hand(store, server_url, db_name, http, tmp_path):
    dump = tmp_path / "legacy.ravendbdump"
    dump.write_bytes(gzip.compress(_legacy_dump()))
    result = _import(store, dump)
    assert result.documents.read_count == 1 and result.counters.read_count == 1 and result.indexes.read_count == 1
    doc = _documents(http, server_url, db_name)["users/old"]
    assert doc["Name"] == "Old"
    assert doc["@metadata"]["@last-modified"] == "2019-01-02T03:04:05.1234567Z"
    assert doc["@metadata"]["Raven-Python-Type"] == "x.User"
    assert [a["Name"] for a in doc["@metadata"]["@attachments"]] == ["a.txt"]
    assert _counters(http, server_url, db_name, "users/old") == {"Hits": 7}
    assert _identities(http, server_url, db_name) == {"users|": 41}
    assert _cmpxchg(http, server_url, db_name)["k1"]["Object"] == {"V": 1}
    r = http.get(f"{server_url}/databases/{db_name}/attachments?id=users/old&name=a.txt", timeout=30)
    assert r.content == b"legacy attachment"
    # Plain (uncompressed) JSON is read too, and a second import converges (counters are set, not added).
    dump.write_bytes(_legacy_dump())
    _import(store, dump)
    assert _counters(http, server_url, db_name, "users/old") == {"Hits": 7}
    assert len(_documents(http, server_url, db_name)) == 1


def _import_raw(http, url, db, data: bytes, timeout: float = 60):
    files = {"importOptions": (None, "{}", "application/json"), "file": ("name", io.BytesIO(data), "application/octet-stream")}
    return http.post(f"{url}/databases/{db}/smuggler/import?operationId=1", files=files, timeout=timeout)


def _import_cut_by_a_crash(server, http, url, db, data: bytes, after: float, timeout: float) -> str:
    """Starts importing `data` into `db`, kills the server (SIGKILL) `after` seconds later and restarts it;
    returns the restarted server's URL."""
    import threading

    def send():
        try:
            _import_raw(http, url, db, data, timeout)
        except requests.RequestException:
            pass

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(after)
    server.restart(crash=True)
    sender.join(timeout=timeout)
    return server.url


def test_truncated_and_garbage_dumps_stop_with_a_clear_error(store, server_url, db_name, http):
    whole = _legacy_dump()
    cut = whole[: whole.index(b'"Indexes"') + 20]
    r = _import_raw(http, server_url, db_name, gzip.compress(cut))
    assert r.status_code == 400, r.text
    message = r.json()["Message"]
    assert "byte" in message and "section 'Indexes'" in message and "Documents 1" in message, message
    # What was imported before the cut stays.
    assert "users/old" in _documents(http, server_url, db_name)
    r = _import_raw(http, server_url, db_name, b"\x00\x01garbage that is not a dump")
    assert r.status_code == 400 and "Malformed dump at byte" in r.json()["Message"], r.text
    r = _import_raw(http, server_url, db_name, gzip.compress(b"")[:-4])
    assert r.status_code == 400, r.text
    r = http.post(f"{server_url}/databases/{db_name}/smuggler/import", data=b"{}", timeout=30)
    assert r.status_code == 400 and "form" in r.json()["Message"]


def test_a_repeated_import_after_kill_9_converges(server_factory, tmp_path):
    server = server_factory()
    url = server.url
    source, target = "smugsrc", "smugdst"
    create_database(url, source)
    create_database(url, target)
    http = requests.Session()
    with open_store(url, source) as store:
        for start in range(0, 20000, 2000):
            batch = [{"Id": f"items/{i}", "Type": "PUT", "Document": {"N": i, "Pad": "x" * 200, "@metadata": {"@collection": "Items"}}}
                     for i in range(start, start + 2000)]
            http.post(f"{url}/databases/{source}/bulk_docs", json={"Commands": batch}, timeout=60).raise_for_status()
        http.post(f"{url}/databases/{source}/counters", json={"Documents": [{"DocumentId": "items/5", "Operations": [
            {"Type": "Increment", "CounterName": "C", "Delta": 9}]}]}, timeout=30).raise_for_status()
        dump = tmp_path / "big.ravendbdump"
        _export(store, dump)
    data = dump.read_bytes()
    # Kill the server while the import runs.
    url = _import_cut_by_a_crash(server, http, url, target, data, after=0.3, timeout=60)
    with open_store(url, target) as store:
        result = _import(store, dump)
        assert result.documents.read_count == 20000
    count = _json(http, f"{url}/databases/{target}/stats")["CountOfDocuments"]
    assert count == 20000
    assert _counters(http, url, target, "items/5") == {"C": 9}
    assert _documents(http, url, target) == _documents(http, url, source)
