"""The database record in dumps (issue 22): the revisions, expiration, refresh and time-series (named values)
configuration configured on a source database with the official Python client travel through an export and
an import into a fresh database; `OperateOnDatabaseRecordTypes` picks which parts are applied, and without
`DatabaseRecord` among the item types none is."""

from __future__ import annotations

from ravendb.documents.operations.expiration.configuration import ExpirationConfiguration
from ravendb.documents.operations.expiration.operations import ConfigureExpirationOperation
from ravendb.documents.operations.refresh.configuration import ConfigureRefreshOperation, RefreshConfiguration
from ravendb.documents.operations.revisions import ConfigureRevisionsOperation, RevisionsCollectionConfiguration, RevisionsConfiguration
from ravendb.documents.operations.time_series import ConfigureTimeSeriesValueNamesOperation
from ravendb.documents.smuggler.common import DatabaseItemType, DatabaseRecordItemType

from corvid_support import User, create_database, delete_database, open_store, unique_db_name
from test_smuggler import _export, _import


def _configure(store) -> None:
    store.maintenance.send(ConfigureRevisionsOperation(RevisionsConfiguration(None, {"Users": RevisionsCollectionConfiguration(
        minimum_revisions_to_keep=7)})))
    store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 17)))
    store.maintenance.send(ConfigureRefreshOperation(RefreshConfiguration(False, 23)))
    store.maintenance.send(ConfigureTimeSeriesValueNamesOperation(
        ConfigureTimeSeriesValueNamesOperation.Parameters("Users", "HeartRate", ["BPM", "Oxygen"])))
    with store.open_session() as session:
        session.store(User(name="a", age=1), "users/1")
        session.save_changes()


def _config(http, url, db) -> dict:
    def get(path):
        r = http.get(f"{url}/databases/{db}/{path}", timeout=30)
        return r.json() if r.status_code == 200 and r.content else None

    revisions = get("revisions/config")
    named = (get("timeseries/config") or {}).get("NamedValues") or {}
    return {
        "revisions": ((revisions or {}).get("Collections") or {}).get("Users", {}).get("MinimumRevisionsToKeep"),
        "expiration": (get("expiration/config") or {}).get("DeleteFrequencyInSec"),
        "refresh": (get("refresh/config") or {}).get("RefreshFrequencyInSec"),
        "named": named.get("Users", {}).get("HeartRate"),
    }


def _into_fresh(server_url, dump, **options) -> str:
    target = unique_db_name("record")
    create_database(server_url, target)
    with open_store(server_url, target) as other:
        _import(other, dump, **options)
    return target


def test_the_record_configuration_travels_with_the_dump(store, server_url, db_name, http, tmp_path):
    _configure(store)
    expected = {"revisions": 7, "expiration": 17, "refresh": 23, "named": ["BPM", "Oxygen"]}
    assert _config(http, server_url, db_name) == expected
    dump = tmp_path / "record.ravendbdump"
    _export(store, dump)

    targets = []
    try:
        targets.append(_into_fresh(server_url, dump))
        assert _config(http, server_url, targets[-1]) == expected
        # Only the parts asked for.
        targets.append(_into_fresh(server_url, dump, operate_on_database_record_types={DatabaseRecordItemType.EXPIRATION,
                                                                                        DatabaseRecordItemType.TIME_SERIES}))
        assert _config(http, server_url, targets[-1]) == {"revisions": None, "expiration": 17, "refresh": None, "named": ["BPM", "Oxygen"]}
        # No DatabaseRecord among the item types: nothing of it.
        targets.append(_into_fresh(server_url, dump, operate_on_types={DatabaseItemType.DOCUMENTS}))
        assert _config(http, server_url, targets[-1]) == {"revisions": None, "expiration": None, "refresh": None, "named": None}
    finally:
        for target in targets:
            delete_database(server_url, target)


def test_a_dump_backup_restores_the_record_configuration(store, server_url, db_name, http, tmp_path):
    from test_backups import restore
    from test_dump_backups import _run, _task

    _configure(store)
    folder = tmp_path / "dumps"
    task_id = _task(http, server_url, db_name, folder)
    _run(http, server_url, db_name, task_id, full=True)
    # Changed before the incremental backup: the restored database has the last configuration.
    store.maintenance.send(ConfigureExpirationOperation(ExpirationConfiguration(False, 99)))
    _run(http, server_url, db_name, task_id, full=False)
    [chain] = list(folder.iterdir())
    target = unique_db_name("recordrestore")
    state = restore(http, server_url, chain, target)
    assert state["Status"] == "Completed", state
    try:
        assert _config(http, server_url, target) == {"revisions": 7, "expiration": 99, "refresh": 23, "named": None}, \
            "the time-series configuration is the catalog's: backups written by the engine do not carry it"
    finally:
        delete_database(server_url, target)


def test_imported_rollup_policies_run_in_the_new_database(store, server_url, db_name, http, tmp_path):
    """A configuration with a rollup policy travels with the dump, is checked like a configured one, and its
    runner rolls up the imported series in the new database."""
    from datetime import datetime, timedelta

    from ravendb.documents.operations.time_series import (
        ConfigureTimeSeriesOperation,
        RawTimeSeriesPolicy,
        TimeSeriesCollectionConfiguration,
        TimeSeriesConfiguration,
        TimeSeriesPolicy,
    )
    from ravendb.primitives.time_series import TimeValue

    from corvid_support import wait_until

    config = TimeSeriesConfiguration()
    hourly = TimeSeriesPolicy("ByHour", TimeValue.of_hours(1))
    config.collections["Users"] = TimeSeriesCollectionConfiguration(policies=[hourly], raw_policy=RawTimeSeriesPolicy.DEFAULT_POLICY())
    config.policy_check_frequency = timedelta(milliseconds=300)
    store.maintenance.send(ConfigureTimeSeriesOperation(config))
    start = datetime(2024, 1, 1)
    with store.open_session() as session:
        session.store(User(name="a"), "users/1")
        series = session.time_series_for("users/1", "HeartRate")
        for minute in range(180):
            series.append(start + timedelta(minutes=minute), [float(minute)])
        session.save_changes()
    dump = tmp_path / "policies.ravendbdump"
    _export(store, dump)
    target = _into_fresh(server_url, dump)
    policies = http.get(f"{server_url}/databases/{target}/timeseries/config").json()["Collections"]["Users"]["Policies"]
    assert [p["Name"] for p in policies] == ["ByHour"]

    def hourly_sums():
        r = http.get(f"{server_url}/databases/{target}/timeseries", params={"docId": "users/1", "name": "HeartRate@ByHour"})
        return [e["Values"][4] for e in r.json()["Entries"]] if r.status_code == 200 else None

    # Six values per rollup entry (First, Last, Min, Max, Sum, Count): the sums of each hour's minutes.
    want = [float(sum(range(h * 60, h * 60 + 60))) for h in range(3)]
    assert wait_until(lambda: hourly_sums() == want, timeout=20), f"rolled up by hour: {hourly_sums()}, want {want}"
    # The rollups may have come in the dump: the new database's own runner must be running the policy too.
    stats = lambda: http.get(f"{server_url}/databases/{target}/debug/timeseries/policies").json()
    assert wait_until(lambda: stats().get("Passes", 0) >= 2, timeout=20), stats()
    delete_database(server_url, target)
