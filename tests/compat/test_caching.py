"""HTTP caching: ETag / If-None-Match / 304 on document reads, HEAD change vectors, the client cache."""

from __future__ import annotations

from corvid_support import User, doc_url


def _put(http, url, db, doc_id, body):
    r = http.put(doc_url(url, db, doc_id), json=body)
    assert r.status_code == 201, (r.status_code, r.text)
    return r.json()


def _etag(response) -> str:
    etag = response.headers.get("ETag")
    assert etag, f"no ETag header on {response.request.method} {response.url} ({response.status_code})"
    return etag


def test_get_etag_and_304(server_url, db_name, http):
    """GET /docs returns an ETag; repeating with If-None-Match gives 304; after an update, 200 + new doc."""
    _put(http, server_url, db_name, "users/c1", {"name": "v1", "@metadata": {"@collection": "Users"}})
    url = doc_url(server_url, db_name, "users/c1")

    first = http.get(url)
    assert first.status_code == 200
    etag = _etag(first)
    assert first.json()["Results"][0]["name"] == "v1"

    again = http.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304, (again.status_code, again.text[:200])
    assert again.content == b""

    put = _put(http, server_url, db_name, "users/c1", {"name": "v2", "@metadata": {"@collection": "Users"}})
    after = http.get(url, headers={"If-None-Match": etag})
    assert after.status_code == 200, "a stale If-None-Match must not get 304"
    doc = after.json()["Results"][0]
    assert doc["name"] == "v2"
    assert doc["@metadata"]["@change-vector"] == put["ChangeVector"]
    new_etag = _etag(after)
    assert new_etag != etag
    assert http.get(url, headers={"If-None-Match": new_etag}).status_code == 304


def test_etag_changes_after_delete(server_url, db_name, http):
    """After a delete, the old ETag no longer matches: the read answers 404."""
    _put(http, server_url, db_name, "users/d1", {"name": "x"})
    url = doc_url(server_url, db_name, "users/d1")
    etag = _etag(http.get(url))
    assert http.delete(url).status_code == 204
    assert http.get(url, headers={"If-None-Match": etag}).status_code == 404


def test_multi_get_etag_and_304(server_url, db_name, http):
    """A multi-id GET is cacheable too; updating one of its docs invalidates it."""
    for i in range(3):
        _put(http, server_url, db_name, f"items/{i}", {"n": i})
    url = f"{server_url}/databases/{db_name}/docs?id=items/0&id=items/1&id=items/2&id=items/none"
    first = http.get(url)
    assert first.status_code == 200
    etag = _etag(first)
    assert http.get(url, headers={"If-None-Match": etag}).status_code == 304
    _put(http, server_url, db_name, "items/1", {"n": 100})
    changed = http.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert [d and d["n"] for d in changed.json()["Results"]] == [0, 100, 2, None]


def test_head_etag_is_change_vector(server_url, db_name, http):
    """HEAD /docs answers 200 with ETag = the document's change vector, 304 when it matches, 404 if missing."""
    put = _put(http, server_url, db_name, "users/h1", {"name": "head"})
    url = doc_url(server_url, db_name, "users/h1")

    head = http.head(url)
    assert head.status_code == 200
    assert head.content == b""
    assert _etag(head).strip('"') == put["ChangeVector"]
    loaded_cv = http.get(url).json()["Results"][0]["@metadata"]["@change-vector"]
    assert _etag(head).strip('"') == loaded_cv

    assert http.head(url, headers={"If-None-Match": put["ChangeVector"]}).status_code == 304
    assert http.head(url, headers={"If-None-Match": '"' + put["ChangeVector"] + '"'}).status_code == 304
    put2 = _put(http, server_url, db_name, "users/h1", {"name": "head2"})
    head2 = http.head(url, headers={"If-None-Match": put["ChangeVector"]})
    assert head2.status_code == 200
    assert _etag(head2).strip('"') == put2["ChangeVector"]

    assert http.head(doc_url(server_url, db_name, "users/none")).status_code == 404


def test_client_cache_gets_304_and_sees_updates(store, server_url):
    """The same load in two sessions: the second is answered 304 from the client cache; an update is seen."""
    statuses: list[tuple[int, str]] = []

    with store.open_session() as s:
        s.store(User(name="cached"), "users/cache")
        s.save_changes()

    store.get_request_executor().add_on_succeed_request(lambda e: statuses.append((e.response.status_code, e.url)))

    def doc_reads() -> list[int]:
        return [code for code, url in statuses if "/docs?" in url]

    for _ in range(2):
        with store.open_session() as s:
            assert s.load("users/cache", User).name == "cached"
    assert doc_reads() == [200, 304], statuses

    with store.open_session() as s:  # update through the same store
        s.load("users/cache", User).name = "updated"
        s.save_changes()
    statuses.clear()
    with store.open_session() as s:
        assert s.load("users/cache", User).name == "updated"
    assert doc_reads() == [200], statuses
