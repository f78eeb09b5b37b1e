"""Shared pieces of the search benchmarks S4 and S5 (bench/s4/s4.py, bench/s5/s5.py). Python stdlib only.

- HTTP helpers (blocking http.client and a minimal asyncio HTTP/1.1 keep-alive client)
- Corvid: streamed bulk insert, static index creation, cold-build timing from /indexes/stats, queries
- OpenSearch: index creation, parallel _bulk loading, refresh
- a paced asyncio writer (N updates per second) that can track every k-th write until a query sees it
  (write-to-visible lag)
- percentiles, wrk request-body files
"""
import asyncio
import gc
import http.client
import json
import queue
import threading
import time
import urllib.parse


def pct(v, p):
    """Nearest-rank percentile of an unsorted list (None when empty)."""
    if not v:
        return None
    v = sorted(v)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return round(v[k], 3)


def short(b, n=400):
    s = b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else str(b)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} bytes)"


# ---- blocking HTTP ---------------------------------------------------------------------------------
def conn(url, timeout=600):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)


def req(c, method, path, body=None, ctype="application/json"):
    data = None if body is None else (body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode())
    c.request(method, path, body=data, headers={"Content-Type": ctype} if data is not None else {})
    r = c.getresponse()
    return r.status, r.read()


def corvid_query(c, db, rql, params=None, wait=False):
    body = {"Query": rql, "QueryParameters": params or {}, "WaitForNonStaleResults": wait}
    t0 = time.perf_counter()
    status, data = req(c, "POST", f"/databases/{db}/queries", body)
    ms = (time.perf_counter() - t0) * 1000.0
    try:
        j = json.loads(data)
    except ValueError:
        j = None
    return status, j, ms, data


# ---- Corvid loading and indexes ------------------------------------------------------------------------
def corvid_bulk_insert(url, db, path, op_id=1, chunk=1 << 20):
    """Stream one bulk-insert body file (a JSON array of {"Id","Type":"PUT","Document"}) with chunked encoding."""
    c = conn(url)
    c.putrequest("POST", f"/databases/{db}/bulk_insert?id={op_id}&skipOverwriteIfUnchanged=false")
    c.putheader("Content-Type", "application/json")
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    t0 = time.perf_counter()
    sent = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            c.send(b"%x\r\n" % len(b) + b + b"\r\n")
            sent += len(b)
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    body = r.read()
    return {"status": r.status, "seconds": round(time.perf_counter() - t0, 3), "bytes": sent, "reply": short(body, 300)}


def index_stats(c, db):
    status, data = req(c, "GET", f"/databases/{db}/indexes/stats")
    if status != 200:
        return []
    return json.loads(data).get("Results", [])


def corvid_create_index(url, db, definition, count, collection, timeout=3600, poll_ms=50, map_reduce=False):
    """PUT one static index over existing documents and poll /indexes/stats until it has mapped `count`
    documents and is not stale. Returns build seconds, docs/s and progress samples."""
    c = conn(url)
    t0 = time.perf_counter()
    status, data = req(c, "PUT", f"/databases/{db}/admin/indexes", {"Indexes": [definition]})
    if status not in (200, 201):
        return {"index": definition["Name"], "error": f"PUT /databases/{db}/admin/indexes -> HTTP {status}: {short(data)}"}
    samples, last, built = [], None, None
    while time.perf_counter() - t0 < timeout:
        try:
            st = [i for i in index_stats(c, db) if i["Name"] == definition["Name"]]
        except Exception:  # noqa: BLE001
            c = conn(url)
            st = []
        now = time.perf_counter() - t0
        if st:
            i = st[0]
            coll = (i.get("Collections") or {}).get(collection, {})
            last = {k: i.get(k) for k in ("EntriesCount", "MapSuccesses", "MapErrors", "ReduceSuccesses", "IsStale",
                                           "State", "Status", "WorkerStatus", "ErrorsCount")}
            last["DocumentLag"] = coll.get("DocumentLag")
            mapped = i.get("MapSuccesses") or 0
            if not samples or now - samples[-1][0] >= 1.0:
                samples.append((round(now, 2), mapped))
            done = (not i.get("IsStale")) and coll.get("DocumentLag", 1) == 0 and mapped >= count
            if not map_reduce:
                done = done and i.get("EntriesCount") == count
            if done:
                built = now
                break
        time.sleep(poll_ms / 1000.0)
    return {"index": definition["Name"], "build_s": round(built, 3) if built else None,
            "docs_per_s": round(count / built, 1) if built else None, "progress": samples[-15:], "last_stats": last}


