// Every HTTP call the Studio makes, in one place: the same endpoints the official clients use.
// Pages never build URLs themselves, so a new endpoint (monitoring, security...) is one function here.

/** An error answered by the server, carrying RavenDB's error JSON (`Type`, `Message`) and the status. */
export class ApiError extends Error {
  constructor(status, body) {
    const message = (body && (body.Message || body.Error)) || `HTTP ${status}`;
    super(message);
    this.status = status;
    this.type = (body && body.Type) || "";
    this.body = body;
  }
  /** Refused because the client certificate lacks the access (a secured server's 403). */
  get isForbidden() {
    return this.status === 403;
  }
  /** A write refused because the document changed since it was read (stale change vector). */
  get isConcurrencyConflict() {
    return this.status === 409 || this.type.endsWith("ConcurrencyException");
  }
}

async function call(method, url, { body, headers, raw } = {}) {
  const init = { method, headers: { ...(headers || {}) } };
  if (raw !== undefined) init.body = raw; // bytes sent as they are (attachments), with the caller's type
  else if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json; charset=utf-8";
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch { json = { Message: text }; }
  }
  if (!response.ok && response.status !== 404) throw new ApiError(response.status, json);
  return { status: response.status, json, headers: response.headers };
}

const q = encodeURIComponent;
const db = (name) => `/databases/${q(name)}`;

/** Databases with their load state (never loads one). */
export async function listDatabases() {
  return (await call("GET", "/databases")).json.Databases;
}

export async function createDatabase(name) {
  await call("PUT", `/admin/databases?name=${q(name)}&replicationFactor=1`, {
    body: { DatabaseName: name, Settings: {}, Disabled: false },
  });
}

export async function deleteDatabase(name) {
  await call("DELETE", "/admin/databases", { body: { DatabaseNames: [name], HardDelete: true } });
}

/** `/stats` of one database (opens it). */
export async function databaseStats(name) {
  return (await call("GET", `${db(name)}/stats`)).json;
}

/** `{ Collections: {name: count}, CountOfDocuments }`. */
export async function collectionStats(name) {
  return (await call("GET", `${db(name)}/collections/stats`)).json;
}

/** One document with its metadata and change vector, or null. */
export async function getDocument(name, id) {
  const r = await call("GET", `${db(name)}/docs?id=${q(id)}`);
  if (r.status === 404 || !r.json || !r.json.Results || !r.json.Results[0]) return null;
  return r.json.Results[0];
}

/** Stores a document; with `changeVector` the write is refused (409) if the stored one differs. */
export async function putDocument(name, id, document, changeVector) {
  const headers = changeVector ? { "If-Match": `"${changeVector}"` } : {};
  return (await call("PUT", `${db(name)}/docs?id=${q(id)}`, { body: document, headers })).json;
}

export async function deleteDocument(name, id) {
  await call("DELETE", `${db(name)}/docs?id=${q(id)}`);
}

/** Runs an RQL query; `start`/`pageSize` page the results. */
export async function query(name, rql, { start = 0, pageSize = 50, parameters = {} } = {}) {
  const started = performance.now();
  const r = await call("POST", `${db(name)}/queries?addTimeSeriesNames=true`, {
    body: { Query: rql, QueryParameters: parameters, Start: start, PageSize: pageSize },
  });
  return { ...r.json, ClientMs: Math.round(performance.now() - started) };
}

/** Index definitions. */
export async function listIndexes(name) {
  return (await call("GET", `${db(name)}/indexes`)).json.Results;
}

/** Index statistics (state, staleness, entries, last indexing time). */
export async function indexStats(name) {
  return (await call("GET", `${db(name)}/indexes/stats`)).json.Results;
}

/** Indexing errors per index. */
export async function indexErrors(name) {
  return (await call("GET", `${db(name)}/indexes/errors`)).json.Results;
}

/** Creates or replaces a static index. Throws the server's compilation error when it does not compile. */
export async function putIndex(name, definition) {
  return (await call("PUT", `${db(name)}/admin/indexes`, { body: { Indexes: [definition] } })).json;
}

export async function deleteIndex(name, index) {
  await call("DELETE", `${db(name)}/indexes?name=${q(index)}`);
}

export async function resetIndex(name, index) {
  await call("RESET", `${db(name)}/indexes?name=${q(index)}`);
}

export async function setIndexEnabled(name, index, enabled) {
  await call("POST", `${db(name)}/admin/indexes/${enabled ? "enable" : "disable"}?name=${q(index)}`);
}

/** Server counters (requests, queries, per-database writes), polled by the dashboard. */
export async function serverMetrics() {
  return (await call("GET", "/admin/metrics")).json;
}

/** Ongoing and recent operations of one database (`/operations`), with their progress. */
export async function listOperations(name) {
  return (await call("GET", `${db(name)}/operations`)).json.Results || [];
}

/** The server's CPU, memory and request rates (`/admin/monitoring/v1/server`). */
export async function serverMonitoring() {
  return (await call("GET", "/admin/monitoring/v1/server")).json;
}

// ---- Document extras: attachments, counters, revisions, time series ----

