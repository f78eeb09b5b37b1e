import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
    AbstractJavaScriptIndexCreationTask,
    AbstractCsharpIndexCreationTask,
    IndexCreation,
    IndexDefinition,
    PutIndexesOperation,
    GetIndexOperation,
    GetIndexNamesOperation,
} from "ravendb";
import { startServer, newStore, dropStore, waitForIndexing } from "../support/server.js";

class Order {
    constructor(company, lines) {
        this.company = company;
        this.lines = lines;
    }
}

class Orders_ByCompany_Js extends AbstractJavaScriptIndexCreationTask {
    constructor() {
        super();
        this.map("Orders", o => ({ company: o.company, lineCount: o.lines.length }));
    }
}

class Orders_ByCompany_Linq extends AbstractCsharpIndexCreationTask {
    constructor() {
        super();
        this.map = "from o in docs.Orders select new { o.company, lineCount = o.lines.Count }";
    }
}

class Orders_Totals_Js extends AbstractJavaScriptIndexCreationTask {
    constructor() {
        super();
        this.map("Orders", o => ({ company: o.company, total: o.lines.reduce((s, l) => s + l.price * l.quantity, 0), count: 1 }));
        this.reduce(results => results.groupBy(r => r.company).aggregate(g => ({
            company: g.key,
            total: g.values.reduce((s, v) => s + v.total, 0),
            count: g.values.reduce((s, v) => s + v.count, 0),
        })));
    }
}

class Orders_Totals_Linq extends AbstractCsharpIndexCreationTask {
    constructor() {
        super();
        this.map = "from o in docs.Orders select new { o.company, count = 1 }";
        this.reduce = "from r in results group r by r.company into g select new { company = g.Key, count = g.Sum(x => x.count) }";
    }
}

const ORDERS = [
    new Order("companies/1", [{ product: "p/1", price: 10, quantity: 2 }]),
    new Order("companies/1", [{ product: "p/2", price: 5, quantity: 1 }, { product: "p/1", price: 10, quantity: 1 }]),
    new Order("companies/2", [{ product: "p/3", price: 7, quantity: 3 }]),
];

let server, store;
before(async () => {
    server = await startServer();
    store = await newStore(server);
    const session = store.openSession();
    for (const o of ORDERS) await session.store(new Order(o.company, o.lines));
    await session.saveChanges();
});
after(async () => {
    await dropStore(store);
    await server.stop();
});

test("IndexCreation.createIndexes deploys JavaScript and LINQ indexes", async () => {
    await IndexCreation.createIndexes([new Orders_ByCompany_Js(), new Orders_ByCompany_Linq()], store);
    const names = await store.maintenance.send(new GetIndexNamesOperation(0, 100));
    assert.ok(names.includes("Orders/ByCompany/Js"), names.join());
    assert.ok(names.includes("Orders/ByCompany/Linq"), names.join());
    await waitForIndexing(store);
    for (const index of ["Orders/ByCompany/Js", "Orders/ByCompany/Linq"]) {
        const session = store.openSession();
        const found = await session.query({ indexName: index, documentType: Order }).whereEquals("company", "companies/1").all();
        assert.equal(found.length, 2, index);
        const many = await session.query({ indexName: index }).whereGreaterThan("lineCount", 1).count();
        assert.equal(many, 1, index);
    }
});

test("index.execute(store) deploys map-reduce indexes", async () => {
    await new Orders_Totals_Js().execute(store);
    await new Orders_Totals_Linq().execute(store);
    await waitForIndexing(store);
    const session = store.openSession();
    const totals = await session.query({ indexName: "Orders/Totals/Js" }).orderBy("company").all();
    assert.deepEqual(totals.map(t => [t.company, t.total, t.count]), [["companies/1", 35, 2], ["companies/2", 21, 1]]);
    const counts = await session.query({ indexName: "Orders/Totals/Linq" }).whereEquals("company", "companies/2").all();
    assert.deepEqual(counts.map(t => t.count), [1]);
});

test("PutIndexesOperation with an IndexDefinition", async () => {
    const definition = new IndexDefinition();
    definition.name = "Orders/ByProduct";
    definition.maps = new Set(["from o in docs.Orders from l in o.lines select new { l.product }"]);
    const results = await store.maintenance.send(new PutIndexesOperation(definition));
    assert.equal(results[0].index, "Orders/ByProduct");
    const fetched = await store.maintenance.send(new GetIndexOperation("Orders/ByProduct"));
    assert.equal(fetched.name, "Orders/ByProduct");
    await waitForIndexing(store);
    const count = await store.openSession().query({ indexName: "Orders/ByProduct" }).whereEquals("product", "p/1").count();
    assert.equal(count, 2);
});
