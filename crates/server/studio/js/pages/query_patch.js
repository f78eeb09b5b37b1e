// Patch by query from the query page: `from ... update { ... }` runs on every matching document, so it asks
// first (a modal dialog showing the query), then shows the operation's progress until it ends.

import * as api from "../api.js";
import { h, formatCount } from "../dom.js";
import { watchOperation, progressFraction } from "../operation_progress.js";

/** Whether an RQL text is a patch (has an `update { ... }` clause outside strings and comments). */
export function isPatchQuery(rql) {
  const code = rql.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, "''");
  return /\bupdate\s*\{/i.test(code);
}

/** Asks for confirmation in a dialog; resolves true when the user chose to run the patch. */
function confirmPatch(rql, count) {
  return new Promise((resolve) => {
    const run = h("button", { type: "button", class: "primary", id: "patch-confirm-run" }, "Patch");
    const cancel = h("button", { type: "button", id: "patch-confirm-cancel" }, "Cancel");
    const dialog = h("dialog", { id: "patch-confirm", "aria-labelledby": "patch-confirm-title" },
      h("h2", { id: "patch-confirm-title" }, "Patch documents?"),
      h("p", {}, count === null ? "This patch changes every document the query matches:" : `This patch may change ${formatCount(count)} documents:`),
      h("pre", { class: "json-block" }, rql),
      h("div", { class: "toolbar" }, run, cancel));
    const finish = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    run.addEventListener("click", () => finish(true));
    cancel.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); finish(false); }); // Escape
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus(); // the safe choice is the default one
  });
}

/** Runs a patch after confirmation, drawing its progress into `out`. Resolves to the final state or null. */
export async function runPatch(database, rql, out) {
  // How many documents match: the query without its update clause, asked for no rows.
  let count = null;
  try {
    const match = rql.replace(/\bupdate\s*\{[\s\S]*$/i, "");
    count = (await api.query(database, match, { pageSize: 0 })).TotalResults ?? null;
  } catch { /* the dialog then says "every document the query matches" */ }
  if (!(await confirmPatch(rql, count))) return null;
  const bar = h("progress", { id: "patch-progress", max: "1", "aria-label": "Patch progress" });
  const text = h("span", { id: "patch-status", role: "status" }, "Starting...");
  out.replaceChildren(h("div", { class: "toolbar" }, bar, text));
  try {
    const id = await api.patchByQuery(database, rql);
    const final = await watchOperation(database, id, (state) => {
      const fraction = progressFraction(state);
      if (fraction === null) bar.removeAttribute("value"); else bar.value = fraction;
      if (state.Status === "InProgress" && state.Progress) text.textContent = `Patched ${formatCount(state.Progress.Processed || 0)} of ${formatCount(state.Progress.Total || 0)}...`;
    });
    bar.value = 1;
    if (final.Status === "Completed") text.textContent = `Patch done: ${formatCount((final.Result && final.Result.Total) || 0)} documents changed`;
    else text.textContent = `Patch ${final.Status.toLowerCase()}: ${(final.Result && final.Result.Message) || ""}`;
    text.className = final.Status === "Completed" ? "ok" : "error";
    return final;
  } catch (e) {
    text.textContent = `Patch failed: ${e.message}`;
    text.className = "error";
    return null;
  }
}
