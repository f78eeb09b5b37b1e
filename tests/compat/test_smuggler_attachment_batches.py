"""Attachment contents staged in bulk (decision 0056: bulk insert and import write each content, then sync a
batch's contents together before the batch commits): loaded by bulk insert, exported, imported into a fresh
database while the server is killed -9, imported again; every content must come back byte for byte and the
storage check must pass."""

from __future__ import annotations

import json
import random

import requests
from ravendb.documents.smuggler.common import DatabaseSmugglerExportOptions, DatabaseSmugglerImportOptions

from corvid_support import create_database, open_store
from test_smuggler import _import_cut_by_a_crash

DOCUMENTS = 10_000  # more than one import batch (8,192 items)
EVERY = 7  # one document in EVERY has an attachment


def _contents(seed: int) -> dict[str, bytes]:
    rng = random.Random(seed)
    out = {}
    for i in range(0, DOCUMENTS, EVERY):
        # Every tenth content is shared with another document: deduplicated by hash.
        out[f"items/{i}"] = b"shared content" * 50 if i % 10 == 3 else rng.randbytes(rng.randint(100, 12_000))
    return out


def _bulk_body(contents: dict[str, bytes]) -> bytes:
    parts = [b"["]
    for i in range(DOCUMENTS):
        doc = {"Id": f"items/{i}", "Type": "PUT", "Document": {"N": i, "@metadata": {"@collection": "Items"}}}
        parts.append((b"," if i else b"") + json.dumps(doc).encode())
    for doc_id, content in contents.items():
        head = {"Id": doc_id, "Type": "AttachmentPUT", "Name": "file.bin", "ContentType": "application/octet-stream",
                "ContentLength": len(content)}
        parts.append(b"," + json.dumps(head).encode() + content)
    parts.append(b"]")
    return b"".join(parts)


def _attachment(http, url, db, doc_id) -> bytes:
    r = http.get(f"{url}/databases/{db}/attachments", params={"id": doc_id, "name": "file.bin"}, timeout=30)
    r.raise_for_status()
    return r.content


def test_attachments_loaded_and_imported_in_batches_survive_kill_9_byte_for_byte(server_factory, tmp_path):
    server = server_factory()
    url = server.url
    source, target = "attsrc", "attdst"
    create_database(url, source)
    create_database(url, target)
    http = requests.Session()
    contents = _contents(22)
    r = http.post(f"{url}/databases/{source}/bulk_insert?id=1", data=_bulk_body(contents), timeout=120)
    assert r.status_code == 201, r.text
    with open_store(url, source) as store:
        dump = tmp_path / "attachments.ravendbdump"
        store.smuggler.export(DatabaseSmugglerExportOptions(), str(dump)).wait_for_completion()
    data = dump.read_bytes()
    url = _import_cut_by_a_crash(server, http, url, target, data, after=0.4, timeout=120)
    with open_store(url, target) as store:
        result = store.smuggler.import_data(DatabaseSmugglerImportOptions(), str(dump)).wait_for_completion()
        assert result.documents.read_count == DOCUMENTS
    stats = http.get(f"{url}/databases/{target}/stats", timeout=30).json()
    assert stats["CountOfDocuments"] == DOCUMENTS
    assert stats["CountOfAttachments"] == len(contents)
    rng = random.Random(5)
    for doc_id in rng.sample(sorted(contents), 150) + ["items/3", "items/0"]:
        if doc_id in contents:
            assert _attachment(http, url, target, doc_id) == contents[doc_id], doc_id
    server.stop()
    server.check_storage()
