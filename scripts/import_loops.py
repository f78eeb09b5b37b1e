#!/usr/bin/env python3
"""Finds loops of files that import each other inside each crate of the workspace.

A file "imports" another when it names an item (through `use` or an inline `crate::`/`super::`/`self::`
path) that the other file defines. Re-exports (`pub use`) are followed to the file that defines the
item, so a `lib.rs` or `mod.rs` that only re-exports is transparent; `mod x;` declarations are
containment, not imports. Test-only files and `#[cfg(test)]` modules are skipped: they may reach anything.

Exit status 1 and one line per loop when any crate has a loop; 0 otherwise.

    scripts/import_loops.py            # every crate under crates/
    scripts/import_loops.py --edges    # also print the file -> file edges with the names that tie them
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+|async\s+|const\s+(?=fn))*"
    r"(fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", re.M)
USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
INLINE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_noise(text: str) -> str:
    """Removes comments, string literals and `#[cfg(test)]` modules, which must not create edges."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out = []
    i = 0
    marker = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = marker.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i : m.start()])
        depth = 1
        j = m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    return "".join(out)


def expand_use(tree: str) -> list[tuple[str, str]]:
    """`a::{b, c::{d as e}}` -> [("a::b", "b"), ("a::c::d", "e")]."""
    tree = re.sub(r"\s+as\s+", "@", tree)
    tree = re.sub(r"\s+", "", tree)

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix: str, s: str) -> list[tuple[str, str]]:
        if "{" in s and s.endswith("}"):
            head, body = s[: s.index("{")], s[s.index("{") + 1 : -1]
            out = []
            for part in split_top(body):
                out += walk(prefix + head, part)
            return out
        path, _, alias = (prefix + s).partition("@")
        if path.endswith("::self"):
            path = path[: -len("::self")]
        return [(path, alias or path.rsplit("::", 1)[-1])]

    return walk("", tree)


class Crate:
    def __init__(self, src: Path):
        self.src = src
        self.files: dict[tuple[str, ...], Path] = {}  # module path -> file
        self.items: dict[Path, set[str]] = {}
        self.reexports: dict[Path, dict[str, str]] = {}  # file -> name -> absolute path
        self.texts: dict[Path, str] = {}
        root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
        self._load(root, ())

    def _load(self, file: Path, module: tuple[str, ...]) -> None:
        text = strip_noise(file.read_text())
        self.files[module] = file
        self.texts[file] = text
        self.items[file] = {m.group(2) for m in ITEM.finditer(text)}
        raw = file.read_text()
        for m in MOD_DECL.finditer(text):
            name = m.group(1)
            # `#[cfg(test)] mod tests;` declares a test-only file: skip it.
            before = raw[: raw.find(m.group(0).strip())] if m.group(0).strip() in raw else ""
            if re.search(r"#\[cfg\(test\)\]\s*$", before):
                continue
            directory = file.parent if file.name in ("lib.rs", "main.rs", "mod.rs") else file.parent / file.stem
            for candidate in (directory / f"{name}.rs", directory / name / "mod.rs"):
                if candidate.exists():
                    self._load(candidate, module + (name,))
                    break
        self.reexports[file] = {}
        for m in USE.finditer(text):
            if not m.group(1):
                continue
            for path, name in self._uses(m.group(2)):
                absolute = self.absolute(path, module)
                if absolute:
                    self.reexports[file][name] = absolute

    @staticmethod
    def _uses(tree: str) -> list[tuple[str, str]]:
        return expand_use(tree)

    def module_of(self, file: Path) -> tuple[str, ...]:
        return next(k for k, v in self.files.items() if v == file)

    def absolute(self, path: str, module: tuple[str, ...]) -> str | None:
        parts = path.split("::")
        if parts[0] == "crate":
            base: list[str] = []
        elif parts[0] in ("self", "super"):
            base = list(module)
            while parts and parts[0] in ("self", "super"):
                if parts[0] == "super":
                    if not base:
                        return None
                    base.pop()
                parts = parts[1:]
            return "::".join(["crate"] + base + parts)
        else:
            # a relative path through a child module: `child::Item`
            if tuple(module) + (parts[0],) in self.files:
                return "::".join(["crate"] + list(module) + parts)
            return None
        return "::".join(["crate"] + base + parts[1:])

    def resolve(self, absolute: str, seen: frozenset = frozenset()) -> Path | None:
        """The file that defines what `crate::a::b::Name` names (or the module file itself)."""
        if absolute in seen:
            return None
        parts = absolute.split("::")[1:]
        module: tuple[str, ...] = ()
        for i, part in enumerate(parts):
            if part == "*":
                return self.files[module]
            child = module + (part,)
            if child in self.files:
                module = child
                continue
            file = self.files[module]
            if part in self.items[file]:
                return file
            if part in self.reexports[file]:
                target = self.reexports[file][part]
                rest = parts[i + 1 :]
                return self.resolve("::".join([target] + rest), seen | {absolute})
            return file
        return self.files[module]

    def edges(self) -> dict[Path, dict[Path, set[str]]]:
        graph: dict[Path, dict[Path, set[str]]] = {f: {} for f in self.texts}
        for module, file in self.files.items():
            text = self.texts[file]
            paths: list[tuple[str, str]] = []
            for m in USE.finditer(text):
                if m.group(1):
                    continue  # re-exports are followed, not counted
                paths += self._uses(m.group(2))
            body = USE.sub("", text)
            paths += [(p, p.rsplit("::", 1)[-1]) for p in INLINE.findall(body)]
            for path, _ in paths:
                absolute = self.absolute(path, module)
                if not absolute:
                    continue
                target = self.resolve(absolute)
                if target and target != file:
                    graph[file].setdefault(target, set()).add(path.rsplit("::", 1)[-1])
        return graph


def strongly_connected(graph: dict[Path, dict[Path, set[str]]]) -> list[list[Path]]:
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    result: list[list[Path]] = []
    counter = [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return result


def main() -> int:
    show_edges = "--edges" in sys.argv
    loops = 0
    for src in sorted((ROOT / "crates").glob("*/src")):
        crate = Crate(src)
        graph = crate.edges()
        if show_edges:
            for a, targets in sorted(graph.items()):
                for b, names in sorted(targets.items()):
                    print(f"{a.relative_to(ROOT)} -> {b.relative_to(ROOT)}: {', '.join(sorted(names))}")
        for component in strongly_connected(graph):
            loops += 1
            members = set(component)
            print(f"loop in {src.parent.name}:")
            for a in component:
                for b, names in sorted(graph[a].items()):
                    if b in members:
                        print(f"  {a.relative_to(src)} -> {b.relative_to(src)}: {', '.join(sorted(names))}")
    if loops:
        print(f"{loops} import loop(s)")
        return 1
    print("no import loops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
