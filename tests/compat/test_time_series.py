"""Time series through the official Python client: session appends and deletes, operations (batch, get, ranges,
stats), bulk insert, document includes, named values in the database record, incremental series over raw HTTP,
bad input refused with nothing changed, and kill -9 during appends with every acknowledged value present."""

from __future__ import annotations

import json
import random
import threading
from datetime import datetime, timedelta, timezone

import pytest
import requests
from ravendb.documents.operations.time_series import (
    ConfigureTimeSeriesValueNamesOperation,
    GetMultipleTimeSeriesOperation,
    GetTimeSeriesOperation,
    GetTimeSeriesStatisticsOperation,
    TimeSeriesBatchOperation,
    TimeSeriesOperation,
)
from ravendb.documents.session.time_series import TimeSeriesRange, TimeSeriesRangeType
from ravendb.exceptions.raven_exceptions import RavenException
from ravendb.serverwide.operations.common import GetDatabaseRecordOperation

from corvid_support import User, create_database, open_store, raw_get_docs, stats

BASE = datetime(2024, 1, 1)


def ms(dt: datetime) -> int:
    return int(dt.replace(tzinfo=timezone.utc).timestamp() * 1000)


def stored_doc(http, url, db, doc_id) -> dict:
    return raw_get_docs(http, url, db, [doc_id])[0]


def test_session_appends_out_of_order_overwrites_and_deletes(store, http, server_url, db_name):
    with store.open_session() as session:
        session.store(User(name="Oren"), "users/1")
        session.save_changes()
    rnd = random.Random(20)
    minutes = list(range(300))
    rnd.shuffle(minutes)
    model: dict[int, tuple[float, str | None]] = {}
    # Three sessions append the same minutes in shuffled order; later ones overwrite earlier values.
    for round_no in range(3):
        with store.open_session() as session:
            ts = session.time_series_for("users/1", "HeartRate")
            for m in minutes[round_no * 50 : round_no * 50 + 200]:
                value = float(rnd.randint(40, 180))
                tag = rnd.choice([None, "watches/fitbit", "watches/apple"])
                ts.append_single(BASE + timedelta(minutes=m), value, tag)
                model[m] = (value, tag)
            session.save_changes()

    with store.open_session() as session:
        entries = session.time_series_for("users/1", "heartrate").get()
    assert [e.timestamp for e in entries] == [BASE + timedelta(minutes=m) for m in sorted(model)]
    assert [(e.values, e.tag) for e in entries] == [([model[m][0]], model[m][1]) for m in sorted(model)]

    doc = stored_doc(http, server_url, db_name, "users/1")
    assert doc["@metadata"]["@timeseries"] == ["HeartRate"]
    assert "HasTimeSeries" in doc["@metadata"]["@flags"]

    # Delete a range and one point; the answer is computed from the model.
    with store.open_session() as session:
        ts = session.time_series_for("users/1", "HeartRate")
        ts.delete(BASE + timedelta(minutes=10), BASE + timedelta(minutes=99))
        ts.delete_at(BASE + timedelta(minutes=150))
        session.save_changes()
    for m in list(model):
        if 10 <= m <= 99 or m == 150:
            del model[m]
    with store.open_session() as session:
        window = session.time_series_for("users/1", "HeartRate").get(BASE, BASE + timedelta(minutes=200))
    assert [e.timestamp for e in window] == [BASE + timedelta(minutes=m) for m in sorted(model) if m <= 200]

    statistics = store.operations.send(GetTimeSeriesStatisticsOperation("users/1"))
    (detail,) = statistics.time_series
    assert (detail.name, detail.number_of_entries) == ("HeartRate", len(model))
    assert detail.start_date == BASE + timedelta(minutes=min(model))
    assert detail.end_date == BASE + timedelta(minutes=max(model))

    # Deleting every entry removes the series from the document.
    with store.open_session() as session:
        session.time_series_for("users/1", "HeartRate").delete_all()
        session.save_changes()
    doc = stored_doc(http, server_url, db_name, "users/1")
    assert "@timeseries" not in doc["@metadata"]
    assert "HasTimeSeries" not in doc["@metadata"].get("@flags", "")


