// Accessible tabs (WAI-ARIA tabs pattern): arrow keys, Home and End move between tabs, each panel is
// rendered when its tab is first chosen (a tab that asks the server costs nothing until opened).

import { h } from "./dom.js";

/**
 * `items` are `{ id, label, render() }` (render returns a Node or a promise of one); `selected` is the id
 * shown first. Returns `{ element, select(id), selected }`.
 */
export function tabs(items, { label, selected } = {}) {
  const list = h("div", { role: "tablist", "aria-label": label, class: "tabs" });
  const panels = h("div", { class: "tab-panels" });
  const entries = items.map((item) => {
    const tab = h("button", { type: "button", role: "tab", id: `tab-${item.id}`, "aria-controls": `panel-${item.id}`, "aria-selected": "false", tabindex: "-1" }, item.label);
    const panel = h("div", { role: "tabpanel", id: `panel-${item.id}`, "aria-labelledby": `tab-${item.id}`, hidden: true, tabindex: "0" });
    tab.addEventListener("click", () => api.select(item.id));
    list.append(tab);
    panels.append(panel);
    return { item, tab, panel, rendered: false };
  });
  list.addEventListener("keydown", (e) => {
    const at = entries.findIndex((x) => x.tab === document.activeElement);
    if (at < 0) return;
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: entries.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = entries[(to + entries.length) % entries.length];
    api.select(next.item.id);
    next.tab.focus();
  });
  const api = {
    element: h("div", { class: "tabbed" }, list, panels),
    selected: null,
    select(id) {
      for (const entry of entries) {
        const on = entry.item.id === id;
        entry.tab.setAttribute("aria-selected", on ? "true" : "false");
        entry.tab.tabIndex = on ? 0 : -1;
        entry.panel.hidden = !on;
        if (on && !entry.rendered) {
          entry.rendered = true;
          Promise.resolve().then(() => entry.item.render())
            .then((node) => entry.panel.replaceChildren(node))
            .catch((err) => entry.panel.replaceChildren(h("p", { class: "error", role: "alert" }, err.message)));
        }
      }
      api.selected = id;
    },
  };
  api.select(selected && items.some((i) => i.id === selected) ? selected : items[0].id);
  return api;
}
