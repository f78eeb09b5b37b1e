#!/usr/bin/env python3
"""Markdown summary of one S2 run: report.py RESULTS_DIR (the JSON files written by bench/run-s2.sh)."""
import json
import os
import sys

R = sys.argv[1]


def load(name):
    p = os.path.join(R, name)
    return json.load(open(p)) if os.path.exists(p) else None


def f(v, d=1):
    if v is None:
        return "n/a"
    if isinstance(v, (int, float)) and abs(v) >= 1000:
        return "{:,.0f}".format(v)
    return ("%." + str(d) + "f") % v


meta = load("meta.json") or {}
data = load("data.json") or {}
cl, pl = load("corvid_load.json"), load("pg_load.json")
cp, pp = load("corvid_patch.json"), load("pg_patch.json")
cb, cput = load("crash_bulk.json"), load("crash_put.json")
out = []
out.append("### S2 run %s (%s mode)" % (meta.get("date"), meta.get("mode")))
out.append("")
out.append("- commit `%s`; binary: %s; machine: %s (shared with other engineers' builds; load average at the end %s)"
           % (meta.get("commit"), meta.get("binary"), meta.get("machine"), meta.get("loadavg")))
out.append("- disk: %s durable 4 KiB writes/s before, %s after (%s)" % (meta.get("disk_before"), meta.get("disk_after"), meta.get("fs")))
if data:
    out.append("- data: %s users + %s posts = %s documents, %.1f MB of document JSON (avg %d bytes/doc), bulk-insert bodies %.1f MB"
               % (f(data["users"]["docs"]), f(data["posts"]["docs"]), f(data["docs"]), data["doc_bytes"] / 1e6,
                  data["doc_bytes"] / data["docs"], (data["users"]["body_bytes"] + data["posts"]["body_bytes"]) / 1e6))
