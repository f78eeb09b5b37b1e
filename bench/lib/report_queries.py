#!/usr/bin/env python3
"""Render the query-scenario records (bench/run-queries.sh) as Markdown (python stdlib only).

usage: report_queries.py RECORDS.jsonl META.json

Record kinds: load (system, docs_per_s, seconds), index (corvid: cold-index output; postgres: index,
seconds), warm (first query of each shape), check (cross-check with PostgreSQL), query (system, shape,
conc, rep, rps, p50_ms, p99_ms, ...), lag (write-to-visible lag).
"""
import json
import statistics
import sys

SHAPE_TEXT = {
    "eq": ("equality, all matches", "`from Users where City = $p0`",
           "`WHERE body->>'City' = $1` (every match)"),
    "range": ("range, page + total", "`from Users where Age between $p0 and $p1 limit 30` (1-5 ages)",
              "`BETWEEN` `LIMIT 30` + `count(*)`"),
    "sorted": ("filtered top-30 sorted + total", "`from Users where City = $p0 order by Score as double desc limit 30`",
               "`ORDER BY score DESC LIMIT 30` + `count(*)`"),
    "name": ("unfiltered top-30 by Name", "`from Users order by Name limit 30`",
             "`ORDER BY lower(name) LIMIT 30` (no count)"),
    "page": ("deep paging", "`from Users order by Age as long limit 30 offset $p0` (offset 0..N/2)",
             "`ORDER BY age LIMIT 30 OFFSET $1` (no count)"),
}


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fnum(v, d=0):
    if v is None:
        return "n/a"
    return f"{v:,.{d}f}"


def fms(v):
    if v is None:
        return "n/a"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def spread(vals, d=0):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fnum(m, d)
    return f"{fnum(m, d)} ({fnum(min(vals), d)}-{fnum(max(vals), d)})"


def verdict(ok, value):
    if value is None:
        return "not measured"
    return ("PASS" if ok else "FAIL") + f" ({value})"


