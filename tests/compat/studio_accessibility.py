"""Accessibility checks run inside the browser on a rendered Studio page (as JavaScript through Selenium's
execute_script, so they read what Chromium computed): WCAG 2.x text contrast, accessible names of controls,
the page's heading and main landmark, and a visible focus indicator.

Contrast rules (WCAG 2.2, success criterion 1.4.3):
- every visible element with text of its own: its computed color (composited over its background when
  translucent) against its effective background (its own and its ancestors' background colors, composited
  from the first opaque one up), at least 4.5:1, or 3:1 for large text (>= 24px, or >= 18.66px bold);
- placeholder text is checked too: it is text the user must read (1.4.3 makes no exception for it);
- disabled controls and what they contain are exempt: 1.4.3 excludes "text that is part of an inactive user
  interface component";
- text drawn transparent on purpose (the code editor's textarea, whose highlighted copy underneath is what is
  seen and is checked) is skipped; SVG text is checked with its `fill`.
"""

from __future__ import annotations

# Shared by the checks: color parsing, compositing, WCAG's relative luminance and contrast ratio, a short
# selector for reports.
_HELPERS = r"""
function parseColor(text) {
  // Chromium computes rgb()/rgba(), and color(srgb r g b / a) for color-mix().
  let m = text.match(/^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/);
  if (m) return { r: +m[1], g: +m[2], b: +m[3], a: m[4] === undefined ? 1 : +m[4] };
  m = text.match(/^color\(srgb ([\d.e-]+) ([\d.e-]+) ([\d.e-]+)(?: \/ ([\d.]+))?\)$/);
  if (m) return { r: m[1] * 255, g: m[2] * 255, b: m[3] * 255, a: m[4] === undefined ? 1 : +m[4] };
  return null;
}
function over(top, bottom) {
  // `top` (translucent) painted over the opaque `bottom`.
  const a = top.a;
  return { r: top.r * a + bottom.r * (1 - a), g: top.g * a + bottom.g * (1 - a), b: top.b * a + bottom.b * (1 - a), a: 1 };
}
function luminance(c) {
  const channel = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
}
function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}
function background(el) {
  // Background colors from `el` up to the first opaque one (the canvas, white, under everything).
  const layers = [];
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const c = parseColor(getComputedStyle(node).backgroundColor);
    if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
  }
  let result = { r: 255, g: 255, b: 255, a: 1 };
  for (const layer of layers.reverse()) result = layer.a >= 1 ? layer : over(layer, result);
  return result;
}
function selectorOf(el) {
  const parts = [];
  for (let node = el; node && node.nodeType === 1 && parts.length < 4; node = node.parentElement) {
    let part = node.tagName.toLowerCase();
    if (node.id) { parts.unshift(part + "#" + node.id); break; }
    if (node.classList.length) part += "." + [...node.classList].join(".");
    parts.unshift(part);
  }
  return parts.join(" > ");
}
const hex = (c) => "#" + [c.r, c.g, c.b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
function visible(el) {
  if (!el.getClientRects().length) return false;
  const style = getComputedStyle(el);
  return style.visibility === "visible" && +style.opacity > 0;
}
"""

CONTRAST_FAILURES = _HELPERS + r"""
const failures = [];
function check(el, color, text, pseudo) {
  const bg = background(el);
  const fg = color.a < 1 ? over(color, bg) : color;
  const style = getComputedStyle(el);
  const size = parseFloat(style.fontSize), bold = +style.fontWeight >= 700;
  const large = size >= 24 || (size >= 18.66 && bold);
  const required = large ? 3 : 4.5;
  const ratio = contrast(fg, bg);
  if (ratio + 1e-6 < required) {
    failures.push({ selector: selectorOf(el) + (pseudo || ""), text: text.trim().slice(0, 40), color: hex(fg),
                    background: hex(bg), ratio: Math.round(ratio * 100) / 100, required });
  }
}
for (const el of document.body.querySelectorAll("*")) {
  if (["SCRIPT", "STYLE", "OPTION", "TITLE"].includes(el.tagName) || !visible(el)) continue;
  if (el.closest(":disabled")) continue;  // inactive controls are exempt (WCAG 1.4.3)
  const style = getComputedStyle(el);
  const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("");
  const isField = el.matches("input:not([type=file]):not([type=checkbox]):not([type=radio]), textarea, select");
  const text = isField ? (el.value || "") : own;
  const colorText = el instanceof SVGElement ? style.fill : style.color;
  const color = parseColor(colorText);
  if (text.trim() && color && color.a > 0) check(el, color, text);
  if (el.matches("input[placeholder], textarea[placeholder]") && !el.value && el.placeholder) {
    const placeholder = parseColor(getComputedStyle(el, "::placeholder").color);
    if (placeholder) check(el, placeholder, el.placeholder, "::placeholder");
  }
}
return failures;
"""

UNNAMED_CONTROLS = _HELPERS + r"""
function name(el) {
  const label = el.getAttribute("aria-label");
  if (label && label.trim()) return label;
  const by = el.getAttribute("aria-labelledby");
  if (by) {
    const text = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean).map((n) => n.textContent).join(" ");
    if (text.trim()) return text;
  }
  const labels = el.labels ? [...el.labels].map((l) => l.textContent).join(" ") : "";
  if (labels.trim()) return labels;
  if (el.title && el.title.trim()) return el.title;
  if (el.tagName === "BUTTON" && el.textContent.trim()) return el.textContent;
  if (el.tagName === "INPUT" && ["submit", "button", "reset"].includes(el.type) && el.value) return el.value;
  return "";
}
return [...document.querySelectorAll("input:not([type=hidden]), select, textarea, button")]
  .filter((el) => !name(el)).map((el) => selectorOf(el));
"""

# The page's structure: its h1 headings (visible) and main landmarks.
LANDMARKS = r"""
const h1 = [...document.querySelectorAll("h1")].filter((el) => el.getClientRects().length).map((el) => el.textContent);
const main = document.querySelectorAll("main, [role=main]").length;
return { h1, main };
"""

# What has the focus: an id or its name to follow the Tab order, whether it matches :focus-visible (a
# keyboard focus) and whether an outline is drawn around it then.
FOCUSED = r"""
const el = document.activeElement;
const style = getComputedStyle(el);
return { key: el === document.body ? "(body)" : el.id || el.getAttribute("aria-label") || el.textContent.trim(),
         focusVisible: el.matches(":focus-visible"),
         outline: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0 };
"""
