import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, newStore, dropStore, collect } from "../support/server.js";

class Item {
    constructor(name, rank) {
        this.name = name;
        this.rank = rank;
    }
}

const pascal = s => s[0].toUpperCase() + s.slice(1);
const camel = s => s[0].toLowerCase() + s.slice(1);
const COUNT = 300;

let server;
before(async () => { server = await startServer(); });
after(async () => { await server.stop(); });

// The same checks with the client's default casing and with PascalCase on the server side.
for (const [label, casing] of [
    ["camelCase", null],
    ["PascalCase", conventions => {
        conventions.localToServerFieldNameConverter = pascal;
        conventions.serverToLocalFieldNameConverter = camel;
    }],
]) {
    // Streams of documents by prefix find the class by the stored Raven-Node-Type.
    const configure = conventions => {
        conventions.registerEntityType(Item);
        if (casing) casing(conventions);
    };
    // Queries name fields as they are stored.
    const field = name => (casing ? pascal(name) : name);
    test(`streaming documents and queries (${label})`, async () => {
        const store = await newStore(server, configure);
        try {
            const bulk = store.bulkInsert();
            for (let i = 0; i < COUNT; i++) await bulk.store(new Item(`item ${i}`, i), `items/${String(i).padStart(4, "0")}`);
            await bulk.finish();

            const session = store.openSession();
            const docs = await collect(await session.advanced.stream("items/", { documentType: Item }));
            assert.equal(docs.items.length, COUNT);
            assert.equal(docs.items[0].id, "items/0000");
            assert.ok(docs.items[0].document instanceof Item);
            assert.equal(docs.items[5].document.rank, 5);
            assert.ok(docs.items[0].changeVector);
            const paged = await collect(await session.advanced.stream("items/", { startAfter: "items/0290", pageSize: 5 }));
            assert.deepEqual(paged.items.map(r => r.id), ["items/0291", "items/0292", "items/0293", "items/0294", "items/0295"]);

            let callbackStats = null;
            const query = session.query({ collection: "Items", documentType: Item }).whereGreaterThanOrEqual(field("rank"), 100);
            const results = await collect(await session.advanced.stream(query, s => { callbackStats = s; }));
            assert.equal(results.items.length, COUNT - 100);
            assert.ok(results.items.every(r => r.document instanceof Item && r.document.rank >= 100 && r.id.startsWith("items/")));
            assert.equal(callbackStats.totalResults, COUNT - 100);
            assert.ok(callbackStats.indexName);
            assert.equal(typeof callbackStats.isStale, "boolean");

            const raw = session.advanced.rawQuery(`from Items where ${field("rank")} < 3 order by ${field("rank")} as long`, Item);
            const first = await collect(await session.advanced.stream(raw));
            assert.deepEqual(first.items.map(r => r.document.name), ["item 0", "item 1", "item 2"]);
        } finally {
            await dropStore(store);
        }
    });
}
