// Server dashboard: rates computed from two samples of /admin/metrics, polled every second, with a
// one-minute sparkline per rate; CPU and memory from /admin/monitoring/v1/server; traffic per database; the
// operations running in loaded databases with their progress. New metrics are one entry in METRICS.

import * as api from "../api.js";
import { h, formatCount } from "../dom.js";
import { trafficPerDatabase } from "../dashboard_traffic.js";
import { progressFraction } from "../operation_progress.js";

const HISTORY = 60;

/** Total merged write commands over every loaded database. */
function writes(metrics) {
  return Object.values(metrics.Databases || {}).reduce((sum, d) => sum + ((d && d.MergedCommands) || 0), 0);
}

/** `{ id, title, value(prev, cur, seconds, monitoring) }`: a null value shows a dash. */
const METRICS = [
  { id: "cpu-process", title: "CPU, Corvid %", value: (_p, _c, _s, m) => (m ? m.Cpu.ProcessUsage : null) },
  { id: "cpu-machine", title: "CPU, machine %", value: (_p, _c, _s, m) => (m ? m.Cpu.MachineUsage : null) },
  { id: "memory-used", title: "Memory, Corvid MB", value: (_p, _c, _s, m) => (m ? m.Memory.AllocatedMemoryInMb : null) },
  { id: "memory-machine", title: "Memory, machine MB", value: (_p, _c, _s, m) => (m ? m.Memory.PhysicalMemoryInMb : null) },
  { id: "requests-per-second", title: "Requests/s", value: (p, c, s) => (p ? (c.Requests.Total - p.Requests.Total) / s : null) },
  { id: "writes-per-second", title: "Writes/s", value: (p, c, s) => (p ? Math.max(0, writes(c) - writes(p)) / s : null) },
  { id: "active-requests", title: "Active requests", value: (_p, c) => c.Requests.Active },
  { id: "running-queries", title: "Running queries", value: (_p, c) => c.Queries.Running },
  { id: "loaded-databases", title: "Loaded databases", value: (_p, c) => Object.keys(c.Databases || {}).length },
  { id: "changes-clients", title: "Changes connections", value: (_p, c) => c.Changes.Connected },
  { id: "total-requests", title: "Requests since start", value: (_p, c) => c.Requests.Total },
];

/** Points of a sparkline for `values` in a 100x40 box. */
export function sparkline(values) {
  const max = Math.max(1, ...values);
  return values.map((v, i) => `${((i / (HISTORY - 1)) * 100).toFixed(1)},${(40 - (v / max) * 38).toFixed(1)}`).join(" ");
}

export async function render(main) {
  const cards = METRICS.map((m) => {
    const value = h("div", { class: "value", id: m.id }, "-");
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 100 40");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("aria-hidden", "true");
    svg.append(line);
    return { metric: m, value, line, history: [], element: h("div", { class: "metric" }, h("div", { class: "muted" }, m.title), value, svg) };
  });
  const status = h("p", { class: "muted", id: "dashboard-status", role: "status" });
  const traffic = h("tbody");
  const operations = h("tbody");
  main.append(h("h1", {}, "Server dashboard"), h("div", { class: "metrics" }, cards.map((c) => c.element)), status,
    h("h2", {}, "Traffic per database"),
    h("table", { id: "database-traffic" }, h("thead", {}, h("tr", {}, ["Database", "Requests/s", "Writes/s", "State"].map((t) => h("th", { scope: "col" }, t)))), traffic),
    h("h2", {}, "Ongoing operations"),
    h("table", { id: "ongoing-operations" }, h("thead", {}, h("tr", {}, ["Database", "Operation", "Started", "Progress"].map((t) => h("th", { scope: "col" }, t)))), operations));

  const rate = (v) => (v === null ? "-" : v.toFixed(1));
  // `names`: the databases that exist now (null when unknown); counts of deleted ones stay until a restart.
  function drawTraffic(rows, names) {
    traffic.replaceChildren(...rows.map((r) => h("tr", { "data-database": r.name },
      h("td", {}, r.name), h("td", { class: "requests-rate" }, rate(r.requestsPerSecond)), h("td", { class: "writes-rate" }, rate(r.writesPerSecond)),
      h("td", {}, r.loaded ? "Loaded" : !names || names.has(r.name) ? "Idle" : "Deleted"))));
    if (!rows.length) traffic.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No request to a database yet.")));
  }
  // Operations of loaded databases only: asking an idle one would load it.
  async function drawOperations(current) {
    const loaded = Object.keys(current.Databases || {});
    const lists = await Promise.all(loaded.map((name) => api.listOperations(name).then((ops) => ops.map((op) => ({ name, op }))).catch(() => [])));
    const running = lists.flat().filter(({ op }) => op.State && op.State.Status === "InProgress");
    operations.replaceChildren(...running.map(({ name, op }) => {
      const fraction = progressFraction(op.State);
      const p = op.State.Progress || {};
      return h("tr", { "data-operation": String(op.Id) }, h("td", {}, name),
        h("td", {}, `${op.TaskType}: ${(op.Description && op.Description.Description) || ""}`), h("td", {}, op.StartTime || ""),
        h("td", {}, fraction === null ? h("progress", { "aria-label": `Progress of operation ${op.Id}` }) : h("progress", { max: "1", value: String(fraction), "aria-label": `Progress of operation ${op.Id}` }),
          ` ${formatCount(p.Processed || 0)} / ${formatCount(p.Total || 0)}`));
    }));
    if (!running.length) operations.append(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No operation running.")));
  }

  let previous = null, previousAt = 0, stopped = false;
  async function poll() {
    try {
      const [current, monitoring, existing] = await Promise.all([
        api.serverMetrics(), api.serverMonitoring().catch(() => null), api.listDatabases().catch(() => null)]);
      const now = performance.now();
      const seconds = previous ? (now - previousAt) / 1000 : 1;
      drawTraffic(trafficPerDatabase(previous, current, seconds), existing && new Set(existing.map((d) => d.Name)));
      await drawOperations(current);
      for (const card of cards) {
        const v = card.metric.value(previous, current, seconds, monitoring);
        if (v === null || v === undefined) continue;
        card.value.textContent = Number.isInteger(v) ? formatCount(v) : v.toFixed(1);
        card.history = [...card.history, v].slice(-HISTORY);
        card.line.setAttribute("points", sparkline(card.history));
      }
      status.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      previous = current;
      previousAt = now;
    } catch (e) {
      // A certificate without the Operator clearance never gets metrics: the page says so, not polls on.
      if (e.isForbidden) { stopped = true; if (!previous) throw e; }
      status.textContent = `Could not read metrics: ${e.message}`;
    }
    if (!stopped) timer = setTimeout(poll, 1000);
  }
  let timer = null;
  await poll();
  return () => { stopped = true; clearTimeout(timer); };
}
