"""Suggestions ("did you mean") through the official client: whole values of default fields, words of
full-text fields, accuracy, distance kinds, popularity order, several terms, and dynamic queries."""

from __future__ import annotations

from ravendb import SuggestionOptions, StringDistanceTypes, SuggestionSortMode
from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractJavaScriptIndexCreationTask
from ravendb.documents.indexes.definitions import FieldIndexing, IndexFieldOptions

from corvid_support import User


class NamesExact(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Users', function (u) { return { name: u.name }; })"}
        options = IndexFieldOptions()
        options.suggestions = True
        self.fields = {"name": options}


class NamesAnalyzed(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Users', function (u) { return { name: u.name }; })"}
        options = IndexFieldOptions()
        options.suggestions = True
        options.indexing = FieldIndexing.SEARCH
        self.fields = {"name": options}


def _store(store, names):
    with store.open_session() as s:
        for i, name in enumerate(names):
            s.store(User(name=name, age=i), f"users/{i}")
        s.save_changes()


def test_whole_values_with_levenshtein(store):
    _store(store, ["Ayende", "Oren", "John Steinbeck"])
    NamesExact().execute(store)
    with store.open_session() as s:
        list(s.query_index("NamesExact", User).wait_for_non_stale_results())
        r = s.query_index("NamesExact", User).suggest_using(lambda x: x.by_field("name", "Owen")).execute()
        assert r["name"].suggestions == ["oren"]
        r = s.query_index("NamesExact", User).suggest_using(lambda x: x.by_field("name", "John Steinback").with_options(SuggestionOptions(accuracy=0.4))).execute()
        assert r["name"].suggestions == ["john steinbeck"]
        # A term is found through the n-gram sizes both lengths use (Lucene's spell checker): "oern", by single
        # letters and pairs, never meets "john steinbeck", indexed by 3- and 4-grams, though their similarity
        # (0.21) passes the accuracy.
        options = SuggestionOptions(accuracy=0.2, page_size=10, distance=StringDistanceTypes.LEVENSHTEIN)
        r = s.query_index("NamesExact", User).suggest_using(lambda x: x.by_field("name", "Oern").with_options(options)).execute()
        assert r["name"].suggestions == ["oren"]
        # An exact match is not a suggestion.
        assert s.query_index("NamesExact", User).suggest_using(lambda x: x.by_field("name", "Oren")).execute()["name"].suggestions == []


def test_words_of_full_text_fields_by_popularity(store):
    _store(store, ["John Smith", "Jack Johnson", "Robery Jones", "David Jones", "Jones Jr"])
    NamesAnalyzed().execute(store)
    with store.open_session() as s:
        list(s.query_index("NamesAnalyzed", User).wait_for_non_stale_results())
        options = SuggestionOptions(accuracy=0.4, page_size=5, distance=StringDistanceTypes.JARO_WINKLER, sort_mode=SuggestionSortMode.POPULARITY)
        r = s.query_index("NamesAnalyzed", User).suggest_using(lambda x: x.by_field("name", ["johne", "davi"]).with_options(options)).execute()
        got = r["name"].suggestions
        assert len(got) == 5 and set(got) == {"john", "jones", "johnson", "david", "jack"}
        assert got[0] == "jones"  # three users hold it: most popular first


def test_dynamic_suggestion_query(server_url, db_name, http, store):
    _store(store, ["Ayende", "Oren", "Oryn"])
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Users select suggest(name, $t, $o) as alt", "QueryParameters": {"t": "orem", "o": {"Accuracy": 0.5, "Distance": "Levenshtein", "SortMode": "None"}}, "WaitForNonStaleResults": True})
    assert r.status_code == 200, r.text
    assert r.json()["Results"] == [{"Name": "alt", "Suggestions": ["oren", "oryn"]}]


def test_index_terms_listing(store):
    from ravendb.documents.operations.indexes import GetTermsOperation

    _store(store, ["Beta", "alpha", "Gamma", "beta"])
    NamesExact().execute(store)
    with store.open_session() as s:
        list(s.query_index("NamesExact", User).wait_for_non_stale_results())
    assert store.maintenance.send(GetTermsOperation("NamesExact", "name", None)) == ["alpha", "beta", "gamma"]
    assert store.maintenance.send(GetTermsOperation("NamesExact", "name", "alpha", 1)) == ["beta"]
