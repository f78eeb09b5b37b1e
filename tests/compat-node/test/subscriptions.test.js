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

test("three Concurrent workers share 2,000 documents: each sent to exactly one worker", async () => {
    const ids = [];
    for (let from = 0; from < 2000; from += 500) ids.push(...await storeUsers(10000 + from, 500));
    const name = await store.subscriptions.create({ query: "from Users as u where u.age >= 10000" });
    const received = [[], [], []];
    const errors = [];
    const workers = received.map((into, i) => {
        const worker = store.subscriptions.getSubscriptionWorker({ subscriptionName: name, strategy: "Concurrent", maxDocsPerBatch: 50 });
        worker.on("batch", (batch, callback) => {
            for (const item of batch.items) into.push(item.id);
            // A worker busy with its batch: the others take the next ones meanwhile.
            setTimeout(callback, 5 + i);
        });
        worker.on("error", e => errors.push(e));
        return worker;
    });
    try {
        await waitFor(() => received.reduce((n, r) => n + r.length, 0) >= 2000, 90000);
        await new Promise(r => setTimeout(r, 1500));
        const all = received.flat();
        assert.equal(all.length, 2000, "no document sent twice");
        assert.deepEqual([...all].sort(), ids);
        assert.ok(received.filter(r => r.length > 0).length >= 2, `shares: ${received.map(r => r.length)}`);
        assert.deepEqual(errors, []);
        // A non-Concurrent worker is refused while concurrent ones are connected.
        const single = store.subscriptions.getSubscriptionWorker({ subscriptionName: name });
        const refused = new Promise(resolve => single.on("error", resolve));
        single.on("batch", (batch, callback) => callback());
        const error = await refused;
        assert.equal(error.name, "SubscriptionInUseException");
        await single.dispose();
    } finally {
        for (const worker of workers) await worker.dispose();
    }
});

test("a Concurrent worker is refused by a subscription a single worker holds", async () => {
    await storeUsers(20000, 2);
    const name = await store.subscriptions.create({ query: "from Users as u where u.age >= 20000" });
    const single = store.subscriptions.getSubscriptionWorker({ subscriptionName: name });
    let got = 0;
    single.on("batch", (batch, callback) => { got += batch.items.length; callback(); });
    try {
        await waitFor(() => got >= 2);
        const concurrent = store.subscriptions.getSubscriptionWorker({ subscriptionName: name, strategy: "Concurrent" });
        const refused = new Promise(resolve => concurrent.on("error", resolve));
        concurrent.on("batch", (batch, callback) => callback());
        const error = await refused;
        assert.equal(error.name, "SubscriptionInUseException");
        assert.match(error.message, /connection strategy is Concurrent/);
        await concurrent.dispose();
    } finally {
        await single.dispose();
    }
});
