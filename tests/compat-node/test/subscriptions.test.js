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

async function storeUsers(from, count) {
    const session = store.openSession();
    const ids = [];
    for (let i = from; i < from + count; i++) {
        const id = `users/${String(i).padStart(5, "0")}`;
        await session.store({ name: `user ${i}`, age: i, "@metadata": { "@collection": "Users" } }, id);
        ids.push(id);
    }
    await session.saveChanges();
    return ids;
}

function waitFor(predicate, timeoutMs = 20000) {
    return new Promise((resolve, reject) => {
        const started = Date.now();
        const check = () => {
            if (predicate()) return resolve();
            if (Date.now() - started > timeoutMs) return reject(new Error("timed out"));
            setTimeout(check, 50);
        };
        check();
    });
}

test("a Node worker receives every document once, in order, then new ones (53000 protocol)", async () => {
    const ids = await storeUsers(0, 120);
    const name = await store.subscriptions.create({ query: "from Users as u where u.age >= 10 select { Name: u.name }" });
    const worker = store.subscriptions.getSubscriptionWorker({ subscriptionName: name, maxDocsPerBatch: 25 });
    const received = [];
    const errors = [];
    worker.on("batch", (batch, callback) => {
        for (const item of batch.items) received.push([item.id, item.result.Name]);
        callback();
    });
    worker.on("error", e => errors.push(e));
    try {
        await waitFor(() => received.length >= 110);
        const more = await storeUsers(120, 5);
        await waitFor(() => received.length >= 115);
        assert.deepEqual(received.map(r => r[0]), [...ids.slice(10), ...more]);
        assert.equal(received[0][1], "user 10");
        assert.deepEqual(errors, []);
    } finally {
        await worker.dispose();
    }
    const state = await store.subscriptions.getSubscriptionState(name);
    assert.ok(state.changeVectorForNextBatchStartingPoint);
});

test("a bad subscription query is refused and nothing is stored", async () => {
    await assert.rejects(store.subscriptions.create({ query: "from Users where" }));
    const all = await store.subscriptions.getSubscriptions(0, 100);
    assert.ok(all.every(s => s.query !== "from Users where"));
});
