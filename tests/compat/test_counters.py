"""Counters through the official client: session counters_for, CounterBatchOperation, GetCountersOperation,
metadata (@counters, HasCounters), case-insensitive names, deletion with the document, and includes."""

from __future__ import annotations

from ravendb import CounterBatchOperation, GetCountersOperation
from ravendb.documents.operations.counters import CounterBatch, CounterOperation, CounterOperationType, DocumentCountersOperation

from corvid_support import User, stats


def test_session_increment_get_delete(store):
    with store.open_session() as session:
        session.store(User(name="Ann"), "users/1")
        session.save_changes()
    with store.open_session() as session:
        c = session.counters_for("users/1")
        c.increment("Likes", 5)
        c.increment("Downloads")
        session.save_changes()
    with store.open_session() as session:
        c = session.counters_for("users/1")
        c.increment("likes", 10)  # same counter, other spelling
        session.save_changes()
    with store.open_session() as session:
        c = session.counters_for("users/1")
        assert c.get("Likes") == 15
        assert c.get("Missing") is None
        # the client's cache is a case-insensitive dict; the spelling is checked on the wire below
        assert {k.lower(): v for k, v in c.get_all().items()} == {"likes": 15, "downloads": 1}
        user = session.load("users/1", User)
        metadata = session.advanced.get_metadata_for(user)
        assert "HasCounters" in metadata["@flags"]
        assert list(metadata["@counters"]) == sorted(["Likes", "Downloads"], key=str.lower)
    names = sorted(c.counter_name for c in store.operations.send(GetCountersOperation("users/1")).counters)
    assert names == ["Downloads", "Likes"]  # first spelling kept
    with store.open_session() as session:
        session.counters_for("users/1").delete("Downloads")
        session.save_changes()
    with store.open_session() as session:
        assert {k.lower(): v for k, v in session.counters_for("users/1").get_all().items()} == {"likes": 15}


def test_counter_batch_and_get_operations(store):
    with store.open_session() as session:
        session.store(User(name="Bob"), "users/2")
        session.save_changes()
    batch = CounterBatch(
        documents=[
            DocumentCountersOperation(
                "users/2",
                [CounterOperation("a", CounterOperationType.INCREMENT, 3), CounterOperation("b", CounterOperationType.INCREMENT, -2)],
            )
        ]
    )
    result = store.operations.send(CounterBatchOperation(batch))
    assert {c.counter_name: c.total_value for c in result.counters} == {"a": 3, "b": -2}
    got = store.operations.send(GetCountersOperation("users/2", ["a", "nope"]))
    # the client sends the names as a set, so the order is not the one asked for
    assert len(got.counters) == 2
    assert [c.total_value for c in got.counters if c is not None] == [3]
    assert [c for c in got.counters if c is None] == [None]
    everything = store.operations.send(GetCountersOperation("users/2"))
    assert sorted((c.counter_name, c.total_value) for c in everything.counters) == [("a", 3), ("b", -2)]
    assert stats(store).count_of_counter_entries == 1  # one document with counters


def test_counters_removed_with_document(store):
    with store.open_session() as session:
        session.store(User(name="C"), "users/3")
        session.counters_for("users/3").increment("x", 7)
        session.save_changes()
    with store.open_session() as session:
        session.delete("users/3")
        session.save_changes()
    with store.open_session() as session:
        session.store(User(name="C again"), "users/3")
        session.save_changes()
    with store.open_session() as session:
        assert session.counters_for("users/3").get_all() == {}
        meta = session.advanced.get_metadata_for(session.load("users/3", User))
        assert "@counters" not in meta


def test_new_counter_changes_document_change_vector(store):
    with store.open_session() as session:
        session.store(User(name="D"), "users/4")
        session.save_changes()
    with store.open_session() as session:
        cv0 = session.advanced.get_change_vector_for(session.load("users/4", User))
    with store.open_session() as session:
        session.counters_for("users/4").increment("n", 1)
        session.save_changes()
    with store.open_session() as session:
        cv1 = session.advanced.get_change_vector_for(session.load("users/4", User))
    assert cv1 != cv0


def test_include_counters_on_load(store):
    with store.open_session() as session:
        session.store(User(name="E"), "users/5")
        c = session.counters_for("users/5")
        c.increment("likes", 4)
        c.increment("dislikes", 2)
        session.save_changes()
    with store.open_session() as session:
        session.load("users/5", User, lambda i: i.include_counter("likes").include_counter("missing"))
        requests_before = session.advanced.number_of_requests
        c = session.counters_for("users/5")
        assert c.get("likes") == 4
        assert c.get("missing") is None
        assert session.advanced.number_of_requests == requests_before  # served from the include
    with store.open_session() as session:
        session.load("users/5", User, lambda i: i.include_all_counters())
        requests_before = session.advanced.number_of_requests
        assert {k.lower(): v for k, v in session.counters_for("users/5").get_all().items()} == {"likes": 4, "dislikes": 2}
        assert session.advanced.number_of_requests == requests_before


def test_include_counters_in_query(store):
    with store.open_session() as session:
        for i in range(3):
            session.store(User(name=f"q{i}"), f"users/q{i}")
            session.counters_for(f"users/q{i}").increment("likes", i + 1)
        session.save_changes()
    with store.open_session() as session:
        users = list(session.query(object_type=User).include(lambda b: b.include_counter("likes")))
        assert len(users) == 3
        requests_before = session.advanced.number_of_requests
        for i in range(3):
            assert session.counters_for(f"users/q{i}").get("likes") == i + 1
        assert session.advanced.number_of_requests == requests_before
    with store.open_session() as session:
        list(session.query(object_type=User).include(lambda b: b.include_all_counters()))
        requests_before = session.advanced.number_of_requests
        assert {k.lower(): v for k, v in session.counters_for("users/q2").get_all().items()} == {"likes": 3}
        assert session.advanced.number_of_requests == requests_before
