import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { AbstractJavaScriptIndexCreationTask } from "ravendb";
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

test("counter changes through store.changes()", async () => {
    const session = store.openSession();
    await session.store({ name: "grace", "@metadata": { "@collection": "Users" } }, "users/2");
    await session.saveChanges();
    const changes = store.changes();
    try {
        await changes.ensureConnectedNow();
        const observable = changes.forCountersOfDocument("users/2");
        await observable.ensureSubscribedNow();
        const arrived = nextChange(observable);
        const counters = store.openSession();
        counters.countersFor("users/2").increment("likes", 4);
        await counters.saveChanges();
        const change = await arrived;
        assert.equal(change.type, "Put");
        assert.equal(change.documentId, "users/2");
        assert.equal(change.name, "likes");
        assert.equal(change.value, 4);
        assert.equal(change.collectionName, "Users");
        assert.ok(change.changeVector);
    } finally {
        changes.dispose();
    }
});

class UsersByName extends AbstractJavaScriptIndexCreationTask {
    constructor() {
        super();
        this.map("Users", u => ({ name: u.name }));
    }
}

test("index batches through store.changes()", async () => {
    await new UsersByName().execute(store);
    const changes = store.changes();
    try {
        await changes.ensureConnectedNow();
        const observable = changes.forIndex("UsersByName");
        await observable.ensureSubscribedNow();
        const batch = new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error("no BatchCompleted arrived")), 10000);
            observable.on("data", change => {
                if (change.type === "BatchCompleted") {
                    clearTimeout(timer);
                    resolve(change);
                }
            });
            observable.on("error", reject);
        });
        const session = store.openSession();
        await session.store({ name: "hopper", "@metadata": { "@collection": "Users" } }, "users/3");
        await session.saveChanges();
        const change = await batch;
        assert.equal(change.name, "UsersByName");
    } finally {
        changes.dispose();
    }
});
