#!/usr/bin/env python3
"""Render S1 benchmark records (JSON lines) as Markdown (python stdlib only).

usage: report.py s1 RECORDS.jsonl META.json

Each record: {"system": "corvid"|"postgres", "op": "put"|"get", "conc": n, "rep": r, "rps": ...,
"p50_ms": ..., "p99_ms": ..., "p999_ms": ..., "non2xx": n, "docs_per_fsync": ..., "cpu_s": ...,
"disk_wps": ...}. With several repetitions the table shows the median and (min-max).
"""
import json
import statistics
import sys

DISK_PROBE_N = 500

TARGETS = [
    # (op, conc, metric, threshold, text)
    ("put", 16, "ratio", 2.0, "durable inserts/s at 16 clients: Corvid >= 2x PostgreSQL"),
    ("put", 64, "docs_per_fsync", 10.0, "docs per fsync at 64 clients >= 10"),
    ("get", 16, "ratio", 1.3, "GET by id at 16 connections: Corvid >= 1.3x PostgreSQL"),
]


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fnum(v, digits=0):
    if v is None:
        return "n/a"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def fms(v):
    if v is None:
        return "n/a"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def spread(vals, digits=0):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fnum(m, digits)
    return f"{fnum(m, digits)} ({fnum(min(vals), digits)}-{fnum(max(vals), digits)})"


def group(records):
    g = {}
    for r in records:
        g.setdefault((r["op"], r["conc"], r["system"]), []).append(r)
    return g


def ratios(g, op, conc):
    c = {r["rep"]: r.get("rps") for r in g.get((op, conc, "corvid"), [])}
    p = {r["rep"]: r.get("rps") for r in g.get((op, conc, "postgres"), [])}
    out = []
    for rep in sorted(set(c) & set(p)):
        if c[rep] is not None and p[rep]:
            out.append(c[rep] / p[rep])
    return out


def cpu_per_1k(rs, key="cpu_s"):
    vals = []
    for r in rs:
        ok = r.get("ok") or 0
        if r.get(key) is not None and ok > 0:
            vals.append(r[key] / (ok / 1000.0))
    return med(vals)


def s1(records, meta):
    g = group(records)
    out = []
    out.append(f"### S1 durable writes and reads by id — {meta.get('date', '')}")
    out.append("")
    out.append(f"- commit: `{meta.get('commit')}` (HEAD when the run started; binary: {meta.get('binary', 'n/a')}); "
               f"machine: {meta.get('machine')}")
    out.append(f"- disk regime: **{meta.get('regime')}** (durable 4 KiB writes: {meta.get('disk_wps_before')}/s "
               f"before, {meta.get('disk_wps_after', 'n/a')}/s after; data dirs under {meta.get('tmp_parent')} "
               f"on {meta.get('fs')})")
    probes = sorted({(r["op"], r["conc"], r["rep"]): r["disk_wps"] for r in records
                     if r.get("disk_wps") is not None}.values())
    if probes:
        fast = sum(1 for v in probes if v > 2000)
        out.append(f"- disk probes before each write step ({DISK_PROBE_N} dsync writes): median {statistics.median(probes):,.0f}/s, "
                   f"min {probes[0]:,.0f}, max {probes[-1]:,.0f}; {fast} of {len(probes)} steps in the fast regime (> 2,000/s)")
    out.append(f"- {meta.get('duration')} s per step, {meta.get('repeats')} repetition(s), systems interleaved "
               f"per step; wrk {meta.get('wrk_threads', 2)} threads (1 for 1 connection), pgbench -M prepared -j 2; "
               f"document {meta.get('doc_bytes')} bytes; PostgreSQL {meta.get('pg_settings')}")
    if meta.get("preload"):
        out.append(f"- GET preload: {meta['preload']}")
    if meta.get("notes"):
        for n in meta["notes"]:
            out.append(f"- note: {n}")
    multi = int(meta.get("repeats", 1)) > 1
    out.append("")
    for op, title in (("put", "Durable single-document writes (one document per request, acknowledged after fsync)"),
                      ("update", "Durable updates of existing documents (PUT over a random preloaded id / UPDATE)"),
                      ("get", "GET by id (%s preloaded documents, uniform random ids)" % f"{meta.get('preload_count', 100000):,}")):
        concs = sorted({k[1] for k in g if k[0] == op})
        if not concs:
            continue
        out.append(f"**{title}**" + (" — median (min-max) of repetitions" if multi else ""))
        out.append("")
        hdr = ["clients", "Corvid req/s", "p50 ms", "p99 ms", "p99.9 ms",
               "PostgreSQL tps", "p50 ms", "p99 ms", "p99.9 ms", "Corvid/PG"]
        if op != "get":
            hdr += ["Corvid docs/fsync", "PG docs/WAL sync", "disk 4K dsync/s"]
        hdr += ["server CPU s/1k ops C / PG", "client CPU s/1k wrk / pgbench", "steal %", "errors C / PG"]
        out.append("| " + " | ".join(hdr) + " |")
        out.append("|" + "---|" * len(hdr))
        for conc in concs:
            c = g.get((op, conc, "corvid"), [])
            p = g.get((op, conc, "postgres"), [])
            row = [str(conc),
                   spread([r.get("rps") for r in c]),
                   fms(med([r.get("p50_ms") for r in c])), fms(med([r.get("p99_ms") for r in c])),
                   fms(med([r.get("p999_ms") for r in c])),
                   spread([r.get("rps") for r in p]),
                   fms(med([r.get("p50_ms") for r in p])), fms(med([r.get("p99_ms") for r in p])),
                   fms(med([r.get("p999_ms") for r in p])),
                   spread(ratios(g, op, conc), 2)]
            if op != "get":
                row.append(spread([r.get("docs_per_fsync") for r in c], 1))
                row.append(spread([r["ok"] / r["pg_wal_syncs"] for r in p
                                   if r.get("pg_wal_syncs") and r.get("ok")], 1))
                row.append(spread([r.get("disk_wps") for r in (c or p)]))
            cc, pc = cpu_per_1k(c), cpu_per_1k(p)
            row.append(f"{fnum(cc, 2)} / {fnum(pc, 2)}")
            row.append(f"{fnum(cpu_per_1k(c, 'client_cpu_s'), 2)} / {fnum(cpu_per_1k(p, 'client_cpu_s'), 2)}")
            row.append(fnum(med([r.get("steal_pct") for r in c + p]), 1))
            ce = sum((r.get("non2xx") or 0) + (r.get("sock_errors") or 0) for r in c)
            pe = sum((r.get("non2xx") or 0) for r in p)
            row.append(f"{ce} / {pe}")
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    out.append("**Targets**")
    out.append("")
    for op, conc, metric, thr, text in TARGETS:
        if metric == "ratio":
            v = med(ratios(g, op, conc))
        else:
            v = med([r.get(metric) for r in g.get((op, conc, "corvid"), [])])
        if v is None:
            status = "not measured"
        else:
            status = ("PASS" if v >= thr else "FAIL") + f" ({v:.2f})"
        out.append(f"- {text}: {status}")
    rss = [r.get("rss_peak_mib") for r in records if r["system"] == "corvid" and r.get("rss_peak_mib")]
    if rss:
        out.append(f"- Corvid peak RSS during the run: {max(rss):.0f} MiB")
    if meta.get("disk_usage"):
        out.append(f"- on disk at the end: {meta['disk_usage']}")
    out.append("")
    return "\n".join(out)


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "s1":
        sys.exit(__doc__)
    records = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
    meta = json.load(open(sys.argv[3]))
    print(s1(records, meta))


if __name__ == "__main__":
    main()
