// A document's time series: the names from its `@timeseries` metadata, and a line chart (SVG) of a range of
// the chosen one, one line per value position.

import * as api from "../api.js";
import { h, svg, formatCount } from "../dom.js";
import { seriesLines, linePoints, extent } from "../chart.js";

const WIDTH = 420, HEIGHT = 160, PAD = 6;

export function timeSeriesPanel({ database, id, metadata }) {
  const names = metadata["@timeseries"] || [];
  if (!names.length) return h("div", { id: "timeseries-panel" }, h("p", { class: "muted" }, "No time series."));
  const select = h("select", { id: "timeseries-name", "aria-label": "Time series" }, names.map((n) => h("option", { value: n }, n)));
  const from = h("input", { id: "timeseries-from", placeholder: "From (ISO date, empty: start)", "aria-label": "From" });
  const to = h("input", { id: "timeseries-to", placeholder: "To (ISO date, empty: end)", "aria-label": "To" });
  const show = h("button", { type: "submit", class: "primary", id: "show-timeseries" }, "Show");
  const chart = h("div", { id: "timeseries-chart", "aria-live": "polite" });
  const form = h("form", { class: "toolbar", "aria-label": "Time series range" }, select, from, to, show);

  async function draw() {
    chart.replaceChildren(h("p", { class: "muted" }, "Loading..."));
    try {
      const range = await api.getTimeSeries(database, id, select.value, { from: from.value.trim(), to: to.value.trim() });
      const entries = (range && range.Entries) || [];
      chart.replaceChildren(render(select.value, entries, range && range.TotalResults));
    } catch (e) {
      chart.replaceChildren(h("p", { class: "error", role: "alert" }, e.message));
    }
  }
  form.addEventListener("submit", (e) => { e.preventDefault(); draw(); });
  draw();
  return h("div", { id: "timeseries-panel" }, form, chart);
}

function render(name, entries, total) {
  if (!entries.length) return h("p", { class: "muted" }, "No entry in this range.");
  const lines = seriesLines(entries);
  const all = lines.flatMap((l) => l.points.map((p) => p.y));
  const [min, max] = extent(all);
  const scale = { width: WIDTH, height: HEIGHT, pad: PAD, yDomain: [min, max], xDomain: extent(lines.flatMap((l) => l.points.map((p) => p.x))) };
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", class: "ts-chart",
    "aria-label": `${name}: ${entries.length} entries from ${entries[0].Timestamp} to ${entries[entries.length - 1].Timestamp}, values ${min} to ${max}` },
  lines.map((l, i) => svg("polyline", { class: `ts-line ts-line-${i % 4}`, points: linePoints(l.points, scale) },
    svg("title", {}, l.label))),
  svg("text", { x: 4, y: 12, class: "axis" }, String(max)),
  svg("text", { x: 4, y: HEIGHT - 4, class: "axis" }, String(min)));
  return h("figure", { class: "ts-figure" }, chart,
    h("figcaption", { class: "muted" },
      `${formatCount(entries.length)}${total && total > entries.length ? ` of ${formatCount(total)}` : ""} entries · ${entries[0].Timestamp} to ${entries[entries.length - 1].Timestamp} · min ${min} · max ${max}`));
}
