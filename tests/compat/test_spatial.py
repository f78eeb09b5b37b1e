"""Spatial queries through the official client: radius queries on documents' coordinates (automatic
indexes) and on static spatial fields, polygons (WKT), disjoint, and ordering by distance. Expected answers
are computed in the test with the haversine formula on the same points."""

from __future__ import annotations

import math
import random

from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractIndexCreationTask, AbstractJavaScriptIndexCreationTask
from ravendb.documents.indexes.spatial.configuration import SpatialOptionsFactory, SpatialRelation
from ravendb.documents.queries.spatial import PointField, WktField

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
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Places where spatial.within(spatial.point(latitude, longitude), spatial.wkt('TRIANGLE(0 0, 1 1)'))"})
    assert "invalid WKT shape" in assert_error_json(r)["Message"]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Places where spatial.within(spatial.point(latitude, longitude), spatial.wkt('POINT(95 181)'))"})
    assert "longitude" in assert_error_json(r)["Message"]


class Area:
    def __init__(self, name: str = None, kind: str = None, wkt: str = None):
        self.name = name
        self.kind = kind
        self.wkt = wkt


class AreasByShape(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "from a in docs.Areas select new { a.name, a.kind, shape = CreateSpatialField(a.wkt) }"


def _box(min_lng, min_lat, max_lng, max_lat):
    return f"POLYGON(({min_lng} {min_lat}, {max_lng} {min_lat}, {max_lng} {max_lat}, {min_lng} {max_lat}, {min_lng} {min_lat}))"


def _areas(store, n=120, seed=5):
    """Random boxes (polygons) and roads (horizontal lines) around the query region; returns name -> box."""
    rng = random.Random(seed)
    boxes = {}
    with store.open_session() as s:
        for i in range(n):
            lng, lat = round(rng.uniform(30.0, 40.0), 3), round(rng.uniform(25.0, 35.0), 3)
            w, h = round(rng.uniform(0.1, 3.0), 3), round(rng.uniform(0.1, 3.0), 3)
            if i % 4 == 3:  # a road: a line, as a box of zero height
                boxes[f"a{i}"] = (lng, lat, lng + w, lat)
                wkt = f"LINESTRING({lng} {lat}, {lng + w} {lat})"
            else:
                boxes[f"a{i}"] = (lng, lat, lng + w, lat + h)
                wkt = _box(lng, lat, lng + w, lat + h)
            s.store(Area(f"a{i}", "road" if i % 4 == 3 else "park", wkt), f"areas/{i}")
        s.save_changes()
    return boxes


REGION = (33.0, 28.0, 37.0, 32.0)  # min lng, min lat, max lng, max lat


def _within(b, r):
    return r[0] <= b[0] and b[2] <= r[2] and r[1] <= b[1] and b[3] <= r[3]


def _intersects(b, r):
    return b[0] <= r[2] and r[0] <= b[2] and b[1] <= r[3] and r[1] <= b[3]


def test_indexed_shapes_relate_to_query_shapes(store):
    boxes = _areas(store)
    AreasByShape().execute(store)
    region = _box(*REGION)
    expected = {
        SpatialRelation.WITHIN: {n for n, b in boxes.items() if _within(b, REGION)},
        SpatialRelation.INTERSECTS: {n for n, b in boxes.items() if _intersects(b, REGION)},
        SpatialRelation.DISJOINT: {n for n, b in boxes.items() if not _intersects(b, REGION)},
    }
    for relation, names in expected.items():
        with store.open_session() as s:
            got = {a.name for a in s.query_index("AreasByShape", Area).wait_for_non_stale_results().relates_to_shape("shape", region, relation)}
        assert got == names, relation
        assert names, f"the random data should exercise {relation}"
    # A point query: the areas that contain it.
    lng, lat = 35.0, 30.0
    containing = {n for n, b in boxes.items() if b[1] != b[3] and b[0] <= lng <= b[2] and b[1] <= lat <= b[3]}
    with store.open_session() as s:
        got = {a.name for a in s.query_index("AreasByShape", Area).spatial("shape", lambda f: f.contains(f"POINT({lng} {lat})"))}
    assert got == containing


def test_distance_as_a_later_sort_key_and_from_a_wkt_origin(store):
    boxes = _areas(store)
    AreasByShape().execute(store)
    center = lambda b: ((b[1] + b[3]) / 2, (b[0] + b[2]) / 2)  # noqa: E731  (lat, lng) of a box's centroid
    origin = (30.0, 35.0)
    with store.open_session() as s:
        got = list(
            s.query_index("AreasByShape", Area).wait_for_non_stale_results().order_by("kind").order_by_distance("shape", *origin)
        )
    expected = sorted(boxes, key=lambda n: ("park" if int(n[1:]) % 4 != 3 else "road", haversine(*origin, *center(boxes[n]))))
    assert [a.name for a in got] == expected
    with store.open_session() as s:
        got = list(s.query_index("AreasByShape", Area).order_by_distance_descending_wkt("shape", _box(34.9, 29.9, 35.1, 30.1)).take(10))
    expected = sorted(boxes, key=lambda n: haversine(*origin, *center(boxes[n])), reverse=True)[:10]
    assert [a.name for a in got] == expected


def test_dynamic_wkt_field(store):
    boxes = _areas(store, n=40)
    region = _box(*REGION)
    with store.open_session() as s:
        got = {a.name for a in s.query(object_type=Area).spatial(WktField("wkt"), lambda f: f.intersects(region)).wait_for_non_stale_results()}
    assert got == {n for n, b in boxes.items() if _intersects(b, REGION)}


class ShapesByBoundingBox(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "from a in docs.Areas select new { a.name, shape = CreateSpatialField(a.wkt) }"
        self._spatial("shape", lambda f: f.cartesian().bounding_box_index())


class ShapesExactCartesian(AbstractIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.map = "from a in docs.Areas select new { a.name, shape = CreateSpatialField(a.wkt) }"
        self._spatial("shape", lambda f: f.cartesian().quad_prefix_tree_index(8, SpatialOptionsFactory.SpatialBounds(0, 0, 1000, 1000)))


def test_cartesian_fields_and_the_bounding_box_strategy(store):
    """A U-shaped polygon in plane coordinates beyond the geography range: a query square inside the U's
    opening meets its bounding box but not the shape itself."""
    u_shape = "POLYGON((0 0, 0 500, 100 500, 100 100, 500 100, 500 500, 600 500, 600 0, 0 0))"
    with store.open_session() as s:
        s.store(Area("u", "shape", u_shape), "areas/u")
        s.store(Area("dot", "point", "POINT(300 300)"), "areas/dot")
        s.save_changes()
    ShapesByBoundingBox().execute(store)
    ShapesExactCartesian().execute(store)
    opening = "200 200 400 400"  # spatial4j's rectangle shorthand: minX minY maxX maxY

    def names(index, clause):
        with store.open_session() as s:
            return {a.name for a in s.query_index(index, Area).wait_for_non_stale_results().spatial("shape", clause)}

    assert names("ShapesByBoundingBox", lambda f: f.intersects(opening)) == {"u", "dot"}
    assert names("ShapesExactCartesian", lambda f: f.intersects(opening)) == {"dot"}
    assert names("ShapesExactCartesian", lambda f: f.disjoint(opening)) == {"u"}
    assert names("ShapesExactCartesian", lambda f: f.within("0 0 700 700")) == {"u", "dot"}
    # Cartesian circles are Euclidean in plane units: (300, 300) is 141.4 units from (200, 200).
    assert names("ShapesExactCartesian", lambda f: f.within_radius(142, 200, 200)) == {"dot"}
    assert names("ShapesExactCartesian", lambda f: f.within_radius(141, 200, 200)) == set()
