#!/usr/bin/env python3
"""Time-series benchmark driver (bench/run-timeseries.sh): per-minute values of SERIES series over DAYS days,
appended to Corvid (bulk insert stream; POST /timeseries batches) and to PostgreSQL (COPY; multi-row INSERT
batches, one transaction each), then storage bytes per value and a 1-hour bucket aggregation of one series'
whole range (min/max/sum/avg/count per hour) p50 over several series.

Corvid's aggregation is an RQL `timeseries()` select with `group by 1h` in the server; PostgreSQL's is
`date_trunc('hour', ts)` with GROUP BY in the server. Prints one JSON record per
measurement on stdout.

Subcommands:  corvid URL DB   |   postgres PSQL_ARGS...
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.client import HTTPConnection
from datetime import datetime, timedelta, timezone

SERIES = int(os.environ.get("TS_SERIES", "20"))
DAYS = int(os.environ.get("TS_DAYS", "7"))
BATCH = int(os.environ.get("TS_BATCH", "1000"))
THREADS = int(os.environ.get("TS_THREADS", "4"))
AGG_SAMPLES = int(os.environ.get("TS_AGG_SAMPLES", "10"))
SEED = int(os.environ.get("SEED", "42"))
BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)
BASE_MS = int(BASE.timestamp() * 1000)
PER_SERIES = DAYS * 24 * 60


def values(series: int) -> list[float]:
    """A sensor-like walk: two decimals, slowly drifting."""
    rnd = random.Random(SEED * 100_003 + series)
    v, out = 20.0, []
    for _ in range(PER_SERIES):
        v = min(60.0, max(-20.0, v + rnd.uniform(-0.3, 0.3)))
        out.append(round(v, 2))
    return out


def record(**fields) -> None:
    print(json.dumps(fields), flush=True)


def http(method: str, url: str, body: bytes | None = None) -> bytes:
    request = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as r:
        return r.read()


def disk_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.stat(os.path.join(root, f)).st_blocks * 512
    return total


def corvid(url: str, db: str, data_dir: str) -> None:
    base = f"{url}/databases/{db}"
    docs = [{"Id": f"sensors/{s}", "Type": "PUT", "Document": {"Name": f"s{s}", "@metadata": {"@collection": "Sensors"}}}
            for s in range(2 * SERIES)]
    http("POST", f"{base}/bulk_docs", json.dumps({"Commands": docs}).encode())
    before = disk_bytes(data_dir)

    # Bulk insert: one stream, commands of BATCH appends each (as the clients batch them).
    parts = []
    for s in range(SERIES):
        vals = values(s)
        for start in range(0, PER_SERIES, BATCH):
            appends = ",".join(f"[{BASE_MS + 60_000 * i},1,{vals[i]}]" for i in range(start, min(start + BATCH, PER_SERIES)))
            parts.append(f'{{"Id":"sensors/{s}","Type":"TimeSeriesBulkInsert","TimeSeries":{{"Name":"Temperature","TimeFormat":"UnixTimeInMs","Appends":[{appends}]}}}}')
    body = ("[" + ",".join(parts) + "]").encode()
    t0 = time.perf_counter()
    http("POST", f"{base}/bulk_insert?id=1", body)
    elapsed = time.perf_counter() - t0
    n = SERIES * PER_SERIES
    record(system="corvid", step="append_bulk", values=n, seconds=round(elapsed, 3), values_per_s=round(n / elapsed))
    after = disk_bytes(data_dir)
    record(system="corvid", step="bytes_per_value", values=n, bytes=after - before, bytes_per_value=round((after - before) / n, 2))

    # Batches: POST /timeseries, BATCH values each, THREADS writers on the other half of the series, each on one
    # keep-alive connection. The bodies are built before the clock starts, as PostgreSQL's SQL scripts are.
    stamps = [(BASE + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%S.0000000Z") for i in range(PER_SERIES)]

    def bodies(series: list[int]) -> list[tuple[str, bytes]]:
        out = []
        for s in series:
            vals = values(s)
            for start in range(0, PER_SERIES, BATCH):
                appends = ",".join(f'{{"Timestamp":"{stamps[i]}","Values":[{vals[i]}]}}' for i in range(start, min(start + BATCH, PER_SERIES)))
                out.append((f"/databases/{db}/timeseries?docId=sensors/{s}", f'{{"Name":"Temperature","Appends":[{appends}]}}'.encode()))
        return out

    def writer(requests: list[tuple[str, bytes]]) -> None:
        host = urllib.parse.urlsplit(url)
        connection = HTTPConnection(host.hostname, host.port, timeout=120)
        for path, body in requests:
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            assert response.status < 300, (response.status, path)
        connection.close()

    work = [bodies(list(range(SERIES + t, 2 * SERIES, THREADS))) for t in range(THREADS)]
    threads = [threading.Thread(target=writer, args=(w,)) for w in work]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    record(system="corvid", step="append_batches", values=n, seconds=round(elapsed, 3), values_per_s=round(n / elapsed),
           batch=BATCH, threads=THREADS)

    # Aggregation: 1-hour buckets of one series' whole range, in the server (RQL).
    times = []
    check = None
    for k in range(AGG_SAMPLES):
        s = k % SERIES
        query = (f"from Sensors where id() = 'sensors/{s}' "
                 "select timeseries(from Temperature group by 1h select min(), max(), sum(), avg(), count())")
        t0 = time.perf_counter()
        result = json.loads(http("POST", f"{base}/queries", json.dumps({"Query": query}).encode()))
        times.append(time.perf_counter() - t0)
        if k == 0:
            check = result["Results"][0]["Results"]
    expected_buckets = PER_SERIES // 60
    assert check is not None and len(check) == expected_buckets, f"{len(check or [])} buckets, expected {expected_buckets}"
    record(system="corvid", step="aggregate_1h", samples=len(times), p50_ms=round(statistics.median(times) * 1000, 2),
           buckets=expected_buckets, how="RQL select timeseries(... group by 1h ...)")


def postgres(psql: list[str]) -> None:
    def run(sql: str) -> str:
        return subprocess.run(psql + ["-At", "-c", sql], check=True, capture_output=True, text=True).stdout

    run("CREATE TABLE ts(series int NOT NULL, ts timestamptz NOT NULL, value double precision NOT NULL, PRIMARY KEY (series, ts))")
    n = SERIES * PER_SERIES
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        for s in range(SERIES):
            for i, v in enumerate(values(s)):
                f.write(f"{s},{(BASE + timedelta(minutes=i)).isoformat()},{v}\n")
        csv = f.name
    t0 = time.perf_counter()
    with open(csv) as data:
        subprocess.run(psql + ["-c", "COPY ts FROM STDIN WITH (FORMAT csv)"], stdin=data, check=True, capture_output=True)
    elapsed = time.perf_counter() - t0
    os.unlink(csv)
    record(system="postgres", step="append_bulk", values=n, seconds=round(elapsed, 3), values_per_s=round(n / elapsed))
    size = int(run("SELECT pg_total_relation_size('ts')").strip())
    record(system="postgres", step="bytes_per_value", values=n, bytes=size, bytes_per_value=round(size / n, 2))

    # Batches: THREADS psql sessions, one multi-row INSERT transaction per BATCH values.
    def writer(series: list[int], path: str) -> None:
        with open(path, "w") as f:
            for s in series:
                vals = values(s)
                for start in range(0, PER_SERIES, BATCH):
                    rows = ",".join(f"({s},'{(BASE + timedelta(minutes=i)).isoformat()}',{vals[i]})"
                                    for i in range(start, min(start + BATCH, PER_SERIES)))
                    f.write(f"BEGIN;INSERT INTO ts VALUES {rows};COMMIT;\n")

    scripts = []
    for t in range(THREADS):
        path = tempfile.mktemp(suffix=".sql")
        writer(list(range(SERIES + t, 2 * SERIES, THREADS)), path)
        scripts.append(path)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(psql + ["-f", p], stdout=subprocess.DEVNULL) for p in scripts]
    for p in procs:
        assert p.wait() == 0
    elapsed = time.perf_counter() - t0
    for p in scripts:
        os.unlink(p)
    record(system="postgres", step="append_batches", values=n, seconds=round(elapsed, 3), values_per_s=round(n / elapsed),
           batch=BATCH, threads=THREADS)

    run("VACUUM ANALYZE ts")
    # Timed by psql (`\timing`): the server's time plus the transfer, without psql's start-up.
    queries = "\\timing on\n" + "".join(
        f"SELECT date_trunc('hour', ts) AS h, min(value), max(value), sum(value), avg(value), count(*) FROM ts "
        f"WHERE series = {k % SERIES} GROUP BY h ORDER BY h;\n"
        for k in range(AGG_SAMPLES)
    )
    out = subprocess.run(psql + ["-At"], input=queries, check=True, capture_output=True, text=True).stdout
    times = [float(line.split()[1]) / 1000 for line in out.splitlines() if line.startswith("Time: ")]
    rows = [line for line in out.splitlines() if not line.startswith("Time: ") and line.strip() and "|" in line]
    assert len(times) == AGG_SAMPLES and len(rows) == AGG_SAMPLES * (PER_SERIES // 60), (len(times), len(rows))
    record(system="postgres", step="aggregate_1h", samples=len(times), p50_ms=round(statistics.median(times) * 1000, 2),
           buckets=PER_SERIES // 60, how="date_trunc GROUP BY, psql \\timing")


if __name__ == "__main__":
    if sys.argv[1] == "corvid":
        corvid(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "postgres":
        postgres(sys.argv[2:])
    else:
        sys.exit(__doc__)
