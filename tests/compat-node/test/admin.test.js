import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
    ToggleDatabasesStateOperation,
    GetDatabaseRecordOperation,
    GetDatabaseSettingsOperation,
    PutDatabaseSettingsOperation,
    PutConnectionStringOperation,
    GetConnectionStringsOperation,
    RemoveConnectionStringOperation,
    PutSortersOperation,
    PutAnalyzersOperation,
    ReorderDatabaseMembersOperation,
    PromoteDatabaseNodeOperation,
    AddDatabaseNodeOperation,
} from "ravendb";
import { startServer, newStore, dropStore } from "../support/server.js";

let server, store;
before(async () => {
    server = await startServer();
    store = await newStore(server);
    const session = store.openSession();
    await session.store({ name: "kept" }, "things/1");
    await session.saveChanges();
});
after(async () => {
    await dropStore(store);
    await server.stop();
});

test("disable and enable a database", async () => {
    const disabled = await store.maintenance.server.send(new ToggleDatabasesStateOperation(store.database, true));
    assert.equal(disabled.success, true);
    assert.equal(disabled.disabled, true);
    assert.equal((await store.maintenance.server.send(new GetDatabaseRecordOperation(store.database))).disabled, true);
    await assert.rejects(store.openSession().load("things/1"), err => err.name === "DatabaseDisabledException");
    const again = await store.maintenance.server.send(new ToggleDatabasesStateOperation(store.database, true));
    assert.equal(again.success, false);
    const enabled = await store.maintenance.server.send(new ToggleDatabasesStateOperation(store.database, false));
    assert.equal(enabled.success, true);
    assert.equal((await store.openSession().load("things/1")).name, "kept");
});

test("database settings are stored in the record", async () => {
    await store.maintenance.send(new PutDatabaseSettingsOperation(store.database, { "Indexing.MapTimeoutInSec": "30" }));
    const settings = await store.maintenance.send(new GetDatabaseSettingsOperation(store.database));
    assert.equal(settings.settings["Indexing.MapTimeoutInSec"], "30");
});

test("connection strings are stored, listed and removed", async () => {
    const cs = { type: "Raven", name: "elsewhere", database: "Other", topologyDiscoveryUrls: ["http://127.0.0.1:1"] };
    await store.maintenance.send(new PutConnectionStringOperation(cs));
    const all = await store.maintenance.send(new GetConnectionStringsOperation());
    assert.equal(all.ravenConnectionStrings["elsewhere"].database, "Other");
    const one = await store.maintenance.send(new GetConnectionStringsOperation("elsewhere", "Raven"));
    assert.deepEqual(Object.keys(one.ravenConnectionStrings), ["elsewhere"]);
    await store.maintenance.send(new RemoveConnectionStringOperation(cs));
    const none = await store.maintenance.send(new GetConnectionStringsOperation());
    assert.deepEqual(Object.keys(none.ravenConnectionStrings ?? {}), []);
});

test("custom sorters and analyzers are refused as not supported", async () => {
    // The Node client has no class for System.NotSupportedException: it raises a RavenException naming it.
    const isNotSupported = err => /NotSupportedException/.test(err.message) && /C#/.test(err.message);
    await assert.rejects(store.maintenance.send(new PutSortersOperation({ name: "MySorter", code: "class MySorter {}" })), isNotSupported);
    await assert.rejects(store.maintenance.send(new PutAnalyzersOperation({ name: "MyAnalyzer", code: "class MyAnalyzer {}" })), isNotSupported);
    const sample = await fetch(`${server.url}/databases/${store.database}/studio/sample-data`, { method: "POST" });
    assert.equal(sample.status, 501);
    assert.match((await sample.json()).Type, /NotSupportedException/);
});

test("topology operations answer as a single node", async () => {
    await store.maintenance.server.send(new ReorderDatabaseMembersOperation(store.database, ["A"]));
    const promoted = await store.maintenance.server.send(new PromoteDatabaseNodeOperation(store.database, "A"));
    assert.equal(promoted.name, store.database);
    await assert.rejects(store.maintenance.server.send(new AddDatabaseNodeOperation(store.database)), /already on every node/);
});
