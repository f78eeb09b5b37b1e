"""Logs: files under Logs.Path with size and age retention, JSON lines, the level through
/admin/logs/configuration, and live lines through the /admin/logs/watch websocket."""

from __future__ import annotations

import json
import os
import time
from urllib.parse import urlparse

import requests
import websocket

from corvid_support import wait_until


def log_files(directory):
    return sorted(p for p in directory.iterdir() if p.name.startswith("corvid-"))


def test_log_files_get_the_request_lines_and_old_files_go(server_factory, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    old = logs / "corvid-2020-01-01.1.log"
    old.write_text("an old line\n")
    an_hour_ago = time.time() - 7200
    os.utime(old, (an_hour_ago, an_hour_ago))
    server = server_factory(extra_args=["--logs-path", str(logs), "--logs-retention-time-hours", "1"])
    assert not old.exists(), "a file older than the retention time must be removed"
    assert requests.get(f"{server.url}/build/version").status_code == 200

    def logged():
        return any("/build/version" in p.read_text() for p in log_files(logs))

    assert wait_until(logged, 10), [p.read_text()[-500:] for p in log_files(logs)]
    assert any("Server available" in p.read_text() or "INFO" in p.read_text() for p in log_files(logs))


def test_log_files_past_the_retention_size_go_oldest_first(server_factory, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    # Three days of old files, a little over 1 MiB each; the retention keeps 2 MiB, so the oldest two go at start.
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        (logs / f"corvid-{day}.1.log").write_bytes(b"x" * ((1 << 20) + 100))
    server = server_factory(extra_args=["--logs-path", str(logs), "--logs-retention-size-mb", "2"])
    names = [p.name for p in log_files(logs)]
    assert "corvid-2026-01-01.1.log" not in names and "corvid-2026-01-02.1.log" not in names, names
    assert "corvid-2026-01-03.1.log" in names, names
    assert requests.get(f"{server.url}/build/version").status_code == 200


def test_json_lines(server_factory, tmp_path):
    logs = tmp_path / "logs"
    server = server_factory(extra_args=["--logs-path", str(logs), "--logs-json", "true"])
    assert requests.get(f"{server.url}/build/version").status_code == 200

    def request_line():
        for path in log_files(logs):
            assert path.name.endswith(".jsonl")
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                if "/build/version" in entry["Message"]:
                    return entry
        return None

    entry = wait_until(request_line, 10)
    assert entry and entry["Level"] == "INFO" and entry["Time"].endswith("Z"), entry


def test_watch_receives_a_line_and_the_level_can_change(corvid_server, http):
    url = corvid_server.url
    host = urlparse(url).netloc
    ws = websocket.create_connection(f"ws://{host}/admin/logs/watch", timeout=10)
    try:
        marker = f"/build/version?watch={time.monotonic_ns()}"
        deadline = time.monotonic() + 10
        found = None
        while found is None and time.monotonic() < deadline:
            assert http.get(f"{url}{marker}").status_code == 200
            try:
                ws.settimeout(1)
                while found is None:
                    line = ws.recv()
                    if marker in line:
                        found = line
            except websocket.WebSocketTimeoutException:
                pass
        assert found and "Request #" in found, found
    finally:
        ws.close()
    config = http.get(f"{url}/admin/logs/configuration").json()["Logs"]
    assert config["CurrentMinLevel"] == "info"
    r = http.post(f"{url}/admin/logs/configuration", json={"Logs": {"MinLevel": "Debug"}})
    assert r.status_code == 204, r.text
    assert http.get(f"{url}/admin/logs/configuration").json()["Logs"]["CurrentMinLevel"] == "debug"
    assert http.post(f"{url}/admin/logs/configuration", json={"Logs": {"MinLevel": "Information"}}).status_code == 204
    assert http.get(f"{url}/admin/logs/configuration").json()["Logs"]["CurrentMinLevel"] == "info"
    assert http.post(f"{url}/admin/logs/configuration", json={"Logs": {"MinLevel": "Loud"}}).status_code == 400
