"""Revisions through the official Python client: the record's configuration, revisions kept with every
document change (lists computed here from the writes and deletes each test made), trimming, the bin, forced
revisions, reverts, counters and attachments in revisions, bad input, and a kill -9 during revision writes."""

from __future__ import annotations

import datetime
import threading
import time
from datetime import timedelta

import pytest
import requests
from ravendb import DocumentStore
from ravendb.documents.operations.revisions import (
    ConfigureRevisionsOperation,
    DeleteRevisionsOperation,
    RevertRevisionsByIdOperation,
    RevisionsCollectionConfiguration,
    RevisionsConfiguration,
)
from ravendb.documents.operations.counters import CounterOperation, CounterOperationType, DocumentCountersOperation
from ravendb.serverwide.operations.revisions import ConfigureRevisionsForConflictsOperation

from corvid_support import User, create_database, open_store, stats, wait_until


def configure(store: DocumentStore, default: RevisionsCollectionConfiguration = None, collections: dict = None) -> None:
    store.maintenance.send(ConfigureRevisionsOperation(RevisionsConfiguration(default, collections)))


def keep_all() -> RevisionsCollectionConfiguration:
    return RevisionsCollectionConfiguration()


def record(http: requests.Session, url: str, db: str) -> dict:
    response = http.get(f"{url}/admin/databases", params={"name": db})
    assert response.status_code == 200
    return response.json()


def save(store: DocumentStore, doc_id: str, name: str) -> None:
    with store.open_session() as session:
        session.store(User(name=name), doc_id)
        session.save_changes()


def delete(store: DocumentStore, doc_id: str) -> None:
    with store.open_session() as session:
        session.delete(doc_id)
        session.save_changes()


def names_of(store: DocumentStore, doc_id: str, page_size: int = 100) -> list:
    """The revisions of a document, newest first: the name, or None for a delete revision."""
    with store.open_session() as session:
        metadata = session.advanced.revisions.get_metadata_for(doc_id, page_size=page_size)
        revisions = session.advanced.revisions.get_for(doc_id, dict, page_size=page_size)
    out = []
    for meta, revision in zip(metadata, revisions):
        out.append(None if "DeleteRevision" in meta["@flags"] else revision["name"])
    return out


def test_the_configuration_is_kept_in_the_record(store, server_url, db_name, http):
    default = RevisionsCollectionConfiguration(minimum_revisions_to_keep=5, maximum_revisions_to_delete_upon_document_creation=2)
    users = RevisionsCollectionConfiguration(minimum_revisions_age_to_keep=timedelta(days=1), purge_on_delete=True)
    orders = RevisionsCollectionConfiguration(disabled=True)
    configure(store, default, {"Users": users, "Orders": orders})
    revisions = record(http, server_url, db_name)["Revisions"]
    assert revisions["Default"] == {
        "Disabled": False, "MinimumRevisionsToKeep": 5, "MinimumRevisionAgeToKeep": None, "PurgeOnDelete": False,
        "MaximumRevisionsToDeleteUponDocumentUpdate": 2,
    }
    assert revisions["Collections"]["Users"]["MinimumRevisionAgeToKeep"] == "1.00:00:00"
    assert revisions["Collections"]["Users"]["PurgeOnDelete"] is True
    assert revisions["Collections"]["Orders"]["Disabled"] is True
    assert http.get(f"{server_url}/databases/{db_name}/revisions/config").json() == revisions

    store.maintenance.server.send(
        ConfigureRevisionsForConflictsOperation(db_name, RevisionsCollectionConfiguration(minimum_revisions_to_keep=7))
    )
    assert record(http, server_url, db_name)["RevisionsForConflicts"]["MinimumRevisionsToKeep"] == 7


