"""The TCP listener the clients' subscription workers use: where it is (`/info/tcp`, `/info/remote-task/tcp`),
RavenDB's connection header negotiation, and bad input told to the offending client alone."""

from __future__ import annotations

import json
import socket
import time

import pytest

from ravendb.serverwide.commands import GetTcpInfoCommand


def tcp_address(http, server_url: str) -> tuple[str, int]:
    r = http.get(f"{server_url}/info/tcp")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["Certificate"] is None
    host, port = body["Url"].removeprefix("tcp://").split(":")
    return host, int(port)


class Connection(socket.socket):
    """A client socket that keeps what it received past the last object read."""

    pending = ""


def connect(http, server_url: str) -> Connection:
    sock = Connection(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(tcp_address(http, server_url))
    return sock


def send(sock: socket.socket, obj) -> None:
    sock.sendall(json.dumps(obj).encode())


def read_object(sock: Connection) -> dict:
    """One JSON object off the stream (the server sends objects back to back; heartbeats are whitespace)."""
    decoder = json.JSONDecoder()
    while True:
        sock.pending = sock.pending.lstrip()
        try:
            obj, end = decoder.raw_decode(sock.pending)
            sock.pending = sock.pending[end:]
            return obj
        except json.JSONDecodeError:
            pass
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(f"connection closed; received {sock.pending!r}")
        sock.pending += chunk.decode()


def header(db: str | None, version: int, operation: str = "Subscription") -> dict:
    return {"DatabaseName": db, "Operation": operation, "SourceNodeTag": None, "OperationVersion": version, "AuthorizeInfo": None}


def assert_closed(sock: socket.socket) -> None:
    sock.settimeout(10)
    assert sock.recv(1024) == b""


def test_info_tcp_answers_a_tcp_url_on_a_listening_port(http, server_url, db_name):
    host, port = tcp_address(http, server_url)
    assert port > 0
    remote = http.get(f"{server_url}/info/remote-task/tcp",
                      params={"database": db_name, "remote-task": "s", "tag": f"Subscription/{db_name}", "verify-database": "true"})
    assert remote.status_code == 200 and remote.json()["Url"] == f"tcp://{host}:{port}"
    per_db = http.get(f"{server_url}/databases/{db_name}/info/tcp", params={"tag": "x"})
    assert per_db.status_code == 200 and per_db.json()["Url"] == f"tcp://{host}:{port}"
    missing = http.get(f"{server_url}/info/remote-task/tcp", params={"database": "no-such-db", "verify-database": "true"})
    assert missing.json()["Type"].endswith("DatabaseDoesNotExistException")


def test_the_python_client_reads_the_tcp_info(store):
    command = GetTcpInfoCommand("test")
    store.get_request_executor().execute_command(command)
    assert command.result.url.startswith("tcp://")


@pytest.mark.parametrize("version", [51000, 53000])
def test_both_clients_versions_are_accepted_at_once(http, server_url, db_name, version):
    with connect(http, server_url) as sock:
        send(sock, header(db_name, version))
        reply = read_object(sock)
        assert (reply["Status"], reply["Version"]) == ("Ok", version)


def test_a_newer_version_is_offered_an_older_one_on_the_same_socket(http, server_url, db_name):
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 60000))
        reply = read_object(sock)
        assert (reply["Status"], reply["Version"]) == ("TcpVersionMismatch", 53000)
        send(sock, header(db_name, 53000))
        assert read_object(sock)["Status"] == "Ok"


def test_a_version_older_than_any_supported_is_an_error(http, server_url, db_name):
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 1))
        reply = read_object(sock)
        assert reply["Type"] == "Error" and "older than any version" in reply["Message"]
        assert_closed(sock)


def test_ping_is_answered_and_closed(http, server_url):
    with connect(http, server_url) as sock:
        send(sock, header(None, -1, "Ping"))
        assert read_object(sock)["Status"] == "Ok"
        assert_closed(sock)


def test_a_subscription_on_a_missing_database_names_the_exception_clients_stop_on(http, server_url):
    with connect(http, server_url) as sock:
        send(sock, header("no-such-db", 51000))
        assert read_object(sock)["Status"] == "Ok"
        send(sock, {"SubscriptionName": "s", "Strategy": "OpenIfFree"})
        reply = read_object(sock)
        assert reply["Type"] == "Error" and "DatabaseDoesNotExistException" in reply["Exception"]


@pytest.mark.parametrize("garbage", [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"[1,2,3]", b'{"Operation":"Bogus","OperationVersion":1}', b"\x00\xff\xfe{"])
def test_garbage_gets_a_clear_error_and_the_server_keeps_serving(http, server_url, db_name, garbage):
    with connect(http, server_url) as sock:
        sock.sendall(garbage)
        reply = read_object(sock)
        assert reply["Type"] == "Error" and reply["Message"], reply
        assert_closed(sock)
    with connect(http, server_url) as sock:
        send(sock, header(db_name, 51000))
        assert read_object(sock)["Status"] == "Ok"
    assert http.get(f"{server_url}/databases/{db_name}/stats").status_code == 200


def test_an_endless_header_is_refused(http, server_url):
    with connect(http, server_url) as sock:
        sock.sendall(b'{"DatabaseName":"' + b"x" * 10000)
        reply = read_object(sock)
        assert reply["Type"] == "Error" and "larger than the limit" in reply["Message"]


def test_a_silent_client_is_closed_after_the_header_timeout(server_factory, http):
    srv = server_factory(extra_args=["--request-header-timeout-ms", "500"])
    with connect(http, srv.url) as sock:
        started = time.monotonic()
        reply = read_object(sock)
        assert reply["Type"] == "Error" and "nothing arrived" in reply["Message"]
        assert time.monotonic() - started < 5


def test_a_configured_tcp_url_is_used_and_the_ravendb_setting_maps_to_it(server_factory, http):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    srv = server_factory(extra_args=[f"--ServerUrl.Tcp=tcp://127.0.0.1:{port}"])
    assert http.get(f"{srv.url}/info/tcp").json()["Url"] == f"tcp://127.0.0.1:{port}"


def test_open_tcp_connections_do_not_hold_up_shutdown(server_factory, http):
    srv = server_factory()
    sockets = [connect(http, srv.url) for _ in range(3)]
    send(sockets[0], header(None, -1, "Ping"))  # one mid-conversation, two silent
    started = time.monotonic()
    srv.stop(timeout=20)
    assert time.monotonic() - started < 10
    for sock in sockets:
        sock.close()
