"""Time series in dumps (issue 22): exported in RavenDB's segment encoding and imported back through the
official Python client's smuggler into a fresh database with every value, tag and timestamp equal (plain,
multi-value, tagged, incremental and rollup-named series, series longer than one segment); a dump with a
corrupt segment stops with an error naming the position and the series, keeping what came before it; and
dump backups, full then incremental, carry the series changed between them, deletes included."""

from __future__ import annotations

import gzip
import io
import json
import random
from datetime import datetime, timedelta

from corvid_support import User, create_database, delete_database, open_store, unique_db_name
from test_backups import restore
from test_dump_backups import _run, _task
from test_smuggler import _documents, _export, _import

BASE = datetime(2024, 3, 1)
SERIES = [("users/1", "HeartRate"), ("users/1", "Stocks"), ("users/2", "HeartRate"), ("users/2", "HeartRate@ByHour"),
          ("users/3", "INC:Views")]


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}0000Z"


def _entries(http, url, db, doc_id, name) -> list:
    body = http.get(f"{url}/databases/{db}/timeseries", params={"docId": doc_id, "name": name, "pageSize": 1_000_000}, timeout=60)
    if body.status_code == 404:
        return []
    body.raise_for_status()
    return [(e["Timestamp"], e["Values"], e["Tag"]) for e in body.json()["Entries"]]


def _all_series(http, url, db) -> dict:
    return {(d, n): _entries(http, url, db, d, n) for d, n in SERIES}


def _append(http, url, db, doc_id, name, appends) -> None:
    r = http.post(f"{url}/databases/{db}/timeseries", params={"docId": doc_id}, json={"Name": name, "Appends": appends}, timeout=60)
    assert r.status_code == 204, r.text


def _increment(http, url, db, doc_id, name, increments) -> None:
    body = {"Name": name, "Increments": [{"Timestamp": _stamp(at), "Values": [v]} for at, v in increments]}
    r = http.post(f"{url}/databases/{db}/timeseries", params={"docId": doc_id}, json=body, timeout=60)
    assert r.status_code == 204, r.text


def _fill(store, http, url, db) -> None:
    with store.open_session() as session:
        for i in range(1, 4):
            session.store(User(name=f"user {i}", age=i), f"users/{i}")
        session.save_changes()
    # Through the client's session: a few entries with and without tags.
    with store.open_session() as session:
        series = session.time_series_for("users/1", "HeartRate")
        series.append_single(BASE, 70, "watches/fitbit")
        series.append(BASE + timedelta(seconds=1), [71.5, 3], None)
        series.append_single(BASE + timedelta(seconds=2, milliseconds=7), -0.25, 'tag "quoted" ⭐')
        session.save_changes()
    rnd = random.Random(22)
    at = BASE + timedelta(minutes=1)
    appends = []
    # Longer than many 2 KB segments: irregular steps, repeated and jumping values, rotating tags.
    for i in range(6000):
        at += timedelta(milliseconds=rnd.choice([1000, 1000, 1000, 999, 60_000, 1]))
        values = [round(rnd.uniform(50, 150), 2)] if i % 3 else [float(i), 1e-300, -1e300, 0.0]
        tag = [None, "watches/fitbit", f"device/{i % 150}"][i % 3]
        appends.append({"Timestamp": _stamp(at), "Values": values, "Tag": tag})
    _append(http, url, db, "users/1", "HeartRate", appends)
    # Far apart: more than the 24.8 days one segment can span.
    _append(http, url, db, "users/1", "Stocks", [
        {"Timestamp": _stamp(BASE + timedelta(days=d)), "Values": [100 + d, 101 + d, 99 + d, 100.5 + d, 1e6 * d]} for d in range(0, 200, 3)])
    _append(http, url, db, "users/2", "HeartRate", [{"Timestamp": _stamp(BASE), "Values": [60]}])
    _append(http, url, db, "users/2", "HeartRate@ByHour", [
        {"Timestamp": _stamp(BASE + timedelta(hours=h)), "Values": [60 + h, 80 + h, 70 + h, 700 + h, 10]} for h in range(48)])
    _increment(http, url, db, "users/3", "INC:Views", [(BASE, 5), (BASE + timedelta(minutes=1), 2)])
    _increment(http, url, db, "users/3", "INC:Views", [(BASE, 3)])


