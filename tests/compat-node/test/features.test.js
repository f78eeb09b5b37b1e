import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { PatchOperation, PatchRequest, GetCountersOperation } from "ravendb";
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

async function readAll(stream) {
    const chunks = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks);
}

test("session patches, increments and PatchOperation", async () => {
    const session = store.openSession();
    await session.store({ name: "Ann", visits: 1, tags: ["a"] }, "people/ann");
    await session.saveChanges();
    const s2 = store.openSession();
    s2.advanced.increment("people/ann", "visits", 5);
    s2.advanced.patch("people/ann", "name", "Anne");
    s2.advanced.patchArray("people/ann", "tags", arr => arr.push("b"));
    await s2.saveChanges();
    const patch = PatchRequest.forScript("this.visits = this.visits * args.factor");
    patch.values = { factor: 10 };
    const result = await store.operations.send(new PatchOperation("people/ann", null, patch));
    assert.equal(result.status, "Patched");
    const ann = await store.openSession().load("people/ann");
    assert.equal(ann.name, "Anne");
    assert.equal(ann.visits, 60);
    assert.deepEqual(ann.tags, ["a", "b"]);
    const missing = await store.operations.send(new PatchOperation("people/nobody", null, PatchRequest.forScript("this.x = 1")));
    assert.equal(missing.status, "DocumentDoesNotExist");
});

test("bulk insert with counters, then load", async () => {
    const bulk = store.bulkInsert();
    for (let i = 0; i < 50; i++) {
        const id = `bulk/${i}`;
        await bulk.store({ n: i }, id, { "@collection": "Bulks" });
        await bulk.countersFor(id).increment("hits", i);
    }
    await bulk.finish();
    const session = store.openSession();
    assert.equal(await session.query({ collection: "Bulks" }).count(), 50);
    assert.equal((await session.load("bulk/7")).n, 7);
    const counters = await store.operations.send(new GetCountersOperation("bulk/7", ["hits"]));
    assert.equal(counters.counters[0].totalValue, 7);
});

test("attachments: store, get, list, delete", async () => {
    const session = store.openSession();
    await session.store({ title: "report" }, "docs/1");
    session.advanced.attachments.store("docs/1", "hello.txt", Buffer.from("hello world"), "text/plain");
    await session.saveChanges();
    const s2 = store.openSession();
    const doc = await s2.load("docs/1");
    const names = s2.advanced.attachments.getNames(doc);
    assert.deepEqual(names.map(n => [n.name, n.size, n.contentType]), [["hello.txt", 11, "text/plain"]]);
    const attachment = await s2.advanced.attachments.get("docs/1", "hello.txt");
    try {
        assert.equal((await readAll(attachment.data)).toString(), "hello world");
        assert.equal(attachment.details.contentType, "text/plain");
    } finally {
        attachment.dispose();
    }
    assert.equal(await s2.advanced.attachments.exists("docs/1", "hello.txt"), true);
    const s3 = store.openSession();
    s3.advanced.attachments.store("docs/1", "stream.bin", Readable.from([Buffer.from([1, 2, 3])]));
    s3.advanced.attachments.delete("docs/1", "hello.txt");
    await s3.saveChanges();
    const s4 = store.openSession();
    assert.equal(await s4.advanced.attachments.exists("docs/1", "hello.txt"), false);
    assert.deepEqual(s4.advanced.attachments.getNames(await s4.load("docs/1")).map(n => n.name), ["stream.bin"]);
});

test("counters in sessions", async () => {
    const session = store.openSession();
    await session.store({ title: "post" }, "posts/1");
    session.countersFor("posts/1").increment("likes", 3);
    session.countersFor("posts/1").increment("views");
    await session.saveChanges();
    const s2 = store.openSession();
    const counters = s2.countersFor("posts/1");
    assert.equal(await counters.get("likes"), 3);
    assert.deepEqual(await counters.getAll(), { likes: 3, views: 1 });
    counters.delete("views");
    counters.increment("likes", -1);
    await s2.saveChanges();
    assert.deepEqual(await store.openSession().countersFor("posts/1").getAll(), { likes: 2 });
});
