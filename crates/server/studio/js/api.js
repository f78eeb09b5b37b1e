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
  /** A write refused because the document changed since it was read (stale change vector). */
  get isConcurrencyConflict() {
    return this.status === 409 || this.type.endsWith("ConcurrencyException");
  }
}

async function call(method, url, { body, headers } = {}) {
  const init = { method, headers: { ...(headers || {}) } };
  if (body !== undefined) {
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
