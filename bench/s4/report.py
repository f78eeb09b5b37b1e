#!/usr/bin/env python3
"""Markdown report and target checks of bench/run-s4.sh: report.py RECORDS.jsonl META.json"""
import json
import statistics
import sys


def f(v, d=1):
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
    P(f"## S4 run {meta['date']} ({'QUICK, ' if meta['quick'] else ''}{n:,} version documents)")
    P("")
    P(f"- commit `{meta['commit']}`; binary: {meta['binary']}; machine: {meta['machine']}")
    P(f"- disk regime: **{meta['regime']}** (durable 4 KiB writes/s: {meta['disk_wps_before']} before, {meta['disk_wps_after']} after)")
    P(f"- peers: {meta['opensearch']}; PostgreSQL 15 ({meta['pg_settings']})")
    data = (by(kind="data") or [{}])[0]
    P(f"- data: {data.get('docs', n):,} docs, {data.get('packages', 0):,} packages, average document {data.get('avg_doc_bytes')} bytes of JSON; "
      f"query steps {meta['duration']} s x {meta['repeats']} while {meta['update_rate']} updates/s arrive; lag step {meta['lag_duration']} s")
    P("")

    # ---- indexing
    P("**Loading and cold index builds**")
    P("")
    P("| system | step | seconds | docs/s | server CPU s | notes |")
    P("|---|---|---|---|---|---|")
    lc = (by(kind="load", system="corvid") or [{}])[0]
    P(f"| Corvid | bulk insert (`/bulk_insert`, 1 stream) | {f(lc.get('seconds'))} | {f(n / float(lc['seconds'])) if lc.get('seconds') else 'n/a'} | {f(lc.get('cpu_s'))} | HTTP {lc.get('status')} |")
    ic = (by(kind="index", system="corvid") or [{}])[0]
    s, r = ic.get("search") or {}, ic.get("reduce") or {}
    P(f"| Corvid | cold build, full-text index `{s.get('index')}` | {f(s.get('build_s'), 2)} | **{f(s.get('docs_per_s'))}** | | {s.get('error') or ''} |")
    P(f"| Corvid | cold build, map-reduce `{r.get('index')}` | {f(r.get('build_s'), 2)} | **{f(r.get('docs_per_s'))}** | {f(ic.get('cpu_s'))} (both builds) | {r.get('error') or ''} |")
    lo = (by(kind="index", system="opensearch") or [{}])[0]
    P(f"| OpenSearch | `_bulk` with refresh_interval -1, then `_refresh` | {f(lo.get('total_s'), 2)} (bulk {f(lo.get('bulk_s'), 2)} + refresh {f(lo.get('refresh_s'), 2)}) | **{f(lo.get('docs_per_s'))}** | {f(lo.get('cpu_s'))} | count after refresh {lo.get('count')}; {(lo.get('bulk') or {}).get('error_count')} bulk errors |")
    lp = (by(kind="load", system="postgres") or [{}])[0]
    P(f"| PostgreSQL | COPY | {f(lp.get('seconds'))} | {f(n / float(lp['seconds'])) if lp.get('seconds') else 'n/a'} | {f(lp.get('cpu_s'))} | |")
    gin_s = 0.0
    for ix in by(kind="index", system="postgres"):
        if ix.get("index", "").startswith("gin"):
            gin_s += float(ix["seconds"])
        P(f"| PostgreSQL | CREATE INDEX {ix.get('index')} | {f(ix.get('seconds'), 2)} | {f(ix.get('docs_per_s'))} | {f(ix.get('cpu_s'))} | |")
    pg_gin_rate = n / gin_s if gin_s else None
    P(f"| PostgreSQL | the three GIN tsvector indexes together | {f(gin_s, 2)} | **{f(pg_gin_rate)}** | | |")
    P("")
    cv_rate, os_rate = s.get("docs_per_s"), lo.get("docs_per_s")
    ratio_idx = cv_rate / os_rate if cv_rate and os_rate else None

    # ---- totals
    P("**Map-reduce totals (every package, against a recomputation from the seed and every acknowledged update)**")
    P("")
    P("| check | packages expected / read | updated docs so far | mismatches | exact | read time s | waited for non-stale s |")
    P("|---|---|---|---|---|---|---|")
    exact_all = True
    for t in by(kind="totals"):
        ex = t.get("exact")
        if t.get("system") == "corvid":
            exact_all = exact_all and bool(ex)
        P(f"| {t.get('system')} {t.get('label')} | {t.get('packages_expected')} / {t.get('packages_got')} | {t.get('updated_docs')} | {t.get('mismatches')} | {'yes' if ex else '**NO**'} | {f(t.get('query_s'), 2)} | {t.get('wait_nonstale_s')} |")
    P("")
    cc = (by(kind="crosscheck") or [{}])[0]
    if cc:
        P(f"Search totals cross-check (first 5 title and 5 description queries, TotalResults / hits.total / count(*)): "
          f"{cc.get('checked')} checked, {len(cc.get('disagreements') or [])} disagreements"
          + ("" if not cc.get("disagreements") else ": " + "; ".join(json.dumps(d) for d in cc["disagreements"][:4])))
        P("")

    # ---- queries
    P(f"**Searches while {meta['update_rate']} updates/s arrive** (median over repetitions; updates: achieved rate of the concurrent writer)")
    P("")
    P("| shape | clients | Corvid q/s | p50 ms | p99 ms | OpenSearch q/s | p50 ms | p99 ms | PostgreSQL q/s | p50 ms | p99 ms | Corvid/OS p50 | Corvid/PG p50 | updates/s C / OS / PG | errors C / OS / PG |")
    P("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    shapes = []
    for q in by(kind="query"):
        if (q["shape"], q["conc"]) not in shapes:
            shapes.append((q["shape"], q["conc"]))
    qsum = {}
    for shape, conc in shapes:
        row = {}
        for sysn in ("corvid", "opensearch", "postgres"):
            rs = by(kind="query", system=sysn, shape=shape, conc=conc)
            if not rs:
                row[sysn] = None
                continue
            rps = med([x.get("rps") if x.get("rps") is not None else (x.get("tps") or x.get("tps_reported")) for x in rs])
            row[sysn] = {"rps": rps, "p50": med([x.get("p50_ms") for x in rs]), "p99": med([x.get("p99_ms") for x in rs]),
                         "upd": med([x.get("upd_rate") for x in rs]),
                         "err": sum((x.get("non2xx") or 0) + (x.get("sock_errors") or 0) + (x.get("failed") or 0) for x in rs)}
        qsum[(shape, conc)] = row

        def cell(sysn, k, d=2):
            v = row.get(sysn)
            return f(v[k], d) if v else "-"

        def ratio(a, b):
            va, vb = row.get(a), row.get(b)
            return f"{va['p50'] / vb['p50']:.2f}" if va and vb and va["p50"] and vb["p50"] else "-"
        P(f"| {shape} | {conc} | {cell('corvid', 'rps', 0)} | {cell('corvid', 'p50')} | {cell('corvid', 'p99')} | "
          f"{cell('opensearch', 'rps', 0)} | {cell('opensearch', 'p50')} | {cell('opensearch', 'p99')} | "
          f"{cell('postgres', 'rps', 0)} | {cell('postgres', 'p50')} | {cell('postgres', 'p99')} | "
          f"{ratio('corvid', 'opensearch')} | {ratio('corvid', 'postgres')} | "
          f"{cell('corvid', 'upd', 0)} / {cell('opensearch', 'upd', 0)} / {cell('postgres', 'upd', 0)} | "
          f"{cell('corvid', 'err', 0)} / {cell('opensearch', 'err', 0)} / {cell('postgres', 'err', 0)} |")
    P("")
    P("Shapes: `title` = `from index 'Versions/Search' where search(Title, $q) limit 20` (one word; OpenSearch `match` on Title, size 20, "
      "`track_total_hits`; PostgreSQL `to_tsvector('simple', Title) @@ to_tsquery(...) LIMIT 20` plus `count(*)`); `desc` = the same "
      "on Description with two words (OR in all three); `total` = `from index 'Versions/DownloadTotals' where PackageId = $p` "
      "(OpenSearch: term filter + sum aggregation; PostgreSQL: btree lookup + GROUP BY). PostgreSQL returns matches unranked; Corvid "
      "and OpenSearch rank by score.")
    P("")

    # ---- lag
    P("**Write-to-visible lag** (full-document updates at the given rate; every 10th carries a unique Title token and is polled "
      "with a search every 2 ms from its acknowledgement until it is found)")
    P("")
    P("| system | writes/s achieved | tracked | never visible | lag p50 ms | p90 | p99 | max | PUT p50 / p99 ms |")
    P("|---|---|---|---|---|---|---|---|---|")
    lags = {}
    for l in by(kind="lag"):
        lags[l["system"]] = l
        P(f"| {l['system']} | {f(l.get('write_rate'))} | {l.get('tracked')} | {l.get('never_visible')} | {f(l.get('lag_p50_ms'), 2)} | "
          f"{f(l.get('lag_p90_ms'), 2)} | **{f(l.get('lag_p99_ms'), 2)}** | {f(l.get('lag_max_ms'), 2)} | {f(l.get('put_p50_ms'), 2)} / {f(l.get('put_p99_ms'), 2)} |")
    P("| postgres | - | - | - | 0 (indexes are transactional) | | | | |")
    P("")

    # ---- usage
    rc, ro = meta.get("rss_corvid") or {}, meta.get("rss_opensearch") or {}
    P(f"- memory at the end: Corvid RSS {rc.get('rss_mib')} MiB (peak {rc.get('rss_peak_mib')}), OpenSearch JVM RSS {ro.get('rss_mib')} MiB (peak {ro.get('rss_peak_mib')})")
    P(f"- on disk: {meta.get('disk_usage')}")
    P(f"- PostgreSQL plans: {meta.get('pg_plans', '').strip().replace(chr(10), '; ')}")
    for nt in meta.get("notes") or []:
        P(f"- NOTE: {nt}")
    P("")

    # ---- targets
    P("**Targets**")
    P("")
    P(f"- full-text indexing >= 2x OpenSearch bulk rate: {'PASS' if ratio_idx and ratio_idx >= 2 else 'FAIL'} "
      f"({f(ratio_idx, 2) if ratio_idx else 'n/a'}x: Corvid cold build {f(cv_rate)} docs/s vs OpenSearch bulk+refresh {f(os_rate)} docs/s; "
      f"PostgreSQL GIN {f(pg_gin_rate)} docs/s)")
    cl = lags.get("corvid") or {}
    lp99 = cl.get("lag_p99_ms")
    P(f"- write-to-visible lag p99 < 100 ms: {'PASS' if lp99 is not None and lp99 < 100 and not cl.get('never_visible') else 'FAIL'} "
      f"(Corvid p99 {f(lp99, 2)} ms at {f(cl.get('write_rate'))} writes/s; OpenSearch p99 {f((lags.get('opensearch') or {}).get('lag_p99_ms'), 1)} ms with its 1 s refresh)")
    P(f"- map-reduce totals exact: {'PASS' if exact_all and by(kind='totals', system='corvid') else 'FAIL'} "
      f"({len(by(kind='totals', system='corvid'))} checks of every package)")
    print("\n".join(out))


if __name__ == "__main__":
    main()
