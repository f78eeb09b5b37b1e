// A document's counters: the list with values, increment (by any delta, new counters too) and delete.

import * as api from "../api.js";
import { h, notify, confirmAction, formatCount } from "../dom.js";

export async function countersPanel({ database, id, changed }) {
  const counters = await api.getCounters(database, id);
  const tbody = h("tbody", {}, counters.map((c) => {
    const plus = h("button", { type: "button", "aria-label": `Increment ${c.CounterName} by 1` }, "+1");
    plus.addEventListener("click", () => act(() => api.incrementCounter(database, id, c.CounterName, 1)));
    const remove = h("button", { type: "button", class: "danger", "aria-label": `Delete counter ${c.CounterName}` }, "Delete");
    remove.addEventListener("click", () => confirmAction(`Delete counter ${c.CounterName}?`) &&
      act(() => api.deleteCounter(database, id, c.CounterName), `Deleted counter ${c.CounterName}`));
    return h("tr", { "data-counter": c.CounterName }, h("td", {}, c.CounterName),
      h("td", { class: "counter-value" }, formatCount(c.TotalValue)), h("td", {}, plus, " ", remove));
  }));
  if (!counters.length) tbody.append(h("tr", {}, h("td", { colspan: 3, class: "muted" }, "No counter.")));

  async function act(action, message) {
    try { await action(); if (message) notify(message); await changed(); }
    catch (e) { notify(`Counter not changed: ${e.message}`, "error"); }
  }
  const name = h("input", { id: "counter-name", placeholder: "Counter", "aria-label": "Counter name", required: true });
  const delta = h("input", { id: "counter-delta", type: "number", value: "1", step: "1", "aria-label": "Increment by", style: "width:7em" });
  const form = h("form", { class: "toolbar", "aria-label": "Increment a counter" }, name, delta,
    h("button", { type: "submit", class: "primary", id: "increment-counter" }, "Increment"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const counter = name.value.trim(), by = Number.parseInt(delta.value, 10);
    if (!counter || !Number.isFinite(by)) { notify("Give a counter name and a whole number", "error"); return; }
    act(() => api.incrementCounter(database, id, counter, by), `${counter} ${by >= 0 ? "+" : ""}${by}`);
  });
  return h("div", { id: "counters-panel" },
    h("table", { id: "counters-table" }, h("thead", {}, h("tr", {}, ["Name", "Value", ""].map((t) => h("th", { scope: "col" }, t)))), tbody),
    form);
}
