// Syntax highlighting for JSON and JavaScript: tokenizers producing HTML with `tok-*` classes.
// Pure functions (no DOM), unit-tested under Node (tests/compat-node/test/studio_logic.test.mjs).

/** Escapes text for innerHTML. */
export function escapeHtml(text) {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

const span = (cls, text) => `<span class="tok-${cls}">${escapeHtml(text)}</span>`;

const JSON_TOKEN = /("(?:[^"\\\n]|\\.)*"?)(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b|([{}[\],:])/g;

/** JSON text as highlighted HTML; works on invalid JSON too (while typing). */
export function highlightJson(text) {
  let out = "", last = 0;
  for (const m of text.matchAll(JSON_TOKEN)) {
    out += escapeHtml(text.slice(last, m.index));
    if (m[1] !== undefined) out += span(m[2] ? "key" : "string", m[1]) + (m[2] ? span("punct", m[2]) : "");
    else if (m[3] !== undefined) out += span("number", m[3]);
    else if (m[4] !== undefined) out += span("literal", m[4]);
    else out += span("punct", m[5]);
    last = m.index + m[0].length;
  }
  return out + escapeHtml(text.slice(last));
}

const JS_KEYWORDS = new Set(("break case catch const continue default delete do else for function if in instanceof let new " +
  "of return switch this throw try typeof var void while map load true false null undefined").split(" "));
const JS_TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_$][\w$]*)/g;

/** JavaScript (index maps and reduces) as highlighted HTML. */
export function highlightJavaScript(text) {
  let out = "", last = 0;
  for (const m of text.matchAll(JS_TOKEN)) {
    out += escapeHtml(text.slice(last, m.index));
    if (m[1] !== undefined) out += span("comment", m[1]);
    else if (m[2] !== undefined) out += span("string", m[2]);
    else if (m[3] !== undefined) out += span("number", m[3]);
    else out += JS_KEYWORDS.has(m[4]) ? span("keyword", m[4]) : escapeHtml(m[4]);
    last = m.index + m[0].length;
  }
  return out + escapeHtml(text.slice(last));
}

/**
 * Parses a document's JSON for saving. Returns `{ value }` or `{ error, line }` (1-based line of the mistake).
 */
export function parseDocumentJson(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: e.message, line: text.slice(0, jsonErrorOffset(text)).split("\n").length };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { error: "A document must be a JSON object", line: 1 };
  return { value };
}

/** Where JSON text first goes wrong (engines' messages do not always say): a validating scan, no values built. */
export function jsonErrorOffset(text) {
  let i = 0;
  const fail = () => { throw i; };
  const space = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const literal = (word) => { if (text.startsWith(word, i)) i += word.length; else fail(); };
  function string() {
    i++;
    while (i < text.length && text[i] !== '"') { if (text[i] === "\\") i++; else if (text[i] === "\n") fail(); i++; }
    if (i >= text.length) fail();
    i++;
  }
  function value() {
    space();
    const c = text[i];
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      i++; space();
      if (text[i] === close) { i++; return; }
      for (;;) {
        if (close === "}") { space(); if (text[i] !== '"') fail(); string(); space(); if (text[i] !== ":") fail(); i++; }
        value(); space();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === close) { i++; return; }
        fail();
      }
    }
    if (c === '"') return string();
    if (c === "t") return literal("true");
    if (c === "f") return literal("false");
    if (c === "n") return literal("null");
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail();
    i += m[0].length;
  }
  try {
    value(); space();
    return i < text.length ? i : text.length;
  } catch (at) {
    return at;
  }
}
