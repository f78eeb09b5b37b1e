// Query: an RQL editor with highlighting and completion, results as a table or JSON, paging, the index
// used, staleness and timing; recent queries are remembered in the browser.

import * as api from "../api.js";
import { h, formatCount, download } from "../dom.js";
import { codeEditor } from "../code_editor.js";
import { highlightJson } from "../highlight.js";
import { highlightRql, completionContext, suggest, collectionOf } from "../rql.js";
import { resultColumns, cellText, toCsv } from "../results.js";
import { isPatchQuery, runPatch } from "./query_patch.js";
import { explain } from "./query_explain.js";

const PAGE_SIZE = 50;
const EXPORT_PAGE = 1024;
const EXPORT_LIMIT = 100_000;
const RECENT_KEY = "corvid.recentQueries";

function recentQueries() {
  try { return JSON.parse(localStorage.getItem(RECENT_KEY)) || []; } catch { return []; }
}

function remember(rql) {
  const list = [rql, ...recentQueries().filter((q) => q !== rql)].slice(0, 10);
  localStorage.setItem(RECENT_KEY, JSON.stringify(list));
}

export async function render(main, { database, params }) {
  const catalog = { collections: [], indexes: [], fields: [] };
  const fieldsOf = new Map();
  api.collectionStats(database).then((s) => { catalog.collections = Object.keys(s.Collections || {}); }).catch(() => {});
  api.listIndexes(database).then((list) => { catalog.indexes = list.map((i) => i.Name); }).catch(() => {});

  const editor = codeEditor({ value: params.q || recentQueries()[0] || "from @all_docs", highlight: highlightRql, label: "RQL query", rows: 6, id: "rql-editor" });
  const popup = h("ul", { class: "completions", role: "listbox", id: "rql-completions", hidden: true, "aria-label": "Completions" });
  editor.element.append(popup);
  editor.textarea.setAttribute("aria-autocomplete", "list");
  editor.textarea.setAttribute("aria-controls", "rql-completions");
  let choices = [], chosen = 0, context = null;

  async function loadFields(collection) {
    if (!collection || fieldsOf.has(collection)) return fieldsOf.get(collection) || [];
    const sample = await api.query(database, `from '${collection.replace(/'/g, "\\'")}'`, { pageSize: 20 }).catch(() => ({ Results: [] }));
    const fields = resultColumns(sample.Results || []);
    fieldsOf.set(collection, fields);
    return fields;
  }

  let asked = 0; // completions asked so far: an answer that arrives after a newer question is dropped
  async function openCompletions() {
    const question = ++asked;
    const caret = editor.textarea.selectionStart;
    const wanted = completionContext(editor.value, caret);
    if (wanted.kind === "field") {
      const fields = await loadFields(collectionOf(editor.value));
      if (question !== asked) return;
      catalog.fields = fields;
    }
    context = wanted;
    choices = suggest(context, catalog);
    chosen = 0;
    if (!choices.length) return closeCompletions();
    popup.replaceChildren(...choices.map((c, i) => {
      const item = h("li", { role: "option", id: `rql-choice-${i}`, "aria-selected": i === chosen ? "true" : "false" }, c);
      item.addEventListener("mousedown", (e) => { e.preventDefault(); chosen = i; accept(); });
      return item;
    }));
    const line = editor.value.slice(0, caret).split("\n");
    popup.style.top = `${line.length * 19.5 + 10 - editor.textarea.scrollTop}px`;
    popup.style.left = `${48 + Math.min(line[line.length - 1].length, 60) * 7.8}px`;
    popup.hidden = false;
  }
  function closeCompletions() { asked++; popup.hidden = true; choices = []; }
  function highlightChoice() {
    [...popup.children].forEach((li, i) => li.setAttribute("aria-selected", i === chosen ? "true" : "false"));
    popup.children[chosen]?.scrollIntoView({ block: "nearest" });
    editor.textarea.setAttribute("aria-activedescendant", `rql-choice-${chosen}`);
  }
  function accept() {
    const text = editor.value, caret = editor.textarea.selectionStart, choice = choices[chosen];
    editor.value = text.slice(0, context.start) + choice + text.slice(caret);
    const at = context.start + choice.length;
    editor.textarea.setSelectionRange(at, at);
    closeCompletions();
  }

  editor.textarea.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") { e.preventDefault(); closeCompletions(); run(0); return; }
    if (e.ctrlKey && e.key === " ") { e.preventDefault(); openCompletions(); return; }
    if (popup.hidden) return;
    if (e.key === "ArrowDown") { e.preventDefault(); chosen = (chosen + 1) % choices.length; highlightChoice(); }
    else if (e.key === "ArrowUp") { e.preventDefault(); chosen = (chosen - 1 + choices.length) % choices.length; highlightChoice(); }
    else if (e.key === "Enter" || e.key === "Tab") { e.preventDefault(); accept(); }
    else if (e.key === "Escape") { e.preventDefault(); closeCompletions(); }
  });
  editor.onInput(() => {
    const before = editor.value.slice(0, editor.textarea.selectionStart);
    if (/[@\w']$/.test(before) || /\b(from|index|where|and|or|by|select)\s$/i.test(before)) openCompletions();
    else closeCompletions();
  });
  // Closed a moment after the editor loses focus (a click on a choice lands first), unless focus came back:
  // a late close would hide the list the user is typing into.
  editor.textarea.addEventListener("blur", () => setTimeout(() => { if (document.activeElement !== editor.textarea) closeCompletions(); }, 100));

  const runButton = h("button", { type: "button", class: "primary", id: "run-query" }, "Run");
  const viewSelect = h("select", { id: "result-view", "aria-label": "Show results as" }, h("option", { value: "table" }, "Table"), h("option", { value: "json" }, "JSON"));
  const recent = h("select", { id: "recent-queries", "aria-label": "Recent queries" }, h("option", { value: "" }, "Recent queries"),
    recentQueries().map((q) => h("option", { value: q }, q.length > 60 ? q.slice(0, 60) + "..." : q)));
  recent.addEventListener("change", () => { if (recent.value) editor.value = recent.value; });
  const summary = h("p", { id: "query-summary", class: "muted", role: "status" });
  const results = h("div", { id: "query-results" });
  const prev = h("button", { type: "button", id: "previous-page", disabled: true }, "Previous");
  const next = h("button", { type: "button", id: "next-page", disabled: true }, "Next");
  let start = 0, last = null;

  async function run(from) {
    const rql = editor.value.trim();
    if (!rql) return;
    if (isPatchQuery(rql)) {
      summary.textContent = "";
      last = null;
      const final = await runPatch(database, rql, results);
      if (final) remember(rql);
      return;
    }
    start = from;
    summary.textContent = "Running...";
    try {
      last = await api.query(database, rql, { start, pageSize: PAGE_SIZE });
      remember(rql);
      const total = last.TotalResults ?? last.Results.length;
      const shown = last.Results.length;
      summary.replaceChildren(
        `${shown ? `${formatCount(start + 1)}-${formatCount(start + shown)}` : "0"} of ${formatCount(total)} results`,
        " · index ", h("strong", { id: "query-index" }, last.IndexName || "(collection)"),
        last.IsStale ? h("span", { class: "badge bad" }, " stale ") : h("span", { class: "badge good" }, " up to date "),
        ` · server ${last.DurationInMs ?? "?"} ms · total ${last.ClientMs} ms`);
      prev.disabled = start === 0;
      next.disabled = start + shown >= total;
      draw();
    } catch (e) {
      summary.textContent = "";
      results.replaceChildren(h("p", { class: "error", role: "alert", id: "query-error" }, e.message));
    }
  }

  function draw() {
    if (!last) return;
    if (viewSelect.value === "json") {
      const pre = h("pre", { class: "json-block", id: "query-json" });
      pre.innerHTML = highlightJson(JSON.stringify(last.Results, null, 2));
      results.replaceChildren(pre);
      return;
    }
    const columns = resultColumns(last.Results);
    const cell = cellText;
    results.replaceChildren(h("table", { id: "query-table" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Id"), columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, last.Results.map((r) => {
        const id = r["@metadata"] && r["@metadata"]["@id"];
        return h("tr", {}, h("td", {}, id ? h("a", { href: `#/document?id=${encodeURIComponent(id)}` }, id) : ""),
          columns.map((c) => h("td", { title: cell(r[c]) }, cell(r[c]))));
      }))));
  }

  // Exports hold every result (not only the page shown), read in pages, up to EXPORT_LIMIT rows.
  async function allResults() {
    const rql = editor.value.trim();
    const rows = [];
    for (let from = 0; from < EXPORT_LIMIT; from += EXPORT_PAGE) {
      const page = await api.query(database, rql, { start: from, pageSize: Math.min(EXPORT_PAGE, EXPORT_LIMIT - from) });
      rows.push(...page.Results);
      if (!page.Results.length || rows.length >= (page.TotalResults ?? rows.length)) break;
    }
    return rows;
  }
  function exporter(id, label, name, type, format) {
    const button = h("button", { type: "button", id }, label);
    button.addEventListener("click", async () => {
      if (!last) { summary.textContent = "Run a query first, then export its results."; return; }
      button.disabled = true;
      try {
        const rows = await allResults();
        download(name, type, format(rows));
        summary.append(h("span", { id: "export-status" }, ` · exported ${formatCount(rows.length)} rows as ${name}`));
      } catch (e) {
        results.replaceChildren(h("p", { class: "error", role: "alert", id: "query-error" }, `Export failed: ${e.message}`));
      } finally {
        button.disabled = false;
      }
    });
    return button;
  }
  const exportJson = exporter("export-json", "Export JSON", "results.json", "application/json", (rows) => JSON.stringify(rows, null, 2));
  const exportCsv = exporter("export-csv", "Export CSV", "results.csv", "text/csv", toCsv);

  runButton.addEventListener("click", () => run(0));
  const explainButton = h("button", { type: "button", id: "explain-query" }, "Explain");
  explainButton.addEventListener("click", () => { const rql = editor.value.trim(); if (rql) { summary.textContent = ""; explain(database, rql, results); } });
  prev.addEventListener("click", () => run(Math.max(0, start - PAGE_SIZE)));
  next.addEventListener("click", () => run(start + PAGE_SIZE));
  viewSelect.addEventListener("change", draw);

  main.append(h("h1", {}, "Query"), editor.element,
    h("div", { class: "toolbar" }, runButton, explainButton, h("span", { class: "muted" }, "Ctrl+Enter runs (a query with update { } patches, after asking), Ctrl+Space completes"),
      recent, h("label", { for: "result-view" }, "View"), viewSelect, prev, next, exportJson, exportCsv),
    summary, results);
  editor.textarea.focus();
  if (params.q) run(0);
}