def test_operations_paging_multiple_ranges_and_includes(store):
    with store.open_session() as session:
        session.store(User(name="Ayende"), "users/ayende")
        session.store(User(name="Watch"), "watches/1")
        session.save_changes()
    op = TimeSeriesOperation("Heart")
    for m in range(100):
        op.append(TimeSeriesOperation.AppendOperation(BASE + timedelta(minutes=m), [float(m), float(m * 2)], "watches/1"))
    store.operations.send(TimeSeriesBatchOperation("users/ayende", op))
    blood = TimeSeriesOperation("Blood")
    for m in range(0, 100, 10):
        blood.append(TimeSeriesOperation.AppendOperation(BASE + timedelta(minutes=m), [float(m)]))
    blood.delete(TimeSeriesOperation.DeleteOperation(BASE + timedelta(minutes=20), BASE + timedelta(minutes=30)))
    store.operations.send(TimeSeriesBatchOperation("users/ayende", blood))

    whole = store.operations.send(GetTimeSeriesOperation("users/ayende", "Heart"))
    assert whole.total_results == 100
    assert [e.values for e in whole.entries[:2]] == [[0.0, 0.0], [1.0, 2.0]]

    page = store.operations.send(GetTimeSeriesOperation("users/ayende", "Heart", BASE + timedelta(minutes=10), BASE + timedelta(minutes=59), 5, 20))
    assert [e.timestamp for e in page.entries] == [BASE + timedelta(minutes=m) for m in range(15, 35)]
    assert page.total_results is None

    ranges = store.operations.send(
        GetMultipleTimeSeriesOperation(
            "users/ayende",
            [
                TimeSeriesRange("Heart", BASE, BASE + timedelta(minutes=4)),
                TimeSeriesRange("Blood", None, None),
                TimeSeriesRange("Heart", BASE + timedelta(minutes=90), None),
            ],
        )
    )
    heart = ranges.values["Heart"]
    assert [len(r.entries) for r in heart] == [5, 10]
    # Blood 20 and 30 were deleted in the same operation as the appends (deletes first, as RavenDB does):
    # they were appended after, so they stay.
    assert [e.values[0] for e in ranges.values["Blood"][0].entries] == [float(m) for m in range(0, 100, 10)]

    included = store.operations.send(
        GetTimeSeriesOperation("users/ayende", "Heart", None, None, 0, 3, lambda b: b.include_document().include_tags())
    )
    assert set(included.includes) == {"users/ayende", "watches/1"}
    assert included.includes["watches/1"]["name"] == "Watch"

    assert store.operations.send(GetTimeSeriesOperation("users/ayende", "Nothing")) is None
    assert stats(store).count_of_time_series_segments >= 2


