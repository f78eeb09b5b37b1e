#!/usr/bin/env python3
"""Extract the C# LINQ index definitions used by the Python client's test suite.

Usage: extract_corpus.py SUITE_DIR OUT_DIR
Collects string literals assigned to `self.map`, `self.reduce`, `self.maps`, `maps=`/`reduce=` keyword
arguments and `IndexDefinition` fields; JavaScript definitions (`map(`, `groupBy(`) are skipped.
"""
import ast, json, os, sys

def strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        for e in node.elts:
            yield from strings(e)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        l = list(strings(node.left)); r = list(strings(node.right))
        if len(l) == 1 and len(r) == 1:
            yield l[0] + r[0]
    elif isinstance(node, ast.JoinedStr):
        return

def is_js(s):
    t = s.strip()
    return t.startswith("map(") or t.startswith("map (") or "groupBy(" in t or "function" in t or "=>" in t and "{" in t and "return" in t

def main(suite, out):
    found = {}
    for root, _, files in os.walk(suite):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            try:
                tree = ast.parse(open(path, encoding="utf-8").read())
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                vals = []
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Attribute) and t.attr in ("map", "reduce", "maps"):
                            vals.append((t.attr, node.value))
                elif isinstance(node, ast.keyword) and node.arg in ("maps", "reduce", "map"):
                    vals.append((node.arg, node.value))
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("add_map", "_add_map"):
                    for a in node.args:
                        vals.append(("maps", a))
                for kind, v in vals:
                    for s in strings(v):
                        if s.strip() and not is_js(s):
                            found.setdefault(s, (kind, os.path.relpath(path, suite), node.lineno if hasattr(node, "lineno") else 0))
    os.makedirs(out, exist_ok=True)
    items = [{"kind": "reduce" if k == "reduce" else "map", "source": src, "line": ln, "text": s}
             for s, (k, src, ln) in sorted(found.items(), key=lambda kv: (kv[1][1], kv[1][2]))]
    with open(os.path.join(out, "python_client.json"), "w") as fh:
        json.dump(items, fh, indent=1)
    print(len(items), "definitions")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