out.append("")
targets = []
if cl or pl:
    out.append("**Bulk load** (Corvid: two concurrent `bulk_insert` streams, users and posts; PostgreSQL: two concurrent `\\copy` into `users`/`posts(id text primary key, data jsonb)`, synchronous_commit=on)")
    out.append("")
    out.append("| system | seconds | docs/s | MB/s of JSON | server CPU s | disk 4K dsync/s | on disk | bytes on disk/doc | peak RSS |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    if cl:
        rss = cl.get("rss", {})
        out.append("| Corvid | %s | %s | %s | %s | %s | %.0f MB (data dir) | %s | VmHWM %s MiB (anon peak %s, file-backed peak %s) |" % (
            f(cl["seconds"]), f(cl["docs_per_s"], 0), f(cl["mb_per_s"]), f(cl.get("server_cpu_s")), f(cl.get("disk_wps"), 0),
            cl.get("data_dir_bytes", 0) / 1e6, f(cl.get("data_dir_bytes", 0) / cl["docs"], 0), rss.get("VmHWM_mib"),
            rss.get("peak_RssAnon_mib"), rss.get("peak_RssFile_mib")))
    if pl:
        out.append("| PostgreSQL COPY | %s | %s | %s | %s | %s | %.0f MB (tables+indexes) | %s | |" % (
            f(pl["seconds"]), f(pl["docs_per_s"], 0), f(pl["mb_per_s"]), f(pl.get("server_cpu_s")), f(pl.get("disk_wps"), 0),
            pl["relation_bytes"] / 1e6, f(pl["relation_bytes"] / pl["docs"], 0)))
    out.append("")
    if cl and not cl.get("ok"):
        out.append("Corvid load errors: %s" % json.dumps(cl.get("streams")))
    if cl and pl:
        ratio = cl["mb_per_s"] / pl["mb_per_s"]
        targets.append("bulk insert >= 1.5x PostgreSQL COPY in MB/s: %s (%.2fx: %s vs %s MB/s)" % (
            "PASS" if ratio >= 1.5 and cl.get("ok") else "FAIL", ratio, f(cl["mb_per_s"]), f(pl["mb_per_s"])))
    if cl:
        hwm = cl.get("rss", {}).get("VmHWM_mib") or 0
        targets.append("peak server memory < 1 GB during the load: %s (VmHWM %s MiB; anonymous %s MiB, file-backed LMDB map pages %s MiB)" % (
            "PASS" if hwm < 1024 else "FAIL", hwm, cl["rss"].get("peak_RssAnon_mib"), cl["rss"].get("peak_RssFile_mib")))
if cp or pp:
    out.append("**Patches**, %s clients for %s s, %s%% badge pushes on random users, the rest comment pushes on random posts" % (
        meta.get("clients"), meta.get("duration"), meta.get("badge_pct")))
    out.append("(Corvid: `PATCH /databases/s2/docs?id=…` with a JavaScript patch via wrk -t 2; PostgreSQL: `UPDATE … SET data = jsonb_set(…)` via pgbench -M prepared -j 2)")
    out.append("")
    out.append("| system | patches/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | errors | server CPU s/1k | client CPU s/1k | disk 4K dsync/s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in (("Corvid PATCH", cp), ("PostgreSQL UPDATE", pp)):
        if not r:
            continue
        ok = r.get("ok") or 0
        err = (r.get("non2xx") or 0) + (r.get("sock_errors") or 0)
        out.append("| %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |" % (
            name, f(r.get("rps"), 0), f(r.get("p50_ms"), 2), f(r.get("p90_ms"), 2), f(r.get("p99_ms"), 2),
            f(r.get("p999_ms"), 1), f(r.get("max_ms"), 1), err,
            f(r["server_cpu_s"] / ok * 1000, 3) if ok and r.get("server_cpu_s") is not None else "n/a",
            f(r["client_cpu_s"] / ok * 1000, 3) if ok and r.get("client_cpu_s") is not None else "n/a", f(r.get("disk_wps"), 0)))
    out.append("")
    if cp and pp and pp.get("rps"):
        out.append("Corvid/PostgreSQL patch throughput: %.2fx; p99 %s vs %s ms. Corvid docs per commit: %s." % (
            cp["rps"] / pp["rps"], f(cp.get("p99_ms"), 2), f(pp.get("p99_ms"), 2), cp.get("docs_per_fsync", "n/a")))
        out.append("")
    if cp:
        err = (cp.get("non2xx") or 0) + (cp.get("sock_errors") or 0)
        targets.append("patch p99 < 20 ms at %s clients: %s (p99 %s ms, %s patches/s, %d errors)" % (
            meta.get("clients"), "PASS" if (cp.get("p99_ms") or 1e9) < 20 and not err else "FAIL", f(cp.get("p99_ms"), 2), f(cp.get("rps"), 0), err))
if cb:
    v = cb.get("verify", {})
    out.append("**Crash during bulk insert** (fresh data dir, both streams, kill -9 after %.0f%% of the bytes were sent, at %s s)" % (
        100 * cb.get("sent_fraction", 0), cb.get("killed_after_s")))
    out.append("")
    out.append("- restart: `Server available on:` %s s after exec; first `GET /databases/s2/stats` 200 %s s after exec" % (
        cb["restart"]["to_server_available_s"], cb["restart"]["to_first_stats_200_s"]))
    for name in ("users", "posts"):
        s = v.get(name, {})
        out.append("- %s stream: %s of %s documents present after restart; acknowledged (201 before the kill): %s%s; present ids are exactly a prefix of the stream: %s; whole stream or a multiple of 8,192: %s" % (
            name, f(s.get("present")), f(s.get("stream_docs")), "yes" if s.get("acknowledged") else "no",
            (" -> all present: %s" % s.get("all_acknowledged_present")) if s.get("acknowledged") else "", s.get("prefix_ok"), s.get("multiple_of_8192")))
    out.append("- (the server commits a bulk insert in batches that close at 8,192 documents or 8 MiB of JSON, whichever comes first, so a prefix of ~1.1 KB posts ends on a byte-capped batch boundary rather than a multiple of 8,192)")
    out.append("- %s random present documents compared field by field with what was sent: %s mismatches %s" % (
        v.get("sample_checked"), v.get("sample_mismatches"), v.get("sample_mismatch_examples") or ""))
    out.append("")
    targets.append("restart after kill -9 during bulk insert < 1 s: %s (%s s to first stats 200)" % (
        "PASS" if cb["restart"]["to_first_stats_200_s"] < 1 else "FAIL", cb["restart"]["to_first_stats_200_s"]))
    targets.append("every acknowledged batch present, present documents a complete prefix, sample equal: %s" % ("PASS" if v.get("ok") else "FAIL"))
if cput:
    out.append("**Crash during single-document PUTs** (%s clients, kill -9 after %s s)" % (cput.get("clients"), meta.get("put_crash_secs")))
    out.append("")
    out.append("- %s PUTs acknowledged with 201 before the kill (%s/s); after restart %s present, %s acknowledged ids missing; restart %s s to `Server available on:`, %s s to first stats 200" % (
        f(cput["acknowledged"]), f(cput["writes_per_s_before_kill"], 0), f(cput.get("present_after_restart")), cput["acknowledged_missing"],
        cput["restart"]["to_server_available_s"], cput["restart"]["to_first_stats_200_s"]))
    out.append("")
    targets.append("every acknowledged single PUT present after kill -9: %s (%d missing of %d)" % (
        "PASS" if cput.get("ok") else "FAIL", cput["acknowledged_missing"], cput["acknowledged"]))
out.append("**Targets**")
out.append("")
out.extend("- " + t for t in targets)
print("\n".join(out))