def test_time_series_round_trip_into_a_fresh_database(store, server_url, db_name, http, tmp_path):
    _fill(store, http, server_url, db_name)
    expected = _all_series(http, server_url, db_name)
    assert len(expected[("users/1", "HeartRate")]) == 6003 and expected[("users/3", "INC:Views")][0][1] == [8]
    dump = tmp_path / "ts.ravendbdump"
    result = _export(store, dump)
    assert result.time_series.read_count == sum(len(e) for e in expected.values())

    target = unique_db_name("tsdump")
    create_database(server_url, target)
    try:
        with open_store(server_url, target) as other:
            imported = _import(other, dump)
            assert imported.time_series.read_count == result.time_series.read_count
        assert _all_series(http, server_url, target) == expected
        # The documents name their series, as in the source.
        assert _documents(http, server_url, target) == _documents(http, server_url, db_name)
        # A repeated import converges (entries at a timestamp are replaced, increments not added twice).
        with open_store(server_url, target) as other:
            _import(other, dump)
        assert _all_series(http, server_url, target) == expected
    finally:
        delete_database(server_url, target)


def _segments(raw: bytes) -> list:
    """(offset of the segment's bytes, size) of every TimeSeries item in a plain dump."""
    out = []
    start = raw.index(b'"TimeSeries":[')
    at = start
    while True:
        at = raw.find(b'{"@raven-data":', at)
        if at < 0:
            return out
        header_end = raw.index(b"}", raw.index(b'"@raven-blob-size":', at)) + 1
        header = json.loads(raw[at:header_end])
        out.append((header_end, header["@raven-blob-size"], header["@raven-data"]))
        at = header_end + header["@raven-blob-size"]


def test_a_corrupt_segment_stops_the_import_naming_where_and_keeps_what_came_before(store, server_url, db_name, http, tmp_path):
    _fill(store, http, server_url, db_name)
    dump = tmp_path / "ts.ravendbdump"
    _export(store, dump)
    raw = bytearray(gzip.decompress(dump.read_bytes()))
    segments = _segments(bytes(raw))
    assert len(segments) > 10 and all(size <= 2048 for _, size, _ in segments)
    offset, size, data = segments[5]
    raw[offset + 13] = 77  # NumberOfValues: more than the 32 a segment can hold
    target = unique_db_name("tscorrupt")
    create_database(server_url, target)
    try:
        files = {"importOptions": (None, "{}", "application/json"), "file": ("name", io.BytesIO(gzip.compress(bytes(raw))), "application/octet-stream")}
        r = http.post(f"{server_url}/databases/{target}/smuggler/import?operationId=1", files=files, timeout=60)
        assert r.status_code == 400, r.text
        message = r.json()["Message"]
        assert "section 'TimeSeries', item #6" in message and "byte" in message, message
        assert f"time series '{data['Name']}' of '{data['DocId']}'" in message and "corrupt time-series segment" in message, message
        # The documents and the five segments before it stay.
        assert len(_documents(http, server_url, target)) == 3
        assert len(_entries(http, server_url, target, "users/1", "HeartRate")) > 0
    finally:
        delete_database(server_url, target)


def test_incremental_dump_backups_carry_changed_series_and_deletes(store, server_url, db_name, http, tmp_path):
    url = server_url
    _fill(store, http, url, db_name)
    folder = tmp_path / "dumps"
    task_id = _task(http, url, db_name, folder)
    _run(http, url, db_name, task_id, full=True)
    # Values appended and overwritten, a range deleted, a whole series deleted, a new series.
    _append(http, url, db_name, "users/2", "HeartRate", [{"Timestamp": _stamp(BASE + timedelta(days=400)), "Values": [61, 2], "Tag": "late"}])
    _append(http, url, db_name, "users/2", "HeartRate", [{"Timestamp": _stamp(BASE), "Values": [59]}])
    r = http.post(f"{url}/databases/{db_name}/timeseries", params={"docId": "users/1"},
                  json={"Name": "HeartRate", "Deletes": [{"From": _stamp(BASE + timedelta(minutes=30)), "To": _stamp(BASE + timedelta(minutes=90))}]})
    assert r.status_code == 204, r.text
    with store.open_session() as session:
        session.time_series_for("users/1", "Stocks").delete_all()
        session.time_series_for("users/3", "Fresh").append_single(BASE, 1, None)
        session.save_changes()
    _run(http, url, db_name, task_id, full=False)
    _increment(http, url, db_name, "users/3", "INC:Views", [(BASE, 10)])
    _run(http, url, db_name, task_id, full=False)
    expected = _all_series(http, url, db_name)
    expected["fresh"] = _entries(http, url, db_name, "users/3", "Fresh")
    assert expected[("users/1", "Stocks")] == [] and expected[("users/3", "INC:Views")][0][1] == [18]

    [chain] = list(folder.iterdir())
    target = unique_db_name("tsrestore")
    state = restore(http, url, chain, target)
    assert state["Status"] == "Completed", state
    try:
        got = _all_series(http, url, target)
        got["fresh"] = _entries(http, url, target, "users/3", "Fresh")
        assert got == expected
        assert _documents(http, url, target)["users/1"]["@metadata"]["@timeseries"] == ["HeartRate"]
    finally:
        delete_database(url, target)
