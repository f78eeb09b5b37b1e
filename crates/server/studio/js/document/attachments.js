// A document's attachments: the list from its `@attachments` metadata (name, size, type), download links,
// upload of a file and delete.

import * as api from "../api.js";
import { h, notify, confirmAction, formatBytes } from "../dom.js";

/** The panel; `changed()` reloads the document after an upload or delete (its change vector moves). */
export function attachmentsPanel({ database, id, metadata, changed }) {
  const list = metadata["@attachments"] || [];
  const tbody = h("tbody", {}, list.map((a) => {
    const remove = h("button", { type: "button", class: "danger", "aria-label": `Delete attachment ${a.Name}` }, "Delete");
    remove.addEventListener("click", async () => {
      if (!confirmAction(`Delete attachment ${a.Name}?`)) return;
      try { await api.deleteAttachment(database, id, a.Name); notify(`Deleted attachment ${a.Name}`); await changed(); }
      catch (e) { notify(`Could not delete ${a.Name}: ${e.message}`, "error"); }
    });
    return h("tr", { "data-attachment": a.Name },
      h("td", {}, h("a", { href: api.attachmentUrl(database, id, a.Name), download: a.Name, "aria-label": `Download ${a.Name}` }, a.Name)),
      h("td", {}, formatBytes(a.Size)), h("td", {}, a.ContentType || ""), h("td", {}, remove));
  }));
  if (!list.length) tbody.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No attachment.")));

  const file = h("input", { type: "file", id: "attachment-file", "aria-label": "File to attach" });
  const nameInput = h("input", { id: "attachment-name", placeholder: "Name (default: the file's)", "aria-label": "Attachment name" });
  const upload = h("button", { type: "submit", class: "primary", id: "upload-attachment" }, "Upload");
  const form = h("form", { class: "toolbar", "aria-label": "Upload an attachment" }, file, nameInput, upload);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const chosen = file.files && file.files[0];
    if (!chosen) { notify("Choose a file first", "error"); file.focus(); return; }
    const name = nameInput.value.trim() || chosen.name;
    try { await api.putAttachment(database, id, name, chosen); notify(`Attached ${name}`); await changed(); }
    catch (err) { notify(`Could not attach ${name}: ${err.message}`, "error"); }
  });
  return h("div", { id: "attachments-panel" },
    h("table", { id: "attachments-table" }, h("thead", {}, h("tr", {}, ["Name", "Size", "Type", ""].map((t) => h("th", { scope: "col" }, t)))), tbody),
    form);
}
