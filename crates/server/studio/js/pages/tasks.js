// Moving data in and out of the current database: export to a `.ravendbdump` download, import of one, and a
// one-time backup into a folder of the server, followed to its end.

import * as api from "../api.js";
import { h, notify, formatBytes, formatCount } from "../dom.js";
import { watchOperation } from "../operation_progress.js";

/** "Documents: 10, Attachments: 2, ..." from an import's result, the types that had items. */
export function importSummary(result) {
  const types = ["Documents", "RevisionDocuments", "Tombstones", "Indexes", "Identities", "CompareExchange", "Counters", "TimeSeries", "Subscriptions"];
  const parts = [];
  for (const type of types) {
    const counts = result && result[type];
    if (counts && counts.ReadCount) parts.push(`${type}: ${formatCount(counts.ReadCount)}`);
  }
  const attachments = result && result.Documents && result.Documents.Attachments;
  if (attachments && attachments.ReadCount) parts.push(`Attachments: ${formatCount(attachments.ReadCount)}`);
  return parts.length ? parts.join(", ") : "nothing to import";
}

function section(title, id, ...children) {
  return h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

export async function render(main, { database }) {
  main.append(h("h1", {}, `Import, export and backups: ${database}`));

  // Export: the dump is downloaded by the browser.
  const exportStatus = h("p", { id: "export-status", role: "status" });
  const exportButton = h("button", { type: "button", class: "primary", id: "export-button" }, "Export to a .ravendbdump file");
  exportButton.addEventListener("click", async () => {
    exportButton.disabled = true;
    exportStatus.textContent = "Exporting...";
    try {
      const blob = await api.exportDatabase(database);
      const link = h("a", { href: URL.createObjectURL(blob), download: `${database}.ravendbdump`, id: "export-download" }, "Download the file");
      exportStatus.replaceChildren(`Exported ${formatBytes(blob.size)}. `, link);
      link.click();
    } catch (err) {
      exportStatus.textContent = "";
      notify(`Export failed: ${err.message}`, "error");
    } finally {
      exportButton.disabled = false;
    }
  });

  // Import: a dump from this server, another Corvid or RavenDB.
  const fileInput = h("input", { type: "file", id: "import-file", accept: ".ravendbdump,.ravendb-full-backup,.ravendb-incremental-backup" });
  const importStatus = h("p", { id: "import-status", role: "status" });
  const importForm = h("form", { class: "toolbar", "aria-label": "Import a dump" },
    h("label", { for: "import-file" }, "Dump file"), fileInput,
    h("button", { type: "submit", class: "primary", id: "import-button" }, "Import"));
  importForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const file = fileInput.files && fileInput.files[0];
    if (!file) { notify("Choose a .ravendbdump file first", "error"); return; }
    importStatus.textContent = `Importing ${file.name} (${formatBytes(file.size)})...`;
    try {
      const result = await api.importDatabase(database, file);
      importStatus.textContent = `Imported: ${importSummary(result)}`;
    } catch (err) {
      importStatus.textContent = "";
      notify(`Import failed: ${err.message}`, "error");
    }
  });

  // Backup now: into a folder of the server, followed through the operation's state.
  const folderInput = h("input", { id: "backup-folder", placeholder: "/var/backups/corvid", required: true });
  const typeSelect = h("select", { id: "backup-type" },
    h("option", { value: "Backup" }, "Backup (RavenDB's dump format)"), h("option", { value: "Snapshot" }, "Snapshot (Corvid's own copy)"));
  const backupStatus = h("p", { id: "backup-status", role: "status" });
  const progress = h("progress", { id: "backup-progress", max: 1, hidden: true, "aria-label": "Backup progress" });
  const backupForm = h("form", { class: "toolbar", "aria-label": "Back up now" },
    h("label", { for: "backup-folder" }, "Folder on the server"), folderInput,
    h("label", { for: "backup-type" }, "Type"), typeSelect,
    h("button", { type: "submit", class: "primary", id: "backup-button" }, "Back up now"));
  backupForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const folder = folderInput.value.trim();
    if (!folder) return;
    backupStatus.textContent = "Backing up...";
    progress.hidden = false;
    progress.removeAttribute("value");
    try {
      const id = await api.backupDatabase(database, folder, typeSelect.value);
      const final = await watchOperation(database, id, () => {});
      progress.hidden = true;
      if (final.Status === "Completed") backupStatus.textContent = `Backup completed into ${folder}`;
      else backupStatus.textContent = `Backup ${final.Status}: ${(final.Result && (final.Result.Message || final.Result.Error)) || ""}`;
    } catch (err) {
      progress.hidden = true;
      backupStatus.textContent = "";
      notify(`Backup failed: ${err.message}`, "error");
    }
  });

  main.append(
    section("Export", "export-heading", h("p", { class: "muted" }, "Documents, attachments, revisions, counters, time series, indexes and the rest, in RavenDB's .ravendbdump format."), exportButton, exportStatus),
    section("Import", "import-heading", importForm, importStatus),
    section("Backup now", "backup-heading", backupForm, progress, backupStatus),
  );
}
