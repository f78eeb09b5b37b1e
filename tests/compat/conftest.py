"""Fixtures: one shared Corvid server per test session, a fresh database per test, server factories."""

from __future__ import annotations

import requests
import pytest

from corvid_support import (
    CorvidServer,
    create_database,
    delete_database,
    open_store,
    require_binary,
    unique_db_name,
)


@pytest.fixture(scope="session")
def corvid_server(tmp_path_factory) -> CorvidServer:
    """The shared server (a real `corvid serve` on a temp data dir); its output goes to `log_path`."""
    problem = None
    try:
        require_binary()
        base = tmp_path_factory.mktemp("corvid-shared")
        server = CorvidServer(base / "data", log_path=base / "server.log")
        server.start()
    except RuntimeError as e:
        problem = str(e)
    if problem:
        pytest.fail(f"could not start the shared corvid server: {problem}", pytrace=False)
    yield server
    code = server.stop()
    print(f"\nshared corvid server stopped with exit code {code}; log: {server.log_path}")


@pytest.fixture(scope="session")
def server_url(corvid_server: CorvidServer) -> str:
    """Base URL of the shared server, e.g. http://127.0.0.1:41234."""
    return corvid_server.url


@pytest.fixture
def db_name(server_url: str, request) -> str:
    """A fresh database on the shared server, dropped after the test."""
    name = unique_db_name(request.node.name.split("[")[0][:30])
    create_database(server_url, name)
    yield name
    delete_database(server_url, name)


@pytest.fixture
def store(server_url: str, db_name: str):
    """An initialized official DocumentStore bound to the test's fresh database."""
    s = open_store(server_url, db_name)
    yield s
    s.close()


@pytest.fixture
def http() -> requests.Session:
    """A plain `requests` session for raw protocol checks."""
    with requests.Session() as s:
        yield s


@pytest.fixture
def server_factory(tmp_path):
    """Start extra servers on their own data dirs (crash tests, special flags); all are killed at the end.

    Usage: `srv = server_factory(extra_args=["--max-body-bytes", "1024"])` -> started CorvidServer.
    """
    servers: list[CorvidServer] = []

    def make(data_dir=None, extra_args=(), start=True) -> CorvidServer:
        d = data_dir or tmp_path / f"srv{len(servers)}"
        srv = CorvidServer(d, log_path=tmp_path / f"srv{len(servers)}.log", extra_args=extra_args)
        servers.append(srv)
        if start:
            srv.start()
        return srv

    yield make
    for srv in servers:
        srv.kill()