def test_revision_lists_follow_the_writes_and_deletes(store):
    configure(store, keep_all())
    expected = {"users/1": [], "users/2": []}
    for doc_id, name in [("users/1", "a"), ("users/1", "b"), ("users/2", "x"), ("users/1", "c")]:
        save(store, doc_id, name)
        expected[doc_id].insert(0, name)
    # Storing the same content again keeps no revision.
    with store.open_session() as session:
        session.store(User(name="c"), "users/1")
        session.save_changes()
    delete(store, "users/1")
    expected["users/1"].insert(0, None)
    save(store, "users/1", "d")
    expected["users/1"].insert(0, "d")
    delete(store, "users/2")
    expected["users/2"].insert(0, None)

    for doc_id, names in expected.items():
        assert names_of(store, doc_id) == names
    with store.open_session() as session:
        assert session.advanced.revisions.get_count_for("users/1") == len(expected["users/1"])
        # A page (start 1, size 2): a delete revision reads back as a document without fields.
        page = session.advanced.revisions.get_for("users/1", dict, start=1, page_size=2)
        assert [r.get("name") for r in page] == expected["users/1"][1:3]
        metadata = session.advanced.revisions.get_metadata_for("users/1")
        assert metadata[0]["@flags"] == "HasRevisions, Revision"
        assert metadata[1]["@flags"] == "HasRevisions, DeleteRevision"
        change_vectors = [m["@change-vector"] for m in metadata]
        assert len(set(change_vectors)) == len(change_vectors)
        current = session.load("users/1", User)
        doc_meta = session.advanced.get_metadata_for(current)
        assert "HasRevisions" in doc_meta["@flags"]
        # The newest revision is the current version: same change vector.
        assert doc_meta["@change-vector"] == change_vectors[0]

    with store.open_session() as session:
        by_cv = session.advanced.revisions.get_by_change_vector(change_vectors[2], User)
        assert by_cv.name == expected["users/1"][2]
        many = session.advanced.revisions.get_by_change_vectors([change_vectors[0], change_vectors[3]], User)
        assert [many[change_vectors[0]].name, many[change_vectors[3]].name] == [expected["users/1"][0], expected["users/1"][3]]
    with store.open_session() as session:
        lazy_list = session.advanced.revisions.lazily.get_for("users/1", dict)
        lazy_meta = session.advanced.revisions.lazily.get_metadata_for("users/2")
        assert [r.get("name") for r in lazy_list.value] == expected["users/1"]
        assert len(lazy_meta.value) == len(expected["users/2"])

    total = sum(len(v) for v in expected.values())
    assert stats(store).count_of_revision_documents == total


def test_revisions_are_trimmed_to_the_configuration(store):
    configure(store, RevisionsCollectionConfiguration(minimum_revisions_to_keep=3))
    names = [f"v{i}" for i in range(6)]
    for name in names:
        save(store, "users/1", name)
    assert names_of(store, "users/1") == names[::-1][:3]

    # At most one old revision goes per write.
    configure(store, RevisionsCollectionConfiguration(minimum_revisions_to_keep=1, maximum_revisions_to_delete_upon_document_creation=1))
    save(store, "users/1", "v6")
    assert names_of(store, "users/1") == ["v6", "v5", "v4"]
    save(store, "users/1", "v7")
    assert names_of(store, "users/1") == ["v7", "v6", "v5"]


def test_revisions_younger_than_the_minimum_age_stay(store):
    configure(store, RevisionsCollectionConfiguration(minimum_revisions_age_to_keep=timedelta(seconds=1)))
    for name in ["a", "b", "c"]:
        save(store, "users/1", name)
    assert names_of(store, "users/1") == ["c", "b", "a"]
    time.sleep(1.5)
    save(store, "users/1", "d")
    assert names_of(store, "users/1") == ["d"]


def test_collections_override_the_default_and_purge_on_delete(store):
    configure(
        store,
        keep_all(),
        {"Companies": RevisionsCollectionConfiguration(disabled=True), "Orders": RevisionsCollectionConfiguration(purge_on_delete=True)},
    )
    with store.open_session() as session:
        company = {"name": "c"}
        session.store(company, "companies/1")
        session.advanced.get_metadata_for(company)["@collection"] = "Companies"
        session.save_changes()
    with store.open_session() as session:
        session.store(User(name="u"), "users/1")
        order = {"total": 1}
        session.store(order, "orders/1")
        session.advanced.get_metadata_for(order)["@collection"] = "Orders"
        session.save_changes()
    with store.open_session() as session:
        assert session.advanced.revisions.get_count_for("companies/1") == 0
        assert session.advanced.revisions.get_count_for("users/1") == 1
        assert session.advanced.revisions.get_count_for("orders/1") == 1
    delete(store, "orders/1")
    with store.open_session() as session:
        assert session.advanced.revisions.get_count_for("orders/1") == 0


def test_a_document_written_before_the_configuration_keeps_its_old_version(store):
    save(store, "users/1", "before")
    configure(store, keep_all())
    save(store, "users/1", "after")
    assert names_of(store, "users/1") == ["after", "before"]


def test_the_bin_lists_documents_still_deleted(store, server_url, db_name, http):
    configure(store, keep_all())
    for doc_id in ["users/1", "users/2", "users/3"]:
        save(store, doc_id, doc_id)
    delete(store, "users/1")
    delete(store, "users/2")
    save(store, "users/2", "back")
    delete(store, "users/3")
    bin_ = http.get(f"{server_url}/databases/{db_name}/revisions/bin", params={"start": 0, "pageSize": 10}).json()["Results"]
    # Newest first; users/2 was recreated so it is not in the bin.
    assert [r["@metadata"]["@id"] for r in bin_] == ["users/3", "users/1"]
    assert all(r["@metadata"]["@flags"] == "HasRevisions, DeleteRevision" for r in bin_)
    page = http.get(f"{server_url}/databases/{db_name}/revisions/bin", params={"start": 1, "pageSize": 10}).json()["Results"]
    assert [r["@metadata"]["@id"] for r in page] == ["users/1"]


