"""`corvid export` and `corvid import` on the command line: against a running server, offline from a stopped
server's data directory (refused while the server holds it), and the exit codes scripts rely on."""

from __future__ import annotations

import gzip
import subprocess

import requests

from corvid_support import create_database, require_binary


def corvid(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(require_binary()), *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _fill(url: str, db: str) -> None:
    commands = [{"Id": f"cli/{i}", "Type": "PUT", "Document": {"N": i, "@metadata": {"@collection": "Cli"}}} for i in range(500)]
    requests.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=30).raise_for_status()
    requests.put(f"{url}/databases/{db}/attachments?id=cli/1&name=a.bin", data=b"\x00\x01\x02" * 1000, timeout=30).raise_for_status()


def _count(url: str, db: str) -> int:
    return requests.get(f"{url}/databases/{db}/stats", timeout=30).json()["CountOfDocuments"]


def test_export_then_import_through_a_running_server(server_factory, tmp_path):
    server = server_factory()
    create_database(server.url, "clisrc")
    create_database(server.url, "clidst")
    _fill(server.url, "clisrc")
    dump = tmp_path / "cli.ravendbdump"
    done = corvid("export", "--url", server.url, "--database", "clisrc", "--file", str(dump))
    assert done.returncode == 0, done.stderr
    assert "Documents 500 (+1 attachments)" in done.stderr, done.stderr
    assert gzip.open(dump).read(16).startswith(b'{"BuildVersion"')
    done = corvid("import", "--url", server.url, "--database", "clidst", "--file", str(dump))
    assert done.returncode == 0, done.stderr
    assert "Documents 500" in done.stderr
    assert _count(server.url, "clidst") == 500
    got = requests.get(f"{server.url}/databases/clidst/attachments?id=cli/1&name=a.bin", timeout=30)
    assert got.content == b"\x00\x01\x02" * 1000
    # zstd and a subset of types.
    small = tmp_path / "docs.ravendbdump"
    done = corvid("export", "--url", server.url, "--database", "clisrc", "--file", str(small), "--zstd", "--types", "Documents")
    assert done.returncode == 0, done.stderr
    assert small.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"


def test_exit_codes(server_factory, tmp_path):
    server = server_factory()
    dump = tmp_path / "x.ravendbdump"
    assert corvid("export", "--database", "d", "--file", str(dump)).returncode == 2
    assert corvid("export", "--url", server.url, "--database", "d", "--file", str(dump), "--types", "Bogus").returncode == 2
    unreachable = corvid("export", "--url", "http://127.0.0.1:9", "--database", "d", "--file", str(dump))
    assert unreachable.returncode == 3, unreachable.stderr
    missing = corvid("export", "--url", server.url, "--database", "nosuchdb", "--file", str(dump))
    assert missing.returncode == 1 and "nosuchdb" in missing.stderr, missing.stderr
    assert not dump.exists() and not dump.with_suffix(".partial").exists()
    create_database(server.url, "clibad")
    garbage = tmp_path / "garbage.ravendbdump"
    garbage.write_bytes(b"not a dump at all")
    bad = corvid("import", "--url", server.url, "--database", "clibad", "--file", str(garbage))
    assert bad.returncode == 1 and "Malformed dump at byte" in bad.stderr, bad.stderr


def test_offline_export_of_a_stopped_server(server_factory, tmp_path):
    server = server_factory()
    create_database(server.url, "offline")
    _fill(server.url, "offline")
    dump = tmp_path / "offline.ravendbdump"
    busy = corvid("export", "--data-dir", str(server.data_dir), "--database", "offline", "--file", str(dump))
    assert busy.returncode == 1 and not dump.exists(), busy.stderr
    server.stop()
    done = corvid("export", "--data-dir", str(server.data_dir), "--database", "offline", "--file", str(dump))
    assert done.returncode == 0, done.stderr
    assert "Documents 500" in done.stderr
    server.start()
    create_database(server.url, "fromoffline")
    done = corvid("import", "--url", server.url, "--database", "fromoffline", "--file", str(dump))
    assert done.returncode == 0, done.stderr
    assert _count(server.url, "fromoffline") == 500
