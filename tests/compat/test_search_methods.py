"""fuzzy(), proximity(), intersect() and lucene() through the official client and raw RQL; expected
answers computed from the documents the test wrote."""

from __future__ import annotations

from corvid_support import assert_error_json


def _put(http, url, db, docs):
    commands = [{"Type": "PUT", "Id": k, "ChangeVector": None, "Document": {**v, "@metadata": {"@collection": "Books"}}} for k, v in docs.items()]
    assert http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}).status_code == 201


def _names(http, url, db, rql, params=None):
    r = http.post(f"{url}/databases/{db}/queries", json={"Query": rql, "QueryParameters": params or {}, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    return sorted(d["Title"] for d in r.json()["Results"])


BOOKS = {
    "books/1": {"Title": "Dune", "Author": "Herbert", "Text": "the spice must flow across the desert planet", "Year": 1965},
    "books/2": {"Title": "Dunes", "Author": "Herbart", "Text": "a desert of endless sand and spice", "Year": 1990},
    "books/3": {"Title": "Emma", "Author": "Austen", "Text": "the spice of life is in the village gossip", "Year": 1815},
    "books/4": {"Title": "Ulysses", "Author": "Joyce", "Text": "a single day in dublin wandering far", "Year": 1922},
}


def test_fuzzy_matches_near_terms(server_url, db_name, http):
    _put(http, server_url, db_name, BOOKS)
    # "herbet" is one edit from "herbert" and two from "herbart".
    assert _names(http, server_url, db_name, "from Books where fuzzy(Author = 'herbet', 0.8)") == ["Dune"]
    assert _names(http, server_url, db_name, "from Books where fuzzy(Author = 'herbet', 2)") == ["Dune", "Dunes"]


def test_proximity_limits_word_distance(server_url, db_name, http):
    _put(http, server_url, db_name, BOOKS)
    # books/1: "spice must flow across the desert": desert is 5 positions after spice (the stop word
    # keeps its position), so the phrase needs a slop of 4. books/3 has no "desert".
    within = lambda n: _names(http, server_url, db_name, f"from Books where proximity(search(Text, 'spice desert'), {n})")
    assert within(0) == []
    assert within(3) == []
    assert within(4) == ["Dune"]
    assert "Dune" in within(10) and "Emma" not in within(10)
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Books where proximity(Title = 'x', 2)"})
    assert "search()" in assert_error_json(r)["Message"]


def test_intersect_and_lucene(server_url, db_name, http):
    _put(http, server_url, db_name, BOOKS)
    got = _names(http, server_url, db_name, "from Books where intersect(Year > 1900, search(Text, 'spice'))")
    assert got == sorted(b["Title"] for b in BOOKS.values() if b["Year"] > 1900 and "spice" in b["Text"].split())
    assert _names(http, server_url, db_name, "from Books where lucene(Text, 'dubl*')") == ["Ulysses"]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Books where intersect(Year > 1)"})
    assert "at least two" in assert_error_json(r)["Message"]
