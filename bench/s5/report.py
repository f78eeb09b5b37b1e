#!/usr/bin/env python3
"""Markdown report and target checks of bench/run-s5.sh: report.py RECORDS.jsonl META.json"""
import json
import statistics
import sys


def f(v, d=2):
    if v is None:
        return "n/a"
    if isinstance(v, (int, float)):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{d}f}" if isinstance(v, float) else str(v)
    return str(v)


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def main():
    recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    meta = json.load(open(sys.argv[2]))
    by = lambda **kw: [r for r in recs if all(r.get(k) == v for k, v in kw.items())]  # noqa: E731
    n = meta["n"]
    out = []
    P = out.append
    P(f"## S5 run {meta['date']} ({'QUICK, ' if meta['quick'] else ''}{n:,} phone products)")
    P("")
    P(f"- commit `{meta['commit']}`; binary: {meta['binary']}; machine: {meta['machine']}")
    P(f"- disk regime: **{meta['regime']}** (durable 4 KiB writes/s: {meta['disk_wps_before']} before, {meta['disk_wps_after']} after)")
    P(f"- peers: {meta['opensearch']}; PostgreSQL 15 ({meta['pg_settings']})")
    data = (by(kind="data") or [{}])[0]
    P(f"- data: {n:,} products, average document {data.get('avg_doc_bytes')} bytes of JSON; {meta['duration']} s per step x {meta['repeats']}, "
      f"after a {meta['warmup']} s unrecorded warm-up of every shape on every system")
    P("")
    lc = (by(kind="load", system="corvid") or [{}])[0]
    ic = (by(kind="index", system="corvid") or [{}])[0]
    lo = (by(kind="index", system="opensearch") or [{}])[0]
    lp = (by(kind="load", system="postgres") or [{}])[0]
    ip = (by(kind="index", system="postgres") or [{}])[0]
    P("**Loading and indexing**")
    P("")
    P(f"- Corvid: bulk insert {f(lc.get('seconds'))} s; cold build of `{ic.get('index')}` {f(ic.get('build_s'))} s = **{f(ic.get('docs_per_s'))} docs/s** "
      f"(server CPU {f(ic.get('cpu_s'))} s)")
    P(f"- OpenSearch: `_bulk` (refresh_interval -1) + refresh {f(lo.get('total_s'))} s = **{f(lo.get('docs_per_s'))} docs/s** (server CPU {f(lo.get('cpu_s'))} s)")
    P(f"- PostgreSQL: COPY {f(lp.get('seconds'))} s; GIN tsvector(Name) {f(ip.get('gin_s'))} s; GiST ll_to_earth(Location) {f(ip.get('gist_s'))} s")
    P("")
    cc = (by(kind="crosscheck") or [{}])[0]
    if cc:
        P(f"Cross-check before timing: {cc.get('checked')} queries (facets without and with a Name filter: every Brand/OS/price-range count in all "
          f"three systems; radius: Corvid vs OpenSearch totals and the top-20 ids in order): {len(cc.get('disagreements') or [])} disagreements.")
        for d in (cc.get("disagreements") or [])[:6]:
            P(f"  - {d['shape']} {json.dumps(d['q'])}: " + json.dumps({k: v for k, v in d.items() if k not in ('shape', 'q', 'agree', 'all')})[:600])
        rad = [x for x in cc.get("all") or [] if x["shape"] == "radius"]
        if rad:
            P("  - radius totals (Corvid / OpenSearch / PostgreSQL earthdistance, whose sphere is 6,378 km): " +
              "; ".join(f"{x['q'][2]} km: {x['corvid']} / {x['opensearch']} / {x['postgres_earthdistance']}" for x in rad))
        P("")

    P("**Query latency and throughput** (median over repetitions)")
    P("")
    P("| shape | clients | Corvid q/s | p50 ms | p99 ms | OpenSearch q/s | p50 ms | p99 ms | PostgreSQL q/s | p50 ms | p99 ms | Corvid/OS p50 | Corvid/OS q/s | Corvid/PG q/s | server CPU ms/query C / OS / PG | errors |")
    P("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    keys = []
    for q in by(kind="query"):
        if (q["shape"], q["conc"]) not in keys:
            keys.append((q["shape"], q["conc"]))
    summary = {}
    for shape, conc in keys:
        row = {}
        for sysn in ("corvid", "opensearch", "postgres"):
            rs = by(kind="query", system=sysn, shape=shape, conc=conc)
            if not rs:
                continue
            rps = med([x.get("rps") for x in rs])
            cpu = med([(float(x["cpu_s"]) * 1000 / (x.get("ok") or x.get("requests") or 1)) if x.get("cpu_s") is not None else None for x in rs])
            row[sysn] = {"rps": rps, "p50": med([x.get("p50_ms") for x in rs]), "p99": med([x.get("p99_ms") for x in rs]), "cpu": cpu,
                         "err": sum((x.get("non2xx") or 0) + (x.get("sock_errors") or 0) for x in rs)}
        summary[(shape, conc)] = row

        def c(s, k, d=2):
            return f(row[s][k], d) if s in row and row[s][k] is not None else "-"

        def rt(a, b, k):
            if a in row and b in row and row[a][k] and row[b][k]:
                return f"{row[a][k] / row[b][k]:.2f}"
            return "-"
        P(f"| {shape} | {conc} | {c('corvid', 'rps', 0)} | {c('corvid', 'p50')} | {c('corvid', 'p99')} | {c('opensearch', 'rps', 0)} | "
          f"{c('opensearch', 'p50')} | {c('opensearch', 'p99')} | {c('postgres', 'rps', 0)} | {c('postgres', 'p50')} | {c('postgres', 'p99')} | "
          f"{rt('corvid', 'opensearch', 'p50')} | {rt('corvid', 'opensearch', 'rps')} | {rt('corvid', 'postgres', 'rps')} | "
          f"{c('corvid', 'cpu')} / {c('opensearch', 'cpu')} / {c('postgres', 'cpu')} | "
          f"{sum(row[s]['err'] for s in row)} |")
    P("")
    P("Shapes: `facet` = `from index 'Phones/Search' select facet(Brand), facet(OS), facet(Price < 200.0, Price between 200.0 and 500.0, Price > 500.0)` "
      "over every product (OpenSearch: size 0, `request_cache=false`, terms Brand, terms OS, range Price; PostgreSQL: one GROUP BY GROUPING SETS scan); "
      "`facet_q` = the same `where search(Name, $q)` (one word of 23; OpenSearch `match`; PostgreSQL GIN tsvector filter); "
      "`radius` = `where spatial.within(Location, spatial.circle($r, $lat, $lng)) order by spatial.distance(Location, spatial.point($lat, $lng)) limit 20` "
      "with r in 2/5/10/25 km around 60 city centres (OpenSearch geo_distance + _geo_distance sort, total hits tracked; PostgreSQL "
      "earth_box/earth_distance on a GiST index + count(*)).")
    P("")
    cold = (by(kind="cold") or [{}])[0]
    if cold:
        P(f"**Cold queries after a restart** (SIGTERM, `corvid serve` on the same data directory: {f(cold.get('restart_s'))} s until "
          f"`Server available`; the OS page cache stays warm)")
        P("")
        P("| shape | first query ms | IsStale / TotalResults of the first | warm p50 ms (20 more) | penalty |")
        P("|---|---|---|---|---|")
        for k in ("facet", "facet_q", "radius"):
            v = cold.get(k) or {}
            fi = v.get("first") or {}
            P(f"| {k} | {f(fi.get('ms'))} | {fi.get('IsStale')} / {fi.get('TotalResults')} (warm: {v.get('warm_total')}) | {f(v.get('warm_p50_ms'))} | {f(v.get('penalty_x'), 1)}x |")
        P("")
    rc, ro = meta.get("rss_corvid") or {}, meta.get("rss_opensearch") or {}
    P(f"- memory after the query steps: Corvid RSS {rc.get('rss_mib')} MiB (peak {rc.get('rss_peak_mib')}), OpenSearch JVM RSS {ro.get('rss_mib')} MiB")
    P(f"- on disk: {meta.get('disk_usage')}")
    P(f"- PostgreSQL plans: {meta.get('pg_plans', '').strip().replace(chr(10), '; ')}")
    for nt in meta.get("notes") or []:
        P(f"- NOTE: {nt}")
    P("")
    P("**Targets**")
    P("")
    for shape in ("facet", "facet_q"):
        row = summary.get((shape, 1)) or {}
        if "corvid" in row and "opensearch" in row and row["corvid"]["p50"] and row["opensearch"]["p50"]:
            r = row["corvid"]["p50"] / row["opensearch"]["p50"]
            P(f"- facet p50 <= 0.5x OpenSearch ({shape}, 1 client): {'PASS' if r <= 0.5 else 'FAIL'} ({r:.2f}x: "
              f"{row['corvid']['p50']:.2f} ms vs {row['opensearch']['p50']:.2f} ms)")
    print("\n".join(out))


if __name__ == "__main__":
    main()