/** Stores `file` (a Blob or File) as the attachment `attachment` of document `id`. */
export async function putAttachment(name, id, attachment, file, contentType) {
  const type = contentType || file.type || "application/octet-stream";
  await call("PUT", `${db(name)}/attachments?id=${q(id)}&name=${q(attachment)}&contentType=${q(type)}`,
    { raw: file, headers: { "Content-Type": type } });
}

/** The URL an attachment downloads from (a plain link: the browser streams it to disk). */
export function attachmentUrl(name, id, attachment) {
  return `${db(name)}/attachments?id=${q(id)}&name=${q(attachment)}`;
}

export async function deleteAttachment(name, id, attachment) {
  await call("DELETE", `${db(name)}/attachments?id=${q(id)}&name=${q(attachment)}`);
}

/** Every counter of a document: `[{ CounterName, TotalValue }]`. */
export async function getCounters(name, id) {
  const r = await call("GET", `${db(name)}/counters?docId=${q(id)}`);
  return ((r.json && r.json.Counters) || []).filter(Boolean);
}

/** Adds `delta` to a counter (creating it at `delta`). */
export async function incrementCounter(name, id, counter, delta) {
  await call("POST", `${db(name)}/counters`, {
    body: { Documents: [{ DocumentId: id, Operations: [{ Type: "Increment", CounterName: counter, Delta: delta }] }] },
  });
}

export async function deleteCounter(name, id, counter) {
  await call("POST", `${db(name)}/counters`, {
    body: { Documents: [{ DocumentId: id, Operations: [{ Type: "Delete", CounterName: counter }] }] },
  });
}

/** A page of a document's revisions, newest first: `{ Results, TotalResults }`. */
export async function getRevisions(name, id, { start = 0, pageSize = 25 } = {}) {
  const r = await call("GET", `${db(name)}/revisions?id=${q(id)}&start=${start}&pageSize=${pageSize}`);
  return r.status === 404 || !r.json ? { Results: [], TotalResults: 0 } : { Results: r.json.Results || [], TotalResults: r.json.TotalResults ?? (r.json.Results || []).length };
}

/** A range of one time series: `{ Name, Entries: [{ Timestamp, Values, Tag }], TotalResults }` or null. */
export async function getTimeSeries(name, id, series, { from = "", to = "", pageSize = 2000 } = {}) {
  const r = await call("GET", `${db(name)}/timeseries?docId=${q(id)}&name=${q(series)}&from=${q(from)}&to=${q(to)}&pageSize=${pageSize}`);
  return r.status === 404 ? null : r.json;
}

// ---- Query tools ----

/** Which index a query would use and why, without running it (`?debug=explain`). */
export async function explainQuery(name, rql) {
  return (await call("POST", `${db(name)}/queries?debug=explain`, { body: { Query: rql, QueryParameters: {} } })).json;
}

/** Starts a patch by query (`from ... update { ... }`); resolves to the operation id. */
export async function patchByQuery(name, rql) {
  const r = await call("PATCH", `${db(name)}/queries`, { body: { Query: { Query: rql, QueryParameters: {} } } });
  return r.json.OperationId;
}

/** The state of a database operation: `{ Status, Progress, Result }`. */
export async function operationState(name, id) {
  return (await call("GET", `${db(name)}/operations/state?id=${id}`)).json;
}

// ---- Index tools ----

/** A page of the terms of one field of an index, from `fromValue` on (exclusive). */
export async function indexTerms(name, index, field, { fromValue = "", pageSize = 100 } = {}) {
  const from = fromValue ? `&fromValue=${q(fromValue)}` : "";
  return (await call("GET", `${db(name)}/indexes/terms?name=${q(index)}&field=${q(field)}&pageSize=${pageSize}${from}`)).json.Terms || [];
}

/** Each index's recent batches: `[{ Name, Performance: [{ Started, DurationInMs, InputCount, ... }] }]`. */
export async function indexPerformance(name) {
  return (await call("GET", `${db(name)}/indexes/performance`)).json.Results || [];
}

// ---- Import, export, backups ----

/** Exports the database as a `.ravendbdump` (RavenDB's format, gzip); resolves to a Blob. */
export async function exportDatabase(name) {
  const response = await fetch(`${db(name)}/smuggler/export`, {
    method: "POST", headers: { "Content-Type": "application/json; charset=utf-8" }, body: "{}",
  });
  if (!response.ok) {
    let body = null;
    try { body = await response.json(); } catch { body = null; }
    throw new ApiError(response.status, body);
  }
  return response.blob();
}

/** Imports a `.ravendbdump` file (multipart, as the clients send it); resolves to the counts per item type. */
export async function importDatabase(name, file) {
  const form = new FormData();
  form.append("importOptions", JSON.stringify({}));
  form.append("file", file, file.name);
  return (await call("POST", `${db(name)}/smuggler/import`, { raw: form })).json;
}

/** Starts a one-time backup into `folder` on the server (`Backup`: dump format; `Snapshot`); resolves to
 * the operation id. */
export async function backupDatabase(name, folder, type) {
  const body = { BackupType: type, LocalSettings: { FolderPath: folder } };
  return (await call("POST", `${db(name)}/admin/backup`, { body })).json.OperationId;
}
