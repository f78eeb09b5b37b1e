"""Time-series rollup and retention policies through the official Python client: `ConfigureTimeSeriesOperation`
with policies, `ConfigureTimeSeriesPolicyOperation` / `ConfigureRawTimeSeriesPolicyOperation` /
`RemoveTimeSeriesPolicyOperation`, the policy runner's `<series>@<policy>` rollups (first, last, min, max, sum,
count per value, checked against values computed here from what was written), rollups of rollups, late appends
and deletes re-rolled, retention of raw and rolled-up entries, the session's typed rollup API, bad configurations
refused with RavenDB's messages and nothing changed, and kill -9 with `corvid check` clean and the rollups
complete after the restart."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
import requests
from ravendb.documents.operations.time_series import (
    ConfigureRawTimeSeriesPolicyOperation,
    ConfigureTimeSeriesOperation,
    ConfigureTimeSeriesPolicyOperation,
    GetTimeSeriesOperation,
    RawTimeSeriesPolicy,
    RemoveTimeSeriesPolicyOperation,
    TimeSeriesCollectionConfiguration,
    TimeSeriesConfiguration,
    TimeSeriesPolicy,
)
from ravendb.documents.queries.time_series import TimeSeriesRawResult
from ravendb.documents.session.time_series import ITimeSeriesValuesBindable
from ravendb.exceptions.raven_exceptions import RavenException
from ravendb.primitives.time_series import TimeValue

from corvid_support import User, create_database, open_store, wait_until

HOUR = 3_600_000
MINUTE = 60_000


class HeartRate(ITimeSeriesValuesBindable):
    def __init__(self, bpm: float = None, spo2: float = None):
        self.bpm = bpm
        self.spo2 = spo2

    def get_time_series_mapping(self):
        return {0: ("bpm", None), 1: ("spo2", None)}


def ms(dt: datetime) -> int:
    return int(dt.replace(tzinfo=timezone.utc).timestamp() * 1000)


def at(ms_value: int) -> datetime:
    return datetime.fromtimestamp(ms_value / 1000, tz=timezone.utc).replace(tzinfo=None)


def now_ms() -> int:
    return int(time.time() * 1000)


def configure(store, policies, raw_retention: TimeValue | None = None, frequency=timedelta(milliseconds=300)):
    config = TimeSeriesConfiguration()
    raw = RawTimeSeriesPolicy(raw_retention) if raw_retention else RawTimeSeriesPolicy.DEFAULT_POLICY()
    config.collections["Users"] = TimeSeriesCollectionConfiguration(policies=policies, raw_policy=raw)
    config.policy_check_frequency = frequency
    store.maintenance.send(ConfigureTimeSeriesOperation(config))


def write_minutes(store, doc_id: str, start: int, minutes: int, value) -> dict[int, list[float]]:
    """Appends one entry per minute from `start` (unix ms); returns {timestamp: values}."""
    written = {}
    with store.open_session() as session:
        if session.load(doc_id) is None:
            session.store(User(name=doc_id), doc_id)
        ts = session.time_series_for(doc_id, "HeartRate")
        for m in range(minutes):
            stamp = start + m * MINUTE
            values = value(m)
            ts.append(at(stamp), values)
            written[stamp] = values
        session.save_changes()
    return written


def expected_rollup(points: dict[int, list[float]], span_ms: int, closed_before: int) -> dict[int, list[float]]:
    """RavenDB's rollup of raw points: per window, for each value i, values[i*6 + (first, last, min, max, sum, count)]."""
    windows: dict[int, list[tuple[int, list[float]]]] = {}
    for stamp in sorted(points):
        window = stamp - stamp % span_ms
        if window + span_ms <= closed_before:
            windows.setdefault(window, []).append((stamp, points[stamp]))
    out = {}
    for window, entries in windows.items():
        width = max(len(v) for _, v in entries)
        values = []
        for i in range(width):
            column = [v[i] for _, v in entries if len(v) > i]
            values += [column[0], column[-1], min(column), max(column), sum(column), float(len(column))]
        out[window] = values
    return out