def render(records, meta):
    by = lambda **kw: [r for r in records if all(r.get(k) == v for k, v in kw.items())]
    n = meta.get("n")
    out = [f"### Queries over {n:,} Users documents — {meta.get('date', '')}", ""]
    out.append(f"- commit: `{meta.get('commit')}` (HEAD when the run started; binary: {meta.get('binary')}); "
               f"machine: {meta.get('machine')}")
    out.append(f"- disk regime: **{meta.get('regime')}** (durable 4 KiB writes: {meta.get('disk_wps_before')}/s before, "
               f"{meta.get('disk_wps_after')}/s after; data dirs under {meta.get('tmp_parent')} on {meta.get('fs')})")
    out.append(f"- {n:,} documents of {meta.get('avg_doc_bytes')} bytes on average (Name of ~5,000 mixed-case, Age 0-99, "
               f"City of 200, Score double, 1-3 Tags of 20, CreatedAt); {meta.get('duration')} s per query step, "
               f"{meta.get('repeats')} repetition(s), systems alternating who goes first; Corvid driven by "
               f"`wrk` + `lib/wrk_queries.lua`, PostgreSQL by `pgbench -M prepared` over `users(id text primary key, "
               f"body jsonb)` with expression btree indexes; PostgreSQL {meta.get('pg_settings')}")
    if meta.get("quick"):
        out.append("- QUICK run (smoke test): short steps, one repetition")
    out.append("")

    # ---- load + indexing
    lc, lp = by(kind="load", system="corvid"), by(kind="load", system="postgres")
    ci = by(kind="index", system="corvid")
    pgi = {r.get("index"): r for r in by(kind="index", system="postgres")}
    out.append("**Load and cold indexing**")
    out.append("")
    out.append("| step | Corvid | PostgreSQL | Corvid/PG |")
    out.append("|---|---|---|---|")
    if lc and lp:
        c, p = lc[0], lp[0]
        out.append(f"| load {n:,} docs | {fnum(c.get('docs_per_s'))} docs/s ({c.get('seconds')} s; bulk_docs, "
                   f"{meta.get('load_batch')}-doc batches, {meta.get('load_concurrency')} uploaders) | "
                   f"{fnum(p.get('docs_per_s'))} docs/s ({p.get('seconds')} s; `COPY`, primary key only; "
                   f"then VACUUM ANALYZE {p.get('vacuum_analyze_s')} s) | "
                   f"{(c['docs_per_s'] / p['docs_per_s']):.2f} |")
    cold = ci[0] if ci else None
    if cold:
        age = pgi.get("age", {})
        ratio = (f"{(cold['docs_per_s'] / age['docs_per_s']):.2f}" if cold.get("docs_per_s") and age.get("docs_per_s")
                 else "n/a")
        out.append(f"| cold index for `Age` (time until EntriesCount = N and not stale) | "
                   f"{fnum(cold.get('docs_per_s'))} docs/s ({cold.get('build_s')} s, `{cold.get('index')}`, "
                   f"server CPU {cold.get('cpu_s')} s) | {fnum(age.get('docs_per_s'))} docs/s "
                   f"(`CREATE INDEX` {age.get('seconds')} s) | {ratio} |")
        fq = cold.get("first_query") or {}
        out.append(f"| first `from Users where Age = 30` (WaitForNonStaleResults=false) | {fms(cold.get('first_query_ms'))} ms, "
                   f"HTTP {cold.get('first_query_status')}, TotalResults {fq.get('TotalResults')}, IsStale "
                   f"{fq.get('IsStale')}, {fq.get('Results')} results | | |")
    warm = by(kind="warm")
    if warm:
        w = warm[0]
        parts = [f"{f['shape']} {fms(f.get('ms'))} ms → `{f.get('index')}`" for f in w.get("first", [])]
        pg_rest = [pgi[k] for k in ("city_score", "name") if k in pgi]
        pg_txt = ", ".join(f"`{r['index']}` {r['seconds']} s" for r in pg_rest)
        out.append(f"| first query of each shape (automatic index merges; each rebuilds from scratch) | "
                   f"{'; '.join(parts)}; then caught up after {w.get('wait_s')} s | CREATE INDEX {pg_txt} | |")
    out.append("")

    # ---- query latency
    q = by(kind="query")
    if q:
        multi = int(meta.get("repeats", 1)) > 1
        out.append("**Query latency and throughput**" + (" — median (min-max) of repetitions" if multi else ""))
        out.append("")
        hdr = ["query", "clients", "Corvid q/s", "p50 ms", "p99 ms", "PostgreSQL q/s", "p50 ms", "p99 ms",
               "Corvid/PG q/s", "p50 C/PG", "reply KiB", "server CPU ms/query C / PG", "errors C / PG"]
        out.append("| " + " | ".join(hdr) + " |")
        out.append("|" + "---|" * len(hdr))
        shapes = [s for s in SHAPE_TEXT if any(r["shape"] == s for r in q)]
        concs = sorted({r["conc"] for r in q})
        for s in shapes:
            for conc in concs:
                c = [r for r in q if r["shape"] == s and r["conc"] == conc and r["system"] == "corvid"]
                p = [r for r in q if r["shape"] == s and r["conc"] == conc and r["system"] == "postgres"]
                if not c and not p:
                    continue
                cr = {r["rep"]: r.get("rps") for r in c}
                pr = {r["rep"]: r.get("rps") for r in p}
                ratios = [cr[k] / pr[k] for k in set(cr) & set(pr) if cr[k] and pr[k]]
                cp50, pp50 = med([r.get("p50_ms") for r in c]), med([r.get("p50_ms") for r in p])

                def cpu(rs):
                    v = [r["cpu_s"] * 1000.0 / r["ok"] for r in rs if r.get("cpu_s") is not None and r.get("ok")]
                    return med(v)
                ce = sum((r.get("non2xx") or 0) + (r.get("sock_errors") or 0) for r in c)
                pe = sum((r.get("non2xx") or 0) for r in p)
                rb = med([r.get("resp_bytes") for r in c])
                out.append("| " + " | ".join([
                    SHAPE_TEXT[s][0], str(conc), spread([r.get("rps") for r in c]),
                    fms(cp50), fms(med([r.get("p99_ms") for r in c])),
                    spread([r.get("rps") for r in p]), fms(pp50), fms(med([r.get("p99_ms") for r in p])),
                    spread(ratios, 2), f"{cp50 / pp50:.2f}" if cp50 and pp50 else "n/a",
                    fnum(rb / 1024.0, 1) if rb else "n/a",
                    f"{fnum(cpu(c), 2)} / {fnum(cpu(p), 2)}", f"{ce} / {pe}"]) + " |")
        out.append("")
        out.append("Queries: " + "; ".join(f"**{SHAPE_TEXT[s][0]}**: Corvid {SHAPE_TEXT[s][1]}, PostgreSQL "
                                           f"{SHAPE_TEXT[s][2]}" for s in shapes) + ".")
        if meta.get("pg_plans"):
            out.append("PostgreSQL plans (first statement): " + "; ".join(
                l.strip() for l in meta["pg_plans"].splitlines() if l.strip()) + ".")
        out.append("")
    chk = by(kind="check")
    if chk:
        k = chk[0]
        out.append(f"- cross-check against PostgreSQL: {k.get('checked')} queries, "
                   f"{len(k.get('mismatches') or [])} with a different total, page size or sort order"
                   + (" (see notes)" if k.get("mismatches") else ""))

    # ---- lag
    lag = by(kind="lag")
    if lag:
        l = lag[0]
        out.append(f"- write-to-visible lag: {l.get('writes'):,} single-document PUTs in {l.get('duration_s')} s "
                   f"({l.get('write_rate')}/s, PUT p50 {fms(l.get('put_p50_ms'))} ms, p99 {fms(l.get('put_p99_ms'))} ms; "
                   f"disk probe {l.get('disk_wps')} 4K dsync/s); every {l.get('track_every')}th write polled with "
                   f"`from Users where City = $p0` every {l.get('poll_ms')} ms after its acknowledgement: "
                   f"{l.get('visible')} of {l.get('tracked')} became visible, lag after the acknowledgement "
                   f"p50 **{fms(l.get('lag_p50_ms'))} ms**, p90 {fms(l.get('lag_p90_ms'))}, p99 **{fms(l.get('lag_p99_ms'))} ms**, "
                   f"max {fms(l.get('lag_max_ms'))} (from the request's start: p50 {fms(l.get('lag_from_send_p50_ms'))}, "
                   f"p99 {fms(l.get('lag_from_send_p99_ms'))}); {l.get('poll_queries'):,} polling queries; errors "
                   f"{l.get('error_count')}. PostgreSQL's btree indexes are updated inside the inserting transaction: "
                   f"lag 0 by construction.")
    rss = meta.get("rss") or {}
    if rss:
        out.append(f"- Corvid RSS at the end {fnum(rss.get('rss_mib'))} MiB, peak {fnum(rss.get('rss_peak_mib'))} MiB")
    if meta.get("disk_usage"):
        out.append(f"- on disk at the end: {meta['disk_usage']}")
    for nt in meta.get("notes") or []:
        out.append(f"- note: {nt}")
    out.append("")

    # ---- targets
    out.append("**Targets**")
    out.append("")
    if cold:
        v = cold.get("docs_per_s")
        out.append(f"- cold automatic-index build ≥ 50,000 docs/s: {verdict(v is not None and v >= 50000, fnum(v) if v else None)}")
    srt = [r for r in q if r["shape"] == "sorted" and r["conc"] == 1 and r["system"] == "corvid"]
    if srt:
        v = med([r.get("p50_ms") for r in srt])
        scale = "" if n >= 1_000_000 else f" (measured at {n:,} docs; the target is for 1,000,000)"
        out.append(f"- sorted top-30 with total, 1 client, p50 < 5 ms: {verdict(v is not None and v < 5, fms(v) + ' ms')}{scale}")
    if lag:
        v = lag[0].get("lag_p99_ms")
        out.append(f"- write-to-visible lag p99 < 100 ms: {verdict(v is not None and v < 100, fms(v) + ' ms' if v is not None else None)}")
    out.append("")
    return "\n".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    meta = json.load(open(sys.argv[2]))
    print(render(records, meta))


if __name__ == "__main__":
    main()