def test_forced_revisions_are_kept_without_a_configuration(store):
    save(store, "users/1", "one")
    with store.open_session() as session:
        user = session.load("users/1", User)
        session.advanced.revisions.force_revision_creation_for(user)
        session.save_changes()
        cv_after = session.advanced.get_change_vector_for(user)
    with store.open_session() as session:
        metadata = session.advanced.revisions.get_metadata_for("users/1")
        assert [m["@flags"] for m in metadata] == ["HasRevisions, Revision, ForceCreated"]
        # The document got HasRevisions (so a new change vector, which the session tracked).
        assert metadata[0]["@change-vector"] == cv_after
        assert "HasRevisions" in session.advanced.get_metadata_for(session.load("users/1", User))["@flags"]
    # Once per version.
    with store.open_session() as session:
        session.advanced.revisions.force_revision_creation_for_id("users/1")
        session.save_changes()
        assert session.advanced.revisions.get_count_for("users/1") == 1
    # With a change in the same session: a revision of the version before the change, none of the new one.
    with store.open_session() as session:
        user = session.load("users/1", User)
        user.name = "two"
        session.advanced.revisions.force_revision_creation_for(user)
        session.save_changes()
    assert names_of(store, "users/1") == ["one"]
    with store.open_session() as session:
        session.advanced.revisions.force_revision_creation_for_id("users/1")
        session.save_changes()
    assert names_of(store, "users/1") == ["two", "one"]
    with store.open_session() as session:
        session.advanced.revisions.force_revision_creation_for_id("users/missing")
        with pytest.raises(Exception) as failure:
            session.save_changes()
        assert "doesn't exits" in str(failure.value) or "InvalidOperation" in str(failure.value)


def test_the_revision_before_a_date(store, server_url, db_name, http):
    configure(store, keep_all())
    save(store, "users/1", "early")
    time.sleep(0.2)
    between = datetime.datetime.utcnow()
    time.sleep(0.2)
    save(store, "users/1", "late")
    with store.open_session() as session:
        assert session.advanced.revisions.get_by_before_date("users/1", between, User).name == "early"
        assert session.advanced.revisions.get_by_before_date("users/1", datetime.datetime.utcnow(), User).name == "late"
    # Nothing before: RavenDB's empty answer (the Python client itself cannot read it).
    earlier = (between - timedelta(hours=1)).isoformat()
    empty = http.get(f"{server_url}/databases/{db_name}/revisions", params={"id": "users/1", "before": earlier}).json()
    assert empty == {"Results": [], "TotalResults": 0}


def test_revert_to_a_point_in_time_and_to_chosen_revisions(store, server_url, db_name, http):
    configure(store, keep_all())
    save(store, "users/a", "a1")
    save(store, "users/b", "b1")
    time.sleep(0.2)
    point = datetime.datetime.utcnow()
    time.sleep(0.2)
    save(store, "users/a", "a2")
    delete(store, "users/b")
    save(store, "users/c", "c1")
    started = http.post(f"{server_url}/databases/{db_name}/revisions/revert", json={"Time": point.isoformat() + "Z", "WindowInSec": 0})
    assert started.status_code == 200, started.text
    op_id = started.json()["OperationId"]

    def finished():
        state = http.get(f"{server_url}/databases/{db_name}/operations/state", params={"id": op_id}).json()
        return state if state["Status"] != "InProgress" else None

    state = wait_until(finished)
    assert state["Status"] == "Completed", state
    assert state["Result"]["RevertedDocuments"] == 3
    with store.open_session() as session:
        assert session.load("users/a", User).name == "a1"
        assert session.load("users/b", User).name == "b1"
        assert session.load("users/c", User) is None
        flags = session.advanced.revisions.get_metadata_for("users/a")[0]["@flags"]
        assert "Reverted" in flags
    assert names_of(store, "users/a") == ["a1", "a2", "a1"]

    with store.open_session() as session:
        oldest_cv = session.advanced.revisions.get_metadata_for("users/a")[-1]["@change-vector"]
    save(store, "users/a", "a3")
    store.operations.send(RevertRevisionsByIdOperation(id_="users/a", change_vector=oldest_cv))
    with store.open_session() as session:
        assert session.load("users/a", User).name == "a1"


