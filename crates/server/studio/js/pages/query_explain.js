// `Explain` on the query page: which index the query would use and why, without running it.

import * as api from "../api.js";
import { h } from "../dom.js";

export async function explain(database, rql, out) {
  try {
    const answer = await api.explainQuery(database, rql);
    out.replaceChildren(h("div", { id: "query-explain" },
      h("p", {}, "The query would use ", h("strong", {}, answer.IndexName || "(no index)"), "."),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Index"), h("th", { scope: "col" }, "Reason"))),
        h("tbody", {}, (answer.Results || []).map((r) => h("tr", {}, h("td", {}, r.Index || ""), h("td", {}, r.Reason || "")))))));
  } catch (e) {
    out.replaceChildren(h("p", { class: "error", role: "alert", id: "query-error" }, e.message));
  }
}
