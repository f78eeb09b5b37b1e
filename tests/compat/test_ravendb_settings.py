"""RavenDB's configuration conventions on a real `corvid serve`: settings.json in the working directory,
RAVEN_ environment variables, --Key value arguments, their precedence, and clear refusals."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import requests

from corvid_support import corvid_bin, create_database

READY = re.compile(r"Server available on: (http://\S+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cwd: Path, args=(), env=None, timeout=30.0):
    """Starts the binary in `cwd` with only `env` added to a clean environment; returns (process, url, log path)."""
    log_path = cwd / "server.log"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("RAVEN_", "CORVID_"))}
    environment.update(env or {})
    log = open(log_path, "wb")
    proc = subprocess.Popen([str(corvid_bin()), "serve", *args], cwd=cwd, env=environment, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        if match := READY.search(text):
            return proc, match.group(1), log_path
        if proc.poll() is not None:
            return proc, None, log_path
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"no ready line: {log_path.read_text(errors='replace')[-2000:]}")


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=30)


def test_settings_json_in_the_working_directory_and_raven_variables(tmp_path):
    port = _free_port()
    (tmp_path / "settings.json").write_text(
        json.dumps({"ServerUrl": "http://127.0.0.1:1", "DataDir": "from-json", "Setup": {"Mode": "None"}, "Indexing.MapBatchSize": 64})
    )
    env = {
        "RAVEN_ServerUrl": f"http://127.0.0.1:{port}",  # overrides settings.json
        "RAVEN_PublicServerUrl": f"http://localhost:{port}",
        "RAVEN_Http_UseResponseCompression": "false",
        "RAVEN_Security_UnsecuredAccessAllowed": "PublicNetwork",
    }
    proc, url, log = _start(tmp_path, env=env)
    try:
        assert url == f"http://localhost:{port}", log.read_text()
        create_database(f"http://127.0.0.1:{port}", "fromsettings")
        # DataDir came from settings.json, relative to the working directory.
        assert (tmp_path / "from-json").is_dir()
        # The topology announces the public URL.
        topology = requests.get(f"http://127.0.0.1:{port}/topology", params={"name": "fromsettings"}, timeout=10).json()
        assert topology["Nodes"][0]["Url"] == f"http://localhost:{port}"
        # Response compression is off although the client asks.
        big = {"Text": "compressible " * 500}
        requests.put(f"http://127.0.0.1:{port}/databases/fromsettings/docs", params={"id": "a/1"}, json=big, timeout=10).raise_for_status()
        r = requests.get(f"http://127.0.0.1:{port}/databases/fromsettings/docs", params={"id": "a/1"}, headers={"Accept-Encoding": "gzip"}, timeout=10)
        assert "Content-Encoding" not in r.headers
        text = log.read_text()
        # Unused and unknown RavenDB settings are logged once each, by name.
        assert text.count("Indexing.MapBatchSize") == 1, text
        assert text.count("Setup.Mode") == 1, text
    finally:
        _stop(proc)


def test_arguments_override_environment(tmp_path):
    port = _free_port()
    args = ["--ServerUrl", f"http://127.0.0.1:{port}", f"--DataDir={tmp_path / 'data'}"]
    proc, url, log = _start(tmp_path, args=args, env={"RAVEN_ServerUrl": "http://127.0.0.1:1", "RAVEN_DataDir": "elsewhere"})
    try:
        assert url == f"http://127.0.0.1:{port}", log.read_text()
        create_database(url, "argwins")
        assert (tmp_path / "data").is_dir() and not (tmp_path / "elsewhere").exists()
    finally:
        _stop(proc)


def test_bad_values_stop_start_up_naming_the_setting(tmp_path):
    cases = [
        ({"RAVEN_RunInMemory": "maybe"}, (), "RunInMemory"),
        ({}, ["--ServerUrl=https://127.0.0.1:0"], "ServerUrl"),
        ({"RAVEN_Security_Certificate_Path": "/etc/server.pfx"}, (), "Security.Certificate.Path"),
    ]
    for number, (env, args, name) in enumerate(cases):
        cwd = tmp_path / f"case{number}"
        cwd.mkdir()
        proc, url, log = _start(cwd, args=args, env=env)
        try:
            assert url is None, f"started with {env} {args}"
            assert proc.wait(timeout=10) != 0
            assert name in log.read_text(), log.read_text()
        finally:
            _stop(proc)
    # A settings.json that is not JSON is an error too, naming the file.
    cwd = tmp_path / "badjson"
    cwd.mkdir()
    (cwd / "settings.json").write_text("{ not json")
    proc, url, log = _start(cwd, args=["--ServerUrl=http://127.0.0.1:0"])
    assert url is None and proc.wait(timeout=10) != 0
    assert "settings.json" in log.read_text()
