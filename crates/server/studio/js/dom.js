// Small DOM helpers shared by every page.

/** Builds an element: `h("button", { class: "primary", onclick }, "Save")`. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Shows a message for a few seconds (errors stay longer). */
export function notify(message, kind = "info") {
  const box = document.getElementById("messages");
  const toast = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" }, message);
  box.append(toast);
  setTimeout(() => toast.remove(), kind === "error" ? 8000 : 3000);
}

/** Asks before a destructive action. */
export function confirmAction(message) {
  return window.confirm(message);
}

/** Formats a byte count for people. */
export function formatBytes(bytes) {
  if (bytes === undefined || bytes === null) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

/** Formats an integer with thousands separators. */
export function formatCount(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : "";
}

/** Builds an SVG element (charts): `svg("polyline", { points })`. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) if (value !== undefined && value !== null) el.setAttribute(key, value);
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Offers `text` as a file download named `name` (client-side, nothing goes to the server). */
export function download(name, type, text) {
  const link = h("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
