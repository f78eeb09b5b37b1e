// Indexes: the list with state, staleness, entries, errors and last indexing time; reset, disable/enable and
// delete; a form to create or edit a static index (JavaScript or C# maps, optional reduce).

import * as api from "../api.js";
import { h, notify, confirmAction, formatCount } from "../dom.js";
import { codeEditor } from "../code_editor.js";
import { highlightJavaScript } from "../highlight.js";
import { renderTerms } from "./index_terms.js";
import { performanceGraph } from "./index_performance.js";

/** How far an index is behind its collections, in etags (documents and tombstones not indexed yet). */
export function indexLag(stats) {
  return Object.values(stats.Collections || {}).reduce((n, c) => n + (c.DocumentLag || 0) + (c.TombstoneLag || 0), 0);
}

/** The line a compilation error points at ("line 3", "(3:14)"), or null. */
export function errorLine(message) {
  const m = /\bline (\d+)/i.exec(message) || /\((\d+):\d+\)/.exec(message) || /\b(\d+):\d+\b/.exec(message);
  return m ? Number(m[1]) : null;
}

const JS_MAP_EXAMPLE = "map('Users', function (u) {\n  return { Name: u.Name };\n})";

export async function render(main, { database, params, go }) {
  if (params.edit !== undefined) return renderEditor(main, { database, name: params.edit, go });
  if (params.terms) return renderTerms(main, { database, name: params.terms });
  const [definitions, stats, errors] = await Promise.all([
    api.listIndexes(database), api.indexStats(database).catch(() => []), api.indexErrors(database).catch(() => []),
  ]);
  const statsOf = new Map(stats.map((s) => [s.Name, s]));
  const errorsOf = new Map(errors.map((e) => [e.Name, e.Errors || []]));
  const newIndex = h("button", { type: "button", class: "primary", id: "new-index" }, "New index");
  newIndex.addEventListener("click", () => go("indexes", { edit: "" }));
  const tbody = h("tbody");
  for (const def of definitions) {
    const s = statsOf.get(def.Name) || {};
    const errs = errorsOf.get(def.Name) || [];
    const action = (label, fn, cls) => {
      const b = h("button", { type: "button", class: cls, "aria-label": `${label} index ${def.Name}` }, label);
      b.addEventListener("click", async () => {
        try { await fn(); notify(`${label}: ${def.Name}`); main.replaceChildren(); await render(main, { database, params, go }); }
        catch (e) { notify(`${label} ${def.Name} failed: ${e.message}`, "error"); }
      });
      return b;
    };
    const disabled = (s.State || def.State) === "Disabled" || s.Status === "Disabled";
    tbody.append(h("tr", { "data-index": def.Name },
      h("td", {}, h("a", { href: `#/indexes?edit=${encodeURIComponent(def.Name)}` }, def.Name)),
      h("td", {}, def.Type || s.Type || ""),
      h("td", {}, s.State || def.State || "Normal"),
      h("td", { class: "index-staleness" }, s.IsStale ? h("span", { class: "badge bad" }, "Stale") : h("span", { class: "badge good" }, "Up to date")),
      h("td", {}, formatCount(s.EntriesCount ?? 0)),
      h("td", { title: errs.map((e) => e.Error).join("\n") }, errs.length ? h("span", { class: "badge bad" }, String(errs.length)) : "0"),
      h("td", {}, s.LastIndexingTime || ""),
      h("td", { class: "index-lag" }, formatCount(indexLag(s))),
      h("td", {},
        h("a", { href: `#/indexes?terms=${encodeURIComponent(def.Name)}`, "aria-label": `Terms of index ${def.Name}` }, "Terms"), " ",
        action("Reset", () => api.resetIndex(database, def.Name)),
        action(disabled ? "Enable" : "Disable", () => api.setIndexEnabled(database, def.Name, disabled)),
        action("Delete", async () => { if (confirmAction(`Delete index ${def.Name}?`)) await api.deleteIndex(database, def.Name); }, "danger"))));
  }
  if (!definitions.length) tbody.append(h("tr", {}, h("td", { colspan: 9, class: "muted" }, "No index yet.")));
  const refresh = h("button", { type: "button", id: "refresh-indexes" }, "Refresh");
  const performance = h("section", { "aria-label": "Indexing performance", id: "index-performance-section" }, h("p", { class: "muted" }, "Loading..."));
  refresh.addEventListener("click", async () => { main.replaceChildren(); await render(main, { database, params, go }); });
  main.append(h("h1", {}, "Indexes"), h("div", { class: "toolbar" }, newIndex, refresh),
    h("table", { id: "indexes-table" },
      h("thead", {}, h("tr", {}, ["Name", "Type", "State", "Staleness", "Entries", "Errors", "Last indexed", "Lag (etags)", ""].map((t) => h("th", { scope: "col" }, t)))),
      tbody),
    h("h2", {}, "Indexing performance"), performance);
  performanceGraph(database).then((node) => performance.replaceChildren(node))
    .catch((e) => performance.replaceChildren(h("p", { class: "error" }, `Could not read indexing performance: ${e.message}`)));
}

async function renderEditor(main, { database, name, go }) {
  let definition = { Name: "", Maps: [JS_MAP_EXAMPLE], Reduce: null };
  if (name) {
    const found = (await api.listIndexes(database)).find((d) => d.Name === name);
    if (found) definition = found;
  }
  const nameInput = h("input", { id: "index-name", value: definition.Name, required: true });
  const mapEditor = codeEditor({ value: (definition.Maps || []).join("\n\n"), highlight: highlightJavaScript, label: "Map", rows: 12, id: "index-map" });
  const reduceEditor = codeEditor({ value: definition.Reduce || "", highlight: highlightJavaScript, label: "Reduce (optional)", rows: 6, id: "index-reduce" });
  const problem = h("p", { class: "error", id: "index-error", role: "alert" });
  const save = h("button", { type: "button", class: "primary", id: "save-index" }, "Save index");
  save.addEventListener("click", async () => {
    const indexName = nameInput.value.trim();
    if (!indexName) { problem.textContent = "Give the index a name."; nameInput.focus(); return; }
    const map = mapEditor.value.trim();
    const reduce = reduceEditor.value.trim();
    const isJs = /^\s*map\s*\(/.test(map);
    const def = {
      ...(name ? definition : {}), Name: indexName, Maps: [map], Reduce: reduce || null,
      Type: isJs ? (reduce ? "JavaScriptMapReduce" : "JavaScriptMap") : (reduce ? "MapReduce" : "Map"),
      SourceType: "Documents", Fields: definition.Fields || {}, Configuration: definition.Configuration || {},
    };
    mapEditor.markLine(null);
    try {
      await api.putIndex(database, def);
      notify(`Index ${indexName} saved`);
      go("indexes");
    } catch (e) {
      const line = errorLine(e.message);
      problem.textContent = `Not saved${line ? ` (line ${line})` : ""}: ${e.message}`;
      if (line) mapEditor.markLine(line);
    }
  });
  const cancel = h("a", { href: "#/indexes" }, "Back to indexes");
  main.append(h("h1", {}, name ? `Edit index ${name}` : "New index"),
    h("div", { class: "form-row" }, h("label", { for: "index-name" }, "Name"), nameInput),
    h("div", { class: "form-row" }, h("label", { for: "index-map" }, "Map (JavaScript map(...) or C# from doc in docs...)"), mapEditor.element),
    h("div", { class: "form-row" }, h("label", { for: "index-reduce" }, "Reduce (optional)"), reduceEditor.element),
    problem, h("div", { class: "toolbar" }, save, cancel));
  nameInput.focus();
}