def corvid_wait_nonstale(url, db, names, timeout=600):
    c = conn(url)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        st = {i["Name"]: i for i in index_stats(c, db)}
        if all(n in st and not st[n].get("IsStale") for n in names):
            return round(time.perf_counter() - t0, 3)
        time.sleep(0.05)
    return None


# ---- OpenSearch -------------------------------------------------------------------------------------
def os_bulk_load(url, index, path, concurrency=2, docs_per_request=5000):
    """POST an NDJSON bulk file (action + source lines) in chunks of docs_per_request documents from
    `concurrency` threads. Returns seconds, errors."""
    q = queue.Queue()
    with open(path, "rb") as f:
        buf, n = [], 0
        for line in f:
            buf.append(line)
            if len(buf) == 2 * docs_per_request:
                q.put(b"".join(buf)); buf = []; n += 1
        if buf:
            q.put(b"".join(buf))
    errors, lock, lat = [], threading.Lock(), []

    def worker():
        c = conn(url)
        while True:
            try:
                body = q.get_nowait()
            except queue.Empty:
                return
            t = time.perf_counter()
            status, data = req(c, "POST", f"/{index}/_bulk", body, "application/x-ndjson")
            with lock:
                lat.append(time.perf_counter() - t)
                if status != 200:
                    errors.append(f"POST /{index}/_bulk -> HTTP {status}: {short(data)}")
                elif b'"errors":true' in data[:200]:
                    errors.append(f"POST /{index}/_bulk -> item errors: {short(data, 600)}")
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return {"seconds": round(time.perf_counter() - t0, 3), "requests": len(lat), "errors": errors[:3],
            "error_count": len(errors), "request_p50_ms": round(pct(lat, 50) * 1000, 1) if lat else None}


