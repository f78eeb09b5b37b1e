"""Document expiration and refresh through the official Python client: the record's configurations, documents
whose `@expires` passed deleted (and only those: future dates, documents rewritten without it and a disabled
configuration leave them), `@refresh` documents written again without it, compare-exchange values with
`@expires`, the queue surviving a kill -9, the stats endpoint, and bad configurations refused."""

from __future__ import annotations

import datetime
import time

import pytest
import requests
from ravendb import ExpirationConfiguration, GetStatisticsOperation, RefreshConfiguration
from ravendb.documents.operations.compare_exchange.operations import (
    GetCompareExchangeValueOperation,
    PutCompareExchangeValueOperation,
)
from ravendb.documents.operations.expiration.operations import ConfigureExpirationOperation
from ravendb.documents.operations.refresh.configuration import ConfigureRefreshOperation
from ravendb.json.metadata_as_dictionary import MetadataAsDictionary

from corvid_support import User, create_database, open_store, wait_until


def iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def store_with(store, doc_id: str, name: str, **metadata) -> None:
    with store.open_session() as session:
        user = User(name=name)
        session.store(user, doc_id)
        for key, value in metadata.items():
            session.advanced.get_metadata_for(user)[key] = value
        session.save_changes()


def exists(store, doc_id: str) -> bool:
    with store.open_session() as session:
        return session.load(doc_id, User) is not None


def debug(http: requests.Session, url: str, db: str) -> dict:
    response = http.get(f"{url}/databases/{db}/debug/expiration")
    assert response.status_code == 200
    return response.json()


def test_expired_documents_are_deleted_and_the_others_stay(store, server_url, db_name, http):
    past, future = iso(utcnow() - datetime.timedelta(minutes=5)), iso(utcnow() + datetime.timedelta(hours=1))
    expired = [f"users/{i}" for i in range(5)]
    for doc_id in expired:
        store_with(store, doc_id, "old", **{"@expires": past})
    store_with(store, "users/future", "new", **{"@expires": future})
    store_with(store, "users/plain", "plain")
    result = store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 1)))
    assert result.raft_command_index is not None
    assert wait_until(lambda: not any(exists(store, d) for d in expired), timeout=15)
    assert exists(store, "users/future") and exists(store, "users/plain")
    with store.open_session() as session:
        assert session.advanced.get_metadata_for(session.load("users/future", User))["@expires"] == future

    record = http.get(f"{server_url}/admin/databases", params={"name": db_name}).json()
    assert record["Expiration"] == {"Disabled": False, "DeleteFrequencyInSec": 1, "MaxItemsToProcess": None}
    assert http.get(f"{server_url}/databases/{db_name}/expiration/config").json()["DeleteFrequencyInSec"] == 1
    assert wait_until(lambda: debug(http, server_url, db_name)["Expiration"]["Stats"]["Processed"] == len(expired), timeout=15)
    stats = debug(http, server_url, db_name)
    assert stats["Expiration"]["Stats"]["LastError"] is None
    assert stats["Expiration"]["Configuration"]["DeleteFrequencyInSec"] == 1
    # The deletes are ordinary deletes: tombstones the collection statistics count.
    assert store.maintenance.send(GetStatisticsOperation()).count_of_documents == 2


def test_a_document_written_again_without_expires_stays(store, server_url, db_name, http):
    store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 1)))
    store_with(store, "users/kept", "a", **{"@expires": iso(utcnow() + datetime.timedelta(seconds=2))})
    store_with(store, "users/gone", "b", **{"@expires": iso(utcnow() + datetime.timedelta(seconds=2))})
    with store.open_session() as session:
        kept = session.load("users/kept", User)
        del session.advanced.get_metadata_for(kept)["@expires"]
        kept.name = "rewritten"
        session.save_changes()
    assert wait_until(lambda: not exists(store, "users/gone"), timeout=15)
    assert wait_until(lambda: debug(http, server_url, db_name)["Expiration"]["Stats"]["Stale"] >= 1, timeout=10)
    assert exists(store, "users/kept")


