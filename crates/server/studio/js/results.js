// Query results as a table and as CSV: pure functions (no DOM), unit-tested under Node.

/** Column names for a page of results: their top-level fields in first-seen order. */
export function resultColumns(results) {
  const seen = new Set();
  for (const r of results) for (const k of Object.keys(r)) if (k !== "@metadata") seen.add(k);
  return [...seen];
}

/** A cell's text: objects and arrays as JSON, missing values empty. */
export function cellText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** Results as CSV (RFC 4180 quoting), the document id first. */
export function toCsv(results) {
  const columns = resultColumns(results);
  const quote = (text) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
  const rows = results.map((r) => [r["@metadata"] ? r["@metadata"]["@id"] || "" : "", ...columns.map((c) => cellText(r[c]))]);
  return [["@id", ...columns], ...rows].map((row) => row.map(quote).join(",")).join("\r\n") + "\r\n";
}
