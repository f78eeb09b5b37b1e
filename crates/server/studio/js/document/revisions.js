// A document's revisions (newest first, paged): view one, or compare it line by line with the current
// document. Revisions exist once the database's revisions configuration keeps them.

import * as api from "../api.js";
import { h, formatCount } from "../dom.js";
import { highlightJson } from "../highlight.js";
import { lineDiff } from "../diff.js";

const PAGE = 25;

/** The JSON shown for a document or revision: the body with its metadata, keys as stored. */
function text(doc) {
  return JSON.stringify(doc, null, 2);
}

/** `current()` resolves to the stored document; `show(title, element)` puts a revision or a comparison in the wide area under the editor. */
export async function revisionsPanel({ database, id, current, show }) {
  const container = h("div", { id: "revisions-panel" });
  async function load(start) {
    const page = await api.getRevisions(database, id, { start, pageSize: PAGE });
    const rows = page.Results.map((rev, i) => {
      const meta = rev["@metadata"] || {};
      const view = h("button", { type: "button", "aria-label": `View revision ${start + i + 1}` }, "View");
      view.addEventListener("click", () => {
        const pre = h("pre", { class: "json-block", id: "revision-json" });
        pre.innerHTML = highlightJson(text(rev));
        show(`Revision of ${meta["@last-modified"] || ""}`, pre);
      });
      const compare = h("button", { type: "button", "aria-label": `Compare revision ${start + i + 1} with the current document` }, "Compare");
      compare.addEventListener("click", async () => {
        const now = await current();
        show(`Revision of ${meta["@last-modified"] || ""} (−) against the current document (+)`, now ? diffView(rev, now) : h("p", {}, "The document no longer exists."));
      });
      return h("tr", { "data-revision": meta["@change-vector"] || "" },
        h("td", {}, meta["@last-modified"] || ""), h("td", { title: meta["@flags"] || "" }, meta["@flags"] || ""),
        h("td", {}, view, " ", compare));
    });
    if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 3, class: "muted" }, "No revision (the revisions configuration keeps none for this collection).")));
    const prev = h("button", { type: "button", disabled: start === 0 }, "Newer");
    prev.addEventListener("click", () => load(Math.max(0, start - PAGE)));
    const next = h("button", { type: "button", disabled: start + page.Results.length >= page.TotalResults }, "Older");
    next.addEventListener("click", () => load(start + PAGE));
    container.replaceChildren(
      h("p", { class: "muted", id: "revisions-count" }, `${formatCount(page.TotalResults)} revisions`),
      h("table", { id: "revisions-table" }, h("thead", {}, h("tr", {}, ["Modified", "Flags", ""].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)),
      ...(page.TotalResults > PAGE ? [h("div", { class: "toolbar" }, prev, next)] : []));
  }
  await load(0);
  return container;
}

/** A revision against the current document: removed lines marked −, added ones +. */
function diffView(revision, current) {
  const strip = (doc) => {
    const { "@metadata": meta = {}, ...body } = doc;
    const { "@change-vector": _cv, "@last-modified": _lm, "@flags": _f, ...kept } = meta;
    return { ...body, "@metadata": kept };
  };
  const lines = lineDiff(text(strip(revision)), text(strip(current)));
  const changes = lines.filter((l) => l.kind !== "same").length;
  return h("div", { id: "revision-diff" },
    h("p", { class: "muted" }, changes ? `${changes} changed lines` : "Identical to the current document"),
    h("pre", { class: "json-block diff" }, lines.map((l) =>
      h("div", { class: `diff-${l.kind}` }, `${l.kind === "added" ? "+" : l.kind === "removed" ? "−" : " "} ${l.text}`))));
}
