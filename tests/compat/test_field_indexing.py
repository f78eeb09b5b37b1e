"""`Fields[x].Indexing` of static indexes, as RavenDB's Lucene fields behave.

- `Exact`: the value is one untokenized term with its case: equality and `in` are case-sensitive, ranges and
  sorting compare the original text, facets report the values as written.
- `Search`: only the analyzer's tokens are indexed: `search()` finds words, equality compares with the tokens
  (one word matches, a whole multi-word value matches nothing), facets count tokens.
- A default field next to them stays case-insensitive on the whole value.
Expected answers are computed from the documents the test wrote."""

from __future__ import annotations

import random
from collections import Counter

from ravendb.documents.indexes.abstract_index_creation_tasks import AbstractJavaScriptIndexCreationTask
from ravendb.documents.indexes.definitions import FieldIndexing, IndexFieldOptions


class Phone:
    def __init__(self, brand: str = None, model: str = None, price: float = None):
        self.brand = brand
        self.model = model
        self.price = price


class PhonesExact(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Phones', function (p) { return { brand: p.brand, model: p.model, price: p.price }; })"}
        exact = IndexFieldOptions()
        exact.indexing = FieldIndexing.EXACT
        self.fields = {"brand": exact}


BRANDS = ["Apple", "apple", "APPLE", "Samsung", "samsung", "Nokia"]


def _load(store, n=120, seed=11):
    rng = random.Random(seed)
    phones = [Phone(rng.choice(BRANDS), rng.choice(["X1", "x1", "Z9"]), rng.randint(50, 900)) for _ in range(n)]
    with store.open_session() as s:
        for i, p in enumerate(phones):
            s.store(p, f"phones/{i}")
        s.save_changes()
    PhonesExact().execute(store)
    with store.open_session() as s:
        list(s.query_index("PhonesExact", Phone).wait_for_non_stale_results())
    return phones


def _ids(store, rql, **params):
    with store.open_session() as s:
        q = s.advanced.raw_query(rql, Phone)
        for k, v in params.items():
            q = q.add_parameter(k, v)
        return sorted(s.advanced.get_document_id(p) for p in q)


def _expected(phones, keep):
    return sorted(f"phones/{i}" for i, p in enumerate(phones) if keep(p))


def test_equality_and_in_are_case_sensitive_on_exact_fields(store):
    phones = _load(store)
    for brand in ["Apple", "apple", "APPLE", "Samsung"]:
        got = _ids(store, "from index 'PhonesExact' where brand = $b", b=brand)
        assert got == _expected(phones, lambda p: p.brand == brand), brand
    got = _ids(store, "from index 'PhonesExact' where brand in ($a, $b)", a="apple", b="Nokia")
    assert got == _expected(phones, lambda p: p.brand in ("apple", "Nokia"))
    # The default field next to it still ignores case.
    got = _ids(store, "from index 'PhonesExact' where model = 'x1'")
    assert got == _expected(phones, lambda p: p.model.lower() == "x1")


def test_facets_and_sorting_keep_the_case_of_exact_fields(store):
    phones = _load(store)
    with store.open_session() as s:
        result = list(s.advanced.raw_query("from index 'PhonesExact' select facet(brand)", Phone).execute_aggregation().values())[0]
    assert {v.range_: v.count_ for v in result.values} == dict(Counter(p.brand for p in phones))
    with store.open_session() as s:
        ordered = [p.brand for p in s.advanced.raw_query("from index 'PhonesExact' order by brand", Phone)]
    assert ordered == sorted(p.brand for p in phones)
    got = _ids(store, "from index 'PhonesExact' where brand >= 'S'")
    assert got == _expected(phones, lambda p: p.brand >= "S")


class Post:
    def __init__(self, title: str = None, tag: str = None):
        self.title = title
        self.tag = tag


class PostsSearch(AbstractJavaScriptIndexCreationTask):
    def __init__(self):
        super().__init__()
        self.maps = {"map('Posts', function (p) { return { title: p.title, tag: p.tag }; })"}
        search = IndexFieldOptions()
        search.indexing = FieldIndexing.SEARCH
        self.fields = {"title": search}


WORDS = ["Rust", "database", "fast", "Index", "query", "storage"]


def _posts(store, n=80, seed=5):
    rng = random.Random(seed)
    # Words may repeat within a title: a facet still counts the post once per word.
    posts = [Post(" ".join(rng.choices(WORDS, k=rng.randint(1, 4))), rng.choice(["a b", "c"])) for _ in range(n)]
    with store.open_session() as s:
        for i, p in enumerate(posts):
            s.store(p, f"posts/{i}")
        s.save_changes()
    PostsSearch().execute(store)
    with store.open_session() as s:
        list(s.query_index("PostsSearch", Post).wait_for_non_stale_results())
    return posts


def _post_ids(store, rql, **params):
    with store.open_session() as s:
        q = s.advanced.raw_query(rql, Post)
        for k, v in params.items():
            q = q.add_parameter(k, v)
        return sorted(s.advanced.get_document_id(p) for p in q)


def test_search_fields_hold_only_tokens(store):
    posts = _posts(store)
    words = lambda p: p.title.lower().split()  # noqa: E731
    expected = lambda keep: sorted(f"posts/{i}" for i, p in enumerate(posts) if keep(p))  # noqa: E731
    assert _post_ids(store, "from index 'PostsSearch' where search(title, 'rust')") == expected(lambda p: "rust" in words(p))
    # Equality compares with the tokens: a word matches, a whole multi-word value does not.
    assert _post_ids(store, "from index 'PostsSearch' where title = 'Fast'") == expected(lambda p: "fast" in words(p))
    multi = next(p.title for p in posts if len(p.title.split()) > 1)
    assert _post_ids(store, "from index 'PostsSearch' where title = $t", t=multi) == []
    # The default field beside it still matches whole values, ignoring case.
    assert _post_ids(store, "from index 'PostsSearch' where tag = 'A B'") == expected(lambda p: p.tag == "a b")
    with store.open_session() as s:
        result = list(s.advanced.raw_query("from index 'PostsSearch' select facet(title)", Post).execute_aggregation().values())[0]
    assert {v.range_: v.count_ for v in result.values} == dict(Counter(w for p in posts for w in set(words(p))))
