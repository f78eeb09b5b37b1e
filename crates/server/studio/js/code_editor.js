// A textarea over a highlighted <pre>, with line numbers: a light code editor with no dependency.

import { h } from "./dom.js";

/**
 * Creates an editor. `highlight(text)` returns HTML; `label` names it for assistive technology.
 * Returns `{ element, textarea, value, markLine(n), onInput(fn) }`.
 */
export function codeEditor({ value = "", highlight, label, rows = 16, id }) {
  const pre = h("pre", { "aria-hidden": "true" });
  const gutter = h("div", { class: "gutter", "aria-hidden": "true" });
  const textarea = h("textarea", { rows, spellcheck: "false", autocomplete: "off", autocapitalize: "off", "aria-label": label, id });
  const element = h("div", { class: "code-editor" }, gutter, pre, textarea);
  let badLine = null;
  const listeners = [];

  function render() {
    const text = textarea.value;
    pre.innerHTML = highlight(text) + "\n";
    const count = text.split("\n").length;
    gutter.innerHTML = Array.from({ length: count }, (_, i) =>
      i + 1 === badLine ? `<span class="bad-line">${i + 1}</span>` : String(i + 1)).join("\n");
    syncScroll();
  }
  function syncScroll() {
    pre.scrollTop = textarea.scrollTop;
    pre.scrollLeft = textarea.scrollLeft;
    gutter.scrollTop = textarea.scrollTop;
  }
  textarea.addEventListener("input", () => { render(); listeners.forEach((fn) => fn(textarea.value)); });
  textarea.addEventListener("scroll", syncScroll);
  textarea.value = value;
  render();

  return {
    element,
    textarea,
    get value() { return textarea.value; },
    set value(text) { textarea.value = text; render(); },
    /** Marks a line as wrong (null clears it). */
    markLine(line) { badLine = line; element.classList.toggle("invalid", line !== null); render(); },
    onInput(fn) { listeners.push(fn); },
  };
}
