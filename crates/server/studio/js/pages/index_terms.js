// The terms browser: the distinct terms one field of an index holds, in order, a page at a time.

import * as api from "../api.js";
import { h } from "../dom.js";

const PAGE = 100;

/** Field names an index definition names: its `Fields`, `select new { A, B = ... }` or `return { A: ... }`. */
export function indexFieldNames(definition) {
  const names = new Set(Object.keys(definition.Fields || {}));
  for (const map of definition.Maps || []) {
    const body = /select\s+new\s*\{([\s\S]*)\}/i.exec(map) || /return\s*\{([\s\S]*)\}/.exec(map);
    if (!body) continue;
    for (const m of body[1].matchAll(/(?:^|,)\s*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\s*(?=[:=,}]|$)/g)) names.add(m[1]);
  }
  // Auto indexes: `Auto/People/ByNameAndAge`.
  const auto = /^Auto\/[^/]+\/By(.+)$/.exec(definition.Name || "");
  if (auto) for (const f of auto[1].split("And")) names.add(f);
  names.delete("");
  return [...names];
}

export async function renderTerms(main, { database, name }) {
  const definition = (await api.listIndexes(database)).find((d) => d.Name === name) || { Name: name };
  const fields = indexFieldNames(definition);
  const field = h("input", { id: "terms-field", list: "terms-fields", value: fields[0] || "", "aria-label": "Field", required: true });
  const options = h("datalist", { id: "terms-fields" }, fields.map((f) => h("option", { value: f })));
  const list = h("ol", { id: "terms-list", class: "terms" });
  const more = h("button", { type: "button", id: "more-terms", hidden: true }, "More terms");
  const status = h("p", { class: "muted", id: "terms-status", role: "status" });
  let lastTerm = "";

  async function load(reset) {
    if (reset) { list.replaceChildren(); lastTerm = ""; }
    try {
      const terms = await api.indexTerms(database, name, field.value.trim(), { fromValue: lastTerm, pageSize: PAGE });
      list.append(...terms.map((t) => h("li", {}, t)));
      if (terms.length) lastTerm = terms[terms.length - 1];
      more.hidden = terms.length < PAGE;
      status.textContent = `${list.children.length} terms${more.hidden ? "" : " so far"}`;
    } catch (e) {
      status.textContent = "";
      list.replaceChildren(h("li", { class: "error", role: "alert" }, e.message));
    }
  }
  const form = h("form", { class: "toolbar", "aria-label": "Choose a field" },
    h("label", { for: "terms-field" }, "Field"), field, options, h("button", { type: "submit", class: "primary", id: "show-terms" }, "Show terms"));
  form.addEventListener("submit", (e) => { e.preventDefault(); if (field.value.trim()) load(true); });
  more.addEventListener("click", () => load(false));
  main.append(h("h1", {}, `Terms of ${name}`), h("p", {}, h("a", { href: "#/indexes" }, "Back to indexes")), form, status, list, more);
  field.focus();
  if (field.value) await load(true);
}