def test_bulk_insert_then_aggregate_hourly(store):
    rnd = random.Random(7)
    expected: dict[int, list[float]] = {}
    with store.bulk_insert() as bulk:
        for d in range(3):
            doc_id = f"sensors/{d}"
            bulk.store_as(User(name=f"sensor {d}"), doc_id)
            with bulk.time_series_for(doc_id, "Temperature") as ts:
                for m in range(600):
                    value = round(rnd.uniform(-10, 35), 2)
                    ts.append_single(BASE + timedelta(minutes=m), value)
                    if d == 1:
                        expected.setdefault(m // 60, []).append(value)
    with store.open_session() as session:
        entries = session.time_series_for("sensors/1", "Temperature").get()
    assert len(entries) == 600
    hourly: dict[int, list[float]] = {}
    for e in entries:
        hourly.setdefault((e.timestamp - BASE) // timedelta(hours=1), []).append(e.values[0])
    assert {h: (min(v), max(v), round(sum(v), 6), len(v)) for h, v in hourly.items()} == {
        h: (min(v), max(v), round(sum(v), 6), len(v)) for h, v in expected.items()
    }
    with store.open_session() as session:
        assert session.load("sensors/2", User).name == "sensor 2"
        assert session.advanced.get_metadata_for(session.load("sensors/2", User))["@timeseries"] == ["Temperature"]


def test_deleting_the_document_deletes_its_series(store, http, server_url, db_name):
    with store.open_session() as session:
        session.store(User(name="x"), "users/2")
        session.time_series_for("users/2", "Heart").append_single(BASE, 70)
        session.save_changes()
    with store.open_session() as session:
        session.delete("users/2")
        session.save_changes()
    assert stats(store).count_of_time_series_segments == 0
    with store.open_session() as session:
        session.store(User(name="again"), "users/2")
        session.save_changes()
    assert store.operations.send(GetTimeSeriesOperation("users/2", "Heart")) is None
    assert "@timeseries" not in stored_doc(http, server_url, db_name, "users/2")["@metadata"]


def test_named_values_are_kept_in_the_database_record(store, db_name):
    params = ConfigureTimeSeriesValueNamesOperation.Parameters("Users", "Heart", ["BPM", "Oxygen"], True)
    store.maintenance.send(ConfigureTimeSeriesValueNamesOperation(params))
    record = store.maintenance.server.send(GetDatabaseRecordOperation(db_name))
    assert record.time_series.get_names("users", "heart") == ["BPM", "Oxygen"]


def test_incremental_series_add_up(store, server_url, db_name, http):
    with store.open_session() as session:
        session.store(User(name="x"), "users/3")
        session.save_changes()
    url = f"{server_url}/databases/{db_name}/timeseries?docId=users/3"
    stamp = "2024-01-01T00:00:00.0000000Z"
    for delta in (1, 2, 3.5):
        r = http.post(url, json={"Name": "INC:Views", "Increments": [{"Timestamp": stamp, "Values": [delta, 1]}]})
        assert r.status_code == 204, r.text
    result = store.operations.send(GetTimeSeriesOperation("users/3", "INC:Views"))
    assert [e.values for e in result.entries] == [[6.5, 3.0]]
    # Appending to an incremental series is refused.
    r = http.post(url, json={"Name": "INC:Views", "Appends": [{"Timestamp": stamp, "Values": [1]}]})
    assert r.status_code == 400


def test_bad_input_is_refused_and_nothing_changes(store, server_url, db_name, http):
    with store.open_session() as session:
        session.store(User(name="x"), "users/4")
        session.time_series_for("users/4", "Heart").append_single(BASE, 60)
        session.save_changes()
    before = store.operations.send(GetTimeSeriesOperation("users/4", "Heart")).entries

    def refused(operation: TimeSeriesOperation, doc_id: str = "users/4") -> str:
        with pytest.raises(RavenException) as err:
            store.operations.send(TimeSeriesBatchOperation(doc_id, operation))
        return str(err.value)

    too_many = TimeSeriesOperation("Heart")
    too_many.append(TimeSeriesOperation.AppendOperation(BASE + timedelta(minutes=1), [1.0] * 33))
    assert "at most 32" in refused(too_many)

    # A missing document: DocumentDoesNotExistException with RavenDB's message, raised by the client.
    assert "Cannot operate on time series of a missing document" in refused(one_append("Heart"), "users/missing")
    assert store.operations.send(GetTimeSeriesOperation("users/missing", "Heart")) is None

    # A batch whose second series has a NaN is refused as a whole: the first series is not written either.
    with store.open_session() as session:
        session.time_series_for("users/4", "Other").append_single(BASE, 1)
        session.time_series_for("users/4", "Heart").append(BASE + timedelta(minutes=2), [float("nan")])
        with pytest.raises(RavenException):
            session.save_changes()

    url = f"{server_url}/databases/{db_name}/timeseries?docId=users/4"
    r = http.post(url, json={"Name": "Heart", "Appends": [{"Timestamp": "not a date", "Values": [1]}]})
    assert r.status_code == 400 and "not a date" in r.json()["Message"]
    # Python's json writes NaN as a bare token, as the client's own requests do.
    nan_body = json.dumps({"Name": "Heart", "Appends": [{"Timestamp": "2024-01-01T00:00:00", "Values": [float("nan")]}]})
    r = http.post(url, data=nan_body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "TimeSeries entries cannot have 'double.NaN' as one of their values" in r.json()["Message"], r.text
    r = http.post(url, json={"Name": "Heart", "Appends": [{"Timestamp": "2024-01-01T00:00:00", "Values": []}]})
    assert r.status_code == 400

    assert store.operations.send(GetTimeSeriesOperation("users/4", "Heart")).entries[0].values == before[0].values
    assert len(store.operations.send(GetTimeSeriesOperation("users/4", "Heart")).entries) == 1
    assert store.operations.send(GetTimeSeriesOperation("users/4", "Other")) is None


def one_append(name: str) -> TimeSeriesOperation:
    op = TimeSeriesOperation(name)
    op.append(TimeSeriesOperation.AppendOperation(BASE, [1.0]))
    return op


class Appender(threading.Thread):
    """Appends values over raw HTTP until the server goes away; records each acknowledged one."""

    def __init__(self, url: str, doc_id: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.url, self.doc_id, self.stop = url, doc_id, stop
        self.acked: dict[int, float] = {}
        self.unexpected: list[str] = []

    def run(self) -> None:
        rnd = random.Random(self.doc_id)
        with requests.Session() as http:
            minute = 0
            while not self.stop.is_set():
                batch = {}
                for _ in range(rnd.randint(1, 50)):
                    # Mostly in order, sometimes back in time (out-of-order merges) and overwriting.
                    m = minute if rnd.random() < 0.8 else rnd.randint(0, minute + 1)
                    minute += 1
                    batch[m] = float(rnd.randint(0, 10_000)) / 4
                appends = [
                    {"Timestamp": (BASE + timedelta(minutes=m)).isoformat() + ".0000000Z", "Values": [v]} for m, v in batch.items()
                ]
                try:
                    r = http.post(
                        f"{self.url}/databases/tscrash/timeseries?docId={self.doc_id}", json={"Name": "Load", "Appends": appends}, timeout=10
                    )
                except requests.RequestException:
                    if not self.stop.is_set():
                        self.unexpected.append("connection error before the kill")
                    return
                if r.status_code == 204:
                    self.acked.update(batch)
                elif not self.stop.is_set():
                    self.unexpected.append(f"{r.status_code}: {r.text[:200]}")
                    return


def test_kill_during_appends_keeps_every_acknowledged_value(server_factory):
    server = server_factory()
    create_database(server.url, "tscrash")
    store = open_store(server.url, "tscrash")
    with store.open_session() as session:
        for i in range(4):
            session.store(User(name=f"m{i}"), f"machines/{i}")
        session.save_changes()
    store.close()
    stop = threading.Event()
    writers = [Appender(server.url, f"machines/{i}", stop) for i in range(4)]
    for w in writers:
        w.start()
    threading.Event().wait(2.5)
    stop.set()
    server.kill()
    for w in writers:
        w.join(timeout=15)
    assert not any(w.unexpected for w in writers), [w.unexpected for w in writers]
    assert sum(len(w.acked) for w in writers) > 50
    server.restart(crash=True)  # runs `corvid check` on the killed server's files first
    store = open_store(server.url, "tscrash")
    try:
        for w in writers:
            got = {
                int((e.timestamp - BASE) / timedelta(minutes=1)): e.values[0]
                for e in store.operations.send(GetTimeSeriesOperation(w.doc_id, "Load")).entries
            }
            # Each acknowledged value is present (a later unacknowledged write may have overwritten it only if
            # it was in flight at the kill, and then it too was the last one written for that minute).
            missing = [m for m in w.acked if m not in got]
            assert not missing, f"{w.doc_id}: {len(missing)} acknowledged minutes lost"
            assert sum(1 for m, v in w.acked.items() if got[m] == v) >= len(w.acked) - 50
    finally:
        store.close()


def test_session_load_includes_series_and_the_range_cache_answers_without_a_request(store):
    with store.open_session() as session:
        session.store(User(name="Oren"), "users/5")
        ts = session.time_series_for("users/5", "Heart")
        for m in range(120):
            ts.append_single(BASE + timedelta(minutes=m), float(m))
        session.save_changes()
    with store.open_session() as session:
        session.load(
            "users/5",
            User,
            lambda b: b.include_time_series("Heart", BASE, BASE + timedelta(minutes=59)).include_time_series_by_range_type_and_count(
                "Heart", TimeSeriesRangeType.LAST, 10
            ),
        )
        requests_before = session.number_of_requests
        # Both answers come from the included ranges: no request.
        first_hour = session.time_series_for("users/5", "Heart").get(BASE, BASE + timedelta(minutes=59))
        last_ten = session.time_series_for("users/5", "Heart").get(BASE + timedelta(minutes=110), None)
        assert session.number_of_requests == requests_before
        assert [e.values[0] for e in first_hour] == [float(m) for m in range(60)]
        assert [e.values[0] for e in last_ten] == [float(m) for m in range(110, 120)]
        # A range partly outside the cache asks the server for the missing part only, and answers all of it.
        middle = session.time_series_for("users/5", "Heart").get(BASE + timedelta(minutes=50), BASE + timedelta(minutes=70))
        assert [e.values[0] for e in middle] == [float(m) for m in range(50, 71)]
        assert session.number_of_requests == requests_before + 1
