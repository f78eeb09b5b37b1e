"""Time-series queries in RQL through the official Python client: `declare timeseries` functions and
`select timeseries(...)` with `between`, `where` on the tag and values, `group by` hours and months and the
aggregations, and raw entries. Every expected answer is computed here from the entries the test wrote."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import datetime, timedelta

import pytest
from ravendb.documents.queries.time_series import TimeSeriesAggregationResult, TimeSeriesRawResult
from ravendb.exceptions.raven_exceptions import RavenException

from corvid_support import User

BASE = datetime(2024, 1, 30, 21, 0)
FITBIT, APPLE = "watches/fitbit", "watches/apple"


class Person:
    def __init__(self, name: str = None, age: int = None):
        self.name = name
        self.age = age


def save_people(store, count: int = 4) -> dict:
    written = {}
    rng = random.Random(7)
    with store.open_session() as session:
        for i in range(count):
            doc_id = f"people/{i}"
            session.store(Person("Oren", i * 30), doc_id)
            series = session.time_series_for(doc_id, "HeartRate")
            entries = []
            for minute in range(0, 3 * 24 * 60, 37):
                at = BASE + timedelta(minutes=minute)
                values = [float(rng.randint(50, 150)), float(rng.randint(0, 10))]
                tag = FITBIT if rng.random() < 0.6 else APPLE
                series.append(at, values, tag)
                entries.append((at, values, tag))
            written[doc_id] = entries
        session.save_changes()
    return written


def hour_of(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def expected_buckets(entries, start, end, bucket_of, keep=lambda e: True):
    buckets = defaultdict(list)
    for at, values, tag in entries:
        if start <= at <= end and keep((at, values, tag)):
            buckets[bucket_of(at)].append(values)
    return dict(sorted(buckets.items()))


def test_declared_function_groups_by_hour_with_every_aggregation(store):
    written = save_people(store)
    start, end = BASE + timedelta(hours=2), BASE + timedelta(hours=30)
    with store.open_session() as session:
        query = session.advanced.raw_query(
            "declare timeseries out(p)\n{\n    from p.HeartRate between $start and $end\n    group by 1h\n"
            "    select min(), max(), avg(), sum(), first(), last(), count()\n}\n"
            "from People as p\nwhere p.age > 49\nselect out(p) as heart_rate, p.name",
            dict,
        ).add_parameter("start", start).add_parameter("end", end)
        results = list(query)
    assert len(results) == 2  # ages 60 and 90
    for result in results:
        assert result["name"] == "Oren"
    for doc_id, result in zip(["people/2", "people/3"], sorted(results, key=lambda r: r["@metadata"]["@id"])):
        assert result["@metadata"]["@id"] == doc_id
        expected = expected_buckets(written[doc_id], start, end, hour_of)
        agg = TimeSeriesAggregationResult.from_json(result["heart_rate"])
        assert agg.count == sum(len(v) for v in expected.values())
        assert [r.from_date for r in agg.results] == list(expected.keys())
        for got, (hour, values) in zip(agg.results, expected.items()):
            assert got.to_date == hour + timedelta(hours=1)
            for i in range(2):
                column = [v[i] for v in values]
                assert got.min[i] == min(column) and got.max[i] == max(column)
                assert got.sum[i] == pytest.approx(sum(column))
                assert got.average[i] == pytest.approx(sum(column) / len(column))
                assert got.first[i] == column[0] and got.last[i] == column[-1]
                assert got.count[i] == len(column)



def test_offset_gives_local_time_buckets_and_timestamps(store):
    """`offset '-05:30'`: `between` selects by UTC, results and their hour buckets are in local time."""
    written = save_people(store, count=1)
    shift = timedelta(hours=-5, minutes=-30)
    start, end = BASE + timedelta(hours=3), BASE + timedelta(hours=20)
    with store.open_session() as session:
        grouped = session.advanced.raw_query(
            "from People as p select timeseries(from p.HeartRate between $start and $end group by 1h select max() offset '-05:30')",
            TimeSeriesAggregationResult,
        ).add_parameter("start", start).add_parameter("end", end).first()
        raw = session.advanced.raw_query(
            "from People as p select timeseries(from p.HeartRate between $start and $end offset '-05:30')", TimeSeriesRawResult
        ).add_parameter("start", start).add_parameter("end", end).first()
    entries = [(at + shift, values, tag) for at, values, tag in written["people/0"] if start <= at <= end]
    assert [(r.timestamp, r.values) for r in raw.results] == [(at, values) for at, values, _ in entries]
    expected = expected_buckets(entries, start + shift, end + shift, hour_of)
    assert [r.from_date for r in grouped.results] == list(expected.keys())
    assert [r.max[0] for r in grouped.results] == [max(v[0] for v in values) for values in expected.values()]

def test_document_query_select_time_series_by_month_and_tag(store):
    written = save_people(store, count=1)
    text = "from HeartRate between $start and $end\nwhere Tag = 'watches/fitbit'\ngroup by '1 month'\nselect min(), max(), avg()"
    with store.open_session() as session:
        results = list(
            session.advanced.document_query(object_type=Person)
            .where_greater_than("age", -1)
            .select_time_series(TimeSeriesAggregationResult, lambda b: b.raw(text))
            .add_parameter("start", BASE)
            .add_parameter("end", BASE + timedelta(days=92))
        )
    assert len(results) == 1
    month = lambda at: at.replace(day=1, hour=0, minute=0)  # noqa: E731
    expected = expected_buckets(written["people/0"], BASE, BASE + timedelta(days=92), month, lambda e: e[2] == FITBIT)
    assert len(expected) == 2  # January and February
    assert results[0].count == sum(len(v) for v in expected.values())
    for got, (first_day, values) in zip(results[0].results, expected.items()):
        assert got.from_date == first_day
        column = [v[0] for v in values]
        assert got.min[0] == min(column) and got.max[0] == max(column)
        assert got.average[0] == pytest.approx(sum(column) / len(column))


def test_raw_entries_filtered_on_values(store):
    written = save_people(store, count=1)
    with store.open_session() as session:
        result = session.advanced.raw_query(
            "declare timeseries out(x)\n{\n    from x.HeartRate where Values[0] >= 120 and Tag != 'watches/apple'\n}\n"
            "from People as doc\nselect out(doc)",
            TimeSeriesRawResult,
        ).first()
    expected = [e for e in written["people/0"] if e[1][0] >= 120 and e[2] != APPLE]
    assert result.count == len(expected) and len(result.results) == len(expected)
    for got, (at, values, tag) in zip(result.results, expected):
        assert got.timestamp == at and got.values == values and got.tag == tag



class Watch:
    def __init__(self, accuracy: float = None):
        self.accuracy = accuracy


def test_where_on_the_tag_document_after_load_tag(store):
    """`load Tag as w where w.accuracy >= 2.5`: each entry is kept when the document its tag names passes; an
    entry whose tag names no document compares as null (dropped), as do entries without a tag."""
    written = save_people(store, count=1)
    with store.open_session() as session:
        session.store(Watch(3.0), FITBIT)
        session.store(Watch(1.5), APPLE)
        session.time_series_for("people/0", "HeartRate").append(BASE - timedelta(hours=1), [60.0, 1.0], "watches/none")
        session.save_changes()
    with store.open_session() as session:
        result = session.advanced.raw_query(
            "declare timeseries out(x)\n{\n    from x.HeartRate load Tag as w where w.accuracy >= 2.5 and Values[0] > 90\n}\n"
            "from People as doc\nselect out(doc)",
            TimeSeriesRawResult,
        ).first()
    expected = [e for e in written["people/0"] if e[2] == FITBIT and e[1][0] > 90]
    assert result.count == len(expected) > 0
    assert [(r.timestamp, r.values, r.tag) for r in result.results] == expected

def test_inline_time_series_projection_beside_fields(store):
    with store.open_session() as session:
        session.store(User(name="Karmel"), "users/karmel")
        session.time_series_for("users/karmel", "Heart Rate").append_single(BASE, 60, FITBIT)
        session.time_series_for("users/karmel", "Heart Rate").append_single(BASE + timedelta(hours=1), 80, FITBIT)
        session.save_changes()
    with store.open_session() as session:
        result = session.advanced.raw_query(
            "from Users as u select u.name, timeseries(from u.'Heart Rate' select max()) as hr", dict
        ).first()
    assert result["name"] == "Karmel"
    assert result["hr"]["Count"] == 2
    assert result["hr"]["Results"][0]["Max"] == [80]


def test_bad_time_series_queries_are_refused(store):
    with store.open_session() as session:
        session.store(User(name="a"), "users/1")
        session.save_changes()
    bad = [
        "from Users as u select timeseries(from u.HR select median())",
        "from Users as u select timeseries(from u.HR group by '1 fortnight')",
        "from Users as u select timeseries(from u.HR between $nope and $nope)",
        "from Users as u select timeseries(from u.HR load Value as t)",
        "from Users as u select timeseries(from u.HR load Tag as t where t > 2)",
    ]
    for text in bad:
        with store.open_session() as session:
            with pytest.raises(RavenException) as raised:
                list(session.advanced.raw_query(text, dict))
            assert "InvalidQueryException" in str(raised.value) or "time-series" in str(raised.value), text


def test_query_includes_series_ranges_from_the_data_written(store, server_url, db_name, http):
    """`include timeseries(...)` in a query: the session answers the included ranges without another request,
    the raw answer holds exactly the entries written in each range, and a changed value changes the result
    etag (the session's query cache must not serve the old one)."""
    written = save_people(store, count=3)
    start, end = BASE + timedelta(hours=5), BASE + timedelta(hours=9)
    with store.open_session() as session:
        people = list(session.query(object_type=Person).include(lambda i: i.include_time_series("HeartRate", start, end)))
        assert len(people) == 3 and session.advanced.number_of_requests == 1
        for person in people:
            doc_id = session.advanced.get_document_id(person)
            entries = session.time_series_for(doc_id, "HeartRate").get(start, end)
            want = [(at, values, tag) for at, values, tag in written[doc_id] if start <= at <= end]
            assert [(e.timestamp, e.values, e.tag) for e in entries] == want
        assert session.advanced.number_of_requests == 1, "the ranges came with the query"

    url = f"{server_url}/databases/{db_name}/queries"
    raw = http.post(url, json={"Query": "from People as p include timeseries(p, 'HeartRate', last(4)), timeseries('Nothing')"}).json()
    included = raw["TimeSeriesIncludes"]
    assert set(included) == set(written)
    for doc_id, entries in written.items():
        last_four = included[doc_id]["HeartRate"][0]["Entries"]
        assert [e["Values"] for e in last_four] == [values for _, values, _ in entries[-4:]]
        assert included[doc_id]["Nothing"][0]["Entries"] == []

    before = http.post(url, json={"Query": "from People include timeseries('HeartRate', last(1))"}).json()["ResultEtag"]
    with store.open_session() as session:
        at, values, tag = written["people/0"][-1]
        session.time_series_for("people/0", "HeartRate").append(at, [values[0] + 1, values[1]], tag)
        session.save_changes()
    after = http.post(url, json={"Query": "from People include timeseries('HeartRate', last(1))"}).json()["ResultEtag"]
    assert before != after

    for text in ["from People as p include timeseries(p.Friend, 'HeartRate')", "from People include timeseries(1, 2, 3)"]:
        r = http.post(url, json={"Query": text})
        assert r.status_code in (400, 501), (text, r.status_code)
        assert "timeseries(" in r.json()["Message"], r.text


def test_load_includes_every_series_of_the_document(store):
    """`include_all_time_series_by_count` sends the series name `@all_timeseries`: every series of the loaded
    document comes with the load, its last entries as written."""
    from ravendb.documents.session.time_series import TimeSeriesRangeType

    written = save_people(store, count=1)
    with store.open_session() as session:
        for i in range(5):
            session.time_series_for("people/0", "Steps").append(BASE + timedelta(minutes=i), [float(i)])
        session.save_changes()
    with store.open_session() as session:
        session.load("people/0", Person, lambda i: i.include_all_time_series_by_count(TimeSeriesRangeType.LAST, 3))
        steps = session.time_series_for("people/0", "Steps").get(BASE + timedelta(minutes=2), None)
        heart = session.time_series_for("people/0", "HeartRate").get(written["people/0"][-3][0], None)
        assert [e.values for e in steps] == [[2.0], [3.0], [4.0]]
        assert [e.values for e in heart] == [values for _, values, _ in written["people/0"][-3:]]
        assert session.advanced.number_of_requests == 1
