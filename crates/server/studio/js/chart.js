// Line charts as SVG geometry: pure functions (no DOM), unit-tested under Node. The pages turn the result
// into <polyline> and <text> elements; no chart library is needed for a line or a few bars.

/** The smallest and largest of `values`, widened when they are equal so a flat line sits mid-height. */
export function extent(values) {
  let min = Infinity, max = -Infinity;
  for (const v of values) { if (v < min) min = v; if (v > max) max = v; }
  if (min === Infinity) return [0, 1];
  if (min === max) return [min - 1, max + 1];
  return [min, max];
}

/**
 * Points of a line through `points` (`[{ x, y }]`, x ascending) scaled into a `width` x `height` box with
 * `pad` pixels of margin; y grows upwards. `xDomain`/`yDomain` (`[min, max]`) put several lines on one scale.
 * Returns the `points` attribute of an SVG polyline.
 */
export function linePoints(points, { width, height, pad = 0, xDomain, yDomain }) {
  if (!points.length) return "";
  const [x0, x1] = xDomain || extent(points.map((p) => p.x));
  const [y0, y1] = yDomain || extent(points.map((p) => p.y));
  const sx = (width - 2 * pad) / (x1 - x0), sy = (height - 2 * pad) / (y1 - y0);
  return points.map((p) => `${(pad + (p.x - x0) * sx).toFixed(1)},${(height - pad - (p.y - y0) * sy).toFixed(1)}`).join(" ");
}

/**
 * Time-series entries (`[{ Timestamp, Values: [..] }]`) as one line per value position:
 * `[{ label, points: [{ x: epoch ms, y }] }]`. Entries without a finite value at a position are skipped.
 */
export function seriesLines(entries, names = []) {
  const width = entries.reduce((n, e) => Math.max(n, (e.Values || []).length), 0);
  return Array.from({ length: width }, (_, i) => ({
    label: names[i] || `Value ${i + 1}`,
    points: entries
      .map((e) => ({ x: Date.parse(e.Timestamp), y: (e.Values || [])[i] }))
      .filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)),
  }));
}

/**
 * Indexing batches (`[{ Started, DurationInMs, InputCount }]`) as bars on a shared time axis from `t0` to
 * `t1` (epoch ms): `[{ x, width, y, height, title }]` in a `width` x `height` box, height by duration.
 */
export function batchBars(batches, { t0, t1, width, height, maxMs }) {
  const span = Math.max(1, t1 - t0);
  const top = Math.max(1, maxMs);
  return batches.map((b) => {
    const start = Date.parse(b.Started);
    const x = ((start - t0) / span) * width;
    const w = Math.max(2, (b.DurationInMs / span) * width);
    const h = Math.max(2, (b.DurationInMs / top) * (height - 2));
    return { x, width: w, y: height - h, height: h, title: `${b.Started}: ${b.InputCount} documents in ${b.DurationInMs} ms` };
  });
}
