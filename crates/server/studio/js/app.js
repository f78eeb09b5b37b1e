// The Studio's shell: hash routing (#/page?param=value), the current database, the theme.

import * as api from "./api.js";
import { h, notify } from "./dom.js";
import * as databases from "./pages/databases.js";
import * as documents from "./pages/documents.js";
import * as documentEditor from "./pages/document_editor.js";
import * as queryPage from "./pages/query.js";
import * as indexes from "./pages/indexes.js";
import * as dashboard from "./pages/dashboard.js";
import * as tasks from "./pages/tasks.js";

const PAGES = { databases, documents, document: documentEditor, query: queryPage, indexes, tasks, dashboard };
const TITLES = { databases: "Databases", documents: "Documents", document: "Document", query: "Query", indexes: "Indexes",
  tasks: "Import, export and backups", dashboard: "Server dashboard" };
const NEEDS_DATABASE = new Set(["documents", "document", "query", "indexes", "tasks"]);
const main = document.getElementById("main");
const picker = document.getElementById("database-picker");
let cleanup = null;

/** The database the pages work on (remembered across visits). */
function currentDatabase() {
  return localStorage.getItem("corvid.database") || "";
}

function setDatabase(name) {
  if (name) localStorage.setItem("corvid.database", name);
  else localStorage.removeItem("corvid.database");
}

/** Navigates to a page: `go("document", { id: "users/1" })`. */
export function go(page, params = {}) {
  const search = new URLSearchParams(params).toString();
  location.hash = `#/${page}${search ? "?" + search : ""}`;
}

/** Refills the database picker; pages call it after creating or deleting a database. */
export async function refreshDatabases() {
  const list = await api.listDatabases();
  const names = list.map((d) => d.Name);
  if (!names.includes(currentDatabase())) setDatabase(names[0] || "");
  picker.replaceChildren(...names.map((n) => h("option", { value: n, selected: n === currentDatabase() }, n)));
  if (!names.length) picker.append(h("option", { value: "" }, "(no database)"));
  return list;
}

let visits = 0;

async function route() {
  // A newer navigation may start while this page still loads: the older one then neither labels the page
  // nor keeps its timers.
  const visit = ++visits;
  const [path, search] = location.hash.replace(/^#\/?/, "").split("?");
  const name = PAGES[path] ? path : "databases";
  const params = Object.fromEntries(new URLSearchParams(search || ""));
  if (cleanup) { cleanup(); cleanup = null; }
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.toggleAttribute("aria-current", link.dataset.nav === (name === "document" ? "documents" : name));
    if (link.hasAttribute("aria-current")) link.setAttribute("aria-current", "page");
  }
  main.replaceChildren();
  const database = currentDatabase();
  if (NEEDS_DATABASE.has(name) && !database) {
    main.append(h("p", {}, "Create or choose a database first: ", h("a", { href: "#/databases" }, "Databases")));
    return;
  }
  try {
    const result = await PAGES[name].render(main, { database, params, go, refreshDatabases, useDatabase });
    if (visit !== visits) { if (typeof result === "function") result(); return; }
    if (typeof result === "function") cleanup = result;
  } catch (e) {
    if (visit !== visits) return;
    // What the page had drawn before failing goes: the page keeps its heading and says why it is empty.
    const why = e.isForbidden
      ? [h("p", { class: "error", role: "alert", id: "not-allowed" },
          "Not allowed: your client certificate does not give access to this page. Ask an administrator for the access it needs."),
        h("p", { class: "muted" }, e.message)]
      : [h("p", { class: "error", role: "alert" }, `Could not load this page: ${e.message}`)];
    main.replaceChildren(h("h1", {}, TITLES[name]), ...why);
  }
  main.dataset.page = name;
}

/** Makes `name` the current database and updates the picker. */
async function useDatabase(name) {
  setDatabase(name);
  await refreshDatabases();
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("corvid.theme", theme);
}

document.getElementById("theme-toggle").addEventListener("click", () =>
  applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark"));
applyTheme(localStorage.getItem("corvid.theme") || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
picker.addEventListener("change", () => { setDatabase(picker.value); route(); });
window.addEventListener("hashchange", route);
window.addEventListener("unhandledrejection", (e) => notify(String(e.reason && e.reason.message || e.reason), "error"));
refreshDatabases().catch((e) => notify(`Could not list databases: ${e.message}`, "error")).finally(route);
