// Documents: collections with counts, and a virtualized list of one collection (or all documents).

import * as api from "../api.js";
import { h, formatCount } from "../dom.js";
import { virtualList } from "../virtual_list.js";

/** The RQL listing a collection, newest first like RavenDB's Studio would page it. */
export function listingQuery(collection) {
  if (!collection) return "from @all_docs";
  return `from '${collection.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** A value of a document for a list column: `Name`, `Address.City`. */
function fieldText(doc, path) {
  let value = doc;
  for (const part of path.split(".")) value = value == null ? undefined : value[part];
  if (value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

export async function render(main, { database, params, go }) {
  const collection = params.collection || "";
  const stats = await api.collectionStats(database);
  const counts = stats.Collections || {};
  const total = collection ? counts[collection] || 0 : stats.CountOfDocuments || 0;

  const side = h("ul", { class: "side-list", id: "collections", "aria-label": "Collections" },
    h("li", {}, h("a", { href: "#/documents", "aria-current": collection ? "false" : "true" },
      h("span", {}, "All documents"), h("span", { class: "muted" }, formatCount(stats.CountOfDocuments || 0)))),
    Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).map(([name, count]) =>
      h("li", {}, h("a", { href: `#/documents?collection=${encodeURIComponent(name)}`, "data-collection": name, "aria-current": name === collection ? "true" : "false" },
        h("span", {}, name), h("span", { class: "muted" }, formatCount(count))))));

  const columnsInput = h("input", { id: "extra-columns", value: params.columns || "", placeholder: "Name, Address.City", "aria-label": "Extra columns (comma-separated fields)" });
  const newDocument = h("button", { type: "button", class: "primary", id: "new-document" }, "New document");
  newDocument.addEventListener("click", () => go("document", collection ? { collection } : {}));
  columnsInput.addEventListener("change", () => go("documents", { ...(collection ? { collection } : {}), columns: columnsInput.value }));

  const extra = (params.columns || "").split(",").map((c) => c.trim()).filter(Boolean);
  const columns = [
    { title: "Id", width: "2fr", cell: (d) => d["@metadata"]["@id"] },
    { title: "Collection", width: "1fr", cell: (d) => d["@metadata"]["@collection"] || "" },
    { title: "Last modified", width: "1.4fr", cell: (d) => d["@metadata"]["@last-modified"] || "" },
    ...extra.map((f) => ({ title: f, width: "1fr", cell: (d) => fieldText(d, f) })),
  ];
  const listStatus = h("p", { class: "error", id: "documents-status", role: "status" });
  let shown = total;
  const count = h("span", { class: "muted", id: "documents-count" }, `${formatCount(total)} documents`);
  const list = virtualList({
    columns, total, label: collection ? `Documents of ${collection}` : "All documents",
    fetchPage: async (start, pageSize) => {
      const page = await api.query(database, listingQuery(collection), { start, pageSize });
      // The query's count is the newest: documents written after the collection counts were read show up.
      if (typeof page.TotalResults === "number" && page.TotalResults !== shown) {
        shown = page.TotalResults;
        count.textContent = `${formatCount(shown)} documents`;
        queueMicrotask(() => list.setTotal(shown));
      }
      return page.Results;
    },
    onOpen: (doc) => go("document", { id: doc["@metadata"]["@id"] }),
    onStatus: (text) => { listStatus.textContent = text || ""; },
  });
  list.element.id = "documents-list";

  main.append(h("h1", {}, collection ? `Documents: ${collection}` : "Documents"),
    h("div", { class: "layout-2" }, h("nav", { "aria-label": "Collections" }, side),
      h("section", {},
        h("div", { class: "toolbar" }, newDocument, h("label", { for: "extra-columns" }, "Columns"), columnsInput,
          count),
        listStatus, list.element)));
}
