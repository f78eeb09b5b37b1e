// Unit tests of the logic behind the Studio's document extras, query tools, index views and dashboard
// (crates/server/studio/js): charts, the revision diff, patch detection, terms fields, traffic rates.
// No server needed; run with the Node suite.
import { test } from "node:test";
import assert from "node:assert/strict";

import { extent, linePoints, seriesLines, batchBars } from "../../../crates/server/studio/js/chart.js";
import { lineDiff } from "../../../crates/server/studio/js/diff.js";
import { trafficPerDatabase } from "../../../crates/server/studio/js/dashboard_traffic.js";
import { progressFraction } from "../../../crates/server/studio/js/operation_progress.js";
import { isPatchQuery } from "../../../crates/server/studio/js/pages/query_patch.js";
import { indexFieldNames } from "../../../crates/server/studio/js/pages/index_terms.js";
import { indexLag } from "../../../crates/server/studio/js/pages/indexes.js";
import { importSummary } from "../../../crates/server/studio/js/pages/tasks.js";

test("a line chart scales its points into the box, y upwards, and a flat line sits mid-height", () => {
  assert.deepEqual(extent([3, 1, 2]), [1, 3]);
  assert.deepEqual(extent([5, 5]), [4, 6]);
  assert.deepEqual(extent([]), [0, 1]);
  const points = linePoints([{ x: 0, y: 0 }, { x: 5, y: 10 }, { x: 10, y: 5 }], { width: 100, height: 50, pad: 0 });
  assert.equal(points, "0.0,50.0 50.0,0.0 100.0,25.0");
  assert.equal(linePoints([{ x: 0, y: 7 }, { x: 1, y: 7 }], { width: 10, height: 10 }), "0.0,5.0 10.0,5.0");
  assert.equal(linePoints([{ x: 0, y: 0 }], { width: 10, height: 10, xDomain: [0, 2], yDomain: [0, 4] }), "0.0,10.0");
  assert.equal(linePoints([], { width: 10, height: 10 }), "");
});

test("time-series entries become one line per value position, skipping missing values", () => {
  const lines = seriesLines([
    { Timestamp: "2024-01-01T00:00:00.000Z", Values: [1, 10] },
    { Timestamp: "2024-01-01T00:01:00.000Z", Values: [2] },
    { Timestamp: "not a date", Values: [3, 30] },
  ], ["Heart rate"]);
  assert.equal(lines.length, 2);
  assert.equal(lines[0].label, "Heart rate");
  assert.equal(lines[1].label, "Value 2");
  assert.deepEqual(lines[0].points.map((p) => p.y), [1, 2]);
  assert.deepEqual(lines[1].points, [{ x: Date.parse("2024-01-01T00:00:00.000Z"), y: 10 }]);
});

test("indexing batches become bars placed by start time, wide and tall by duration", () => {
  const t0 = Date.parse("2024-01-01T00:00:00.000Z");
  const bars = batchBars([
    { Started: "2024-01-01T00:00:00.000Z", DurationInMs: 500, InputCount: 10 },
    { Started: "2024-01-01T00:00:05.000Z", DurationInMs: 1000, InputCount: 20 },
  ], { t0, t1: t0 + 10_000, width: 1000, height: 22, maxMs: 1000 });
  assert.equal(bars[0].x, 0);
  assert.equal(bars[0].width, 50);
  assert.equal(bars[1].x, 500);
  assert.equal(bars[1].height, 20);
  assert.equal(bars[1].y, 2);
  assert.equal(bars[0].height, 10);
  assert.match(bars[1].title, /20 documents in 1000 ms/);
});

test("the line diff keeps common lines and marks removed and added ones in order", () => {
  const diff = lineDiff("a\nb\nc\nd", "a\nc\nx\nd");
  assert.deepEqual(diff, [
    { kind: "same", text: "a" }, { kind: "removed", text: "b" }, { kind: "same", text: "c" },
    { kind: "added", text: "x" }, { kind: "same", text: "d" },
  ]);
  assert.deepEqual(lineDiff("same", "same"), [{ kind: "same", text: "same" }]);
  assert.deepEqual(lineDiff("", "new"), [{ kind: "removed", text: "" }, { kind: "added", text: "new" }]);
});

test("patch queries are told apart by an update clause outside strings and comments", () => {
  assert.ok(isPatchQuery("from Users update { this.Age++ }"));
  assert.ok(isPatchQuery("from Users as u where u.Age > 3\nUPDATE {\n u.Old = true; }"));
  assert.ok(!isPatchQuery("from Users where Name = 'update { x }'"));
  assert.ok(!isPatchQuery("from Users // update { }"));
  assert.ok(!isPatchQuery("from Updates where updated = true"));
});

test("progress is a fraction once the total is known", () => {
  assert.equal(progressFraction({ Status: "InProgress", Progress: { Processed: 5, Total: 20 } }), 0.25);
  assert.equal(progressFraction({ Status: "InProgress", Progress: { Processed: 0, Total: 0 } }), null);
  assert.equal(progressFraction({ Status: "Completed", Progress: null }), null);
});

test("the terms browser offers the fields an index definition names", () => {
  assert.deepEqual(indexFieldNames({ Name: "Auto/People/ByNameAndAge", Maps: [] }), ["Name", "Age"]);
  assert.deepEqual(indexFieldNames({ Name: "x", Maps: ["map('Items', function (i) {\nreturn { Name: i.Name, Total: i.A + i.B };\n})"] }), ["Name", "Total"]);
  assert.deepEqual(indexFieldNames({ Name: "y", Maps: ["from o in docs.Orders select new { o.Company, Total = o.Lines.Sum(l => l.Price) }"], Fields: { Extra: {} } }), ["Extra", "Company", "Total"]);
});

test("index lag adds the document and tombstone lag of every collection", () => {
  assert.equal(indexLag({ Collections: { Users: { DocumentLag: 3, TombstoneLag: 1 }, Orders: { DocumentLag: 2 } } }), 6);
  assert.equal(indexLag({}), 0);
});

test("traffic per database: rates between two readings, busiest first, idle databases included", () => {
  const before = { DatabaseRequests: { a: 10, b: 5 }, Databases: { a: { MergedCommands: 4 } } };
  const after = { DatabaseRequests: { a: 30, b: 5, c: 2 }, Databases: { a: { MergedCommands: 10 }, c: { MergedCommands: 1 } } };
  const rows = trafficPerDatabase(before, after, 2);
  assert.deepEqual(rows.map((r) => r.name), ["a", "c", "b"]);
  assert.deepEqual(rows[0], { name: "a", loaded: true, requestsPerSecond: 10, writesPerSecond: 3 });
  assert.equal(rows[2].loaded, false);
  assert.equal(trafficPerDatabase(null, after, 1)[0].requestsPerSecond, null);
});

test("an import's summary names the item types it read, attachments included, and says when it read none", () => {
  const result = {
    Documents: { ReadCount: 1200, Attachments: { ReadCount: 3 } },
    RevisionDocuments: { ReadCount: 0 },
    Indexes: { ReadCount: 2 },
    Counters: { ReadCount: 7 },
  };
  assert.equal(importSummary(result), "Documents: 1,200, Indexes: 2, Counters: 7, Attachments: 3");
  assert.equal(importSummary({ Documents: { ReadCount: 0 } }), "nothing to import");
  assert.equal(importSummary(null), "nothing to import");
});
