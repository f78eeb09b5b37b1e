"""Spatial queries through the official client: radius queries on documents' coordinates (automatic
indexes) and on static spatial fields, polygons (WKT), disjoint, and ordering by distance. Expected answers
are computed in the test with the haversine formula on the same points."""

from __future__ import annotations

import math
import random

from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractJavaScriptIndexCreationTask
from ravendb.documents.queries.spatial import PointField

from corvid_support import assert_error_json

EARTH_KM = 6371.0087714


def haversine(lat1, lng1, lat2, lng2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = math.radians(lat2 - lat1), math.radians(lng2 - lng1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_KM * math.asin(min(1.0, math.sqrt(a)))


class Place:
    def __init__(self, name: str = None, latitude: float = None, longitude: float = None):
        self.name = name
        self.latitude = latitude
        self.longitude = longitude


class PlacesByLocation(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Places', function (p) { return { name: p.name, location: createSpatialField(p.latitude, p.longitude) }; })"}


def _places(store, n=200, seed=11):
    rng = random.Random(seed)
    places = {}
    with store.open_session() as s:
        for i in range(n):
            p = Place(f"p{i}", round(rng.uniform(31.0, 33.5), 5), round(rng.uniform(34.0, 35.8), 5))
            places[f"places/{i}"] = p
            s.store(p, f"places/{i}")
        s.save_changes()
    return places


CENTER = (32.0853, 34.7818)


def test_dynamic_radius_query_sorted_by_distance(store):
    places = _places(store)
    with store.open_session() as s:
        got = list(
            s.query(object_type=Place)
            .spatial(PointField("latitude", "longitude"), lambda f: f.within_radius(40, *CENTER))
            .order_by_distance(PointField("latitude", "longitude"), *CENTER)
            .wait_for_non_stale_results()
        )
    expected = sorted((haversine(*CENTER, p.latitude, p.longitude), p.name) for p in places.values() if haversine(*CENTER, p.latitude, p.longitude) <= 40)
    assert [p.name for p in got] == [name for _, name in expected]
    assert len(got) > 5


def test_static_spatial_field_radius_in_miles_and_descending_distance(store):
    places = _places(store)
    PlacesByLocation().execute(store)
    with store.open_session() as s:
        got = list(
            s.query_index("PlacesByLocation", Place)
            .wait_for_non_stale_results()
            .within_radius_of("location", 20, *CENTER)
            .order_by_distance_descending("location", *CENTER)
        )
    km = 20
    expected = sorted(((haversine(*CENTER, p.latitude, p.longitude), p.name) for p in places.values() if haversine(*CENTER, p.latitude, p.longitude) <= km), reverse=True)
    assert [p.name for p in got] == [name for _, name in expected]


def test_polygon_and_disjoint_raw(store, server_url, db_name, http):
    places = _places(store)
    PlacesByLocation().execute(store)
    polygon = "POLYGON((34.5 31.5, 35.0 31.5, 35.0 32.5, 34.5 32.5, 34.5 31.5))"
    inside = {p.name for p in places.values() if 31.5 <= p.latitude <= 32.5 and 34.5 <= p.longitude <= 35.0}
    r = http.post(
        f"{server_url}/databases/{db_name}/queries",
        json={"Query": "from index 'PlacesByLocation' where spatial.within(location, spatial.wkt($w))", "QueryParameters": {"w": polygon}, "WaitForNonStaleResults": True},
    )
    assert r.status_code == 200, r.text
    assert {d["name"] for d in r.json()["Results"]} == inside
    r = http.post(
        f"{server_url}/databases/{db_name}/queries",
        json={"Query": "from index 'PlacesByLocation' where spatial.disjoint(location, spatial.circle(30, 32.0853, 34.7818, 'miles'))", "WaitForNonStaleResults": True},
    )
    far = {p.name for p in places.values() if haversine(*CENTER, p.latitude, p.longitude) > 30 * 1.609344}
    assert {d["name"] for d in r.json()["Results"]} == far
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'PlacesByLocation' where spatial.within(name, spatial.circle(1, 2, 3))"})
    assert "not a spatial field" in assert_error_json(r)["Message"]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Places where spatial.within(spatial.point(latitude, longitude), spatial.wkt('LINESTRING(0 0, 1 1)'))"})
    assert "unsupported WKT" in assert_error_json(r)["Message"]
