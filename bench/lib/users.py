#!/usr/bin/env python3
"""Seeded "Users" documents and the Corvid-side drivers of the query scenario (bench/run-queries.sh).

Python stdlib only. Document i of seed s is a pure function of (s, i), so Corvid and PostgreSQL hold
byte-identical JSON.

  {"Name": "Grace Hopper" (5,000 names, mixed case), "Age": 0-99, "City": one of 200, "Score": double,
   "Tags": 1-3 of 20, "CreatedAt": ISO-8601, "@metadata": {"@collection": "Users"}}

Subcommands (each prints one JSON object on stdout unless said otherwise)
  values --out-dir D                 write D/cities.txt and D/names.txt (one value a line)
  prepare --count N --out-dir D      write D/users.tsv (PostgreSQL COPY text: id<TAB>body) and
                                     D/batches.ndjson (one bulk_docs request body a line)
  corvid-load --url U --file F       POST the prepared bulk_docs bodies with --concurrency uploaders
  cold-index --url U --count N       first `from Users where Age = 30` (WaitForNonStaleResults=false)
                                     while polling /indexes/stats until the new index holds N entries
  warm --url U --count N             first query of each benchmark shape (may create/merge indexes),
                                     then wait until every index is caught up
  check --url U --psql-cmd ...       the same queries on both systems for a few parameters: totals and
                                     sort keys must agree; prints {"checked": n, "mismatches": [...]}
  lag --url U --duration S --rate R  write-to-visible lag: PUT users/lag-<n> at R/s (City "lag-<n>"),
                                     poll `from Users where City = $p0` until each tracked write shows
"""
import argparse
import asyncio
import http.client
import json
import queue
import random
import subprocess
import sys
import threading
import time
import urllib.parse

# ---- the data -----------------------------------------------------------------------------
_FIRST = ["Ada", "Alan", "Barbara", "Brian", "Claude", "Donald", "Edsger", "Frances", "Grace", "Guido",
          "Hedy", "Ivan", "John", "Ken", "Leslie", "Linus", "Margaret", "Niklaus", "Radia", "Rob",
          "Sophie", "Tim", "Whitfield", "Yukihiro", "Anita", "Bjarne", "Carol", "Dennis", "Erich", "Fran",
          "Gordon", "Hal", "Ingrid", "Jean", "Karen", "Larry", "Mary", "Nancy", "Ole", "Peter", "Quinn",
          "Rosa", "Shafi", "Tony", "Ursula", "Vint", "Wendy", "Xavier", "Yoshua", "Zoe"]
_LAST = ["Lovelace", "Turing", "Liskov", "Kernighan", "Shannon", "Knuth", "Dijkstra", "Allen", "Hopper",
         "Rossum", "Lamarr", "Sutherland", "McCarthy", "Thompson", "Lamport", "Torvalds", "Hamilton",
         "Wirth", "Perlman", "Pike", "Wilson", "Berners-Lee", "Diffie", "Matsumoto", "Borg", "Stroustrup",
         "Shaw", "Ritchie", "Gamma", "Allen", "Moore", "Abelson", "Page", "Sammet", "Ellis", "Wall",
         "Keller", "Lynch", "Dahl", "Naur", "Codd", "Hoare", "Goldwasser", "Hoare", "LeGuin", "Cerf",
         "Hall", "Leroy", "Bengio", "Ohm", "Backus", "Iverson", "Cray", "Engelbart", "Floyd", "Gray",
         "Hartmanis", "Kahan", "Karp", "Kay", "Milner", "Minsky", "Newell", "Pnueli", "Rabin", "Reddy",
         "Rivest", "Scott", "Simon", "Stearns", "Tarjan", "Ullman", "Valiant", "Yao", "Zuse", "Babbage",
         "Boole", "Church", "Godel", "Hollerith", "Kleene", "Markov", "Neumann", "Post", "Shamir", "Adleman",
         "Hellman", "Merkle", "Bellman", "Chomsky", "Feigenbaum", "Hopcroft", "Kildall", "Metcalfe",
         "Noyce", "Olsen", "Postel", "Raymond", "Stallman", "Tanenbaum", "Woz"]