def test_a_disabled_configuration_deletes_nothing(store, server_url, db_name, http):
    store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(True, 1)))
    store_with(store, "users/1", "a", **{"@expires": iso(utcnow() - datetime.timedelta(minutes=1))})
    time.sleep(2.5)
    assert exists(store, "users/1")
    assert debug(http, server_url, db_name)["Expiration"]["Stats"]["Passes"] == 0
    # Enabling it acts on what waited.
    store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 1)))
    assert wait_until(lambda: not exists(store, "users/1"), timeout=15)


def test_refresh_writes_the_document_again_without_refresh(store, server_url, db_name, http):
    store.maintenance.send(ConfigureRefreshOperation(RefreshConfiguration(False, 1)))
    store_with(store, "users/1-A", "Oren", **{"@refresh": (utcnow() - datetime.timedelta(hours=1)).isoformat()})
    store_with(store, "users/later", "Ayende", **{"@refresh": iso(utcnow() + datetime.timedelta(hours=1))})
    with store.open_session() as session:
        before = session.advanced.get_change_vector_for(session.load("users/1-A", User))
        later_before = session.advanced.get_change_vector_for(session.load("users/later", User))

    def refreshed() -> bool:
        with store.open_session() as session:
            return session.advanced.get_change_vector_for(session.load("users/1-A", User)) != before

    assert wait_until(refreshed, timeout=15)
    with store.open_session() as session:
        user = session.load("users/1-A", User)
        assert user.name == "Oren"
        assert "@refresh" not in session.advanced.get_metadata_for(user)
        assert session.advanced.get_change_vector_for(session.load("users/later", User)) == later_before
    record = http.get(f"{server_url}/admin/databases", params={"name": db_name}).json()
    assert record["Refresh"]["RefreshFrequencyInSec"] == 1
    # A pass's stats are recorded when the pass ends, just after its writes become visible.
    assert wait_until(lambda: debug(http, server_url, db_name)["Refresh"]["Stats"]["Processed"] == 1, timeout=15)


def test_compare_exchange_values_expire(store, server_url, db_name, http):
    store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 1)))
    expired = MetadataAsDictionary({"@expires": iso(utcnow() - datetime.timedelta(minutes=1))})
    later = MetadataAsDictionary({"@expires": iso(utcnow() + datetime.timedelta(hours=1))})
    assert store.operations.send(PutCompareExchangeValueOperation("emails/old", "a@b.c", 0, expired)).successful
    assert store.operations.send(PutCompareExchangeValueOperation("emails/new", "d@e.f", 0, later)).successful
    assert store.operations.send(PutCompareExchangeValueOperation("emails/plain", "g@h.i", 0)).successful
    # Compare-exchange expiration runs at the document expiration's frequency once that is enabled.
    assert wait_until(lambda: store.operations.send(GetCompareExchangeValueOperation("emails/old", str)) is None, timeout=15)
    assert store.operations.send(GetCompareExchangeValueOperation("emails/new", str)).value == "d@e.f"
    assert store.operations.send(GetCompareExchangeValueOperation("emails/plain", str)).value == "g@h.i"
    assert wait_until(lambda: debug(http, server_url, db_name)["CompareExchangeExpiration"]["Processed"] == 1, timeout=15)


def test_bad_configurations_are_refused(server_url, db_name, http):
    base = f"{server_url}/databases/{db_name}"
    for body in ({"Disabled": False, "DeleteFrequencyInSec": 0}, {"Disabled": "yes"}, [1]):
        response = http.post(f"{base}/admin/expiration/config", json=body)
        assert response.status_code == 400, body
    bad_refresh = http.post(f"{base}/admin/refresh/config", json={"RefreshFrequencyInSec": -3})
    assert bad_refresh.status_code == 400
    assert http.get(f"{base}/expiration/config").status_code == 404
    assert http.get(f"{base}/refresh/config").status_code == 404


def test_queued_expirations_survive_a_kill(server_factory):
    server = server_factory()
    db = "expirecrash"
    create_database(server.url, db)
    with open_store(server.url, db) as store:
        store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 1)))
        soon = iso(utcnow() + datetime.timedelta(seconds=4))
        for i in range(20):
            store_with(store, f"users/{i}", "x", **{"@expires": soon})
    server.restart(crash=True)  # kill -9, `corvid check`, start again
    with open_store(server.url, db) as store:
        assert wait_until(lambda: not any(exists(store, f"users/{i}") for i in range(20)), timeout=20)
