"""Transform scripts of exports and imports (`TransformScript`, `MaxStepsForTransformScript`) through the
official Python client, with RavenDB's semantics: the script runs per document with `this` = the document,
what it leaves is written, `throw 'skip'` leaves the document out (counted as skipped); a script that does
not compile is refused before anything is written; a failing script or one past its step limit stops the
operation naming the document."""

from __future__ import annotations

import pytest
import requests
from ravendb.documents.smuggler.common import DatabaseSmugglerExportOptions, DatabaseSmugglerImportOptions

from corvid_support import create_database, delete_database, open_store, unique_db_name
from test_smuggler import _documents

RENAME_AND_TAG = """
if (this['@metadata']['@collection'] === 'Orders') throw 'skip';
if (this.Name !== undefined) { this.FullName = this.Name; delete this.Name; }
this['@metadata']['Moved-By'] = 'transform';
"""


def _fill(http, url, db) -> None:
    commands = [{"Id": f"users/{i}", "Type": "PUT", "Document": {"Name": f"user {i}", "Age": i, "@metadata": {"@collection": "Users"}}}
                for i in range(1, 11)]
    commands += [{"Id": f"orders/{i}", "Type": "PUT", "Document": {"Total": i, "@metadata": {"@collection": "Orders"}}} for i in range(1, 4)]
    http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=30).raise_for_status()


def _check_transformed(http, url, db) -> None:
    docs = _documents(http, url, db)
    assert sorted(docs) == sorted(f"users/{i}" for i in range(1, 11)), "orders were skipped"
    user = docs["users/3"]
    assert user["FullName"] == "user 3" and "Name" not in user and user["Age"] == 3
    assert user["@metadata"]["Moved-By"] == "transform" and user["@metadata"]["@collection"] == "Users"


@pytest.fixture
def target(server_url):
    name = unique_db_name("transformed")
    create_database(server_url, name)
    yield name
    delete_database(server_url, name)


def test_an_export_transform_renames_tags_and_skips(store, server_url, db_name, http, tmp_path, target):
    _fill(http, server_url, db_name)
    dump = tmp_path / "t.ravendbdump"
    result = store.smuggler.export(DatabaseSmugglerExportOptions(transform_script=RENAME_AND_TAG), str(dump)).wait_for_completion()
    assert result.documents.read_count == 10 and result.documents.skipped_count == 3
    with open_store(server_url, target) as other:
        imported = other.smuggler.import_data(DatabaseSmugglerImportOptions(), str(dump)).wait_for_completion()
        assert imported.documents.read_count == 10
    _check_transformed(http, server_url, target)


def test_an_import_transform_renames_tags_and_skips(store, server_url, db_name, http, tmp_path, target):
    _fill(http, server_url, db_name)
    dump = tmp_path / "plain.ravendbdump"
    store.smuggler.export(DatabaseSmugglerExportOptions(), str(dump)).wait_for_completion()
    with open_store(server_url, target) as other:
        options = DatabaseSmugglerImportOptions(transform_script=RENAME_AND_TAG)
        imported = other.smuggler.import_data(options, str(dump)).wait_for_completion()
        assert imported.documents.read_count == 10 and imported.documents.skipped_count == 3
    _check_transformed(http, server_url, target)


def test_a_script_that_does_not_compile_is_refused_before_anything_is_written(store, server_url, db_name, http, tmp_path, target):
    _fill(http, server_url, db_name)
    dump = tmp_path / "never.ravendbdump"
    with pytest.raises(Exception, match="does not compile"):
        store.smuggler.export(DatabaseSmugglerExportOptions(transform_script="this.x = ;"), str(dump))
    good = tmp_path / "good.ravendbdump"
    store.smuggler.export(DatabaseSmugglerExportOptions(), str(good)).wait_for_completion()
    with open_store(server_url, target) as other:
        with pytest.raises(Exception, match="does not compile"):
            other.smuggler.import_data(DatabaseSmugglerImportOptions(transform_script="if ("), str(good))
    assert _documents(http, server_url, target) == {}


def _export_raw(http, url, db, options: dict, operation_id: int) -> None:
    try:
        with http.post(f"{url}/databases/{db}/smuggler/export?operationId={operation_id}", json=options, stream=True, timeout=60) as r:
            for _ in r.iter_content(65536):
                pass
    except requests.RequestException:
        pass  # the body is cut short: the operation says why


def test_runtime_errors_and_the_step_limit_stop_the_operation_naming_the_document(store, server_url, db_name, http, tmp_path, target):
    _fill(http, server_url, db_name)
    failing = "if (id(this) === 'users/7') throw new Error('no users/7 please');"
    operation_id = http.get(f"{server_url}/databases/{db_name}/operations/next-operation-id").json()["Id"]
    _export_raw(http, server_url, db_name, {"TransformScript": failing}, operation_id)
    state = http.get(f"{server_url}/databases/{db_name}/operations/state?id={operation_id}").json()
    assert state["Status"] == "Faulted", state
    assert "users/7" in state["Result"]["Message"] and "no users/7 please" in state["Result"]["Message"], state

    spin = "for (var i = 0; i < 1e8; i++) {}"
    operation_id = http.get(f"{server_url}/databases/{db_name}/operations/next-operation-id").json()["Id"]
    _export_raw(http, server_url, db_name, {"TransformScript": spin, "MaxStepsForTransformScript": 1000}, operation_id)
    state = http.get(f"{server_url}/databases/{db_name}/operations/state?id={operation_id}").json()
    assert state["Status"] == "Faulted" and "1000 steps" in state["Result"]["Message"], state

    dump = tmp_path / "plain.ravendbdump"
    store.smuggler.export(DatabaseSmugglerExportOptions(), str(dump)).wait_for_completion()
    with open_store(server_url, target) as other:
        with pytest.raises(Exception, match="users/7"):
            other.smuggler.import_data(DatabaseSmugglerImportOptions(transform_script=failing), str(dump))
        with pytest.raises(Exception, match="10000 steps"):
            other.smuggler.import_data(DatabaseSmugglerImportOptions(transform_script=spin), str(dump))
        # A short script stays well within the default limit, document after document.
        short = "var n = 0; for (var i = 0; i < 100; i++) { n += i; } this.N = n;"
        result = other.smuggler.import_data(DatabaseSmugglerImportOptions(transform_script=short), str(dump)).wait_for_completion()
        assert result.documents.read_count == 13
    assert _documents(http, server_url, target)["users/1"]["N"] == 4950
