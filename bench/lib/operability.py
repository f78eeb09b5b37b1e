#!/usr/bin/env python3
"""Issue 23's benchmark: what monitoring costs, listing many unloaded databases, and shutting down many loaded
ones. Standard library only (plus wrk for the write load). Run through bench/run-operability.sh.

  list      N databases created, the server restarted (none loaded), GET /databases?namesOnly=false
            timed K times; /proc/<pid>/fd checked: no database file open. Target p50 < 20 ms at N = 1,000.
  shutdown  M databases each with 5 JavaScript indexes and documents, writers running against all of them,
            then SIGTERM: seconds until the process exits (target < 5 s at M = 100), exit code, and every
            acknowledged write present after a restart.
  scrape    durable single-document writes (wrk, C connections) alternating without and with a Prometheus
            scrape and an I/O-metrics read every second: throughput ratio (target within 3%).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LUA = Path(__file__).resolve().parent / "wrk_docs.lua"


def request(method: str, url: str, body: object | None = None, timeout: float = 60) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Server:
    def __init__(self, binary: str, data_dir: Path, log: Path, extra: list[str]):
        self.binary, self.data_dir, self.log_path, self.extra = binary, data_dir, log, extra
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> str:
        log = open(self.log_path, "ab")
        offset = self.log_path.stat().st_size
        cmd = [self.binary, "serve", "--url", "http://127.0.0.1:0", "--data-dir", str(self.data_dir), "--log-requests", "false", *self.extra]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = self.log_path.read_bytes()[offset:].decode(errors="replace")
            m = re.search(r"Server available on: (http://\S+)", text)
            if m:
                self.url = m.group(1).rstrip("/")
                return self.url
            if self.proc.poll() is not None:
                raise SystemExit(f"corvid exited at start:\n{text[-2000:]}")
            time.sleep(0.05)
        raise SystemExit("corvid did not start in 120 s")

    def stop(self) -> tuple[float, int]:
        """SIGTERM; seconds until exit and the exit code."""
        assert self.proc is not None
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=120)
        return time.monotonic() - started, code


def open_database_files(pid: int, data_dir: Path) -> list[str]:
    held = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(data_dir / "databases")):
            held.append(target)
    return held


def create_databases(url: str, names: list[str], workers: int = 8) -> None:
    def create(name: str) -> None:
        code, body = request("PUT", f"{url}/admin/databases", {"DatabaseName": name})
        if code not in (200, 201):
            raise SystemExit(f"create {name}: {code} {body[:200]!r}")

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(create, names))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench_list(args, work: Path) -> dict:
    server = Server(args.binary, work / "list-data", work / "list.log", ["--disk-reserve-bytes", "0"])
    url = server.start()
    names = [f"db{i:05d}" for i in range(args.databases)]
    t0 = time.monotonic()
    create_databases(url, names)
    created = time.monotonic() - t0
    server.stop()
    url = server.start()
    assert server.proc is not None
    times = []
    for _ in range(args.list_requests):
        t = time.monotonic()
        code, body = request("GET", f"{url}/databases?namesOnly=false")
        times.append((time.monotonic() - t) * 1000)
        assert code == 200, body[:200]
    listed = len(json.loads(body)["Databases"])
    held = open_database_files(server.proc.pid, server.data_dir)
    server.stop()
    return {
        "databases": args.databases,
        "listed": listed,
        "create_seconds": round(created, 1),
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(percentile(times, 0.99), 2),
        "max_ms": round(max(times), 2),
        "database_files_open": len(held),
    }


INDEX_MAPS = [
    "map('Users', u => ({ Name: u.Name }))",
    "map('Users', u => ({ Age: u.Age }))",
    "map('Users', u => ({ Name: u.Name, Age: u.Age }))",
    "map('Users', u => ({ City: u.City }))",
    "map('Users', u => ({ Tags: u.Tags }))",
]


def bench_shutdown(args, work: Path) -> dict:
    server = Server(args.binary, work / "shutdown-data", work / "shutdown.log", ["--disk-reserve-bytes", "0"])
    url = server.start()
    names = [f"sd{i:04d}" for i in range(args.loaded)]
    create_databases(url, names)

    def prepare(name: str) -> None:
        indexes = [{"Name": f"Users/I{j}", "Maps": [m], "Type": "JavaScriptMap"} for j, m in enumerate(INDEX_MAPS)]
        code, body = request("PUT", f"{url}/databases/{name}/admin/indexes", {"Indexes": indexes})
        assert code in (200, 201), body[:300]
        commands = [
            {"Type": "PUT", "Id": f"users/{k}", "Document": {"Name": f"n{k}", "Age": k % 90, "City": "c", "Tags": ["a"], "@metadata": {"@collection": "Users"}}, "ChangeVector": None}
            for k in range(200)
        ]
        code, body = request("POST", f"{url}/databases/{name}/bulk_docs", {"Commands": commands})
        assert code == 201, body[:300]

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(prepare, names))
    acknowledged: list[tuple[str, str]] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w: int) -> None:
        k = 0
        while not stop.is_set():
            name = names[(w * 7 + k) % len(names)]
            doc_id = f"live/{w}-{k}"
            try:
                code, _ = request("PUT", f"{url}/databases/{name}/docs?id={doc_id}", {"Name": "w", "@metadata": {"@collection": "Users"}}, timeout=30)
            except OSError:
                return
            if code == 201:
                with lock:
                    acknowledged.append((name, doc_id))
            k += 1

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(8)]
    for t in threads:
        t.start()
    time.sleep(args.write_seconds)
    seconds, code = server.stop()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    url = server.start()
    missing = 0
    for name, doc_id in acknowledged:
        status, _ = request("GET", f"{url}/databases/{name}/docs?id={doc_id}")
        missing += status != 200
    server.stop()
    return {"databases": args.loaded, "indexes_each": len(INDEX_MAPS), "shutdown_seconds": round(seconds, 2), "exit_code": code,
            "acknowledged_writes": len(acknowledged), "missing_after_restart": missing}


def wrk_put(url: str, seconds: int, connections: int, body_file: Path, prefix: str) -> float:
    env = dict(os.environ, BENCH_MODE="put", BENCH_DB="bench", BENCH_BODY_FILE=str(body_file), BENCH_ID_PREFIX=prefix)
    out = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s", "-s", str(LUA), url],
                         env=env, capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m:
        raise SystemExit(f"wrk output not understood:\n{out}")
    return float(m.group(1))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_scrape(args, work: Path) -> dict:
    server = Server(args.binary, work / "scrape-data", work / "scrape.log", [])
    url = server.start()
    create_databases(url, ["bench"])
    body_file = work / "doc.json"
    body_file.write_text(json.dumps({"name": "x" * 40, "bio": "y" * 400, "age": 42}))
    plain, scraped = [], []
    cpu_plain, cpu_scraped = [], []  # server CPU ms per 1,000 writes: the disk's regime moves throughput far more
    scrapes = 0
    for rep in range(args.repeats):
        for with_scrape in ((False, True) if rep % 2 == 0 else (True, False)):
            stop = threading.Event()

            def scraper() -> None:
                nonlocal scrapes
                while not stop.wait(1.0):
                    request("GET", f"{url}/admin/monitoring/v1/prometheus")
                    request("GET", f"{url}/databases/bench/debug/io-metrics")
                    scrapes += 1

            thread = threading.Thread(target=scraper, daemon=True)
            if with_scrape:
                thread.start()
            assert server.proc is not None
            cpu_before = cpu_seconds(server.proc.pid)
            rate = wrk_put(url, args.seconds, args.connections, body_file, f"r{rep}-{int(with_scrape)}-")
            cpu_per_k = (cpu_seconds(server.proc.pid) - cpu_before) * 1e6 / (rate * args.seconds)
            stop.set()
            if with_scrape:
                thread.join()
                scraped.append(rate)
                cpu_scraped.append(cpu_per_k)
            else:
                plain.append(rate)
                cpu_plain.append(cpu_per_k)
            print(f"  scrape={with_scrape!s:5} rep {rep}: {rate:,.0f} writes/s, server CPU {cpu_per_k:.1f} ms per 1,000 writes", flush=True)
    server.stop()
    return {"connections": args.connections, "seconds": args.seconds, "repeats": args.repeats,
            "plain_median": round(statistics.median(plain)), "scraped_median": round(statistics.median(scraped)),
            "ratio": round(statistics.median(scraped) / statistics.median(plain), 3), "plain": [round(x) for x in plain],
            "scraped": [round(x) for x in scraped], "scrapes": scrapes,
            "cpu_ms_per_1k_plain": round(statistics.median(cpu_plain), 2), "cpu_ms_per_1k_scraped": round(statistics.median(cpu_scraped), 2),
            "cpu_ratio": round(statistics.median(cpu_scraped) / statistics.median(cpu_plain), 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", default="list,shutdown,scrape")
    parser.add_argument("--databases", type=int, default=1000)
    parser.add_argument("--list-requests", type=int, default=200)
    parser.add_argument("--loaded", type=int, default=100)
    parser.add_argument("--write-seconds", type=float, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(args.work)
    results = {}
    for step in args.steps.split(","):
        print(f"== {step}", flush=True)
        results[step] = {"list": bench_list, "shutdown": bench_shutdown, "scrape": bench_scrape}[step](args, work)
        print(json.dumps(results[step]), flush=True)
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    main()
