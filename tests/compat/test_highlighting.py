"""Highlighting, explanations and timings through the official client and raw RQL."""

from __future__ import annotations

from ravendb.documents.queries.highlighting import HighlightingOptions

from corvid_support import assert_error_json


class Post:
    def __init__(self, title: str = None, body: str = None, category: str = None):
        self.title = title
        self.body = body
        self.category = category


POSTS = {
    "posts/1": Post("Sharks", "The great white shark is a large predator. Sharks hunt seals near the coast.", "fish"),
    "posts/2": Post("Whales", "Whales are mammals. The blue whale is the largest animal ever known.", "mammal"),
    "posts/3": Post("Reef", "Reef sharks and rays live near coral. A reef shark is smaller than a great white.", "fish"),
}


def _store(store):
    with store.open_session() as s:
        for doc_id, p in POSTS.items():
            s.store(p, doc_id)
        s.save_changes()


def test_highlight_fragments_of_searched_words(store):
    _store(store)
    with store.open_session() as s:
        highlightings = []
        results = list(
            s.query(object_type=Post)
            .wait_for_non_stale_results()
            .highlight("body", 40, 2, highlightings.append)
            .search("body", "shark*")
        )
    assert sorted(p.title for p in results) == ["Reef", "Sharks"]
    fragments = highlightings[0]
    assert fragments.result_indents == {"posts/1", "posts/3"}
    for doc_id in ("posts/1", "posts/3"):
        frags = fragments.get_fragments(doc_id)
        assert 1 <= len(frags) <= 2
        for f in frags:
            assert '<b style="background:yellow">' in f and "</b>" in f
            inner = f.split('<b style="background:yellow">')[1].split("</b>")[0]
            assert inner.lower().startswith("shark")


def test_custom_tags_group_key_explanations_and_timings(store, server_url, db_name, http):
    _store(store)
    r = http.post(
        f"{server_url}/databases/{db_name}/queries",
        json={
            "Query": "from Posts where search(body, 'whale') include highlight(body, 18, 1, $o), explanations(), timings()",
            "QueryParameters": {"o": {"GroupKey": "category", "PreTags": ["<<"], "PostTags": [">>"]}},
            "WaitForNonStaleResults": True,
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body["Highlightings"]["body"]) == ["mammal"]
    fragment = body["Highlightings"]["body"]["mammal"][0]
    assert "<<whale>>" in fragment or "<<Whales>>" in fragment
    assert list(body["Explanations"]) == ["posts/2"]
    assert body["Timings"]["DurationInMs"] >= 0
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Posts where search(body, 'x') include highlight(body, 5, 1)"})
    assert "at least 18" in assert_error_json(r)["Message"]
