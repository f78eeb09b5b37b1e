import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { DeleteByQueryOperation, PatchByQueryOperation } from "ravendb";
import { startServer, newStore, dropStore } from "../support/server.js";

class Product {
    constructor(name, price, category) {
        this.name = name;
        this.price = price;
        this.category = category;
    }
}

const PRODUCTS = [
    new Product("Chai", 18, "drinks"),
    new Product("Chang", 19, "drinks"),
    new Product("Aniseed Syrup", 10, "condiments"),
    new Product("Café Crème", 7, "drinks"),
    new Product("Tofu", 23, "produce"),
];

let server, store;
before(async () => {
    server = await startServer();
    store = await newStore(server);
    const session = store.openSession();
    for (const p of PRODUCTS) await session.store(new Product(p.name, p.price, p.category));
    await session.saveChanges();
});
after(async () => {
    await dropStore(store);
    await server.stop();
});

const drinks = PRODUCTS.filter(p => p.category === "drinks");

test("count, any, first, firstOrNull, single", async () => {
    const session = store.openSession();
    const q = () => session.query({ collection: "Products", documentType: Product }).waitForNonStaleResults();
    assert.equal(await q().count(), PRODUCTS.length);
    assert.equal(await q().whereEquals("category", "drinks").count(), drinks.length);
    assert.equal(await q().whereEquals("category", "nothing").any(), false);
    const cheapest = await q().orderBy("price", "Long").first();
    assert.equal(cheapest.name, "Café Crème");
    assert.ok(cheapest instanceof Product);
    assert.equal(await q().whereEquals("category", "nothing").firstOrNull(), null);
    assert.equal((await q().whereEquals("name", "Tofu").single()).price, 23);
    await assert.rejects(q().whereEquals("category", "drinks").single());
    assert.equal(await q().whereEquals("category", "nothing").singleOrNull(), null);
});

test("where, order by and paging in typed queries", async () => {
    const session = store.openSession();
    const page = await session
        .query({ collection: "Products", documentType: Product })
        .whereGreaterThanOrEqual("price", 10)
        .orderByDescending("price", "Long")
        .skip(1)
        .take(2)
        .all();
    const expected = PRODUCTS.filter(p => p.price >= 10).sort((a, b) => b.price - a.price).slice(1, 3).map(p => p.name);
    assert.deepEqual(page.map(p => p.name), expected);
    const stats = [];
    const all = await session.query({ collection: "Products" }).statistics(s => stats.push(s)).take(2).all();
    assert.equal(all.length, 2);
    assert.equal(stats[0].totalResults, PRODUCTS.length);
});

test("string literals with \\u escapes", async () => {
    const session = store.openSession();
    const found = await session.advanced.rawQuery("from Products where name = 'Caf\\u00e9 Cr\\u00E8me'", Product).all();
    assert.deepEqual(found.map(p => p.price), [7]);
    const count = await session.advanced.rawQuery("from Products where startsWith(name, '\\u0043h')").count();
    assert.equal(count, 2);
});

test("patch by query and delete by query", async () => {
    const patch = await store.operations.send(new PatchByQueryOperation("from Products where category = 'condiments' update { this.price = this.price * 2 }"));
    await patch.waitForCompletion();
    const session = store.openSession();
    const syrup = await session.query({ collection: "Products", documentType: Product }).whereEquals("category", "condiments").waitForNonStaleResults().single();
    assert.equal(syrup.price, 20);
    const del = await store.operations.send(new DeleteByQueryOperation("from Products where category = 'produce'"));
    await del.waitForCompletion();
    assert.equal(await store.openSession().query({ collection: "Products" }).waitForNonStaleResults().count(), PRODUCTS.length - 1);
});

test("delete by a typed query's index query (limit with absent parameters)", async () => {
    const session = store.openSession();
    await session.store(new Product("Temp", 1, "temp"));
    await session.store(new Product("Temp2", 2, "temp"));
    await session.saveChanges();
    const query = store.openSession().query({ collection: "Products" }).whereEquals("category", "temp");
    const op = await store.operations.send(new DeleteByQueryOperation(query.getIndexQuery()));
    await op.waitForCompletion();
    // Indexes catch up after the operation: wait for them, as with RavenDB.
    assert.equal(await store.openSession().query({ collection: "Products" }).whereEquals("category", "temp").waitForNonStaleResults().count(), 0);
});
