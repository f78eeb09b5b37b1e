"""moreLikeThis through the official client and raw RQL: documents sharing the source's most telling
words are found, the source is not, and the options (fields, frequencies, term count) apply."""

from __future__ import annotations

import json

from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractJavaScriptIndexCreationTask
from ravendb.documents.indexes.definitions import FieldIndexing, IndexFieldOptions
from ravendb.documents.queries.more_like_this import MoreLikeThisOptions

from corvid_support import assert_error_json


class Article:
    def __init__(self, title: str = None, body: str = None):
        self.title = title
        self.body = body


class ArticlesByBody(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Articles', a => ({ title: a.title, body: a.body }))"}
        options = IndexFieldOptions()
        options.indexing = FieldIndexing.SEARCH
        self.fields = {"body": options}


ARTICLES = {
    "articles/1": Article("Whales", "whale whale ocean ocean migration krill"),
    "articles/2": Article("More whales", "whale ocean deep songs"),
    "articles/3": Article("Krill", "krill ocean plankton"),
    "articles/4": Article("Cars", "engine wheels road traffic"),
    "articles/5": Article("Trains", "rails engine station"),
}


def _store(store):
    with store.open_session() as s:
        for doc_id, a in ARTICLES.items():
            s.store(a, doc_id)
        s.save_changes()
    ArticlesByBody().execute(store)
    with store.open_session() as s:
        list(s.query_index("ArticlesByBody", Article).wait_for_non_stale_results())


def test_similar_documents_by_id(store):
    _store(store)
    options = MoreLikeThisOptions(minimum_term_frequency=1, minimum_document_frequency=1, fields=["body"])
    with store.open_session() as s:
        got = list(s.query_index("ArticlesByBody", Article).more_like_this(lambda b: b.using_document(lambda q: q.where_equals("id()", "articles/1")).with_options(options)))
    titles = sorted(a.title for a in got)
    # Every article sharing "whale", "ocean" or "krill" with articles/1, never articles/1 itself.
    assert titles == ["Krill", "More whales"]


def test_options_and_document_source(server_url, db_name, http, store):
    _store(store)
    # With the default minimum term frequency (2) only "whale" and "ocean" count; with at most one query
    # term only the rarer "whale" stays (it is in fewer articles than "ocean").
    r = http.post(
        f"{server_url}/databases/{db_name}/queries",
        json={"Query": "from index 'ArticlesByBody' where moreLikeThis(id() = 'articles/1', $o)", "QueryParameters": {"o": {"MinimumDocumentFrequency": 1, "MaximumQueryTerms": 1}}},
    )
    assert r.status_code == 200, r.text
    assert [d["title"] for d in r.json()["Results"]] == ["More whales"]
    doc = json.dumps({"body": "engine engine traffic"})
    r = http.post(
        f"{server_url}/databases/{db_name}/queries",
        json={"Query": "from index 'ArticlesByBody' where moreLikeThis($d, $o)", "QueryParameters": {"d": doc, "o": {"MinimumTermFrequency": 1, "MinimumDocumentFrequency": 1}}},
    )
    assert sorted(d["title"] for d in r.json()["Results"]) == ["Cars", "Trains"]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Articles where moreLikeThis(id() = 'articles/1')"})
    assert "named index" in assert_error_json(r)["Message"]
