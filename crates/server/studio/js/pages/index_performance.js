// The indexing performance graph: each index's recent batches on one time axis, a lane per index, a bar per
// batch (its width is how long it ran, its height how long relative to the slowest). Hover or focus a bar
// for its numbers.

import * as api from "../api.js";
import { h, svg } from "../dom.js";
import { batchBars } from "../chart.js";

const WIDTH = 900, LANE = 26, LABEL = 180;

export async function performanceGraph(database) {
  const results = await api.indexPerformance(database);
  const lanes = results.filter((r) => (r.Performance || []).length);
  if (!lanes.length) return h("p", { class: "muted", id: "index-performance-empty" }, "No indexing batch yet.");
  const all = lanes.flatMap((r) => r.Performance);
  const t0 = Math.min(...all.map((b) => Date.parse(b.Started)));
  // At least a second across: a single short batch is a bar, not the whole width.
  const t1 = Math.max(t0 + 1000, ...all.map((b) => Date.parse(b.Started) + b.DurationInMs));
  const maxMs = Math.max(...all.map((b) => b.DurationInMs));
  const plot = WIDTH - LABEL;
  const height = lanes.length * LANE + 16;
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, class: "perf-chart", id: "index-performance-chart", role: "img",
    "aria-label": `Indexing batches of ${lanes.length} indexes over ${((t1 - t0) / 1000).toFixed(1)} s` },
  lanes.map((lane, i) => {
    const y = i * LANE;
    const bars = batchBars(lane.Performance, { t0, t1, width: plot, height: LANE - 4, maxMs });
    return svg("g", { transform: `translate(0 ${y})`, "data-index": lane.Name },
      svg("text", { x: 4, y: LANE / 2 + 4 }, lane.Name.length > 28 ? lane.Name.slice(0, 27) + "…" : lane.Name),
      bars.map((b) => svg("rect", { x: (LABEL + b.x).toFixed(1), y: (b.y + 2).toFixed(1), width: b.width.toFixed(1), height: b.height.toFixed(1) },
        svg("title", {}, b.title))));
  }),
  svg("text", { x: LABEL, y: height - 2 }, new Date(t0).toLocaleTimeString()),
  svg("text", { x: WIDTH - 4, y: height - 2, "text-anchor": "end" }, new Date(t1).toLocaleTimeString()));
  const rows = lanes.map((lane) => {
    const batches = lane.Performance;
    const docs = batches.reduce((n, b) => n + (b.InputCount || 0), 0);
    const ms = batches.reduce((n, b) => n + (b.DurationInMs || 0), 0);
    return h("tr", { "data-index": lane.Name }, h("td", {}, lane.Name), h("td", {}, String(batches.length)), h("td", {}, String(docs)),
      h("td", {}, `${ms.toFixed(1)} ms`), h("td", {}, ms > 0 ? `${Math.round(docs / (ms / 1000)).toLocaleString("en-US")}/s` : ""));
  });
  // The same numbers as a table: the chart is for the eye, the table for screen readers and copying.
  return h("div", { id: "index-performance" }, chart,
    h("table", { id: "index-performance-table" },
      h("thead", {}, h("tr", {}, ["Index", "Batches", "Documents", "Time", "Rate"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)));
}
