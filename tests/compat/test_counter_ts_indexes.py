"""Counters and time-series indexes (`counters.map`, `timeSeries.map`, map and map-reduce, `load()`), defined
with the official client's index creation tasks: after the first indexing and after increments, counter
deletes, appends, range deletes and document deletes, every index answers what the test computes from the
data it wrote."""

from __future__ import annotations

import datetime

from ravendb.documents.indexes.counters import AbstractJavaScriptCountersIndexCreationTask
from ravendb.documents.indexes.time_series import AbstractJavaScriptTimeSeriesIndexCreationTask

from corvid_support import create_database, open_store, wait_until

BASE = datetime.datetime(2026, 1, 5, 0, 0, 0)


class CompanyCounters(AbstractJavaScriptCountersIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = ["counters.map('Companies', function (c) { return { name: c.Name, value: c.Value, doc: c.DocumentId }; })"]


class CompanyLikes(AbstractJavaScriptCountersIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = ["counters.map('Companies', 'Likes', c => ({ doc: c.DocumentId, likes: c.Value }))"]


class LikesByCity(AbstractJavaScriptCountersIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = [
            "counters.map('Companies', 'Likes', function (c) {"
            " var company = load(c.DocumentId, 'Companies'); var address = load(company.address_id, 'Addresses');"
            " return { city: address.city, likes: c.Value, count: 1 }; })"
        ]
        self.reduce = (
            "groupBy(r => r.city).aggregate(g => ({ city: g.key,"
            " likes: g.values.reduce((t, v) => t + v.likes, 0), count: g.values.reduce((t, v) => t + v.count, 0) }))"
        )


class HeartRates(AbstractJavaScriptTimeSeriesIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = [
            "timeSeries.map('Companies', 'HeartRate', function (ts) {"
            " return ts.Entries.map(e => ({ doc: ts.DocumentId, series: ts.Name, value: e.Value, tag: e.Tag,"
            " at: e.Timestamp, hour: e.Timestamp.getUTCHours() })); })"
        ]


class HeartRateByTag(AbstractJavaScriptTimeSeriesIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = [
            "timeSeries.map('Companies', function (ts) {"
            " return ts.Entries.map(e => ({ tag: e.Tag, total: e.Values[0], count: 1 })); })"
        ]
        self.reduce = (
            "groupBy(r => r.tag).aggregate(g => ({ tag: g.key,"
            " total: g.values.reduce((t, v) => t + v.total, 0), count: g.values.reduce((t, v) => t + v.count, 0) }))"
        )


def query(http, url, db, rql):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["IsStale"] is False
    return body["Results"]


def wait_for_indexing(http, url, db):
    def done():
        return all(not i["IsStale"] for i in http.get(f"{url}/databases/{db}/stats").json()["Indexes"])

    assert wait_until(done)


def no_errors(http, url, db):
    errors = http.get(f"{url}/databases/{db}/indexes/errors").json()["Results"]
    assert all(not e["Errors"] for e in errors), errors


def write(store, fn):
    with store.open_session() as session:
        fn(session)
        session.save_changes()


def counters_of(results):
    return sorted((r["doc"], r["name"], r["value"]) for r in results)


def test_counter_map_index_follows_increments_deletes_and_document_deletes(store, http, server_url, db_name):
    expected = {}

    def companies(session):
        for i in range(1, 6):
            company = {"name": f"c{i}"}
            session.store(company, f"companies/{i}")
            session.advanced.get_metadata_for(company)["@collection"] = "Companies"
            for name, delta in (("Likes", i * 3), ("Views", 100 + i)):
                session.counters_for(f"companies/{i}").increment(name, delta)
                expected[(f"companies/{i}", name)] = delta
        other = {"name": "u"}
        session.store(other, "users/1")
        session.advanced.get_metadata_for(other)["@collection"] = "Users"
        session.counters_for("users/1").increment("Likes", 99)

    write(store, companies)
    CompanyCounters().execute(store)
    CompanyLikes().execute(store)
    wait_for_indexing(http, server_url, db_name)

    def check():
        got = counters_of(query(http, server_url, db_name, "from index 'CompanyCounters'"))
        assert got == sorted((d, n, v) for (d, n), v in expected.items())
        likes = query(http, server_url, db_name, "from index 'CompanyLikes' order by likes as long")
        want = sorted(((d, v) for (d, n), v in expected.items() if n == "Likes"), key=lambda x: x[1])
        assert [(r["doc"], r["likes"]) for r in likes] == want

    check()
    # An increment re-maps that counter; a deleted counter and a deleted document take their entries away.
    write(store, lambda s: s.counters_for("companies/2").increment("Likes", 10))
    expected[("companies/2", "Likes")] += 10
    write(store, lambda s: s.counters_for("companies/3").delete("Views"))
    del expected[("companies/3", "Views")]
    write(store, lambda s: s.delete("companies/4"))
    for name in ("Likes", "Views"):
        del expected[("companies/4", name)]
    write(store, lambda s: s.counters_for("companies/5").increment("Shares", 7))
    expected[("companies/5", "Shares")] = 7
    check()
    filtered = query(http, server_url, db_name, "from index 'CompanyLikes' where likes > 10")
    assert sorted(r["doc"] for r in filtered) == sorted(d for (d, n), v in expected.items() if n == "Likes" and v > 10)
    no_errors(http, server_url, db_name)
    stats = http.get(f"{server_url}/databases/{db_name}/indexes/stats", params={"name": "CompanyCounters"}).json()["Results"][0]
    assert stats["SourceType"] == "Counters" and stats["IsStale"] is False
    assert stats["EntriesCount"] == len(expected)


def test_counter_map_reduce_with_load_follows_the_loaded_documents(store, http, server_url, db_name):
    cities = {"addresses/1": "NY", "addresses/2": "LA"}
    likes = {}

    def data(session):
        for address_id, city in cities.items():
            address = {"city": city}
            session.store(address, address_id)
            session.advanced.get_metadata_for(address)["@collection"] = "Addresses"
        for i in range(1, 7):
            company = {"address_id": f"addresses/{1 + i % 2}"}
            session.store(company, f"companies/{i}")
            session.advanced.get_metadata_for(company)["@collection"] = "Companies"
            session.counters_for(f"companies/{i}").increment("Likes", i)
            likes[f"companies/{i}"] = [f"addresses/{1 + i % 2}", i]

    write(store, data)
    LikesByCity().execute(store)

    def check():
        want = {}
        for address_id, value in likes.values():
            entry = want.setdefault(cities[address_id], [0, 0])
            entry[0] += value
            entry[1] += 1
        got = {r["city"]: [r["likes"], r["count"]] for r in query(http, server_url, db_name, "from index 'LikesByCity'")}
        assert got == want

    check()
    # A change to a loaded document re-maps the counters that loaded it.
    def move(session):
        session.load("addresses/2", dict)["city"] = "SF"

    write(store, move)
    cities["addresses/2"] = "SF"
    check()
    write(store, lambda s: s.counters_for("companies/1").increment("Likes", 100))
    likes["companies/1"][1] += 100
    check()
    no_errors(http, server_url, db_name)


def test_time_series_indexes_follow_appends_and_range_deletes(store, http, server_url, db_name):
    points = {}

    def data(session):
        for i in range(1, 4):
            company = {"name": f"c{i}"}
            session.store(company, f"companies/{i}")
            session.advanced.get_metadata_for(company)["@collection"] = "Companies"
            ts = session.time_series_for(f"companies/{i}", "HeartRate")
            for minute in range(0, 120, 10):
                at = BASE + datetime.timedelta(minutes=minute)
                value = 60 + i + minute / 10
                tag = f"watches/{minute % 3}"
                ts.append_single(at, value, tag)
                points[(f"companies/{i}", "HeartRate", minute)] = (value, tag)
            session.time_series_for(f"companies/{i}", "Steps").append_single(BASE, 1000 * i, "watches/0")
            points[(f"companies/{i}", "Steps", 0)] = (1000 * i, "watches/0")

    write(store, data)
    HeartRates().execute(store)
    HeartRateByTag().execute(store)

    def check():
        got = query(http, server_url, db_name, "from index 'HeartRates'")
        want = sorted((d, m, v, t) for (d, s, m), (v, t) in points.items() if s == "HeartRate")
        minutes = lambda r: int((datetime.datetime.fromisoformat(r["at"].replace("Z", "")) - BASE).total_seconds() // 60)
        assert sorted((r["doc"], minutes(r), r["value"], r["tag"]) for r in got) == want
        assert all(r["series"] == "HeartRate" and r["hour"] == minutes(r) // 60 for r in got)
        by_tag = {}
        for (_, _, _), (value, tag) in points.items():
            entry = by_tag.setdefault(tag, [0, 0])
            entry[0] += value
            entry[1] += 1
        got = {r["tag"]: [r["total"], r["count"]] for r in query(http, server_url, db_name, "from index 'HeartRateByTag'")}
        assert got.keys() == by_tag.keys()
        for tag, (total, count) in by_tag.items():
            assert abs(got[tag][0] - total) < 1e-6 and got[tag][1] == count

    check()

    def more(session):
        ts = session.time_series_for("companies/1", "HeartRate")
        ts.append_single(BASE + datetime.timedelta(minutes=5), 99, "watches/9")
        ts.append_single(BASE + datetime.timedelta(minutes=10), 77, "watches/1")  # replaces an entry
        session.time_series_for("companies/2", "HeartRate").delete(BASE + datetime.timedelta(minutes=30), BASE + datetime.timedelta(minutes=60))

    write(store, more)
    points[("companies/1", "HeartRate", 5)] = (99, "watches/9")
    points[("companies/1", "HeartRate", 10)] = (77, "watches/1")
    for minute in (30, 40, 50, 60):
        del points[("companies/2", "HeartRate", minute)]
    check()
    write(store, lambda s: s.delete("companies/3"))
    for key in [k for k in points if k[0] == "companies/3"]:
        del points[key]
    check()
    no_errors(http, server_url, db_name)


def test_counter_index_survives_a_crash(server_factory, http):
    server = server_factory()
    db = "crashcounters"
    create_database(server.url, db)
    expected = {}
    with open_store(server.url, db) as store:
        CompanyLikes().execute(store)

        def data(session):
            for i in range(1, 21):
                company = {"name": f"c{i}"}
                session.store(company, f"companies/{i}")
                session.advanced.get_metadata_for(company)["@collection"] = "Companies"
                session.counters_for(f"companies/{i}").increment("Likes", i)
                expected[f"companies/{i}"] = i

        write(store, data)
        wait_for_indexing(http, server.url, db)
    server.restart(crash=True)
    with open_store(server.url, db) as store:
        got = query(http, server.url, db, "from index 'CompanyLikes'")
        assert {r["doc"]: r["likes"] for r in got} == expected
        write(store, lambda s: s.counters_for("companies/7").increment("Likes", 5))
        expected["companies/7"] += 5
        got = query(http, server.url, db, "from index 'CompanyLikes'")
        assert {r["doc"]: r["likes"] for r in got} == expected
    server.stop()
    server.check_storage()


def test_linq_counter_and_time_series_indexes(store, http, server_url, db_name):
    expected_counters = {}
    expected_points = {}

    def data(session):
        for i in range(1, 4):
            company = {"name": f"c{i}"}
            session.store(company, f"companies/{i}")
            session.advanced.get_metadata_for(company)["@collection"] = "Companies"
            session.counters_for(f"companies/{i}").increment("HeartRate", 10 * i)
            session.counters_for(f"companies/{i}").increment("Other", 1)
            expected_counters[f"companies/{i}"] = 10 * i
            for day in range(3):
                at = BASE + datetime.timedelta(days=day, hours=i)
                session.time_series_for(f"companies/{i}", "HeartRate").append_single(at, 50 + day + i, "t")
                expected_points[(f"companies/{i}", day)] = 50 + day + i

    write(store, data)
    definitions = [
        {"Name": "LinqCounters", "SourceType": "Counters",
         "Maps": ["counters.Companies.HeartRate.Select(counter => new { heartBeat = counter.Value, name = counter.Name, user = counter.DocumentId })"]},
        {"Name": "LinqSeries", "SourceType": "TimeSeries",
         "Maps": ["from ts in timeSeries.Companies.HeartRate from entry in ts.Entries "
                  "select new { heartBeat = entry.Values[0], date = entry.Timestamp.Date, user = ts.DocumentId }"]},
        {"Name": "LinqSeriesTotals", "SourceType": "TimeSeries",
         "Maps": ["from ts in timeSeries.Companies.HeartRate from entry in ts.Entries select new { user = ts.DocumentId, total = entry.Value, count = 1 }"],
         "Reduce": "from r in results group r by r.user into g select new { user = g.Key, total = g.Sum(x => x.total), count = g.Sum(x => x.count) }"},
    ]
    r = http.put(f"{server_url}/databases/{db_name}/admin/indexes", json={"Indexes": definitions})
    assert r.status_code in (200, 201), r.text

    def check():
        got = query(http, server_url, db_name, "from index 'LinqCounters'")
        assert sorted((r["user"], r["heartBeat"], r["name"]) for r in got) == sorted(
            (d, v, "HeartRate") for d, v in expected_counters.items())
        got = query(http, server_url, db_name, "from index 'LinqSeries'")
        want = sorted((d, v, (BASE + datetime.timedelta(days=day)).strftime("%Y-%m-%dT00:00:00.0000000")) for (d, day), v in expected_points.items())
        assert sorted((r["user"], r["heartBeat"], r["date"]) for r in got) == want
        totals = {}
        for (d, _), v in expected_points.items():
            totals.setdefault(d, [0, 0])
            totals[d][0] += v
            totals[d][1] += 1
        got = {r["user"]: [r["total"], r["count"]] for r in query(http, server_url, db_name, "from index 'LinqSeriesTotals'")}
        assert got == totals

    check()
    write(store, lambda s: s.counters_for("companies/2").increment("HeartRate", 5))
    expected_counters["companies/2"] += 5
    write(store, lambda s: s.time_series_for("companies/1", "HeartRate").append_single(BASE + datetime.timedelta(days=1, hours=1), 99, "t"))
    expected_points[("companies/1", 1)] = 99
    check()
    no_errors(http, server_url, db_name)
    listed = http.get(f"{server_url}/databases/{db_name}/indexes", params={"name": "LinqSeries"}).json()["Results"][0]
    assert listed["SourceType"] == "TimeSeries"
