"""Documents through the official client: CRUD, multi-load, includes, ids, metadata, raw commands."""

from __future__ import annotations

import datetime
import re

from ravendb.documents.commands.crud import (
    DeleteDocumentCommand,
    GetDocumentsCommand,
    PutDocumentCommand,
)

from ravendb.json.metadata_as_dictionary import MetadataAsDictionary

from corvid_support import City, Company, Order, Product, User, raw_get_docs

LAST_MODIFIED_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$")


def _plain(value):
    """MetadataAsDictionary (nested metadata objects) -> plain dict, recursively."""
    if isinstance(value, MetadataAsDictionary):
        return {k: _plain(v) for k, v in value.metadata.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _execute(store, command):
    store.get_request_executor().execute_command(command)
    return command.result


# -- CRUD ------------------------------------------------------------------------------------
def test_store_load_update_delete(store):
    """A document stored in one session is loaded, updated and deleted in later sessions."""
    with store.open_session() as s:
        s.store(User(name="Ann", age=31), "users/ann")
        s.save_changes()

    with store.open_session() as s:
        u = s.load("users/ann", User)
        assert isinstance(u, User)
        assert (u.name, u.age) == ("Ann", 31)
        u.age += 1
        s.save_changes()

    with store.open_session() as s:
        assert s.load("users/ann", User).age == 32
        s.delete("users/ann")
        s.save_changes()

    with store.open_session() as s:
        assert s.load("users/ann", User) is None


def test_hilo_generated_ids(store):
    """Entities stored without id get distinct HiLo ids with the collection prefix and are loadable."""
    users = [User(name=f"u{i}") for i in range(40)]  # more than one default HiLo range of 32
    with store.open_session() as s:
        for u in users:
            s.store(u)
        s.save_changes()
        ids = [s.advanced.get_document_id(u) for u in users]
    assert len(set(ids)) == len(users)
    assert all(re.fullmatch(r"users/\d+-[A-Za-z]+", i) for i in ids), ids

    with store.open_session() as s:
        loaded = s.load(ids, User)
        assert [loaded[i].name for i in ids] == [u.name for u in users]


def test_delete_then_load_returns_none(store):
    """Deleting by entity and by id both remove the document; a repeated delete is harmless."""
    with store.open_session() as s:
        s.store(User(name="a"), "users/a")
        s.store(User(name="b"), "users/b")
        s.save_changes()

    with store.open_session() as s:
        s.delete(s.load("users/a", User))
        s.delete("users/b")
        s.save_changes()

    with store.open_session() as s:
        assert s.load("users/a", User) is None
        assert s.load("users/b", User) is None
        s.delete("users/a")  # already gone: must not fail
        s.save_changes()


def test_load_missing_returns_none(store):
    """Loading an id that never existed gives None."""
    with store.open_session() as s:
        assert s.load("users/never-stored", User) is None


# -- many ids --------------------------------------------------------------------------------
def test_load_many_ids_with_missing(store):
    """Multi-load returns each stored entity and None for every missing id."""
    stored = {f"products/{i}": Product(name=f"p{i}", price=i * 1.5) for i in range(1, 8)}
    with store.open_session() as s:
        for doc_id, p in stored.items():
            s.store(p, doc_id)
        s.save_changes()

    wanted = ["products/3", "products/missing-1", "products/1", "products/7", "products/missing-2"]
    with store.open_session() as s:
        result = s.load(wanted, Product)
        assert s.advanced.number_of_requests == 1
    for doc_id in wanted:
        if doc_id in stored:
            assert result[doc_id].name == stored[doc_id].name
            assert result[doc_id].price == stored[doc_id].price
        else:
            assert result[doc_id] is None


def test_raw_multi_get_keeps_request_order(store, server_url, http):
    """GET /docs?id=a&id=b... answers Results in request order with null for missing ids."""
    names = {f"cities/{i}": f"city {i}" for i in range(5)}
    with store.open_session() as s:
        for doc_id, name in names.items():
            s.store(City(name=name), doc_id)
        s.save_changes()

    wanted = ["cities/4", "cities/none", "cities/0", "cities/2", "cities/also-none", "cities/1"]
    results = raw_get_docs(http, server_url, store.database, wanted)
    assert len(results) == len(wanted)
    for doc_id, doc in zip(wanted, results):
        if doc_id in names:
            assert doc is not None, f"{doc_id} missing from multi-get"
            assert doc["name"] == names[doc_id]
            assert doc["@metadata"]["@id"] == doc_id
        else:
            assert doc is None


def test_load_many_ids_via_post(store):
    """Long id lists (>= 1024 chars) go as POST /docs with {"Ids":[...]}; all come back."""
    ids = [f"products/a-rather-long-identifier-to-force-a-post-request-{i:04d}" for i in range(40)]
    with store.open_session() as s:
        for i, doc_id in enumerate(ids):
            s.store(Product(name=doc_id, price=i), doc_id)
        s.save_changes()

    wanted = ids + ["products/not-there"]
    with store.open_session() as s:
        result = s.load(wanted, Product)
    assert all(result[i].name == i for i in ids)
    assert result["products/not-there"] is None


# -- includes ------------------------------------------------------------------------------
def test_include_single_reference(store):
    """include("friend_id") brings the referenced document in the same request."""
    with store.open_session() as s:
        s.store(User(name="Bob"), "users/bob")
        s.store(User(name="Ann", friend_id="users/bob"), "users/ann")
        s.save_changes()

    with store.open_session() as s:
        ann = s.include("friend_id").load("users/ann", User)["users/ann"]
        assert ann.name == "Ann"
        assert s.advanced.number_of_requests == 1
        bob = s.load(ann.friend_id, User)
        assert bob.name == "Bob"
        assert s.advanced.number_of_requests == 1, "included document was not served from the session"


def test_include_list_of_ids(store):
    """Including an array property includes every id in it; a dangling id is tolerated."""
    employees = {f"users/e{i}": f"emp{i}" for i in range(4)}
    with store.open_session() as s:
        for doc_id, name in employees.items():
            s.store(User(name=name), doc_id)
        s.store(Company(name="Acme", employee_ids=list(employees) + ["users/gone"]), "companies/acme")
        s.save_changes()

    with store.open_session() as s:
        acme = s.include("employee_ids").load("companies/acme", Company)["companies/acme"]
        assert s.advanced.number_of_requests == 1
        loaded = s.load(list(employees), User)
        assert {k: v.name for k, v in loaded.items()} == employees
        assert s.advanced.number_of_requests == 1
        assert acme.employee_ids[-1] == "users/gone"


def test_include_nested_path(store):
    """A dotted include path (address.city_id) reaches into nested objects."""
    with store.open_session() as s:
        s.store(City(name="Lyon"), "cities/lyon")
        s.store(Company(name="Acme", address={"street": "1 rue", "city_id": "cities/lyon"}), "companies/acme")
        s.save_changes()

    with store.open_session() as s:
        acme = s.include("address.city_id").load("companies/acme", Company)["companies/acme"]
        assert s.advanced.number_of_requests == 1
        assert s.load(acme.address["city_id"], City).name == "Lyon"
        assert s.advanced.number_of_requests == 1


def test_include_path_through_array(store):
    """An include path through an array of objects (lines[].product_id) includes each referenced doc."""
    products = {f"products/{i}": f"prod{i}" for i in range(3)}
    with store.open_session() as s:
        for doc_id, name in products.items():
            s.store(Product(name=name, price=1.0), doc_id)
        lines = [{"product_id": doc_id, "qty": n + 1} for n, doc_id in enumerate(products)]
        s.store(Order(company="companies/x", lines=lines), "orders/1")
        s.save_changes()

    with store.open_session() as s:
        s.include("lines[].product_id").load("orders/1", Order)
        assert s.advanced.number_of_requests == 1
        loaded = s.load(list(products), Product)
        assert {k: v.name for k, v in loaded.items()} == products
        assert s.advanced.number_of_requests == 1


def test_include_with_many_ids(store):
    """Includes work together with a multi-id load."""
    with store.open_session() as s:
        for i in range(3):
            s.store(User(name=f"friend{i}"), f"users/f{i}")
            s.store(User(name=f"user{i}", friend_id=f"users/f{i}"), f"users/u{i}")
        s.save_changes()

    with store.open_session() as s:
        users = s.include("friend_id").load([f"users/u{i}" for i in range(3)], User)
        assert s.advanced.number_of_requests == 1
        for i in range(3):
            assert s.load(users[f"users/u{i}"].friend_id, User).name == f"friend{i}"
        assert s.advanced.number_of_requests == 1


# -- ids -----------------------------------------------------------------------------------
def test_ids_are_case_insensitive(store):
    """users/1-A loads as USERS/1-a; @id keeps the stored casing; a second store updates, not duplicates."""
    with store.open_session() as s:
        s.store(User(name="Case"), "users/1-A")
        s.save_changes()

    with store.open_session() as s:
        u = s.load("USERS/1-a", User)
        assert u is not None and u.name == "Case"
        assert s.advanced.get_metadata_for(u)["@id"] == "users/1-A"
        assert s.advanced.exists("Users/1-A")

    with store.open_session() as s:
        s.store(User(name="Other casing"), "USERS/1-A")
        s.save_changes()

    with store.open_session() as s:
        ids = [s.advanced.get_document_id(x) for x in s.advanced.load_starting_with("users/", User)]
        assert len(ids) == 1, ids
        assert s.load("users/1-a", User).name == "Other casing"


def test_exists(store):
    """HEAD /docs (session.advanced.exists) reports presence without loading."""
    with store.open_session() as s:
        s.store(User(name="x"), "users/exists")
        s.save_changes()
    with store.open_session() as s:
        assert s.advanced.exists("users/exists")
        assert not s.advanced.exists("users/does-not")


# -- metadata ------------------------------------------------------------------------------
def test_metadata_round_trip(store):
    """Custom metadata keys survive; @collection, @change-vector, @last-modified, Raven-Python-Type present."""
    before = datetime.datetime.now(datetime.timezone.utc)
    custom = {"custom-key": "custom value", "Reviewer": "ann", "score": 7, "nested": {"a": [1, 2]}}
    with store.open_session() as s:
        u = User(name="meta")
        s.store(u, "users/meta")
        md = s.advanced.get_metadata_for(u)
        for k, v in custom.items():
            md[k] = v
        s.save_changes()
        python_type = s.advanced.get_metadata_for(u)["Raven-Python-Type"]

    with store.open_session() as s:
        u = s.load("users/meta", User)
        md = s.advanced.get_metadata_for(u)
        for k, v in custom.items():
            assert _plain(md[k]) == v, f"metadata {k!r}: expected {v!r}, got {_plain(md.get(k))!r}"
        assert md["@collection"] == "Users"
        assert md["@id"] == "users/meta"
        assert md["Raven-Python-Type"] == python_type
        cv = md["@change-vector"]
        assert isinstance(cv, str) and cv
        assert cv == s.advanced.get_change_vector_for(u)
        lm = md["@last-modified"]
        assert LAST_MODIFIED_RE.match(lm), f"@last-modified not in yyyy-MM-ddTHH:mm:ss.fffffffZ form: {lm!r}"
        when = datetime.datetime.strptime(lm[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        assert abs((when - before).total_seconds()) < 300, f"@last-modified {lm} far from now"


def test_collection_from_metadata_in_raw_doc(store, server_url, http):
    """A raw document's @collection is kept; a document without one gets @empty."""
    db = store.database
    r = http.put(f"{server_url}/databases/{db}/docs?id=raw/1", json={"v": 1, "@metadata": {"@collection": "Raws"}})
    assert r.status_code == 201, r.text
    r = http.put(f"{server_url}/databases/{db}/docs?id=raw/2", json={"v": 2})
    assert r.status_code == 201, r.text
    docs = raw_get_docs(http, server_url, db, ["raw/1", "raw/2"])
    assert docs[0]["@metadata"]["@collection"] == "Raws"
    assert docs[1]["@metadata"]["@collection"] == "@empty"


def test_update_changes_change_vector(store):
    """Every write gives the document a new change vector, reported back by save_changes."""
    with store.open_session() as s:
        u = User(name="v1")
        s.store(u, "users/cv")
        s.save_changes()
        cv1 = s.advanced.get_change_vector_for(u)
    with store.open_session() as s:
        u = s.load("users/cv", User)
        assert s.advanced.get_change_vector_for(u) == cv1
        u.name = "v2"
        s.save_changes()
        cv2 = s.advanced.get_change_vector_for(u)
    assert cv2 and cv2 != cv1
    with store.open_session() as s:
        u = s.load("users/cv", User)
        assert u.name == "v2"
        assert s.advanced.get_change_vector_for(u) == cv2


def test_unchanged_entity_is_not_rewritten(store):
    """save_changes with no modification sends nothing, so the change vector stays."""
    with store.open_session() as s:
        s.store(User(name="same"), "users/same")
        s.save_changes()
    with store.open_session() as s:
        u = s.load("users/same", User)
        cv = s.advanced.get_change_vector_for(u)
        s.save_changes()
    with store.open_session() as s:
        assert s.advanced.get_change_vector_for(s.load("users/same", User)) == cv


# -- startsWith ----------------------------------------------------------------------------
def test_load_starting_with_paging(store):
    """load_starting_with returns only matching ids, ordered by id, and pages with start/page_size."""
    people = [f"people/{i:02d}" for i in range(11)]
    with store.open_session() as s:
        for doc_id in reversed(people):  # insertion order differs from id order
            s.store(User(name=doc_id), doc_id)
        s.store(User(name="not me"), "peoplex/1")
        s.store(User(name="nor me"), "others/1")
        s.save_changes()

    page_size = 4
    seen = []
    with store.open_session() as s:
        for start in range(0, len(people) + page_size, page_size):
            page = s.advanced.load_starting_with("people/", User, start=start, page_size=page_size)
            assert len(page) <= page_size
            seen += [s.advanced.get_document_id(u) for u in page]
    assert seen == people

    with store.open_session() as s:
        all_docs = s.advanced.load_starting_with("people/", User)
        assert sorted(u.name for u in all_docs) == people
        assert s.advanced.load_starting_with("nobody/", User) == []


def test_load_starting_with_matches(store):
    """The `matches` wildcard filter applies to the part of the id after the prefix."""
    ids = ["items/apple", "items/apricot", "items/banana", "items/avocado-big"]
    with store.open_session() as s:
        for doc_id in ids:
            s.store(Product(name=doc_id), doc_id)
        s.save_changes()
    with store.open_session() as s:
        got = s.advanced.load_starting_with("items/", Product, matches="ap*")
        names = sorted(p.name for p in got)
    assert names == sorted(i for i in ids if i.split("/", 1)[1].startswith("ap"))


# -- raw commands --------------------------------------------------------------------------
def test_raw_put_get_delete_commands(store):
    """PutDocumentCommand / GetDocumentsCommand / DeleteDocumentCommand / HEAD through the executor."""
    body = {"name": "raw", "n": 5, "@metadata": {"@collection": "Raws"}}
    put = _execute(store, PutDocumentCommand("raws/1", None, body))
    assert put.key == "raws/1"
    assert put.change_vector

    got = _execute(store, GetDocumentsCommand.from_single_id("raws/1"))
    doc = got.results[0]
    assert doc["name"] == "raw" and doc["n"] == 5
    assert doc["@metadata"]["@change-vector"] == put.change_vector
    assert doc["@metadata"]["@collection"] == "Raws"

    with store.open_session() as s:
        assert s.advanced.exists("raws/1")

    _execute(store, DeleteDocumentCommand("raws/1"))
    assert _execute(store, GetDocumentsCommand.from_single_id("raws/1")) is None
    with store.open_session() as s:
        assert not s.advanced.exists("raws/1")


def test_server_generated_id_with_slash(store):
    """PUT with id `users/` makes the server choose a fresh id with that prefix."""
    keys = [_execute(store, PutDocumentCommand("users/", None, {"n": i})).key for i in range(3)]
    assert len(set(keys)) == 3, keys
    for i, key in enumerate(keys):
        assert key.startswith("users/") and len(key) > len("users/"), key
        doc = _execute(store, GetDocumentsCommand.from_single_id(key)).results[0]
        assert doc["n"] == i
        assert doc["@metadata"]["@id"] == key


def test_server_identity_with_pipe(store):
    """PUT with id `users|` allocates consecutive identities users/1, users/2, ..."""
    n = 4
    keys = [_execute(store, PutDocumentCommand("users|", None, {"n": i})).key for i in range(n)]
    assert keys == [f"users/{i}" for i in range(1, n + 1)]
    for i, key in enumerate(keys):
        assert _execute(store, GetDocumentsCommand.from_single_id(key)).results[0]["n"] == i


def test_session_server_generated_id(store):
    """A session store with id `people/` gets the server-made id back into the session."""
    with store.open_session() as s:
        u = User(name="gen")
        s.store(u, "people/")
        s.save_changes()
        doc_id = s.advanced.get_document_id(u)
    assert doc_id.startswith("people/") and doc_id != "people/"
    with store.open_session() as s:
        assert s.load(doc_id, User).name == "gen"
