// Server dashboard: rates computed from two samples of /admin/metrics, polled every second, with a
// one-minute sparkline per rate. New metrics (monitoring, indexing) are one entry in METRICS.

import * as api from "../api.js";
import { h, formatCount } from "../dom.js";

const HISTORY = 60;

/** Total merged write commands over every loaded database. */
function writes(metrics) {
  return Object.values(metrics.Databases || {}).reduce((sum, d) => sum + ((d && d.MergedCommands) || 0), 0);
}

/** `{ id, title, value(prev, cur, seconds) }`: a null value shows a dash. */
const METRICS = [
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
  main.append(h("h1", {}, "Server dashboard"), h("div", { class: "metrics" }, cards.map((c) => c.element)), status);

  let previous = null, previousAt = 0, stopped = false;
  async function poll() {
    try {
      const current = await api.serverMetrics();
      const now = performance.now();
      const seconds = previous ? (now - previousAt) / 1000 : 1;
      for (const card of cards) {
        const v = card.metric.value(previous, current, seconds);
        if (v === null || v === undefined) continue;
        card.value.textContent = Number.isInteger(v) ? formatCount(v) : v.toFixed(1);
        card.history = [...card.history, v].slice(-HISTORY);
        card.line.setAttribute("points", sparkline(card.history));
      }
      status.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      previous = current;
      previousAt = now;
    } catch (e) {
      status.textContent = `Could not read metrics: ${e.message}`;
    }
    if (!stopped) timer = setTimeout(poll, 1000);
  }
  let timer = null;
  await poll();
  return () => { stopped = true; clearTimeout(timer); };
}
