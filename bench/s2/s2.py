#!/usr/bin/env python3
"""Scenario S2 helper (python stdlib only): data generation, bulk-insert streaming, crash tests.

Subcommands (each prints one JSON object on stdout; progress on stderr):
  gen DIR --users N --posts N --seed S      deterministic StackOverflow-like data set into DIR (cached: a
                                            DIR/meta.json with the same parameters means "already there")
                                            users.tsv / posts.tsv : "<id>\t<json>" lines (PostgreSQL COPY text)
                                            users.bulk / posts.bulk : the bulk-insert request bodies (JSON arrays)
  load URL DB DIR [--pid PID]               stream users.bulk and posts.bulk concurrently to
                                            POST /databases/DB/bulk_insert; docs/s, MB/s, peak RSS of PID
  crash-bulk BIN WORKDIR DATA --fraction F  fresh server, the same two streams, kill -9 after F of the bytes were
                                            sent, restart (timed), verify prefix property + 2,000-doc sample
  crash-put BIN WORKDIR --clients C --secs S  fresh server, C clients doing single PUTs, kill -9 after S seconds,
                                            restart (timed), verify every acknowledged (201) id is present
  patch-check URL DB                        one PATCH of each kind, returns status and body head
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

BULK_CHUNK = 1 << 20

# ---------------------------------------------------------------------------------------------- data
WORDS = ("the a to of and in is it you that for on with this how can i not be are from use do but what when "
         "function return value array string list object class method error null undefined python java javascript "
         "c# sql query table index database server client request response file path memory thread lock async "
         "await promise callback loop iterate element node tree map key hash set sort order join group select "
         "insert update delete create column row type int float double char byte buffer stream read write open "
         "close exception stack trace debug compile build test run version install package module import export "
         "variable constant pointer reference copy move struct enum interface trait generic template lambda "
         "closure scope global local static dynamic instance property field attribute parameter argument "
         "overflow performance slow fast cache regex parse format json xml html css dom event handler click "
         "button form input output print log console command line shell script bash linux windows mac docker "
         "git branch merge commit push pull remote origin").split()
TAGS = ("python javascript java c# php android html jquery c++ css ios sql mysql r node.js reactjs arrays c "
        "asp.net json python-3.x .net ruby-on-rails sql-server swift django angular objective-c excel pandas "
        "angularjs regex typescript ruby linux ajax iphone vba xml laravel spring asp.net-mvc database wordpress "
        "string flutter postgresql mongodb wpf windows xcode amazon-web-services bash git oracle-database "
        "spring-boot dataframe azure firebase list multithreading docker vb.net react-native eclipse algorithm "
        "powershell macos visual-studio numpy image forms scala function vue.js performance twitter-bootstrap "
        "selenium winforms kotlin loops express hibernate sqlite matplotlib dart rust go").split()
BADGES = [("Teacher", "Bronze"), ("Student", "Bronze"), ("Editor", "Bronze"), ("Supporter", "Bronze"),
          ("Scholar", "Bronze"), ("Nice Answer", "Bronze"), ("Popular Question", "Bronze"),
          ("Good Answer", "Silver"), ("Enlightened", "Silver"), ("Necromancer", "Silver"),
          ("Great Answer", "Gold"), ("Famous Question", "Gold")]
FIRST = "James Mary John Patricia Robert Jennifer Michael Linda David Elizabeth William Barbara Wei Priya Ahmed Olga Kenji Lucia Sven Ana".split()
LAST = "Smith Johnson Brown Garcia Miller Davis Wilson Anderson Thomas Taylor Moore Martin Lee Chen Kumar Ivanov Sato Rossi Larsen Silva".split()
CITIES = ["London, UK", "New York, NY", "Berlin, Germany", "Bangalore, India", "San Francisco, CA", "Paris, France",
          "Toronto, Canada", "Sydney, Australia", "Tokyo, Japan", "Moscow, Russia", "Sao Paulo, Brazil", "", "Earth"]


def corpus(rng, n_chars=1 << 20):
    out, size = [], 0
    while size < n_chars:
        w = rng.choice(WORDS)
        if rng.random() < 0.07:
            w += "."
        elif rng.random() < 0.05:
            w += ","
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def text_of(rng, text, lo, hi):
    n = rng.randint(lo, hi)
    start = rng.randrange(0, len(text) - n - 1)
    return text[start:start + n]


def date_of(rng, y0=2008, y1=2023):
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (rng.randint(y0, y1), rng.randint(1, 12), rng.randint(1, 28),
                                                  rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                                                  rng.randint(0, 999))


def gen_user(rng, text, i):
    name = "%s %s" % (rng.choice(FIRST), rng.choice(LAST))
    return {
        "DisplayName": "%s%d" % (name.replace(" ", "").lower()[:12], i), "Name": name,
        "Reputation": int(rng.paretovariate(1.2) * 10), "CreationDate": date_of(rng),
        "LastAccessDate": date_of(rng, 2020, 2023), "Location": rng.choice(CITIES),
        "WebsiteUrl": "" if rng.random() < 0.6 else "https://example.org/~u%d" % i,
        "AboutMe": text_of(rng, text, 0, 600), "Views": rng.randint(0, 5000), "UpVotes": rng.randint(0, 2000),
        "DownVotes": rng.randint(0, 200),
        "Badges": [dict(zip(("Name", "Class"), rng.choice(BADGES)), Date=date_of(rng)) for _ in range(rng.randint(0, 3))],
    }


def gen_post(rng, text, i, n_users):
    question = i % 3 != 0 or i < 3
    d = {"PostType": "Question" if question else "Answer", "OwnerUserId": "users/%d" % rng.randint(1, n_users),
         "CreationDate": date_of(rng), "LastActivityDate": date_of(rng, 2015, 2023),
         "Score": int(rng.gauss(3, 12)), "Body": text_of(rng, text, 200, 1400)}
    if question:
        d["Title"] = text_of(rng, text, 20, 140).strip().capitalize() + "?"
        d["Tags"] = rng.sample(TAGS, rng.randint(1, 5))
        d["ViewCount"] = int(rng.paretovariate(1.1) * 30)
        d["AnswerCount"] = rng.randint(0, 8)
        d["FavoriteCount"] = rng.randint(0, 50)
    else:
        d["ParentId"] = "posts/%d" % max(1, i - rng.randint(1, 2000))
    return d


def cmd_gen(a):
    os.makedirs(a.dir, exist_ok=True)
    params = {"users": a.users, "posts": a.posts, "seed": a.seed, "version": 3}
    mpath = os.path.join(a.dir, "meta.json")
    if os.path.exists(mpath):
        m = json.load(open(mpath))
        if m.get("params") == params:
            print(json.dumps(m))
            return
    rng = random.Random(a.seed)
    text = corpus(rng)
    meta = {"params": params}
    t0 = time.time()
    for coll, n in (("users", a.users), ("posts", a.posts)):
        cname = coll.capitalize()
        tail = ',"@metadata":{"@collection":"%s"}}}' % cname
        doc_bytes = 0
        body_bytes = 1
        with open(os.path.join(a.dir, coll + ".tsv.tmp"), "w") as tsv, open(os.path.join(a.dir, coll + ".bulk.tmp"), "w") as bulk:
            bulk.write("[")
            for i in range(1, n + 1):
                doc = gen_user(rng, text, i) if coll == "users" else gen_post(rng, text, i, a.users)
                js = json.dumps(doc, separators=(",", ":"), ensure_ascii=True)
                assert "\\" not in js and "\t" not in js and "\n" not in js
                did = "%s/%d" % (coll, i)
                tsv.write(did + "\t" + js + "\n")
                cmdj = '%s{"Id":"%s","Type":"PUT","Document":%s%s' % ("," if i > 1 else "", did, js[:-1], tail)
                bulk.write(cmdj)
                doc_bytes += len(js)
                body_bytes += len(cmdj)
                if i % 200000 == 0:
                    print("gen %s %d/%d (%.0f s)" % (coll, i, n, time.time() - t0), file=sys.stderr)
            bulk.write("]")
            body_bytes += 1
        os.rename(os.path.join(a.dir, coll + ".tsv.tmp"), os.path.join(a.dir, coll + ".tsv"))
        os.rename(os.path.join(a.dir, coll + ".bulk.tmp"), os.path.join(a.dir, coll + ".bulk"))
        meta[coll] = {"docs": n, "doc_bytes": doc_bytes, "body_bytes": body_bytes}
    meta["docs"] = a.users + a.posts
    meta["doc_bytes"] = meta["users"]["doc_bytes"] + meta["posts"]["doc_bytes"]
    meta["gen_seconds"] = round(time.time() - t0, 1)
    json.dump(meta, open(mpath, "w"))
    print(json.dumps(meta))


# ------------------------------------------------------------------------------------------- helpers
def split_url(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port


def request(url, method, path, body=None, timeout=60):
    host, port = split_url(url)
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if isinstance(body, str):
            body = body.encode()
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def proc_status(pid):
    out = {}
    try:
        for line in open("/proc/%d/status" % pid):
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) // 1024  # MiB
    except OSError:
        pass
    return out


class RssPoller(threading.Thread):
    def __init__(self, pid, every=0.2):
        super().__init__(daemon=True)
        self.pid, self.every, self.stop = pid, every, threading.Event()
        self.peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
        self.last = {}

    def run(self):
        while not self.stop.is_set():
            s = proc_status(self.pid)
            if s:
                self.last = s
                for k in self.peak:
                    self.peak[k] = max(self.peak[k], s.get(k, 0))
            self.stop.wait(self.every)


def stream_bulk(url, db, path, progress, key, result, op_id):
    """POST one bulk-insert body file with chunked transfer encoding."""
    host, port = split_url(url)
    t0 = time.time()
    try:
        c = http.client.HTTPConnection(host, port, timeout=600)
        c.putrequest("POST", "/databases/%s/bulk_insert?id=%d&skipOverwriteIfUnchanged=false" % (db, op_id))
        c.putheader("Content-Type", "application/json")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        with open(path, "rb") as f:
            while True:
                chunk = f.read(BULK_CHUNK)
                if not chunk:
                    break
                c.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                progress[key] += len(chunk)
        c.send(b"0\r\n\r\n")
        r = c.getresponse()
        body = r.read()
        result[key] = {"status": r.status, "body": body[:300].decode(errors="replace"), "seconds": time.time() - t0,
                       "acked_at": time.time()}
    except Exception as e:  # noqa: BLE001 (the server may be killed under us)
        result[key] = {"status": None, "error": repr(e)[:300], "seconds": time.time() - t0}


def run_streams(url, db, data, progress, result, streams=("users", "posts")):
    threads = []
    for k, name in enumerate(streams):
        progress[name] = 0
        t = threading.Thread(target=stream_bulk, args=(url, db, os.path.join(data, name + ".bulk"), progress, name,
                                                       result, k + 1), daemon=True)
        threads.append(t)
    return threads


def cmd_load(a):
    meta = json.load(open(os.path.join(a.data, "meta.json")))
    progress, result = {}, {}
    poller = RssPoller(a.pid) if a.pid else None
    if poller:
        poller.start()
    threads = run_streams(a.url, a.db, a.data, progress, result)
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.time() - t0
    rec = {"seconds": round(secs, 2), "docs": meta["docs"], "doc_bytes": meta["doc_bytes"],
           "body_bytes": meta["users"]["body_bytes"] + meta["posts"]["body_bytes"],
           "docs_per_s": round(meta["docs"] / secs, 1), "mb_per_s": round(meta["doc_bytes"] / 1e6 / secs, 2),
           "streams": {k: {"status": v.get("status"), "seconds": round(v["seconds"], 2), "error": v.get("error"),
                           "body": v.get("body")} for k, v in result.items()}}
    rec["ok"] = all(v.get("status") == 201 for v in result.values())
    if poller:
        poller.stop.set()
        poller.join()
        st = proc_status(a.pid)
        rec["rss"] = {"VmHWM_mib": st.get("VmHWM"), "peak_VmRSS_mib": poller.peak["VmRSS"],
                      "peak_RssAnon_mib": poller.peak["RssAnon"], "peak_RssFile_mib": poller.peak["RssFile"],
                      "end": st}
    print(json.dumps(rec))


# ------------------------------------------------------------------------------------- server control
class Server:
    def __init__(self, binary, workdir):
        self.binary, self.workdir = binary, workdir
        self.data = os.path.join(workdir, "data")
        self.proc = None
        self.url = None
        self.nlog = 0

    def start(self, timeout=120):
        """Start; returns (seconds to 'Server available on:', seconds from exec to that line)."""
        self.nlog += 1
        self.log = os.path.join(self.workdir, "corvid.%d.log" % self.nlog)
        logf = open(self.log, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([self.binary, "serve", "--url", "http://127.0.0.1:0", "--data-dir", self.data],
                                     stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.t_exec = t0
        pat = re.compile(rb"Server available on: (http://\S+)")
        while True:
            with open(self.log, "rb") as f:
                m = pat.search(f.read())
            if m:
                self.url = m.group(1).decode().rstrip("/")
                return time.monotonic() - t0
            if self.proc.poll() is not None:
                raise RuntimeError("corvid exited during startup: " + open(self.log, errors="replace").read()[-2000:])
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("corvid did not start within %d s" % timeout)
            time.sleep(0.001)

    def wait_stats(self, db, timeout=120):
        """Poll GET /databases/db/stats until 200; seconds since exec."""
        host, port = split_url(self.url)
        while True:
            try:
                c = http.client.HTTPConnection(host, port, timeout=timeout)
                c.request("GET", "/databases/%s/stats" % db)
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return time.monotonic() - self.t_exec
            except OSError:
                pass
            if time.monotonic() - self.t_exec > timeout:
                raise RuntimeError("stats not available within %d s" % timeout)
            time.sleep(0.002)

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def create_db(self, db):
        st, body = request(self.url, "PUT", "/admin/databases?name=%s" % db, json.dumps({"DatabaseName": db}))
        if st not in (200, 201):
            raise RuntimeError("create database -> %s %s" % (st, body[:300]))


def load_ids(url, db, ids, metadata_only=True):
    """POST /docs {"Ids":[...]} -> list of docs or None, in order."""
    path = "/databases/%s/docs?%s" % (db, "metadataOnly=true" if metadata_only else "")
    st, body = request(url, "POST", path, json.dumps({"Ids": ids}), timeout=300)
    if st != 200:
        raise RuntimeError("POST %s -> %s %s" % (path, st, body[:300]))
    return json.loads(body)["Results"]


def present_flags(url, db, ids, chunk=2000):
    out = []
    for i in range(0, len(ids), chunk):
        out.extend(r is not None for r in load_ids(url, db, ids[i:i + chunk]))
    return out


def read_tsv(path, limit=None):
    ids, docs = [], []
    with open(path) as f:
        for n, line in enumerate(f):
            if limit is not None and n >= limit:
                break
            i, _, js = line.rstrip("\n").partition("\t")
            ids.append(i)
            docs.append(js)
    return ids, docs


def restart_and_time(srv, db):
    t_avail = srv.start()
    t_stats = srv.wait_stats(db)
    return {"to_server_available_s": round(t_avail, 3), "to_first_stats_200_s": round(t_stats, 3)}


def cmd_crash_bulk(a):
    meta = json.load(open(os.path.join(a.data, "meta.json")))
    total = meta["users"]["body_bytes"] + meta["posts"]["body_bytes"]
    srv = Server(a.bin, a.workdir)
    rec = {"fraction": a.fraction}
    try:
        srv.start()
        srv.create_db(a.db)
        progress, result = {}, {}
        threads = run_streams(srv.url, a.db, a.data, progress, result)
        t0 = time.time()
        for t in threads:
            t.start()
        while sum(progress.values()) < a.fraction * total:
            if all(not t.is_alive() for t in threads):
                break
            time.sleep(0.005)
        sent = dict(progress)
        srv.kill9()
        t_kill = time.time()
        for t in threads:
            t.join(30)
        rec["killed_after_s"] = round(t_kill - t0, 2)
        rec["sent_bytes"] = sent
        rec["sent_fraction"] = round(sum(sent.values()) / total, 3)
        rec["acknowledged_streams"] = [k for k, v in result.items() if v.get("status") == 201 and v["acked_at"] <= t_kill]
        rec["restart"] = restart_and_time(srv, a.db)
        print("crash-bulk: restarted %s" % rec["restart"], file=sys.stderr)
        st, body = request(srv.url, "GET", "/databases/%s/collections/stats" % a.db)
        colls = json.loads(body).get("Collections", {})
        rec["present"] = colls
        rng = random.Random(7)
        verify = {"ok": True}
        sample_pool = []
        for name in ("users", "posts"):
            n_stream = meta[name]["docs"]
            n_present = colls.get(name.capitalize(), 0)
            ids, docs = read_tsv(os.path.join(a.data, name + ".tsv"), limit=min(n_stream, n_present + 5000))
            flags = present_flags(srv.url, a.db, ids)
            first_missing = flags.index(False) if False in flags else len(flags)
            prefix_ok = first_missing == n_present and not any(flags[first_missing:])
            v = {"stream_docs": n_stream, "present": n_present, "prefix_ok": prefix_ok,
                 "checked_ids": len(ids), "multiple_of_8192": n_present % 8192 == 0 or n_present == n_stream,
                 "acknowledged": name in rec["acknowledged_streams"]}
            if v["acknowledged"]:
                v["all_acknowledged_present"] = n_present == n_stream
                verify["ok"] &= v["all_acknowledged_present"]
            verify["ok"] &= prefix_ok
            verify[name] = v
            sample_pool.extend((ids[i], docs[i]) for i in range(n_present))
        sample = rng.sample(sample_pool, min(a.sample, len(sample_pool)))
        mism = []
        key_order_diffs = 0
        for i in range(0, len(sample), 500):
            part = sample[i:i + 500]
            got = load_ids(srv.url, a.db, [p[0] for p in part], metadata_only=False)
            for (did, js), doc in zip(part, got):
                if doc is None:
                    mism.append((did, "missing"))
                    continue
                md = doc.pop("@metadata", {})
                exp = json.loads(js)
                if doc != exp:
                    mism.append((did, "differs"))
                elif json.dumps(doc, separators=(",", ":")) != js:
                    key_order_diffs += 1
                if md.get("@collection") not in ("Users", "Posts"):
                    mism.append((did, "collection %r" % md.get("@collection")))
        verify["sample_checked"] = len(sample)
        verify["sample_mismatches"] = len(mism)
        verify["sample_mismatch_examples"] = mism[:5]
        verify["sample_reserialized_differently"] = key_order_diffs
        verify["ok"] &= not mism
        rec["verify"] = verify
    finally:
        srv.stop()
    print(json.dumps(rec))


def cmd_crash_put(a):
    srv = Server(a.bin, a.workdir)
    rec = {"clients": a.clients}
    doc = {"Name": "crash test", "Body": "x" * 400, "@metadata": {"@collection": "Crash"}}
    try:
        srv.start()
        srv.create_db(a.db)
        host, port = split_url(srv.url)
        acked = [[] for _ in range(a.clients)]
        errors = [0] * a.clients
        stop = threading.Event()

        def client(k):
            c = http.client.HTTPConnection(host, port, timeout=30)
            n = 0
            while not stop.is_set():
                n += 1
                did = "crash/%d-%d" % (k, n)
                body = json.dumps(dict(doc, Seq=n, Client=k)).encode()
                try:
                    c.request("PUT", "/databases/%s/docs?id=%s" % (a.db, did), body=body,
                              headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    r.read()
                    if r.status == 201:
                        acked[k].append(did)
                    else:
                        errors[k] += 1
                except Exception:  # noqa: BLE001 (server killed)
                    errors[k] += 1
                    return

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(a.clients)]
        t0 = time.time()
        for t in threads:
            t.start()
        time.sleep(a.secs)
        srv.kill9()
        stop.set()
        for t in threads:
            t.join(30)
        ids = [i for part in acked for i in part]
        rec["acknowledged"] = len(ids)
        rec["writes_per_s_before_kill"] = round(len(ids) / (time.time() - t0), 1)
        rec["restart"] = restart_and_time(srv, a.db)
        print("crash-put: restarted %s" % rec["restart"], file=sys.stderr)
        flags = present_flags(srv.url, a.db, ids)
        st, body = request(srv.url, "GET", "/databases/%s/collections/stats" % a.db)
        rec["present_after_restart"] = json.loads(body).get("Collections", {}).get("Crash")
        rec["acknowledged_missing"] = flags.count(False)
        rec["ok"] = rec["acknowledged_missing"] == 0 and len(ids) > 0
    finally:
        srv.stop()
    print(json.dumps(rec))


def cmd_patch_check(a):
    out = {}
    for name, path, body in (
            ("comment", "/databases/%s/docs?id=posts/1" % a.db,
             {"Patch": {"Script": "this.Comments = this.Comments || []; this.Comments.push(args.c); this.CommentCount = (this.CommentCount||0)+1;",
                        "Values": {"c": {"UserId": "users/1", "Text": "check", "CreationDate": "2024-01-01T00:00:00.000Z"}}}}),
            ("badge", "/databases/%s/docs?id=users/1" % a.db,
             {"Patch": {"Script": "this.Badges.push(args.b);",
                        "Values": {"b": {"Name": "Check", "Class": "Bronze", "Date": "2024-01-01T00:00:00.000Z"}}}})):
        st, resp = request(a.url, "PATCH", path, json.dumps(body))
        out[name] = {"status": st, "body": resp[:200].decode(errors="replace")}
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("--users", type=int, required=True)
    g.add_argument("--posts", type=int, required=True)
    g.add_argument("--seed", type=int, default=42)
    lo = sub.add_parser("load")
    lo.add_argument("url")
    lo.add_argument("db")
    lo.add_argument("data")
    lo.add_argument("--pid", type=int)
    cb = sub.add_parser("crash-bulk")
    cb.add_argument("bin")
    cb.add_argument("workdir")
    cb.add_argument("data")
    cb.add_argument("--db", default="s2")
    cb.add_argument("--fraction", type=float, default=0.4)
    cb.add_argument("--sample", type=int, default=2000)
    cp = sub.add_parser("crash-put")
    cp.add_argument("bin")
    cp.add_argument("workdir")
    cp.add_argument("--db", default="s2")
    cp.add_argument("--clients", type=int, default=16)
    cp.add_argument("--secs", type=float, default=5)
    pc = sub.add_parser("patch-check")
    pc.add_argument("url")
    pc.add_argument("db")
    a = p.parse_args()
    {"gen": cmd_gen, "load": cmd_load, "crash-bulk": cmd_crash_bulk, "crash-put": cmd_crash_put,
     "patch-check": cmd_patch_check}[a.cmd](a)


if __name__ == "__main__":
    main()
