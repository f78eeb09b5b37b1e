"""Shared helpers for the Corvid compatibility suite: server process control, raw HTTP, models."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Iterable, Optional, Sequence

import requests
from ravendb import DocumentStore
from ravendb.documents.operations.statistics import GetStatisticsOperation
from ravendb.serverwide.database_record import DatabaseRecord
from ravendb.serverwide.operations.common import CreateDatabaseOperation, DeleteDatabaseOperation

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / "target" / "release" / "corvid"
READY_RE = re.compile(r"Server available on: (https?://\S+)")
STARTUP_TIMEOUT_S = 30.0


def corvid_bin() -> Path:
    """Path of the server binary: $CORVID_BIN or target/release/corvid."""
    return Path(os.environ.get("CORVID_BIN") or DEFAULT_BIN)


def require_binary() -> Path:
    """Return the binary path or raise a clear error (the suite must fail, never skip)."""
    path = corvid_bin()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RuntimeError(
            f"Corvid server binary not found or not executable at {path}. "
            "Build it with `cargo build --release` or set CORVID_BIN to its path."
        )
    return path


class CorvidServer:
    """One `corvid serve` process on a given data dir; its stdout+stderr go to a log file.

    The same object can be killed (SIGKILL), stopped (SIGTERM) and started again on the
    same data dir; every start binds a fresh port, so read `url` after each start.
    """

    def __init__(self, data_dir: Path, log_path: Optional[Path] = None, extra_args: Sequence[str] = ()):
        self.binary = require_binary()
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / f"{self.data_dir.name}.log"
        self.extra_args = list(extra_args)
        self.proc: Optional[subprocess.Popen] = None
        self.url: Optional[str] = None
        self.starts = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = STARTUP_TIMEOUT_S) -> str:
        """Start the process and wait for its `Server available on: <url>` line."""
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        with open(self.log_path, "ab") as log:
            start_offset = log.tell()
            log.write(f"\n==== corvid start #{self.starts + 1} ====\n".encode())
            log.flush()
            start_offset = log.tell()
            cmd = [str(self.binary), "serve", "--url", "http://127.0.0.1:0", "--data-dir", str(self.data_dir)]
            cmd += self.extra_args
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._read_log(start_offset)
            match = READY_RE.search(text)
            if match:
                self.url = match.group(1).rstrip("/")
                return self.url
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"corvid exited with code {self.proc.returncode} before it served; output:\n{text[-4000:]}"
                )
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(
            f"corvid printed no 'Server available on:' line within {timeout}s; output:\n"
            f"{self._read_log(start_offset)[-4000:]}"
        )

    def kill(self) -> None:
        """SIGKILL the process (simulates a crash) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self, timeout: float = 30.0) -> Optional[int]:
        """SIGTERM (graceful stop); SIGKILL if it does not exit within `timeout`. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def restart(self, crash: bool = False) -> str:
        """Kill (crash=True) or stop the server, then start it again on the same data dir. After a kill the
        storage invariants are checked before the start (`corvid check`)."""
        if crash:
            self.kill()
            self.check_storage()
        else:
            self.stop()
        return self.start()

    def check_storage(self) -> str:
        """Run `corvid check` on the data dir of this stopped server; fails with its output when a storage
        invariant is broken. Returns what it printed."""
        assert not self.running, "the storage check reads a stopped server's files"
        done = subprocess.run(
            [str(self.binary), "check", "--data-dir", str(self.data_dir)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"corvid check failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"
        return done.stdout

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- log ---------------------------------------------------------------------------------
    def _read_log(self, offset: int = 0) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_text(self) -> str:
        """Everything the server printed so far (all starts)."""
        return self._read_log(0)


# -- databases ------------------------------------------------------------------------------
def unique_db_name(prefix: str = "compat") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def open_store(url: str, database: Optional[str] = None) -> DocumentStore:
    store = DocumentStore([url], database)
    store.initialize()
    return store


def create_database(url: str, name: str) -> None:
    with open_store(url) as admin:
        admin.maintenance.server.send(CreateDatabaseOperation(DatabaseRecord(name)))


def delete_database(url: str, name: str) -> None:
    with open_store(url) as admin:
        admin.maintenance.server.send(DeleteDatabaseOperation(name, hard_delete=True))


def stats(store: DocumentStore):
    """Database statistics through the official client (GetStatisticsOperation)."""
    return store.maintenance.send(GetStatisticsOperation())


# -- raw HTTP -------------------------------------------------------------------------------
def doc_url(url: str, db: str, doc_id: str) -> str:
    return f"{url}/databases/{db}/docs?id={requests.utils.quote(doc_id, safe='')}"


def raw_get_docs(http: requests.Session, url: str, db: str, ids: Iterable[str], timeout: float = 30) -> list:
    """GET /docs with repeated id= keys; returns Results (None for missing, request order)."""
    ids = list(ids)
    query = "&".join("id=" + requests.utils.quote(i, safe="") for i in ids)
    r = http.get(f"{url}/databases/{db}/docs?{query}", timeout=timeout)
    if r.status_code == 404 and len(ids) == 1:
        return [None]
    r.raise_for_status()
    return r.json()["Results"]


def assert_error_json(response: requests.Response) -> dict:
    """The body of an error response must be RavenDB error JSON with Type and Message."""
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(
            f"{response.request.method} {response.url} -> {response.status_code}: body is not JSON: {response.text[:300]!r}"
        )
    assert isinstance(body, dict), body
    assert isinstance(body.get("Type"), str) and body["Type"], f"error JSON without Type: {body}"
    assert isinstance(body.get("Message"), str) and body["Message"], f"error JSON without Message: {body}"
    return body


# -- entity classes -------------------------------------------------------------------------
# Plain classes whose attribute names equal their constructor parameters (the client builds
# entities by calling the class with the document's fields).
class User:
    def __init__(self, name: str = None, age: int = None, friend_id: str = None):
        self.name = name
        self.age = age
        self.friend_id = friend_id


class Company:
    def __init__(self, name: str = None, address: dict = None, employee_ids: list = None):
        self.name = name
        self.address = address
        self.employee_ids = employee_ids or []


class Order:
    def __init__(self, company: str = None, lines: list = None):
        self.company = company
        self.lines = lines or []


class City:
    def __init__(self, name: str = None):
        self.name = name


class Product:
    def __init__(self, name: str = None, price: float = None):
        self.name = name
        self.price = price


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05):
    """Polls `predicate` until it returns something truthy (returned) or `timeout` seconds pass (then its
    last value)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()
