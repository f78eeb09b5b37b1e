#!/usr/bin/env python3
"""S4: NuGet-like package versions — full-text search index, map-reduce of download totals per package,
searches under 1,000 updates/s, write-to-visible lag. Driver of bench/run-s4.sh (Python stdlib only).

Document i of seed s is a pure function of (s, i), so Corvid, OpenSearch and PostgreSQL hold the same data:
  {"PackageId": "Ravok.Telmo", "Version": "2.4.17", "Title": "Ravok Telmo", "Description": 10-30 words
   (Zipf over a 20,000-word synthetic vocabulary), "Tags": 1-4 of 300, "Authors": 1-2 of 3,000,
   "DownloadCount": Pareto-distributed int, "@metadata": {"@collection": "Versions"}}
N/10 packages, each with N/P versions spread over the id space. Words are lowercase ASCII letters only, so the
three systems' analyzers (Corvid Search, OpenSearch standard, PostgreSQL 'simple') tokenize them identically.

Subcommands (each prints one JSON object)
  prepare --count N --out-dir D      versions.bulk (Corvid bulk insert), versions.tsv (COPY), versions.os.ndjson
                                     (OpenSearch _bulk), wrk body files and PostgreSQL parameter tables
  corvid-indexes --url U --count N   create the search index, wait until built, then the map-reduce index
  os-load --url U --dir D            create the OpenSearch index (refresh_interval -1), _bulk, refresh
  updates --target corvid|opensearch --url U --rate R --duration S --state F [--track-every K]
                                     paced full-document updates (DownloadCount += delta); with --track-every
                                     every K-th write also gets a unique token in Title and is polled with a
                                     search until visible (write-to-visible lag)
  check-totals --source corvid|pg    every package's reduce total vs a recomputation from the seed + state
  crosscheck                         TotalResults of the same searches in the three systems
"""
import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import searchbench as sb  # noqa: E402

SEARCH_INDEX = "Versions/Search"
REDUCE_INDEX = "Versions/DownloadTotals"
OS_INDEX = "versions"

# ---- the data ----------------------------------------------------------------------------------------
_SYL = ["ka", "lo", "mi", "ra", "ten", "vos", "dru", "pel", "sa", "qui", "nor", "bex", "til", "gam", "fo", "zu",
        "ri", "hal", "mon", "ce", "da", "vin", "wel", "jo", "tra", "sum", "pi", "lek", "ost", "yar"]


def _vocab():
    r = random.Random(4242)
    out, seen = [], set()
    while len(out) < 20000:
        w = "".join(r.choice(_SYL) for _ in range(r.randint(2, 4)))
        if w in seen:
            continue
        seen.add(w)
        out.append(w)
    return out


VOCAB = _vocab()
_CUM = []
_acc = 0.0
for _k in range(len(VOCAB)):
    _acc += 1.0 / (_k + 10)
    _CUM.append(_acc)
TAGS = VOCAB[19000:19300]
AUTHORS = [f"{VOCAB[15000 + k].capitalize()} {VOCAB[16000 + (k * 7) % 1000].capitalize()}" for k in range(3000)]
NAME_WORDS = VOCAB[100:5100]   # package-name words: uniform over 5,000 mid-frequency words


