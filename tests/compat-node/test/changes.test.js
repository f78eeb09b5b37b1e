import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, newStore, dropStore } from "../support/server.js";

let server, store;
before(async () => {
    server = await startServer();
    store = await newStore(server);
});
after(async () => {
    await dropStore(store);
    await server.stop();
});

function nextChange(observable) {
    return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no change arrived")), 10000);
        observable.on("data", change => {
            clearTimeout(timer);
            resolve(change);
        });
        observable.on("error", reject);
    });
}

test("document changes through store.changes()", async () => {
    const changes = store.changes();
    try {
        await changes.ensureConnectedNow();
        const observable = changes.forDocumentsInCollection("Users");
        await observable.ensureSubscribedNow();
        const arrived = nextChange(observable);
        const session = store.openSession();
        await session.store({ name: "ada", "@metadata": { "@collection": "Users" } }, "users/1");
        await session.saveChanges();
        const change = await arrived;
        assert.equal(change.id, "users/1");
        assert.equal(change.type, "Put");
        assert.equal(change.collectionName, "Users");
        assert.ok(change.changeVector);
    } finally {
        changes.dispose();
    }
});
