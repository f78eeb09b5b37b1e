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

class User {
    constructor(name, age) {
        this.name = name;
        this.age = age;
    }
}

test("store, load, change and delete in sessions", async () => {
    let id;
    {
        const session = store.openSession();
        const user = new User("Alice", 31);
        await session.store(user);
        id = user.id;
        await session.saveChanges();
    }
    assert.match(id, /^users\//);
    {
        const session = store.openSession();
        const user = await session.load(id, User);
        assert.ok(user instanceof User);
        assert.equal(user.name, "Alice");
        assert.equal(session.advanced.getMetadataFor(user)["@collection"], "Users");
        assert.equal(session.advanced.getMetadataFor(user)["Raven-Node-Type"], "User");
        user.age = 32;
        await session.saveChanges();
    }
    {
        const session = store.openSession();
        assert.equal((await session.load(id, User)).age, 32);
        await session.delete(id);
        await session.saveChanges();
    }
    assert.equal(await store.openSession().load(id), null);
});

test("load many, with missing and null ids", async () => {
    const session = store.openSession();
    await session.store(new User("Bob", 20), "users/bob");
    await session.store(new User("Carol", 22), "users/carol");
    await session.saveChanges();
    const s2 = store.openSession();
    const loaded = await s2.load(["users/bob", "users/nobody", "users/carol"], User);
    assert.equal(loaded["users/bob"].name, "Bob");
    assert.equal(loaded["users/nobody"], null);
    assert.equal(loaded["users/carol"].name, "Carol");
    // Null ids are dropped by the client on GET and ignored by the server on POST (long id lists).
    const withNull = await store.openSession().load(["users/bob", null], User);
    assert.equal(withNull["users/bob"].name, "Bob");
    const longIds = Array.from({ length: 80 }, (_, i) => `users/${"x".repeat(20)}${i}`);
    const many = await store.openSession().load([...longIds, null, "users/carol"], User);
    assert.equal(many["users/carol"].name, "Carol");
    assert.equal(many[longIds[0]], null);
});

test("optimistic concurrency conflicts", async () => {
    const session = store.openSession();
    await session.store(new User("Dan", 40), "users/dan");
    await session.saveChanges();
    const a = store.openSession();
    a.advanced.useOptimisticConcurrency = true;
    const b = store.openSession();
    (await a.load("users/dan", User)).age = 41;
    (await b.load("users/dan", User)).age = 42;
    await b.saveChanges();
    await assert.rejects(a.saveChanges(), err => err.name === "ConcurrencyException");
});

test("exists, counts of requests, includes", async () => {
    const session = store.openSession();
    await session.store({ name: "Acme" }, "companies/acme");
    await session.store({ name: "Eve", company: "companies/acme" }, "employees/eve");
    await session.saveChanges();
    const s = store.openSession();
    assert.equal(await s.advanced.exists("companies/acme"), true);
    assert.equal(await s.advanced.exists("companies/none"), false);
    const eve = await s.include("company").load("employees/eve");
    const before = s.advanced.numberOfRequests;
    const company = await s.load(eve.company);
    assert.equal(company.name, "Acme");
    assert.equal(s.advanced.numberOfRequests, before);
});