def packages(count):
    return max(1, count // 10)


def package(seed, p):
    r = random.Random(seed * 999_983 + p * 31 + 7)
    words = [r.choice(NAME_WORDS) for _ in range(r.randint(2, 3))]
    return {"PackageId": ".".join(w.capitalize() for w in words) + f".P{p}",
            "Title": " ".join(w.capitalize() for w in words),
            "Tags": r.sample(TAGS, r.randint(1, 4)),
            "Authors": r.sample(AUTHORS, r.randint(1, 2))}


def base_downloads(seed, i):
    r = random.Random(seed * 1_000_003 + i)
    return min(10_000_000, int(r.paretovariate(1.2) * 100))


def package_of(i, count):
    return (i * 7919) % packages(count)


def make_version(seed, i, count, downloads=None, token=None):
    r = random.Random(seed * 1_000_003 + i)
    dl = min(10_000_000, int(r.paretovariate(1.2) * 100))   # first draw: see base_downloads
    p = package_of(i, count)
    pk = package(seed, p)
    title = pk["Title"] + (" " + token if token else "")
    doc = {"PackageId": pk["PackageId"], "Version": f"{r.randint(0, 9)}.{r.randint(0, 20)}.{r.randint(0, 99)}",
           "Title": title,
           "Description": " ".join(r.choices(VOCAB, cum_weights=_CUM, k=r.randint(10, 30))),
           "Tags": pk["Tags"], "Authors": pk["Authors"],
           "DownloadCount": dl if downloads is None else downloads}
    return doc


def token_of(n, salt=""):
    s, n = "", n + 1
    while n:
        n, k = divmod(n, 26)
        s = chr(97 + k) + s
    return "lagtok" + salt + s


def _copy_escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def query_params(seed, nq=2000):
    r = random.Random(seed + 17)
    title = [r.choice(NAME_WORDS) for _ in range(nq)]
    desc = [f"{VOCAB[r.randint(200, 3000)]} {VOCAB[r.randint(200, 3000)]}" for _ in range(nq)]
    return title, desc


def cmd_prepare(a):
    t0 = time.perf_counter()
    D = a.out_dir
    nbytes = 0
    with open(f"{D}/versions.bulk", "w") as bulk, open(f"{D}/versions.tsv", "w") as tsv, \
            open(f"{D}/versions.os.ndjson", "w") as osb:
        bulk.write("[")
        for i in range(a.count):
            doc = make_version(a.seed, i, a.count)
            js = json.dumps(doc, separators=(",", ":"))
            nbytes += len(js)
            jm = js[:-1] + ',"@metadata":{"@collection":"Versions"}}'
            bulk.write(("," if i else "") + '{"Id":"versions/%d","Type":"PUT","Document":%s}' % (i, jm))
            tsv.write(f"versions/{i}\t{_copy_escape(jm)}\n")
            osb.write('{"index":{"_id":"%d"}}\n%s\n' % (i, js))
        bulk.write("]")
    title, desc = query_params(a.seed)
    P = packages(a.count)
    r = random.Random(a.seed + 23)
    pkgs = [package(a.seed, r.randrange(P))["PackageId"] for _ in range(2000)]
    rq = f"from index '{SEARCH_INDEX}'"
    sb.write_bodies(f"{D}/corvid_title.txt", [{"Query": rq + " where search(Title, $q) limit 20", "QueryParameters": {"q": w}} for w in title])
    sb.write_bodies(f"{D}/corvid_desc.txt", [{"Query": rq + " where search(Description, $q) limit 20", "QueryParameters": {"q": q}} for q in desc])
    sb.write_bodies(f"{D}/corvid_total.txt", [{"Query": f"from index '{REDUCE_INDEX}' where PackageId = $p", "QueryParameters": {"p": p}} for p in pkgs])
    sb.write_bodies(f"{D}/os_title.txt", [{"query": {"match": {"Title": w}}, "size": 20, "track_total_hits": True} for w in title])
    sb.write_bodies(f"{D}/os_desc.txt", [{"query": {"match": {"Description": q}}, "size": 20, "track_total_hits": True} for q in desc])
    sb.write_bodies(f"{D}/os_total.txt", [{"size": 0, "query": {"term": {"PackageId": p}}, "aggs": {"total": {"sum": {"field": "DownloadCount"}}}} for p in pkgs])
    with open(f"{D}/q_title.tsv", "w") as f:
        f.writelines(f"{k + 1}\t{w}\n" for k, w in enumerate(title))
    with open(f"{D}/q_desc.tsv", "w") as f:
        f.writelines(f"{k + 1}\t{q.replace(' ', ' | ')}\n" for k, q in enumerate(desc))
    with open(f"{D}/q_pkg.tsv", "w") as f:
        f.writelines(f"{k + 1}\t{p}\n" for k, p in enumerate(pkgs))
    print(json.dumps({"docs": a.count, "packages": P, "json_bytes": nbytes, "avg_doc_bytes": round(nbytes / a.count, 1),
                      "seconds": round(time.perf_counter() - t0, 1), "query_params": len(title)}))


# ---- Corvid indexes ----------------------------------------------------------------------------------
def index_definitions():
    search = {"Name": SEARCH_INDEX,
              "Maps": ["from v in docs.Versions select new { v.Title, v.Description, v.Tags, v.Authors, v.PackageId, v.DownloadCount }"],
              "Fields": {"Title": {"Indexing": "Search"}, "Description": {"Indexing": "Search"}, "Tags": {"Indexing": "Search"}}}
    reduce = {"Name": REDUCE_INDEX,
              "Maps": ["from v in docs.Versions select new { v.PackageId, v.DownloadCount, Versions = 1 }"],
              "Reduce": "from r in results group r by r.PackageId into g select new { PackageId = g.Key, "
                        "DownloadCount = g.Sum(x => x.DownloadCount), Versions = g.Sum(x => x.Versions) }"}
    return search, reduce


def cmd_corvid_load(a):
    print(json.dumps(sb.corvid_bulk_insert(a.url, a.db, a.file)))


def cmd_corvid_indexes(a):
    search, reduce = index_definitions()
    out = {"search": sb.corvid_create_index(a.url, a.db, search, a.count, "Versions"),
           "reduce": sb.corvid_create_index(a.url, a.db, reduce, a.count, "Versions", map_reduce=True),
           "definitions": [search, reduce]}
    print(json.dumps(out))


# ---- OpenSearch --------------------------------------------------------------------------------------
OS_MAPPING = {"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
              "mappings": {"properties": {
                  "PackageId": {"type": "keyword"}, "Version": {"type": "keyword"},
                  "Title": {"type": "text"}, "Description": {"type": "text"}, "Tags": {"type": "text"},
                  "Authors": {"type": "keyword"}, "DownloadCount": {"type": "long"}}}}


def cmd_os_load(a):
    c = sb.conn(a.url)
    sb.req(c, "DELETE", f"/{OS_INDEX}")
    st, data = sb.req(c, "PUT", f"/{OS_INDEX}", OS_MAPPING)
    if st != 200:
        print(json.dumps({"error": f"PUT /{OS_INDEX} -> {st}: {sb.short(data)}"}))
        return
    t0 = time.perf_counter()
    bulk = sb.os_bulk_load(a.url, OS_INDEX, f"{a.dir}/versions.os.ndjson", a.concurrency, a.docs_per_request)
    t1 = time.perf_counter()
    st, data = sb.req(c, "POST", f"/{OS_INDEX}/_refresh")
    t2 = time.perf_counter()
    st2, data2 = sb.req(c, "GET", f"/{OS_INDEX}/_count")
    count = json.loads(data2).get("count") if st2 == 200 else None
    sb.req(c, "PUT", f"/{OS_INDEX}/_settings", {"index": {"refresh_interval": a.refresh_after}})
    print(json.dumps({"bulk": bulk, "bulk_s": round(t1 - t0, 3), "refresh_s": round(t2 - t1, 3),
                      "total_s": round(t2 - t0, 3), "docs_per_s": round(a.count / (t2 - t0), 1), "count": count,
                      "refresh_interval_after": a.refresh_after, "refresh_status": st}))


# ---- updates and write-to-visible lag --------------------------------------------------------------------
def _load_state(path):
    try:
        return {int(k): v for k, v in json.load(open(path)).items()}
    except (OSError, ValueError):
        return {}


def cmd_updates(a):
    state = _load_state(a.state) if a.state else {}
    r = random.Random(a.run_seed)
    inflight, pending, tracked_ids = set(), {}, set()
    db = a.db

    def make_write(n):
        while True:
            i = r.randrange(a.count)
            if i not in inflight and i not in tracked_ids:
                break
        inflight.add(i)
        new = state.get(i, base_downloads(a.seed, i)) + r.randint(1, 100)
        tok = token_of(n, a.salt) if a.track_every and n % a.track_every == 0 else None
        if tok:
            tracked_ids.add(i)   # never rewritten again in this run: a later update would remove the token
        pending[n] = (i, new)
        doc = make_version(a.seed, i, a.count, downloads=new, token=tok)
        if a.target == "corvid":
            doc["@metadata"] = {"@collection": "Versions"}
            return "PUT", f"/databases/{db}/docs?id=versions/{i}", json.dumps(doc).encode()
        return "PUT", f"/{OS_INDEX}/_doc/{i}", json.dumps(doc).encode()

    def on_ack(n):
        i, new = pending[n]
        state[i] = new

    def make_poll(n):
        tok = token_of(n, a.salt)
        if a.target == "corvid":
            body = json.dumps({"Query": f"from index '{SEARCH_INDEX}' where search(Title, $q)", "QueryParameters": {"q": tok},
                               "WaitForNonStaleResults": False}).encode()
            return "POST", f"/databases/{db}/queries", body, lambda s, d: json.loads(d).get("TotalResults", 0) >= 1
        body = json.dumps({"query": {"match": {"Title": tok}}, "size": 0}).encode()
        return "POST", f"/{OS_INDEX}/_search", body, lambda s, d: json.loads(d)["hits"]["total"]["value"] >= 1

    orig_write = make_write

    def make_write_tracked(n):
        m, p, b = orig_write(n)
        return m, p, b

    async def run():
        # release the in-flight mark when a write completes (acknowledged or not)
        res = await sb.paced_writes(a.url, a.rate, a.duration, make_write_tracked, make_poll if a.track_every else None,
                                    a.track_every, writers=a.writers, pollers=a.pollers, poll_ms=a.poll_ms,
                                    on_ack=lambda n: (on_ack(n), inflight.discard(pending[n][0])))
        return res
    res = asyncio.run(run())
    # writes that failed or are uncertain: their doc id stays in `inflight`; report them
    failed = [pending[n][0] for n in pending if pending[n][0] in inflight]
    res["failed_or_uncertain_ids"] = len(failed)
    if a.state:
        json.dump({str(k): v for k, v in state.items()}, open(a.state, "w"))
        if failed:
            with open(a.state + ".uncertain", "a") as f:
                f.writelines(f"{i}\n" for i in failed)
    res["target"] = a.target
    print(json.dumps(res))


# ---- reduce totals ----------------------------------------------------------------------------------------
def expected_totals(seed, count, state):
    tot, ver = {}, {}
    pid = [package(seed, p)["PackageId"] for p in range(packages(count))]
    for i in range(count):
        p = package_of(i, count)
        dl = state[i] if i in state else base_downloads(seed, i)
        tot[pid[p]] = tot.get(pid[p], 0) + dl
        ver[pid[p]] = ver.get(pid[p], 0) + 1
    return tot, ver


def cmd_check_totals(a):
    state = _load_state(a.state) if a.state else {}
    uncertain = set()
    if a.state and os.path.exists(a.state + ".uncertain"):
        uncertain = {int(x) for x in open(a.state + ".uncertain") if x.strip()}
    t0 = time.perf_counter()
    exp, ver = expected_totals(a.seed, a.count, state)
    t_exp = time.perf_counter() - t0
    got, t_q, waited = {}, None, None
    if a.source == "corvid":
        waited = sb.corvid_wait_nonstale(a.url, a.db, [REDUCE_INDEX])
        c = sb.conn(a.url)
        t1 = time.perf_counter()
        off = 0
        while True:
            st, j, ms, raw = sb.corvid_query(c, a.db, f"from index '{REDUCE_INDEX}' limit {a.page} offset {off}")
            if st != 200 or j is None:
                print(json.dumps({"source": a.source, "error": f"HTTP {st}: {sb.short(raw)}"}))
                return
            res = j.get("Results") or []
            for d in res:
                got[d.get("PackageId")] = (d.get("DownloadCount"), d.get("Versions"))
            off += len(res)
            if not res or off >= (j.get("TotalResults") or 0):
                break
        t_q = time.perf_counter() - t1
        stale = j.get("IsStale")
    else:
        t1 = time.perf_counter()
        out = subprocess.run(a.psql_cmd.split() + ["-At", "-F", "\t", "-c",
                             "SELECT body->>'PackageId', sum((body->>'DownloadCount')::bigint), count(*) FROM versions GROUP BY 1"],
                             capture_output=True, text=True, check=True).stdout
        t_q = time.perf_counter() - t1
        for line in out.splitlines():
            p, s, n = line.split("\t")
            got[p] = (int(s), int(n))
        stale = None
    uncertain_pkgs = {package(a.seed, package_of(i, a.count))["PackageId"] for i in uncertain}
    mism = []
    for p, t in exp.items():
        g = got.get(p)
        if g is None or g[0] != t or g[1] != ver[p]:
            if p not in uncertain_pkgs:
                mism.append({"PackageId": p, "expected": [t, ver[p]], "got": g})
    extra = [p for p in got if p not in exp]
    print(json.dumps({"source": a.source, "label": a.label, "packages_expected": len(exp), "packages_got": len(got),
                      "mismatches": len(mism), "examples": mism[:5], "unexpected_packages": extra[:5],
                      "uncertain_packages_skipped": len(uncertain_pkgs), "updated_docs": len(state),
                      "sum_expected": sum(exp.values()), "sum_got": sum(g[0] or 0 for g in got.values()),
                      "exact": not mism and not extra and len(got) == len(exp), "query_s": round(t_q, 3),
                      "recompute_s": round(t_exp, 2), "wait_nonstale_s": waited, "stale_at_read": stale}))


# ---- cross-check of search totals ------------------------------------------------------------------------
def cmd_crosscheck(a):
    title, desc = query_params(a.seed)
    c = sb.conn(a.url)
    oc = sb.conn(a.os_url) if a.os_url else None
    out = []
    for shape, qs in (("title", title[:a.per_shape]), ("desc", desc[:a.per_shape])):
        field = "Title" if shape == "title" else "Description"
        for q in qs:
            st, j, ms, raw = sb.corvid_query(c, a.db, f"from index '{SEARCH_INDEX}' where search({field}, $q) limit 20", {"q": q}, True)
            rec = {"shape": shape, "q": q, "corvid": (j or {}).get("TotalResults") if st == 200 else f"HTTP {st}: {sb.short(raw, 200)}"}
            if oc:
                st2, d2 = sb.req(oc, "POST", f"/{OS_INDEX}/_search", {"query": {"match": {field: q}}, "size": 0, "track_total_hits": True})
                rec["opensearch"] = json.loads(d2)["hits"]["total"]["value"] if st2 == 200 else f"HTTP {st2}"
            if a.psql_cmd:
                tsq = q.replace(" ", " | ")
                sql = f"SELECT count(*) FROM versions WHERE to_tsvector('simple', body->>'{field}') @@ to_tsquery('simple', '{tsq}')"
                rec["postgres"] = int(subprocess.run(a.psql_cmd.split() + ["-At", "-c", sql], capture_output=True, text=True, check=True).stdout.strip())
            vals = {v for k, v in rec.items() if k in ("corvid", "opensearch", "postgres")}
            rec["agree"] = len(vals) == 1
            out.append(rec)
    print(json.dumps({"checked": len(out), "disagreements": [r for r in out if not r["agree"]], "all": out}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, url=True):
        if url:
            sp.add_argument("--url", required=True)
        sp.add_argument("--db", default="bench")
        sp.add_argument("--count", type=int, required=True)
        sp.add_argument("--seed", type=int, default=42)

    sp = sub.add_parser("prepare"); common(sp, url=False); sp.add_argument("--out-dir", required=True); sp.set_defaults(fn=cmd_prepare)
    sp = sub.add_parser("corvid-load"); common(sp); sp.add_argument("--file", required=True); sp.set_defaults(fn=cmd_corvid_load)
    sp = sub.add_parser("corvid-indexes"); common(sp); sp.set_defaults(fn=cmd_corvid_indexes)
    sp = sub.add_parser("os-load"); common(sp); sp.add_argument("--dir", required=True)
    sp.add_argument("--concurrency", type=int, default=2); sp.add_argument("--docs-per-request", type=int, default=5000)
    sp.add_argument("--refresh-after", default="1s"); sp.set_defaults(fn=cmd_os_load)
    sp = sub.add_parser("updates"); common(sp)
    sp.add_argument("--target", choices=["corvid", "opensearch"], required=True)
    sp.add_argument("--rate", type=float, default=1000); sp.add_argument("--duration", type=float, required=True)
    sp.add_argument("--state", default=""); sp.add_argument("--track-every", type=int, default=0)
    sp.add_argument("--poll-ms", type=float, default=2); sp.add_argument("--writers", type=int, default=32)
    sp.add_argument("--pollers", type=int, default=8); sp.add_argument("--run-seed", type=int, default=1)
    sp.add_argument("--salt", default=""); sp.set_defaults(fn=cmd_updates)
    sp = sub.add_parser("check-totals"); common(sp, url=False); sp.add_argument("--url", default="")
    sp.add_argument("--source", choices=["corvid", "pg"], required=True); sp.add_argument("--state", default="")
    sp.add_argument("--psql-cmd", default=""); sp.add_argument("--page", type=int, default=10000)
    sp.add_argument("--label", default=""); sp.set_defaults(fn=cmd_check_totals)
    sp = sub.add_parser("crosscheck"); common(sp); sp.add_argument("--os-url", default="")
    sp.add_argument("--psql-cmd", default=""); sp.add_argument("--per-shape", type=int, default=5); sp.set_defaults(fn=cmd_crosscheck)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