def expected_rollup_of_rollup(rollups: dict[int, list[float]], span_ms: int) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for stamp in sorted(rollups):
        window = stamp - stamp % span_ms
        values = rollups[stamp]
        if window not in out:
            out[window] = list(values)
            continue
        agg = out[window]
        for j, v in enumerate(values):
            kind = j % 6
            agg[j] = {0: agg[j], 1: v, 2: min(agg[j], v), 3: max(agg[j], v), 4: agg[j] + v, 5: agg[j] + v}[kind]
    return out


def series(store, doc_id: str, name: str) -> dict[int, list[float]]:
    result = store.operations.send(GetTimeSeriesOperation(doc_id, name))
    if result is None:
        return {}
    return {ms(e.timestamp): list(e.values) for e in result.entries}


def runner_stats(http, url, db) -> dict:
    r = http.get(f"{url}/databases/{db}/debug/timeseries/policies", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def wait_passes(http, url, db, count: int = 2) -> None:
    """Waits until the runner has run `count` more passes (so what it does is done)."""
    start = runner_stats(http, url, db)["Passes"]
    assert wait_until(lambda: runner_stats(http, url, db)["Passes"] >= start + count, timeout=30)


def test_hourly_and_two_hourly_rollups_match_the_written_values(store, http, server_url, db_name):
    base = now_ms() // HOUR * HOUR - 6 * HOUR
    points = write_minutes(store, "users/1", base, 5 * 60, lambda m: [float(60 + (m * 7) % 50), float(90 + m % 9)])
    configure(store, [TimeSeriesPolicy("ByHour", TimeValue.of_hours(1)), TimeSeriesPolicy("ByTwoHours", TimeValue.of_hours(2))])
    hourly = expected_rollup(points, HOUR, now_ms())
    assert len(hourly) == 5
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByHour") == hourly, timeout=30)
    two_hourly = expected_rollup_of_rollup(hourly, 2 * HOUR)
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByTwoHours") == two_hourly, timeout=30)

    # The GET answer marks rollup entries, and the document lists the rollup series.
    r = http.get(f"{server_url}/databases/{db_name}/timeseries", params={"docId": "users/1", "name": "HeartRate@ByHour"}, timeout=10)
    assert all(e["IsRollup"] for e in r.json()["Entries"])
    with store.open_session() as session:
        user = session.load("users/1", User)
        names = session.advanced.get_time_series_for(user)
    assert sorted(n.lower() for n in names) == ["heartrate", "heartrate@byhour", "heartrate@bytwohours"]

    # The session's typed rollup API reads them as first/last/min/max/sum/count.
    with store.open_session() as session:
        entries = session.time_series_rollup_for(HeartRate, "users/1", "ByHour", raw="HeartRate").get()
    assert [ms(e.timestamp) for e in entries] == sorted(hourly)
    first = hourly[min(hourly)]
    assert (entries[0].first.bpm, entries[0].last.bpm, entries[0].min.bpm, entries[0].max.bpm) == tuple(first[0:4])
    assert (entries[0].sum.spo2, entries[0].count.spo2) == (first[10], first[11])
    assert entries[0].average.bpm == pytest.approx(first[4] / first[5])

    # RQL reads a rollup series like any other.
    with store.open_session() as session:
        result = session.advanced.raw_query(
            "declare timeseries out(x)\n{\n    from x.'HeartRate@ByHour'\n}\nfrom Users as doc\nselect out(doc)", TimeSeriesRawResult
        ).first()
    assert [(ms(r.timestamp), list(r.values)) for r in result.results] == sorted(hourly.items())

    stats = runner_stats(http, server_url, db_name)
    assert stats["Passes"] >= 1 and stats["RollupEntriesWritten"] >= 5 + 3 and stats["Errors"] == 0, stats
    assert stats["Configuration"]["Collections"]["Users"]["Policies"][0]["Name"] == "ByHour"


def test_late_appends_and_deletes_are_rolled_up_again(store, http, server_url, db_name):
    base = now_ms() // HOUR * HOUR - 5 * HOUR
    points = write_minutes(store, "users/1", base, 4 * 60, lambda m: [float(m % 17)])
    configure(store, [TimeSeriesPolicy("ByHour", TimeValue.of_hours(1)), TimeSeriesPolicy("ByTwoHours", TimeValue.of_hours(2))])
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByHour") == expected_rollup(points, HOUR, now_ms()), timeout=30)

    # A late value (between two minutes of hour 1) and an overwrite in hour 2.
    late = base + HOUR + 30 * MINUTE + 30_000
    overwritten = base + 2 * HOUR + 5 * MINUTE
    with store.open_session() as session:
        ts = session.time_series_for("users/1", "HeartRate")
        ts.append_single(at(late), 1000.0)
        ts.append_single(at(overwritten), -5.0)
        session.save_changes()
    points[late] = [1000.0]
    points[overwritten] = [-5.0]
    hourly = expected_rollup(points, HOUR, now_ms())
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByHour") == hourly, timeout=30)
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByTwoHours") == expected_rollup_of_rollup(hourly, 2 * HOUR), timeout=30)

    # Deleting all of hour 3 removes its window; part of hour 0 changes its window.
    with store.open_session() as session:
        ts = session.time_series_for("users/1", "HeartRate")
        ts.delete(at(base + 3 * HOUR), at(base + 4 * HOUR - 1))
        ts.delete(at(base), at(base + 10 * MINUTE))
        session.save_changes()
    points = {t: v for t, v in points.items() if not (base + 3 * HOUR <= t < base + 4 * HOUR or base <= t <= base + 10 * MINUTE)}
    hourly = expected_rollup(points, HOUR, now_ms())
    assert len(hourly) == 3
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByHour") == hourly, timeout=30)
    assert wait_until(lambda: series(store, "users/1", "HeartRate@ByTwoHours") == expected_rollup_of_rollup(hourly, 2 * HOUR), timeout=30)
    wait_passes(http, server_url, db_name)
    assert series(store, "users/1", "HeartRate@ByHour") == hourly


def test_retention_removes_old_raw_and_rolled_up_entries(store, http, server_url, db_name):
    base = now_ms() // HOUR * HOUR - 8 * HOUR
    points = write_minutes(store, "users/1", base, 7 * 60, lambda m: [float(m % 23), 1.0])
    full_hourly = expected_rollup(points, HOUR, now_ms())
    started = now_ms()
    configure(
        store,
        [TimeSeriesPolicy("ByHour", TimeValue.of_hours(1), TimeValue.of_hours(5))],
        raw_retention=TimeValue.of_hours(3),
    )

    def trimmed() -> bool:
        raw = series(store, "users/1", "HeartRate")
        hourly = series(store, "users/1", "HeartRate@ByHour")
        return bool(raw) and min(raw) > started - 3 * HOUR and bool(hourly) and min(hourly) > started - HOUR - 5 * HOUR

    assert wait_until(trimmed, timeout=30)
    wait_passes(http, server_url, db_name)
    finished = now_ms()
    raw = series(store, "users/1", "HeartRate")
    # Nothing newer than the retention was removed, nothing older is left.
    assert raw == {t: v for t, v in points.items() if t >= min(raw)}
    assert all(t in raw for t in points if t > finished - 3 * HOUR)
    hourly = series(store, "users/1", "HeartRate@ByHour")
    # The rollups of removed raw entries stay as they were computed from the whole hour.
    assert hourly == {t: v for t, v in full_hourly.items() if t >= min(hourly)}
    assert all(t in hourly for t in full_hourly if t > finished - 6 * HOUR)
    stats = runner_stats(http, server_url, db_name)
    # Hours already past the rollup's retention were never rolled up (RavenDB skips them too).
    assert stats["EntriesDeleted"] >= 60 * 4 and stats["SeriesRetained"] >= 1, stats


def test_policy_operations_edit_the_configuration(store, http, server_url, db_name):
    ops = store.maintenance
    ops.send(ConfigureTimeSeriesPolicyOperation("Users", TimeSeriesPolicy("ByDay", TimeValue.of_days(1), TimeValue.of_days(30))))
    ops.send(ConfigureTimeSeriesPolicyOperation("Users", TimeSeriesPolicy("ByHour", TimeValue.of_hours(1), TimeValue.of_days(2))))
    ops.send(ConfigureRawTimeSeriesPolicyOperation("Users", RawTimeSeriesPolicy(TimeValue.of_hours(12))))
    config = http.get(f"{server_url}/databases/{db_name}/timeseries/config", timeout=10).json()
    users = config["Collections"]["Users"]
    assert [p["Name"] for p in users["Policies"]] == ["ByHour", "ByDay"]  # sorted by aggregation time
    assert users["RawPolicy"]["RetentionTime"] == {"Value": 12 * 3600, "Unit": "Second"}
    assert config["PolicyCheckFrequency"] == "00:10:00"
    parsed = TimeSeriesConfiguration.from_json(config)
    assert parsed.collections["users"].policies[1].aggregation_time.value == 86400

    # Replacing by name, then removing; removing the raw policy makes its retention unlimited again.
    ops.send(ConfigureTimeSeriesPolicyOperation("Users", TimeSeriesPolicy("ByHour", TimeValue.of_hours(2), TimeValue.of_days(2))))
    ops.send(RemoveTimeSeriesPolicyOperation("Users", "ByDay"))
    ops.send(RemoveTimeSeriesPolicyOperation("Users", "rawpolicy"))
    ops.send(RemoveTimeSeriesPolicyOperation("Orders", "Nothing"))  # nothing to remove is fine
    users = http.get(f"{server_url}/databases/{db_name}/timeseries/config", timeout=10).json()["Collections"]["Users"]
    assert [(p["Name"], p["AggregationTime"]["Value"]) for p in users["Policies"]] == [("ByHour", 7200)]
    assert users["RawPolicy"]["RetentionTime"] == {"Value": 2147483647, "Unit": "None"}


@pytest.mark.parametrize(
    "policies, message",
    [
        ([("A", 3600, 86400), ("a", 7200, 86400)], "Policy names must be unique, policy with the name 'a' has duplicates."),
        ([("A", 3600, 86400), ("B", 3600, 86400)], "The policy 'A' has the same aggregation time as the policy 'B'"),
        (
            [("A", 3600, 1800), ("B", 7200, 86400)],
            "The policy 'A' has a retention time of '30 minutes' but should be aggregated by policy 'B' with the aggregation time frame of 2 hours",
        ),
        ([("A", 7200, 86400), ("B", 10800, 86400)], "must be divided by the aggregation time of 'A' (2 hours) without a remainder."),
        ([("A", 0, 86400)], "Aggregation time of 'A' must be greater than zero"),
    ],
)
def test_bad_configurations_are_refused_and_nothing_changes(store, http, server_url, db_name, policies, message):
    configure(store, [TimeSeriesPolicy("Keep", TimeValue.of_hours(1))])
    before = http.get(f"{server_url}/databases/{db_name}/timeseries/config", timeout=10).json()
    body = {
        "Collections": {
            "Users": {
                "Disabled": False,
                "Policies": [
                    {"Name": n, "AggregationTime": {"Value": a, "Unit": "Second"}, "RetentionTime": {"Value": r, "Unit": "Second"}}
                    for n, a, r in policies
                ],
                "RawPolicy": None,
            }
        },
        "PolicyCheckFrequency": None,
        "NamedValues": None,
    }
    r = http.post(f"{server_url}/databases/{db_name}/admin/timeseries/config", json=body, timeout=10)
    assert r.status_code == 500, r.text
    error = r.json()
    assert error["Type"] == "System.InvalidOperationException" and message in error["Message"], error
    assert http.get(f"{server_url}/databases/{db_name}/timeseries/config", timeout=10).json() == before
    # The client's operation reports the same error.
    bad = TimeSeriesConfiguration()
    bad.collections["Users"] = TimeSeriesCollectionConfiguration(
        policies=[TimeSeriesPolicy("X", TimeValue.of_hours(2)), TimeSeriesPolicy("Y", TimeValue.of_hours(3))]
    )
    with pytest.raises(RavenException, match="without a remainder"):
        store.maintenance.send(ConfigureTimeSeriesOperation(bad))
    # A raw retention shorter than the first policy's window is refused too.
    with pytest.raises(RavenException, match="The policy 'rawpolicy' has a retention time of '30 minutes'"):
        store.maintenance.send(ConfigureRawTimeSeriesPolicyOperation("Users", RawTimeSeriesPolicy(TimeValue.of_minutes(30))))
    assert http.get(f"{server_url}/databases/{db_name}/timeseries/config", timeout=10).json() == before


def test_disabled_collection_is_left_alone(store, http, server_url, db_name):
    base = now_ms() // HOUR * HOUR - 3 * HOUR
    write_minutes(store, "users/1", base, 120, lambda m: [1.0])
    config = TimeSeriesConfiguration()
    config.collections["Users"] = TimeSeriesCollectionConfiguration(
        disabled=True, policies=[TimeSeriesPolicy("ByHour", TimeValue.of_hours(1))], raw_policy=RawTimeSeriesPolicy(TimeValue.of_hours(1))
    )
    # Another collection keeps the runner busy, so passes do run.
    config.collections["Orders"] = TimeSeriesCollectionConfiguration(policies=[TimeSeriesPolicy("ByHour", TimeValue.of_hours(1))])
    config.policy_check_frequency = timedelta(milliseconds=300)
    store.maintenance.send(ConfigureTimeSeriesOperation(config))
    wait_passes(http, server_url, db_name, 3)
    assert series(store, "users/1", "HeartRate@ByHour") == {}
    assert len(series(store, "users/1", "HeartRate")) == 120


def test_kill_during_rollups_leaves_consistent_series(server_factory):
    server = server_factory()
    create_database(server.url, "tsroll")
    store = open_store(server.url, "tsroll")
    base = now_ms() // HOUR * HOUR - 30 * HOUR
    written = {}
    for doc in range(6):
        written[f"users/{doc}"] = write_minutes(store, f"users/{doc}", base, 24 * 60, lambda m, d=doc: [float((m * (d + 3)) % 101)])
    configure(store, [TimeSeriesPolicy("ByHour", TimeValue.of_hours(1)), TimeSeriesPolicy("ByDay", TimeValue.of_days(1))], frequency=timedelta(milliseconds=50))
    store.close()
    http = requests.Session()
    # Kill as soon as the runner has started writing rollups.
    assert wait_until(lambda: runner_stats(http, server.url, "tsroll")["RollupEntriesWritten"] > 0, timeout=30, interval=0.01)
    server.kill()
    server.restart(crash=True)  # `corvid check` on the killed server's files first
    store = open_store(server.url, "tsroll")
    try:
        for doc, points in written.items():
            hourly = expected_rollup(points, HOUR, now_ms())
            assert len(hourly) == 24
            assert wait_until(lambda: series(store, doc, "HeartRate@ByHour") == hourly, timeout=60)
            daily = expected_rollup_of_rollup(hourly, 24 * HOUR)
            assert wait_until(lambda: series(store, doc, "HeartRate@ByDay") == {k: v for k, v in daily.items() if k + 24 * HOUR <= now_ms()}, timeout=60)
    finally:
        store.close()
    server.stop()
    server.check_storage()
