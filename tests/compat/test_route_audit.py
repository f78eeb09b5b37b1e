"""Route audit: every endpoint the official Python client's commands can call (read from the installed
package's source) is answered by Corvid with a real handler or RavenDB's NotSupportedException naming the
feature, never RouteNotFoundException."""

from __future__ import annotations

import pathlib
import re

import pytest
import ravendb

LITERALS = r'(?:f?"[^"\n]*"\s*)+'
REQUEST = re.compile(r'requests\.Request\(\s*"([A-Z]+)"\s*,\s*(' + LITERALS + r"|[A-Za-z_]+)\s*[,)]", re.S)


def _join(literals: str) -> str:
    return "".join(re.findall(r'f?"([^"\n]*)"', literals))


def client_routes() -> list[tuple[str, str, str]]:
    """(method, path, source file) of every request a command builds with a literal URL (`{node.url}/...`),
    directly or through a variable assigned just before; placeholders become sample values."""
    root = pathlib.Path(ravendb.__file__).parent
    routes = set()
    for source in root.rglob("*.py"):
        text = source.read_text()
        for m in REQUEST.finditer(text):
            method, url = m.group(1), m.group(2)
            if '"' not in url:
                assigned = re.findall(rf"\b{url}\s*=\s*({LITERALS})", text[: m.start()])
                if not assigned:
                    continue
                url = assigned[-1]
            path = _join(url)
            if not re.match(r"^\{[a-z_.]*url\}/", path):
                continue
            path = re.sub(r"^\{[a-z_.]*url\}", "", path).split("?")[0]
            path = re.sub(r"\{[a-z_.]*database\}", "DB", path)
            if path.count("{") != path.count("}") or path.endswith("}"):
                continue  # the rest of the path is appended elsewhere
            path = re.sub(r"\{[^}]*\}", "x", path)
            routes.add((method, path, str(source.relative_to(root))))
    return sorted(routes)


ROUTES = client_routes()


def test_the_audit_reads_the_clients_commands():
    # The client has ~110 such requests; far fewer means the extraction no longer matches its source.
    assert len(ROUTES) >= 90, len(ROUTES)


@pytest.mark.parametrize("method,path,source", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_no_client_route_is_unknown(server_url, db_name, http, method, path, source):
    r = http.request(method, server_url + path.replace("/DB/", f"/{db_name}/").replace("/DB", f"/{db_name}"), data=b"{}")
    error_type = ""
    if r.headers.get("Content-Type", "").startswith("application/json") and r.content:
        try:
            body = r.json()
            error_type = body.get("Type", "") if isinstance(body, dict) else ""
        except ValueError:
            pass
    assert "RouteNotFound" not in error_type, f"{method} {path} (from {source}) -> {r.status_code} {r.text[:200]}"
    if r.status_code == 501:
        assert error_type == "System.NotSupportedException", r.text[:200]
