// Databases: the list with load state (and counts of the loaded ones), create, delete.

import * as api from "../api.js";
import { h, notify, confirmAction, formatBytes, formatCount } from "../dom.js";

export async function render(main, { refreshDatabases, useDatabase, go, database }) {
  const nameInput = h("input", { id: "new-database-name", placeholder: "Name", required: true, "aria-label": "New database name" });
  const form = h("form", { class: "toolbar", "aria-label": "Create a database" },
    h("label", { for: "new-database-name" }, "New database"), nameInput,
    h("button", { type: "submit", class: "primary", id: "create-database" }, "Create"));
  const tbody = h("tbody");
  const table = h("table", { id: "databases-table" },
    h("thead", {}, h("tr", {}, ["Name", "State", "Documents", "Indexes", "Size", ""].map((t) => h("th", { scope: "col" }, t)))), tbody);
  main.append(h("h1", {}, "Databases"), form, table);

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = nameInput.value.trim();
    if (!name) return;
    try {
      await api.createDatabase(name);
      notify(`Database ${name} created`);
      nameInput.value = "";
      await useDatabase(name);
      await fill();
    } catch (err) {
      notify(`Could not create ${name}: ${err.message}`, "error");
    }
  });

  async function fill() {
    const list = await refreshDatabases();
    tbody.replaceChildren();
    if (!list.length) tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No database yet: create one above.")));
    for (const entry of list) {
      const cells = { docs: h("td"), indexes: h("td"), size: h("td") };
      const open = h("a", { href: "#/documents", onclick: () => useDatabase(entry.Name) }, entry.Name);
      const remove = h("button", { type: "button", class: "danger", "aria-label": `Delete database ${entry.Name}` }, "Delete");
      remove.addEventListener("click", async () => {
        if (!confirmAction(`Delete database ${entry.Name} and all its data?`)) return;
        try {
          await api.deleteDatabase(entry.Name);
          notify(`Database ${entry.Name} deleted`);
          await fill();
        } catch (err) {
          notify(`Could not delete ${entry.Name}: ${err.message}`, "error");
        }
      });
      const state = entry.Disabled ? "Disabled" : entry.LoadState === "Unloaded" ? "Idle" : entry.LoadState;
      tbody.append(h("tr", { "data-database": entry.Name, class: entry.Name === database ? "current" : "" },
        h("td", {}, open), h("td", {}, state), cells.docs, cells.indexes, cells.size, h("td", {}, remove)));
      // Only loaded databases: reading stats opens a database, and the list must not wake idle ones.
      if (entry.LoadState === "Loaded") {
        api.databaseStats(entry.Name).then((s) => {
          cells.docs.textContent = formatCount(s.CountOfDocuments);
          cells.indexes.textContent = formatCount(s.CountOfIndexes ?? (s.Indexes || []).length);
          cells.size.textContent = formatBytes(s.SizeOnDisk && (s.SizeOnDisk.SizeInBytes ?? s.SizeOnDisk));
        }).catch(() => {});
      }
    }
  }
  await fill();
}
