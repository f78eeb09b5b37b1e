"""Facets through the official client (aggregate_by / facet setups) and raw RQL: term facets with options,
range facets, aggregations, several facets in one query, and dynamic (collection) facet queries. Expected
answers are computed from the documents the test wrote."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from ravendb import RangeBuilder
from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractJavaScriptIndexCreationTask
from ravendb.documents.queries.facets.misc import FacetOptions, FacetTermSortMode

from corvid_support import assert_error_json


class Camera:
    def __init__(self, manufacturer: str = None, model: str = None, cost: float = None, zoom: int = None, megapixels: float = None):
        self.manufacturer = manufacturer
        self.model = model
        self.cost = cost
        self.zoom = zoom
        self.megapixels = megapixels


class CamerasIndex(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {
            "map('Cameras', function (c) { return { manufacturer: c.manufacturer, model: c.model, cost: c.cost, zoom: c.zoom, megapixels: c.megapixels }; })"
        }


BRANDS = ["Canon", "Nikon", "Sony", "Fuji", "Olympus", "Pentax"]


def _cameras(store, n=300, seed=3):
    rng = random.Random(seed)
    cams = []
    with store.open_session() as s:
        for i in range(n):
            c = Camera(rng.choice(BRANDS), f"m{i % 17}", round(rng.uniform(50, 2000), 2), rng.randrange(1, 11), round(rng.uniform(1, 30), 1))
            cams.append(c)
            s.store(c, f"cameras/{i}")
        s.save_changes()
    CamerasIndex().execute(store)
    return cams


def test_term_facet_with_aggregations(store):
    cams = _cameras(store)
    with store.open_session() as s:
        r = (
            s.query_index_type(CamerasIndex, Camera)
            .wait_for_non_stale_results()
            .where_greater_than("zoom", 3)
            .aggregate_by(lambda f: f.by_field("manufacturer").sum_on("cost").min_on("cost").max_on("megapixels"))
            .execute()
        )
    matching = [c for c in cams if c.zoom > 3]
    expected = defaultdict(list)
    for c in matching:
        expected[c.manufacturer.lower()].append(c)
    values = r["manufacturer"].values
    by_name = defaultdict(dict)
    for v in values:
        by_name[v.range_][v.name] = v
    assert sorted(by_name) == sorted(expected)  # lower-cased terms, ValueAsc
    assert [v.range_ for v in values if v.name == "cost"] == sorted(expected)
    for term, group in expected.items():
        cost, mp = by_name[term]["cost"], by_name[term]["megapixels"]
        assert cost.count_ == len(group)
        assert cost.sum_ == pytest.approx(sum(c.cost for c in group))
        assert cost.min_ == pytest.approx(min(c.cost for c in group))
        assert mp.max_ == pytest.approx(max(c.megapixels for c in group))


def test_range_facets_and_several_facets_in_one_query(store):
    cams = _cameras(store)
    cost = RangeBuilder.for_path("cost")
    with store.open_session() as s:
        r = (
            s.query_index_type(CamerasIndex, Camera)
            .wait_for_non_stale_results()
            .aggregate_by(lambda f: f.by_ranges(cost.is_less_than(200), cost.is_greater_than_or_equal_to(200).is_less_than(1000), cost.is_greater_than_or_equal_to(1000)))
            .and_aggregate_by(lambda f: f.by_field("zoom"))
            .execute()
        )
    got = {v.range_: v.count_ for v in r["cost"].values}
    assert got == {
        "cost < 200": sum(1 for c in cams if c.cost < 200),
        "cost >= 200 and cost < 1000": sum(1 for c in cams if 200 <= c.cost < 1000),
        "cost >= 1000": sum(1 for c in cams if c.cost >= 1000),
    }
    zooms = {v.range_: v.count_ for v in r["zoom"].values}
    assert zooms == {str(z): sum(1 for c in cams if c.zoom == z) for z in {c.zoom for c in cams}}


def test_facet_options_paging_sorting_and_remaining_terms(store):
    cams = _cameras(store)
    counts = defaultdict(int)
    for c in cams:
        counts[c.manufacturer.lower()] += 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    options = FacetOptions()
    options.page_size = 2
    options.start = 1
    options.term_sort_mode = FacetTermSortMode.COUNT_DESC
    options.include_remaining_terms = True
    with store.open_session() as s:
        r = s.query_index_type(CamerasIndex, Camera).wait_for_non_stale_results().aggregate_by(lambda f: f.by_field("manufacturer").with_options(options)).execute()
    result = r["manufacturer"]
    assert [(v.range_, v.count_) for v in result.values] == ordered[1:3]
    assert result.remaining_terms == [k for k, _ in ordered[3:]]
    assert result.remaining_terms_count == len(ordered) - 3
    assert result.remaining_hits == sum(v for _, v in ordered[3:])


def test_facet_setup_document(store, server_url, db_name, http):
    cams = _cameras(store)
    setup = {
        "Facets": [{"FieldName": "manufacturer", "Aggregations": {"Sum": [{"Name": "cost"}]}}],
        "RangeFacets": [{"Ranges": ["megapixels < 10", "megapixels >= 10"], "DisplayFieldName": "mp"}],
        "@metadata": {"@collection": "FacetSetups"},
    }
    assert http.put(f"{server_url}/databases/{db_name}/docs", params={"id": "facets/cams"}, json=setup).status_code == 201
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'CamerasIndex' select facet(id('facets/cams'))", "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    results = {x["Name"]: x for x in r.json()["Results"]}
    assert {v["Range"]: v["Count"] for v in results["mp"]["Values"]} == {
        "megapixels < 10": sum(1 for c in cams if c.megapixels < 10),
        "megapixels >= 10": sum(1 for c in cams if c.megapixels >= 10),
    }
    sums = {v["Range"]: v["Sum"] for v in results["manufacturer"]["Values"]}
    for brand in BRANDS:
        assert sums[brand.lower()] == pytest.approx(sum(c.cost for c in cams if c.manufacturer == brand))


def test_dynamic_facet_query_and_errors(store, server_url, db_name, http):
    cams = _cameras(store, 60)
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Cameras where zoom < 5 select facet(manufacturer)", "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    got = {v["Range"]: v["Count"] for v in r.json()["Results"][0]["Values"]}
    expected = defaultdict(int)
    for c in cams:
        if c.zoom < 5:
            expected[c.manufacturer.lower()] += 1
    assert got == dict(expected)
    assert r.json()["IndexName"].startswith("Auto/Cameras/")
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Cameras select facet(manufacturer), model"})
    assert "Mixing facets" in assert_error_json(r)["Message"]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from index 'CamerasIndex' select facet(id('facets/missing'))"})
    assert "does not exist" in assert_error_json(r)["Message"]