# ---- asyncio HTTP client ------------------------------------------------------------------------------
class AConn:
    def __init__(self, host, port):
        self.host, self.port, self.r, self.w = host, port, None, None

    async def request(self, method, path, body=b""):
        if self.w is None:
            self.r, self.w = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        self.w.write(head + body)
        await self.w.drain()
        status_line = await self.r.readline()
        if not status_line:
            self.w = None
            raise ConnectionError("connection closed")
        status = int(status_line.split()[1])
        length, chunked = None, False
        while True:
            line = await self.r.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            k = k.strip().lower()
            if k == "content-length":
                length = int(v.strip())
            elif k == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        if chunked:
            parts = []
            while True:
                size = int((await self.r.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.r.readline()
                    break
                parts.append(await self.r.readexactly(size))
                await self.r.readline()
            data = b"".join(parts)
        else:
            data = await self.r.readexactly(length or 0)
        return status, data

    def close(self):
        if self.w is not None:
            self.w.close()
            self.w = None


async def paced_writes(url, rate, duration, make_write, make_poll=None, track_every=0, writers=32, pollers=8,
                       poll_ms=2.0, grace=10.0, on_ack=None):
    """Issue make_write(n) -> (method, path, body) at `rate` per second for `duration` seconds over `writers`
    keep-alive connections. When track_every > 0, every track_every-th acknowledged write is polled with
    make_poll(n) -> (method, path, body, visible(status, data) -> bool) every poll_ms until it is visible.
    on_ack(n) is called for every 2xx write. Returns a dict of rates, latencies and lags (ms)."""
    u = urllib.parse.urlsplit(url)
    wpool, qpool = asyncio.Queue(), asyncio.Queue()
    for _ in range(writers):
        wpool.put_nowait(AConn(u.hostname, u.port))
    for _ in range(pollers):
        qpool.put_nowait(AConn(u.hostname, u.port))
    lags, lags_send, put_ms, errors, invisible, uncertain = [], [], [], [], [], []
    qcount = [0]
    ok = [0]
    stop_at = time.perf_counter() + duration
    poll_deadline = stop_at + grace

    async def poll(n, t_send, t_ack):
        method, path, body, visible = make_poll(n)
        while time.perf_counter() < poll_deadline:
            c = await qpool.get()
            try:
                status, data = await c.request(method, path, body)
            except Exception as e:  # noqa: BLE001
                c.close()
                status, data = -1, str(e).encode()
            finally:
                qpool.put_nowait(c)
            qcount[0] += 1
            now = time.perf_counter()
            if status != 200:
                errors.append(f"{method} {path} {short(body, 200)} -> HTTP {status}: {short(data, 300)}")
                await asyncio.sleep(0.05)
                continue
            if visible(status, data):
                lags.append((now - t_ack) * 1000.0)
                lags_send.append((now - t_send) * 1000.0)
                return
            await asyncio.sleep(poll_ms / 1000.0)
        invisible.append(n)

    async def write(n, track):
        method, path, body = make_write(n)
        c = await wpool.get()
        t_send = time.perf_counter()
        try:
            status, data = await c.request(method, path, body)
        except Exception as e:  # noqa: BLE001
            c.close()
            status, data = -1, str(e).encode()
            uncertain.append(n)
        finally:
            wpool.put_nowait(c)
        t_ack = time.perf_counter()
        put_ms.append((t_ack - t_send) * 1000.0)
        if status not in (200, 201):
            errors.append(f"{method} {path} -> HTTP {status}: {short(data, 300)}")
            return
        ok[0] += 1
        if on_ack:
            on_ack(n)
        if track:
            await poll(n, t_send, t_ack)

    # The harness must not add its own pauses to the lags it measures: Python's cyclic garbage collector
    # stopped this event loop for 15-50 ms a few times per 30 s run (full collections over the growing heap of
    # finished tasks), and gathering every task of the run at the end took ~100 ms while the last polls were
    # still waiting. So the collector is off while writes run (reference counting still frees almost
    # everything) and only the tasks still running are awaited.
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        n, tasks, behind = 0, set(), 0
        while True:
            now = time.perf_counter()
            if now >= stop_at:
                break
            due = t0 + n / rate
            if due > now:
                await asyncio.sleep(due - now)
                continue
            if now - due > 0.05:
                behind += 1
            task = asyncio.ensure_future(write(n, track_every > 0 and n % track_every == 0))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            n += 1
        while tasks:
            await asyncio.gather(*list(tasks))
        wall = time.perf_counter() - t0
    finally:
        gc.enable()
    for c in list(wpool._queue) + list(qpool._queue):  # noqa: SLF001
        c.close()
    out = {"writes": n, "acked": ok[0], "write_rate": round(ok[0] / duration, 1), "duration_s": duration,
           "wall_s": round(wall, 2), "put_p50_ms": pct(put_ms, 50), "put_p99_ms": pct(put_ms, 99),
           "late_sends": behind, "errors": errors[:5], "error_count": len(errors), "uncertain": len(uncertain)}
    if track_every:
        out.update({"tracked": len(lags) + len(invisible), "visible": len(lags), "never_visible": len(invisible),
                    "never_visible_n": invisible[:5], "lag_p50_ms": pct(lags, 50), "lag_p90_ms": pct(lags, 90),
                    "lag_p99_ms": pct(lags, 99), "lag_max_ms": pct(lags, 100),
                    "lag_from_send_p50_ms": pct(lags_send, 50), "lag_from_send_p99_ms": pct(lags_send, 99),
                    "poll_queries": qcount[0], "poll_ms": poll_ms, "track_every": track_every})
    return out


def write_bodies(path, bodies):
    """One request body a line, for bench/lib/wrk_bodies.lua (bodies must not contain newlines)."""
    with open(path, "w", encoding="utf-8") as f:
        for b in bodies:
            s = b if isinstance(b, str) else json.dumps(b, separators=(",", ":"))
            assert "\n" not in s
            f.write(s + "\n")
