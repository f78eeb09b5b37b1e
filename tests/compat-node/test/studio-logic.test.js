// Unit tests of the Studio's pure logic (crates/server/studio/js): RQL completion and highlighting, JSON
// validation and highlighting, compilation error lines. No server needed; run with the Node suite.
import { test } from "node:test";
import assert from "node:assert/strict";

import { completionContext, suggest, collectionOf, indexOf, highlightRql } from "../../../crates/server/studio/js/rql.js";
import { resultColumns, toCsv } from "../../../crates/server/studio/js/results.js";
import { highlightJson, highlightJavaScript, parseDocumentJson, escapeHtml } from "../../../crates/server/studio/js/highlight.js";

const catalog = { collections: ["Users", "Orders", "Line Items"], indexes: ["Users/ByName", "Orders/Totals"], fields: ["Name", "Age", "Address"] };

function complete(text) {
  return suggest(completionContext(text, text.length), catalog);
}

test("after from, collections complete (quoted when they need it), then index names after from index", () => {
  assert.deepEqual(complete("from U"), ["Users"]);
  assert.deepEqual(complete("from "), ["Users", "Orders", "'Line Items'", "@all_docs", "index"]);
  assert.deepEqual(complete("from index "), ["'Users/ByName'", "'Orders/Totals'"]);
  assert.deepEqual(complete("from index 'Ord"), ["'Orders/Totals'"]);
});

test("fields complete after where, and, select and order by; keywords elsewhere", () => {
  assert.deepEqual(complete("from Users where N"), ["Name"]);
  assert.deepEqual(complete("from Users where Name = 'a' and A"), ["Age", "Address"]);
  assert.deepEqual(complete("from Users order by "), ["Name", "Age", "Address", "id()"]);
  assert.deepEqual(complete("from Users wh"), ["where"]);
  const context = completionContext("from Users where Na and x", 19);
  assert.equal(context.kind, "field");
  assert.equal(context.start, 17);
});

test("the collection and index of a query are found for field completion", () => {
  assert.equal(collectionOf("from Users where Name = 'x'"), "Users");
  assert.equal(collectionOf("from 'Line Items' select Name"), "Line Items");
  assert.equal(collectionOf("from @all_docs"), null);
  assert.equal(collectionOf("from index 'Users/ByName'"), null);
  assert.equal(indexOf("from index 'Users/ByName' where Name = 'a'"), "Users/ByName");
});

test("RQL highlighting marks keywords, strings, parameters and numbers and escapes HTML", () => {
  const html = highlightRql("from Users where Age > 30 and Name = $name or Tag = '<b>'");
  assert.match(html, /<span class="tok-keyword">from<\/span>/);
  assert.match(html, /<span class="tok-number">30<\/span>/);
  assert.match(html, /<span class="tok-literal">\$name<\/span>/);
  assert.match(html, /<span class="tok-string">'&lt;b&gt;'<\/span>/);
  assert.ok(!html.includes("<b>"));
});

test("JSON highlighting tells keys from string values and keeps the text", () => {
  const text = '{\n  "Name": "Ann <x>",\n  "Age": 3,\n  "Ok": true\n}';
  const html = highlightJson(text);
  assert.match(html, /<span class="tok-key">&quot;Name&quot;<\/span>/);
  assert.match(html, /<span class="tok-string">&quot;Ann &lt;x&gt;&quot;<\/span>/);
  assert.match(html, /<span class="tok-literal">true<\/span>/);
  assert.equal(html.replace(/<[^>]+>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"'), text);
  assert.match(highlightJavaScript("map('Users', function (u) { return u; }) // c"), /tok-keyword">function<.*tok-comment">\/\/ c</);
  assert.equal(escapeHtml('<a href="x">&'), "&lt;a href=&quot;x&quot;&gt;&amp;");
});

test("documents are validated before save: objects only, with the line of a syntax error", () => {
  assert.deepEqual(parseDocumentJson('{"a": 1}'), { value: { a: 1 } });
  assert.equal(parseDocumentJson("[1]").error, "A document must be a JSON object");
  const bad = parseDocumentJson('{\n  "a": 1,\n  "b": \n}');
  assert.ok(bad.error);
  assert.equal(bad.line, 4);
  assert.equal(parseDocumentJson('{"a": 1,\n"b": tru\n}').line, 2);
  assert.equal(parseDocumentJson('{"a": "x\\"y", "b": [1, 2,]}').line, 1);
});

test("query results become table columns and CSV with quoting", () => {
  const results = [
    { Name: "Ann", Tags: ["a", "b"], "@metadata": { "@id": "users/1" } },
    { Name: 'say "hi", then go', Age: 3, "@metadata": { "@id": "users/2" } },
  ];
  assert.deepEqual(resultColumns(results), ["Name", "Tags", "Age"]);
  assert.equal(toCsv(results), '@id,Name,Tags,Age\r\nusers/1,Ann,"[""a"",""b""]",\r\nusers/2,"say ""hi"", then go",,3\r\n');
});
