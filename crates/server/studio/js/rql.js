// RQL for the query editor: highlighting and what to complete at the caret.
// Pure functions (no DOM), unit-tested under Node (tests/compat-node/test/studio_logic.test.mjs).

import { escapeHtml } from "./highlight.js";

/** RQL's keywords (case-insensitive in queries). */
export const KEYWORDS = ["from", "index", "where", "and", "or", "not", "in", "all", "between", "order", "by", "desc",
  "asc", "select", "load", "include", "group", "limit", "offset", "as", "update", "declare", "function",
  "distinct", "true", "false", "null", "search", "exists", "startsWith", "endsWith", "boost", "filter"];
const KEYWORD_SET = new Set(KEYWORDS.map((k) => k.toLowerCase()));
const TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)|(\$[\w]+)|(\b\d+(?:\.\d+)?\b)|([@A-Za-z_][\w.@-]*)/g;

/** RQL text as highlighted HTML. */
export function highlightRql(text) {
  let out = "", last = 0;
  for (const m of text.matchAll(TOKEN)) {
    out += escapeHtml(text.slice(last, m.index));
    const cls = m[1] !== undefined ? "comment" : m[2] !== undefined ? "string" : m[3] !== undefined ? "literal"
      : m[4] !== undefined ? "number" : KEYWORD_SET.has(m[5].toLowerCase()) ? "keyword" : null;
    out += cls ? `<span class="tok-${cls}">${escapeHtml(m[0])}</span>` : escapeHtml(m[0]);
    last = m.index + m[0].length;
  }
  return out + escapeHtml(text.slice(last));
}

/** The collection a query reads (`from Users`, `from 'Orders'`), or null (index queries, @all_docs). */
export function collectionOf(text) {
  const m = /\bfrom\s+(?!index\b)("([^"]+)"|'([^']+)'|([@\w]+))/i.exec(text);
  if (!m) return null;
  const name = m[2] || m[3] || m[4];
  return name === "@all_docs" ? null : name;
}

/** The index a query reads (`from index 'Name'`), or null. */
export function indexOf(text) {
  const m = /\bfrom\s+index\s+("([^"]+)"|'([^']+)'|([\w/]+))/i.exec(text);
  return m ? m[2] || m[3] || m[4] : null;
}

/**
 * What the word at `caret` should complete to: `{ kind, prefix, start }` where kind is "collection", "index",
 * "field" or "keyword", `prefix` the part already typed and `start` where it begins.
 */
export function completionContext(text, caret) {
  const before = text.slice(0, caret);
  const word = /['"]?[@\w./-]*$/.exec(before)[0];
  const start = caret - word.length;
  const prefix = word.replace(/^['"]/, "");
  const previous = before.slice(0, start).replace(/\s+$/, "");
  const lastWord = (/([\w@]+|[,(=<>!])$/.exec(previous) || [""])[0].toLowerCase();
  const beforeLast = previous.slice(0, previous.length - lastWord.length).replace(/\s+$/, "");
  let kind = "keyword";
  if (lastWord === "from") kind = "collection";
  else if (lastWord === "index" && /\bfrom$/i.test(beforeLast)) kind = "index";
  else if (["where", "and", "or", "not", ",", "(", "select", "by", "load", "include"].includes(lastWord)) kind = "field";
  return { kind, prefix, start };
}

/**
 * Suggestions for a completion context. `catalog` has `collections`, `indexes` and `fields` (arrays of names).
 * Names needing quotes are quoted; matching is case-insensitive on the start of the name.
 */
export function suggest(context, catalog) {
  const pool = context.kind === "collection" ? [...catalog.collections, "@all_docs", "index"]
    : context.kind === "index" ? catalog.indexes
    : context.kind === "field" ? [...catalog.fields, "id()"]
    : KEYWORDS;
  const prefix = context.prefix.toLowerCase();
  return pool
    .filter((name) => name.toLowerCase().startsWith(prefix) && name.toLowerCase() !== prefix)
    .map((name) => (context.kind === "index" || (context.kind === "collection" && /[^\w@]/.test(name)) ? `'${name}'` : name))
    .slice(0, 50);
}
