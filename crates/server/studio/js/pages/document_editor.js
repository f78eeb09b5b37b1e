// One document: its JSON in an editor (validated before save), its metadata apart, save with the change
// vector it was read with (a concurrent change is reported, never overwritten), clone and delete.

import * as api from "../api.js";
import { h, notify, confirmAction } from "../dom.js";
import { codeEditor } from "../code_editor.js";
import { highlightJson, parseDocumentJson } from "../highlight.js";
import { tabs } from "../tabs.js";
import { attachmentsPanel } from "../document/attachments.js";
import { countersPanel } from "../document/counters.js";
import { revisionsPanel } from "../document/revisions.js";
import { timeSeriesPanel } from "../document/time_series.js";

/** Metadata the server computes; the rest (`@collection`, user keys, `@expires`...) is sent back on save. */
const COMPUTED_METADATA = new Set(["@id", "@change-vector", "@last-modified", "@flags", "@counters", "@attachments",
  "@timeseries", "@revisions", "@etag", "@nested-object-types", "@index-score"]);

function splitMetadata(doc) {
  const { "@metadata": metadata = {}, ...body } = doc;
  return { body, metadata };
}

export async function render(main, { database, params, go }) {
  let id = params.id || "";
  let changeVector = null;
  let metadata = params.collection ? { "@collection": params.collection } : {};
  let body = {};
  const sourceId = params.id || params.clone;
  if (sourceId) {
    const doc = await api.getDocument(database, sourceId);
    if (!doc) {
      main.append(h("h1", {}, "Document"), h("p", { class: "error", role: "alert" }, `Document ${sourceId} does not exist.`));
      return;
    }
    ({ body, metadata } = splitMetadata(doc));
    if (params.id) changeVector = metadata["@change-vector"] || null;
    else { id = ""; metadata = { "@collection": metadata["@collection"] }; }
  }
  const isNew = !params.id;

  const idInput = h("input", { id: "document-id", value: id, readonly: !isNew, "aria-label": "Document id",
    placeholder: metadata["@collection"] ? `${metadata["@collection"].toLowerCase()}/` : "id (ending in / lets the server number it)" });
  const editor = codeEditor({ value: JSON.stringify(body, null, 2), highlight: highlightJson, label: "Document JSON", rows: 22, id: "document-json" });
  const problem = h("p", { class: "error", id: "document-error", role: "alert" });
  const metadataView = h("pre", { class: "json-block", id: "document-metadata", "aria-label": "Metadata" });
  const showMetadata = () => {
    metadataView.innerHTML = highlightJson(JSON.stringify(metadata, null, 2));
    metadataView.dataset.changeVector = changeVector || "";
  };
  showMetadata();

  editor.onInput((text) => {
    const parsed = parseDocumentJson(text);
    problem.textContent = parsed.error ? `Invalid JSON${parsed.line ? ` (line ${parsed.line})` : ""}: ${parsed.error}` : "";
    editor.markLine(parsed.error ? parsed.line || 1 : null);
  });

  async function save() {
    const parsed = parseDocumentJson(editor.value);
    if (parsed.error) {
      problem.textContent = `Not saved: invalid JSON${parsed.line ? ` (line ${parsed.line})` : ""}: ${parsed.error}`;
      editor.markLine(parsed.line || 1);
      return;
    }
    const targetId = idInput.value.trim() || (metadata["@collection"] ? `${metadata["@collection"].toLowerCase()}/` : "");
    if (!targetId) { problem.textContent = "Not saved: give the document an id."; idInput.focus(); return; }
    const keptMetadata = Object.fromEntries(Object.entries(metadata).filter(([k]) => !COMPUTED_METADATA.has(k)));
    try {
      const result = await api.putDocument(database, targetId, { ...parsed.value, "@metadata": keptMetadata }, changeVector);
      problem.textContent = "";
      notify(`Saved ${result.Id}`);
      if (isNew || result.Id !== id) go("document", { id: result.Id });
      else {
        const fresh = await api.getDocument(database, result.Id);
        ({ metadata } = splitMetadata(fresh));
        changeVector = metadata["@change-vector"];
        showMetadata();
      }
    } catch (e) {
      problem.textContent = e.isConcurrencyConflict
        ? `Not saved: the document was changed by someone else since you opened it (its change vector is stale). Reload it to see the new version. (${e.message})`
        : `Not saved: ${e.message}`;
    }
  }

  const saveButton = h("button", { type: "button", class: "primary", id: "save-document" }, "Save");
  saveButton.addEventListener("click", save);
  editor.textarea.addEventListener("keydown", (e) => { if ((e.ctrlKey || e.metaKey) && e.key === "s") { e.preventDefault(); save(); } });
  const buttons = [saveButton];
  if (!isNew) {
    const reload = h("button", { type: "button", id: "reload-document" }, "Reload");
    reload.addEventListener("click", () => { main.replaceChildren(); render(main, { database, params, go }); });
    const clone = h("button", { type: "button", id: "clone-document" }, "Clone");
    clone.addEventListener("click", () => go("document", { clone: id }));
    const remove = h("button", { type: "button", class: "danger", id: "delete-document" }, "Delete");
    remove.addEventListener("click", async () => {
      if (!confirmAction(`Delete document ${id}?`)) return;
      try {
        await api.deleteDocument(database, id);
        notify(`Deleted ${id}`);
        go("documents", metadata["@collection"] ? { collection: metadata["@collection"] } : {});
      } catch (e) {
        problem.textContent = `Not deleted: ${e.message}`;
      }
    });
    buttons.push(reload, clone, remove);
  }

  // Beside the editor: the metadata, and for a stored document its attachments, counters, revisions and time
  // series. Changing an attachment or a counter moves the document's change vector: `changed` reloads it
  // so the next save is not refused as stale.
  const side = h("section", { "aria-label": "Metadata and extras" });
  const detail = h("section", { id: "document-detail", "aria-live": "polite" });
  const showDetail = (title, node) => { detail.replaceChildren(h("h2", {}, title), node); };
  let extras = null;
  function drawSide() {
    const count = (key) => (metadata[key] || []).length;
    const items = [{ id: "metadata", label: "Metadata", render: () => metadataView }];
    if (!isNew) {
      items.push(
        { id: "attachments", label: `Attachments (${count("@attachments")})`, render: () => attachmentsPanel({ database, id, metadata, changed }) },
        { id: "counters", label: `Counters (${count("@counters")})`, render: () => countersPanel({ database, id, changed }) },
        { id: "revisions", label: "Revisions", render: () => revisionsPanel({ database, id, current: () => api.getDocument(database, id), show: showDetail }) },
        { id: "timeseries", label: `Time series (${count("@timeseries")})`, render: () => timeSeriesPanel({ database, id, metadata }) });
    }
    extras = tabs(items, { label: "Document details", selected: extras ? extras.selected : params.tab });
    side.replaceChildren(extras.element);
  }
  async function changed() {
    const fresh = await api.getDocument(database, id);
    if (!fresh) return;
    ({ metadata } = splitMetadata(fresh));
    changeVector = metadata["@change-vector"] || null;
    showMetadata();
    drawSide();
  }
  drawSide();

  main.append(h("h1", {}, isNew ? "New document" : `Document ${id}`),
    h("div", { class: "toolbar" }, h("label", { for: "document-id" }, "Id"), idInput, ...buttons,
      h("span", { class: "muted" }, "Ctrl+S saves")),
    problem,
    h("div", { class: "editor-grid" },
      h("section", { "aria-label": "Document" }, editor.element),
      side),
    detail);
  (isNew ? idInput : editor.textarea).focus();
}