def test_counters_and_attachments_are_in_revisions(store):
    configure(store, keep_all())
    save(store, "users/1", "n")
    store.operations.send(_counter_increment("users/1", "likes", 3))
    with store.open_session() as session:
        session.advanced.attachments.store("users/1", "photo.png", b"picture", "image/png")
        session.save_changes()
    with store.open_session() as session:
        metadata = session.advanced.revisions.get_metadata_for("users/1")
    # Newest first: the attachment's revision, the counter's revision, the first put.
    assert len(metadata) == 3
    assert metadata[0]["@attachments"][0]["Name"] == "photo.png"
    assert dict(metadata[0]["@counters-snapshot"].items()) == {"likes": 3}
    assert dict(metadata[1]["@counters-snapshot"].items()) == {"likes": 3}
    assert "@attachments" not in metadata[1] and "@counters" not in metadata[0]


def _counter_increment(doc_id: str, name: str, delta: int):
    from ravendb.documents.operations.counters import CounterBatch, CounterBatchOperation

    operation = DocumentCountersOperation(doc_id, [CounterOperation(name, CounterOperationType.INCREMENT, delta)])
    return CounterBatchOperation(CounterBatch(documents=[operation]))


def test_delete_revisions_operation(store):
    configure(store, keep_all())
    for name in ["a", "b", "c"]:
        save(store, "users/1", name)
    result = store.maintenance.send(DeleteRevisionsOperation(document_ids=["users/1"]))
    assert result.total_deletes == 3
    with store.open_session() as session:
        assert session.advanced.revisions.get_count_for("users/1") == 0


def test_bad_input_is_refused_and_changes_nothing(store, server_url, db_name, http):
    base = f"{server_url}/databases/{db_name}"
    with store.open_session() as session:
        assert session.advanced.revisions.get_for("users/missing") == []
        assert session.advanced.revisions.get_count_for("users/missing") == 0
        assert session.advanced.revisions.get_by_change_vector("A:999-nothing") is None
    missing_id = http.get(f"{base}/revisions")
    assert missing_id.status_code == 400 and missing_id.json()["Type"] == "Raven.Client.Exceptions.BadRequestException"

    configure(store, RevisionsCollectionConfiguration(minimum_revisions_to_keep=2))
    before = record(http, server_url, db_name)["Revisions"]
    for body in [
        {"Default": {"MinimumRevisionsToKeep": "many"}},
        {"Default": {"MinimumRevisionAgeToKeep": "soon"}},
        {"Collections": ["Users"]},
        [1, 2],
    ]:
        refused = http.post(f"{base}/admin/revisions/config", json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["Type"] == "Raven.Client.Exceptions.BadRequestException"
    duplicate = http.post(f"{base}/admin/revisions/config", json={"Collections": {"Users": {}, "users": {}}})
    assert duplicate.status_code == 500 and duplicate.json()["Type"] == "System.InvalidOperationException"
    assert "Cannot have two different revision configurations" in duplicate.json()["Message"]
    assert record(http, server_url, db_name)["Revisions"] == before
    for name in ["a", "b", "c"]:
        save(store, "users/1", name)
    assert names_of(store, "users/1") == ["c", "b"], "the refused configurations were not applied"

    not_theirs = http.post(f"{base}/revisions/revert/docs", json={"IdToChangeVector": {"users/2": "A:1-nothing"}})
    assert not_theirs.status_code == 500 and not_theirs.json()["Type"] == "System.InvalidOperationException"
    with store.open_session() as session:
        assert session.load("users/1", User).name == "c"


def test_acknowledged_revisions_survive_a_kill(server_factory):
    server = server_factory()
    db = "revcrash"
    create_database(server.url, db)
    with open_store(server.url, db) as store:
        configure(store, keep_all())
    acked: list[tuple[str, str, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(t: int) -> None:
        http = requests.Session()
        n = 0
        while not stop.is_set():
            doc_id = f"docs/{t}-{n % 5}"
            body = {"n": n, "t": t, "@metadata": {"@collection": "Docs"}}
            try:
                response = http.put(f"{server.url}/databases/{db}/docs", params={"id": doc_id}, json=body, timeout=10)
            except requests.RequestException:
                return
            if response.status_code != 201:
                return
            with lock:
                acked.append((doc_id, response.json()["ChangeVector"], n))
            n += 1

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)
    server.restart(crash=True)  # kill -9, then `corvid check` on the files, then start again
    stop.set()
    for thread in threads:
        thread.join(timeout=15)
    assert len(acked) > 20
    http = requests.Session()
    for start in range(0, len(acked), 50):
        chunk = acked[start:start + 50]
        params = [("changeVector", cv) for _, cv, _ in chunk]
        results = http.get(f"{server.url}/databases/{db}/revisions", params=params).json()["Results"]
        for (doc_id, cv, n), revision in zip(chunk, results):
            assert revision is not None, f"acknowledged revision {cv} of {doc_id} is missing"
            assert revision["n"] == n and revision["@metadata"]["@id"] == doc_id