_SYL = ["ber", "lin", "ost", "ra", "ka", "mo", "nes", "dor", "vik", "sal", "ta", "por", "gen", "ham",
        "ville", "ford", "burg", "ay", "el", "quin"]
TAGS = ["admin", "beta", "billing", "churn-risk", "enterprise", "trial", "vip", "newsletter", "mobile",
        "desktop", "api", "partner", "eu", "us", "apac", "support", "sso", "legacy", "student", "nonprofit"]


def _names():
    out, seen = [], set()
    # 5,000 distinct full names, mixed case: most "First Last", some lower-case, some upper-case
    r = random.Random(7)
    for f in _FIRST:
        for l in _LAST:
            n = f"{f} {l}"
            if n in seen:
                continue
            seen.add(n)
            v = r.random()
            out.append(n.lower() if v < 0.15 else n.upper() if v < 0.25 else n)
    return out[:5000]


def _cities():
    r = random.Random(11)
    out, seen = [], set()
    while len(out) < 200:
        n = "".join(r.choice(_SYL) for _ in range(r.randint(2, 3))).capitalize()
        if n.lower() in seen:
            continue
        seen.add(n.lower())
        out.append(n)
    return out


NAMES = _names()
CITIES = _cities()


def make_user(seed, i):
    r = random.Random(seed * 1_000_003 + i)
    doc = {
        "Name": r.choice(NAMES),
        "Age": r.randint(0, 99),
        "City": r.choice(CITIES),
        "Score": round(r.uniform(0, 1000), 4),
        "Tags": r.sample(TAGS, r.randint(1, 3)),
        "CreatedAt": "20%02d-%02d-%02dT%02d:%02d:%02d.0000000Z" % (
            r.randint(15, 25), r.randint(1, 12), r.randint(1, 28), r.randint(0, 23), r.randint(0, 59),
            r.randint(0, 59)),
        "@metadata": {"@collection": "Users"},
    }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _copy_escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def cmd_values(a):
    with open(f"{a.out_dir}/cities.txt", "w") as f:
        f.write("\n".join(CITIES) + "\n")
    with open(f"{a.out_dir}/names.txt", "w") as f:
        f.write("\n".join(NAMES) + "\n")
    print(json.dumps({"cities": len(CITIES), "names": len(NAMES)}))


def cmd_prepare(a):
    t0 = time.perf_counter()
    nbytes = 0
    with open(f"{a.out_dir}/users.tsv", "w", encoding="utf-8") as tsv, \
            open(f"{a.out_dir}/batches.ndjson", "w", encoding="utf-8") as nd:
        i = 0
        while i < a.count:
            n = min(a.batch, a.count - i)
            parts, rows = [], []
            for k in range(i, i + n):
                d = make_user(a.seed, k)
                nbytes += len(d.encode())
                rows.append(f"users/{k}\t{_copy_escape(d)}\n")
                parts.append('{"Id":"users/%d","ChangeVector":null,"Type":"PUT","Document":%s}' % (k, d))
            tsv.write("".join(rows))
            nd.write('{"Commands":[' + ",".join(parts) + "]}\n")
            i += n
    print(json.dumps({"docs": a.count, "json_bytes": nbytes, "avg_doc_bytes": round(nbytes / max(a.count, 1), 1),
                      "seconds": round(time.perf_counter() - t0, 2)}))


# ---- tiny HTTP helpers ----------------------------------------------------------------------------
def _conn(url, timeout=600):
    u = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)


def _req(conn, method, path, body=None):
    data = None if body is None else (body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode())
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    resp = conn.getresponse()
    return resp.status, resp.read()


def _query(conn, db, rql, params=None, wait=False):
    body = {"Query": rql, "QueryParameters": params or {}, "WaitForNonStaleResults": wait}
    t0 = time.perf_counter()
    status, data = _req(conn, "POST", f"/databases/{db}/queries", body)
    return status, data, (time.perf_counter() - t0) * 1000.0, body


def _short(b, n=400):
    s = b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else str(b)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} bytes)"


