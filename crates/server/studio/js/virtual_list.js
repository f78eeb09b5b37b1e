// A list that renders only the rows in view and fetches pages as they scroll in: a collection of a million
// documents costs one page request and a few dozen DOM rows, never a million of either.

import { h } from "./dom.js";

export const ROW_HEIGHT = 28;

/**
 * `columns` are `{ title, width, cell(row) }`; `fetchPage(start, count)` resolves to rows; `total` is the row
 * count; `onOpen(row)` runs when a row is clicked or Enter is pressed on it; `onStatus(text)` hears why rows are
 * missing (null once they load).
 */
export function virtualList({ columns, total, pageSize = 100, fetchPage, onOpen, label, onStatus = () => {} }) {
  const template = columns.map((c) => c.width || "1fr").join(" ");
  const header = h("div", { class: "row header", role: "row", style: `grid-template-columns:${template};top:0` },
    columns.map((c) => h("span", { role: "columnheader" }, c.title)));
  const spacer = h("div", { style: `height:${total * ROW_HEIGHT}px` });
  const body = h("div", { style: "position:relative" }, spacer);
  const element = h("div", { class: "virtual-list", role: "table", "aria-label": label, "aria-rowcount": total, tabindex: "0" }, header, body);
  const pages = new Map(); // page number -> rows | Promise
  let drawn = new Map();

  function load(page) {
    if (pages.has(page)) return;
    const promise = fetchPage(page * pageSize, pageSize).then((rows) => { pages.set(page, rows); onStatus(null); draw(); })
      .catch((e) => { // a busy server: say why, and ask again shortly
        pages.delete(page);
        onStatus(`Could not load rows (${e.message}); retrying`);
        setTimeout(draw, 1000);
      });
    pages.set(page, promise);
    if (pages.size > 40) pages.delete(pages.keys().next().value); // keep memory flat while scrolling far
  }

  // Pages are requested once scrolling pauses: dragging the scrollbar across a million rows asks only for
  // the page where it stops.
  let missing = new Set(), loadTimer = null;
  function requestMissing() {
    clearTimeout(loadTimer);
    loadTimer = setTimeout(() => { for (const page of missing) load(page); missing = new Set(); }, 60);
  }

  function draw() {
    missing = new Set();
    const first = Math.max(0, Math.floor(element.scrollTop / ROW_HEIGHT) - 5);
    const last = Math.min(total, first + Math.ceil(element.clientHeight / ROW_HEIGHT) + 10);
    const next = new Map();
    for (let i = first; i < last; i++) {
      const page = Math.floor(i / pageSize);
      const rows = pages.get(page);
      if (!Array.isArray(rows)) { if (!rows) missing.add(page); continue; }
      const row = rows[i - page * pageSize];
      if (!row) continue;
      let el = drawn.get(i);
      if (!el || el.rowData !== row) {
        el = h("div", { class: "row", role: "row", "aria-rowindex": i + 1, tabindex: "-1", style: `grid-template-columns:${template};top:${i * ROW_HEIGHT}px;height:${ROW_HEIGHT}px` },
          columns.map((c) => { const v = c.cell(row); return h("span", { role: "cell", title: v }, v); }));
        el.rowData = row;
        el.addEventListener("click", () => onOpen(row));
        el.addEventListener("keydown", (e) => { if (e.key === "Enter") onOpen(row); });
      }
      next.set(i, el);
    }
    if (missing.size) requestMissing();
    for (const [i, el] of drawn) if (!next.has(i)) el.remove();
    for (const el of next.values()) if (!el.isConnected) body.append(el);
    drawn = next;
  }

  // Keyboard: Down from the list focuses the first row in view, Up/Down move between rows, Enter opens one.
  element.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const row = e.target.closest(".row[aria-rowindex]");
    const from = row ? Number(row.getAttribute("aria-rowindex")) - 1 : Math.floor(element.scrollTop / ROW_HEIGHT) - 1;
    const target = drawn.get(from + (e.key === "ArrowDown" ? 1 : -1));
    if (!target) return;
    e.preventDefault();
    target.focus(); // scrolls it into view; the scroll handler then draws the rows around it
  });

  let pending = false;
  element.addEventListener("scroll", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  });
  /** Changes the row count (the server's answer can differ from the count the page was opened with). */
  function setTotal(count) {
    if (count === total) return;
    total = count;
    spacer.style.height = `${total * ROW_HEIGHT}px`;
    element.setAttribute("aria-rowcount", total);
    draw();
  }
  // The first page is asked at once, whatever the count: a count read before the last writes were visible
  // (0 for a collection just filled) is corrected by the page's own total instead of showing no rows.
  load(0);
  requestAnimationFrame(draw);
  return { element, redraw: draw, setTotal };
}