def cmd_corvid_load(a):
    bodies = [line.rstrip("\n").encode("utf-8") for line in open(a.file, encoding="utf-8") if line.strip()]
    q = queue.Queue()
    for i, b in enumerate(bodies):
        q.put((i, b))
    lat, errors, lock = [], [], threading.Lock()
    path = f"/databases/{a.db}/bulk_docs"

    def worker():
        c = _conn(a.url)
        while True:
            try:
                i, b = q.get_nowait()
            except queue.Empty:
                return
            t = time.perf_counter()
            try:
                status, data = _req(c, "POST", path, b)
            except Exception as e:  # noqa: BLE001
                status, data = -1, str(e).encode()
                c = _conn(a.url)
            dt = time.perf_counter() - t
            with lock:
                lat.append(dt)
                if status not in (200, 201):
                    errors.append(f"POST {path} (batch {i}, {len(b)} bytes) -> HTTP {status}: {_short(data)}")
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(a.concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    lat.sort()
    docs = a.count if a.count else None
    print(json.dumps({"batches": len(bodies), "seconds": round(dt, 3), "docs": docs,
                      "docs_per_s": round(docs / dt, 1) if docs else None, "concurrency": a.concurrency,
                      "batch_p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
                      "batch_max_ms": round(lat[-1] * 1000, 1) if lat else None,
                      "errors": errors[:5], "error_count": len(errors)}))
    if errors:
        sys.exit(1)


def _index_stats(conn, db):
    status, data = _req(conn, "GET", f"/databases/{db}/indexes/stats")
    if status != 200:
        return None
    return json.loads(data).get("Results", [])


def cmd_cold_index(a):
    """Issue the first Age query and poll the index stats concurrently."""
    rql = "from Users where Age = 30"
    result = {}
    done = threading.Event()

    def first_query():
        c = _conn(a.url)
        status, data, ms, body = _query(c, a.db, rql, None, False)
        result.update(status=status, ms=ms, body=body, data=data, t_end=time.perf_counter())
        done.set()

    before = {i["Name"] for i in (_index_stats(_conn(a.url), a.db) or [])}
    t0 = time.perf_counter()
    th = threading.Thread(target=first_query)
    th.start()
    pc = _conn(a.url)
    t_built, name, samples, last = None, None, [], None
    deadline = t0 + a.timeout
    while time.perf_counter() < deadline:
        try:
            stats = _index_stats(pc, a.db) or []
        except Exception:  # noqa: BLE001
            pc = _conn(a.url)
            stats = []
        now = time.perf_counter() - t0
        new = [i for i in stats if i["Name"] not in before and i["Name"].startswith("Auto/Users/")]
        if new:
            i = new[0]
            name = i["Name"]
            last = {"EntriesCount": i.get("EntriesCount"), "IsStale": i.get("IsStale"),
                    "LastProcessedDocumentEtag": (i.get("Collections") or {}).get("Users", {}).get("LastProcessedDocumentEtag")}
            if not samples or now - samples[-1][0] >= 1.0:
                samples.append((round(now, 2), last["EntriesCount"]))
            if i.get("EntriesCount") == a.count and not i.get("IsStale"):
                t_built = now
                break
        time.sleep(a.poll_ms / 1000.0)
    th.join(timeout=max(1.0, deadline - time.perf_counter()))
    out = {"query": rql, "index": name, "build_s": round(t_built, 3) if t_built is not None else None,
           "docs_per_s": round(a.count / t_built, 0) if t_built else None, "poll_ms": a.poll_ms,
           "progress": samples[-12:], "last_stats": last}
    if result:
        out["first_query_ms"] = round(result["ms"], 1)
        out["first_query_status"] = result["status"]
        try:
            j = json.loads(result["data"])
            out["first_query"] = {k: j.get(k) for k in ("TotalResults", "IsStale", "IndexName", "DurationInMs")}
            out["first_query"]["Results"] = len(j.get("Results") or [])
        except ValueError:
            out["first_query"] = {"raw": _short(result["data"])}
        out["first_query_request"] = result["body"]
    else:
        out["first_query_ms"] = None
        out["first_query_status"] = "no reply within timeout"
    print(json.dumps(out))


def _wait_indexes(conn, db, count, timeout):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        stats = _index_stats(conn, db) or []
        users = [i for i in stats if i["Name"].startswith("Auto/Users/")]
        if users and all(not i.get("IsStale") and i.get("EntriesCount") == count for i in users):
            return time.perf_counter() - t0, stats
        time.sleep(0.1)
    return None, _index_stats(conn, db)


# query shapes shared with the wrk Lua script and the pgbench scripts
SHAPES = {
    "eq": "from Users where City = $p0",
    "range": "from Users where Age between $p0 and $p1 limit 30",
    "sorted": "from Users where City = $p0 order by Score as double desc limit 30",
    "name": "from Users order by Name limit 30",
    "page": "from Users order by Age as long limit 30 offset $p0",
}


def _params(shape, r, count):
    if shape in ("eq", "sorted"):
        return {"p0": r.choice(CITIES)}
    if shape == "range":
        lo = r.randint(0, 95)
        return {"p0": lo, "p1": lo + r.randint(0, 4)}
    if shape == "page":
        return {"p0": r.randint(0, count // 2)}
    return {}


def cmd_warm(a):
    c = _conn(a.url)
    out = {"first": []}
    r = random.Random(1)
    for shape in a.shapes.split(","):
        params = _params(shape, r, a.count)
        status, data, ms, body = _query(c, a.db, SHAPES[shape], params)
        rec = {"shape": shape, "status": status, "ms": round(ms, 1)}
        try:
            j = json.loads(data)
            rec.update(index=j.get("IndexName"), total=j.get("TotalResults"), stale=j.get("IsStale"))
        except ValueError:
            rec["raw"] = _short(data)
        if status != 200:
            rec["request"] = body
            rec["response"] = _short(data)
        out["first"].append(rec)
    waited, stats = _wait_indexes(c, a.db, a.count, a.timeout)
    out["wait_s"] = round(waited, 2) if waited is not None else None
    out["indexes"] = [{"name": i["Name"], "entries": i.get("EntriesCount"), "stale": i.get("IsStale")}
                      for i in (stats or [])]
    print(json.dumps(out))


# ---- cross-check against PostgreSQL -----------------------------------------------------------------
PG_SQL = {
    "eq": ("SELECT count(*) FROM users WHERE body->>'City' = {p0}", None),
    "range": ("SELECT count(*) FROM users WHERE (body->>'Age')::int BETWEEN {p0} AND {p1}",
              "SELECT (body->>'Age')::int FROM users WHERE (body->>'Age')::int BETWEEN {p0} AND {p1} LIMIT 30"),
    "sorted": ("SELECT count(*) FROM users WHERE body->>'City' = {p0}",
               "SELECT (body->>'Score')::float8 FROM users WHERE body->>'City' = {p0} "
               "ORDER BY (body->>'Score')::float8 DESC LIMIT 30"),
    "name": ("SELECT count(*) FROM users",
             "SELECT lower(body->>'Name') FROM users ORDER BY lower(body->>'Name') LIMIT 30"),
    "page": ("SELECT count(*) FROM users",
             "SELECT (body->>'Age')::int FROM users ORDER BY (body->>'Age')::int LIMIT 30 OFFSET {p0}"),
}
SORT_KEY = {"sorted": lambda d: float(d["Score"]), "name": lambda d: d["Name"].lower(),
            "page": lambda d: int(d["Age"])}


def _lit(v):
    return str(v) if isinstance(v, int) else "'" + str(v).replace("'", "''") + "'"


def _psql(cmd, sql):
    out = subprocess.run(cmd + ["-At", "-c", sql], capture_output=True, text=True, check=True).stdout
    return [l for l in out.splitlines() if l != ""]


def cmd_check(a):
    psql = a.psql_cmd.split()
    c = _conn(a.url)
    r = random.Random(a.seed)
    mism, checked = [], 0
    for shape in a.shapes.split(","):
        for _ in range(a.per_shape):
            params = _params(shape, r, a.count)
            status, data, ms, body = _query(c, a.db, SHAPES[shape], params)
            checked += 1
            try:
                j = json.loads(data)
            except ValueError:
                j = None
            if status != 200 or j is None:
                mism.append({"shape": shape, "request": body, "status": status, "response": _short(data)})
                continue
            lits = {k: _lit(v) for k, v in params.items()}
            count_sql, page_sql = PG_SQL[shape]
            pg_total = int(_psql(psql, count_sql.format(**lits))[0])
            problems = []
            if j.get("TotalResults") != pg_total:
                problems.append(f"TotalResults {j.get('TotalResults')} != PostgreSQL count {pg_total}")
            res = j.get("Results") or []
            want = pg_total if shape == "eq" else min(30, max(0, pg_total - params.get("p0", 0) if shape == "page" else pg_total))
            if len(res) != want:
                problems.append(f"{len(res)} results, expected {want}")
            if shape == "range" and any(not (params["p0"] <= d.get("Age", -1) <= params["p1"]) for d in res):
                problems.append("a result outside the Age range")
            if shape in ("eq", "sorted") and any(str(d.get("City", "")).lower() != params["p0"].lower() for d in res):
                problems.append("a result from another City")
            if shape in SORT_KEY:
                got = [SORT_KEY[shape](d) for d in res]
                exp = _psql(psql, page_sql.format(**lits))
                exp = [float(x) if shape == "sorted" else (int(x) if shape == "page" else x) for x in exp]
                if got != exp:
                    problems.append(f"sort keys differ: Corvid {got[:6]}... PostgreSQL {exp[:6]}...")
            if problems:
                mism.append({"shape": shape, "request": body, "problems": problems,
                             "response": _short(json.dumps({k: j.get(k) for k in
                                                            ("TotalResults", "IsStale", "IndexName", "DurationInMs")}))})
    print(json.dumps({"checked": checked, "mismatches": mism}))


# ---- write-to-visible lag (asyncio, minimal HTTP/1.1 keep-alive client) -----------------------------
class _AConn:
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


async def _lag(a):
    u = urllib.parse.urlsplit(a.url)
    host, port = u.hostname, u.port
    wpool, qpool = asyncio.Queue(), asyncio.Queue()
    for _ in range(a.writers):
        wpool.put_nowait(_AConn(host, port))
    for _ in range(a.pollers):
        qpool.put_nowait(_AConn(host, port))
    lags_ack, lags_send, put_ms, errors = [], [], [], []
    pending = set()
    invisible = []
    qcount = [0]
    qpath = f"/databases/{a.db}/queries"
    stop_at = time.perf_counter() + a.duration
    poll_deadline = stop_at + a.grace

    async def poll(n, t_send, t_ack):
        body = json.dumps({"Query": "from Users where City = $p0", "QueryParameters": {"p0": f"lag-{n}"},
                           "WaitForNonStaleResults": False}).encode()
        while time.perf_counter() < poll_deadline:
            c = await qpool.get()
            try:
                status, data = await c.request("POST", qpath, body)
            except Exception as e:  # noqa: BLE001
                c.w = None
                status, data = -1, str(e).encode()
            finally:
                qpool.put_nowait(c)
            qcount[0] += 1
            now = time.perf_counter()
            if status != 200:
                errors.append(f"POST {qpath} {body.decode()} -> HTTP {status}: {_short(data, 300)}")
                await asyncio.sleep(0.05)
                continue
            j = json.loads(data)
            if j.get("TotalResults", 0) >= 1:
                lags_ack.append((now - t_ack) * 1000.0)
                lags_send.append((now - t_send) * 1000.0)
                return
            await asyncio.sleep(a.poll_ms / 1000.0)
        invisible.append(n)

    async def write(n, track):
        doc = json.dumps({"Name": f"Lag {n}", "Age": n % 100, "City": f"lag-{n}", "Score": 0.5,
                          "Tags": ["lag"], "CreatedAt": "2026-01-01T00:00:00.0000000Z",
                          "@metadata": {"@collection": "Users"}}).encode()
        c = await wpool.get()
        t_send = time.perf_counter()
        try:
            status, data = await c.request("PUT", f"/databases/{a.db}/docs?id=users/lag-{n}", doc)
        except Exception as e:  # noqa: BLE001
            c.w = None
            status, data = -1, str(e).encode()
        finally:
            wpool.put_nowait(c)
        t_ack = time.perf_counter()
        put_ms.append((t_ack - t_send) * 1000.0)
        if status not in (200, 201):
            errors.append(f"PUT /databases/{a.db}/docs?id=users/lag-{n} -> HTTP {status}: {_short(data, 300)}")
            return
        if track:
            await poll(n, t_send, t_ack)

    t0 = time.perf_counter()
    n = 0
    tasks = []
    while True:
        now = time.perf_counter()
        if now >= stop_at:
            break
        due = t0 + n / a.rate
        if due > now:
            await asyncio.sleep(due - now)
            continue
        t = asyncio.ensure_future(write(n, n % a.track_every == 0))
        tasks.append(t)
        pending.add(t)
        t.add_done_callback(pending.discard)
        n += 1
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    for c in list(wpool._queue) + list(qpool._queue):  # noqa: SLF001
        if c.w is not None:
            c.w.close()

    def pct(v, p):
        if not v:
            return None
        v = sorted(v)
        k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
        return round(v[k], 2)
    return {"writes": n, "write_rate": round(n / a.duration, 1), "duration_s": a.duration, "wall_s": round(wall, 1),
            "tracked": len(lags_ack) + len(invisible), "visible": len(lags_ack), "never_visible": len(invisible),
            "never_visible_ids": [f"users/lag-{x}" for x in invisible[:5]],
            "lag_p50_ms": pct(lags_ack, 50), "lag_p90_ms": pct(lags_ack, 90), "lag_p99_ms": pct(lags_ack, 99),
            "lag_max_ms": pct(lags_ack, 100),
            "lag_from_send_p50_ms": pct(lags_send, 50), "lag_from_send_p99_ms": pct(lags_send, 99),
            "put_p50_ms": pct(put_ms, 50), "put_p99_ms": pct(put_ms, 99), "poll_queries": qcount[0],
            "poll_ms": a.poll_ms, "track_every": a.track_every, "errors": errors[:5], "error_count": len(errors)}


def cmd_lag(a):
    print(json.dumps(asyncio.run(_lag(a))))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def srv(sp):
        sp.add_argument("--url", required=True)
        sp.add_argument("--db", default="bench")

    sp = sub.add_parser("values"); sp.add_argument("--out-dir", required=True); sp.set_defaults(fn=cmd_values)
    sp = sub.add_parser("prepare")
    sp.add_argument("--count", type=int, required=True); sp.add_argument("--seed", type=int, default=42)
    sp.add_argument("--batch", type=int, default=1000); sp.add_argument("--out-dir", required=True)
    sp.set_defaults(fn=cmd_prepare)
    sp = sub.add_parser("corvid-load"); srv(sp)
    sp.add_argument("--file", required=True); sp.add_argument("--count", type=int, default=0)
    sp.add_argument("--concurrency", type=int, default=4); sp.set_defaults(fn=cmd_corvid_load)
    sp = sub.add_parser("cold-index"); srv(sp)
    sp.add_argument("--count", type=int, required=True); sp.add_argument("--poll-ms", type=float, default=50)
    sp.add_argument("--timeout", type=float, default=1200); sp.set_defaults(fn=cmd_cold_index)
    sp = sub.add_parser("warm"); srv(sp)
    sp.add_argument("--count", type=int, required=True); sp.add_argument("--shapes", default="eq,range,sorted,name,page")
    sp.add_argument("--timeout", type=float, default=1200); sp.set_defaults(fn=cmd_warm)
    sp = sub.add_parser("check"); srv(sp)
    sp.add_argument("--count", type=int, required=True); sp.add_argument("--psql-cmd", required=True)
    sp.add_argument("--shapes", default="eq,range,sorted,name,page"); sp.add_argument("--per-shape", type=int, default=5)
    sp.add_argument("--seed", type=int, default=3); sp.set_defaults(fn=cmd_check)
    sp = sub.add_parser("lag"); srv(sp)
    sp.add_argument("--duration", type=float, default=30); sp.add_argument("--rate", type=float, default=1000)
    sp.add_argument("--writers", type=int, default=32); sp.add_argument("--pollers", type=int, default=8)
    sp.add_argument("--track-every", type=int, default=10); sp.add_argument("--poll-ms", type=float, default=2)
    sp.add_argument("--grace", type=float, default=10); sp.set_defaults(fn=cmd_lag)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
