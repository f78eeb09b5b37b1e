#!/usr/bin/env python3
"""Markdown summary of one bench/run-smuggler.sh run (its results directory) against issue 22's targets."""
import json
import os
import sys


def load(d, name):
    try:
        with open(os.path.join(d, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, spec="%.1f"):
    return "n/a" if v is None else spec % v


def main(d):
    meta, data, att = load(d, "meta"), load(d, "data") or {}, load(d, "attachments") or {}
    docs = data.get("docs", 0)
    total = data.get("doc_bytes", 0) + att.get("attachment_bytes", 0)
    lines = ["## Export/import (smuggler) %s, %s" % (meta["date"], meta["mode"]), "",
             "Commit %s, %s. Machine: %s, load %s. Data: %d documents (%.0f MB JSON) + %d attachments (%.0f MB); "
             "MB/s counts JSON and attachment bytes." % (meta["commit"], meta["binary"], meta["machine"], meta["loadavg"], docs,
                                                           data.get("doc_bytes", 0) / 1e6, att.get("attachments", 0),
                                                           att.get("attachment_bytes", 0) / 1e6), "",
             "| step | seconds | docs/s | MB/s | peak RSS / anonymous (MiB) | file (MB) |", "|---|---:|---:|---:|---:|---:|"]
    rows = [("Corvid export (smuggler)", load(d, "corvid_export")), ("pg_dump -Fc", load(d, "pg_dump")),
            ("Corvid import (smuggler)", load(d, "corvid_import")), ("pg_restore", load(d, "pg_restore"))]
    for name, r in rows:
        if not r:
            continue
        secs = r["seconds"]
        rss = r.get("rss", {}).get("VmHWM_mib") or r.get("rss", {}).get("peak_VmRSS_mib") or r.get("client_max_rss_mib")
        anon = r.get("rss", {}).get("peak_RssAnon_mib")
        rss = "%s / %s" % (fmt(rss, "%d"), fmt(anon, "%d")) if anon is not None else fmt(rss, "%d")
        size = r.get("dump_bytes")
        lines.append("| %s | %.1f | %.0f | %.1f | %s | %s |" % (name, secs, docs / secs, total / 1e6 / secs, rss,
                                                              fmt(size and size / 1e6, "%.0f")))
    lines.append("")
    ce, pd, ci, pr = (r for _, r in rows)
    targets = []
    if ce and pd:
        targets.append("export %.2fx pg_dump (target >= 1.5x)" % (pd["seconds"] / ce["seconds"]))
    if ci and pr:
        targets.append("import %.2fx pg_restore (target >= 1.5x)" % (pr["seconds"] / ci["seconds"]))
    peaks = [r.get("rss", {}).get("VmHWM_mib") or r.get("rss", {}).get("peak_VmRSS_mib") for r in (ce, ci) if r]
    anons = [r.get("rss", {}).get("peak_RssAnon_mib") or 0 for r in (ce, ci) if r]
    if peaks:
        targets.append("Corvid peak RSS %d MiB, of which anonymous %d MiB (target < 512; the rest is the "
                       "databases' memory-mapped files, page cache the kernel can drop)" % (max(p or 0 for p in peaks), max(anons)))
    if ci and ci.get("target"):
        targets.append("imported %s documents, %s attachments" % (ci["target"].get("documents"), ci["target"].get("attachments")))
    if targets:
        lines += ["Against the targets: " + "; ".join(targets) + ".", ""]
    if pd or pr:
        lines += ["pg_dump/pg_restore RSS is the client process's (the server's backends are not counted); pg_restore "
                  "ran with -j %s." % ((pr or {}).get("jobs", 1)), ""]
    base, snap, sn = load(d, "put_without_snapshot"), load(d, "put_with_snapshot"), load(d, "snapshot")
    if base and snap and sn:
        lines += ["Snapshot backup of a %.2f GB database (took %.1f s, %s, %.2f GB written) while %d clients PUT 1 KB "
                  "documents for %d s:" % (sn.get("database_bytes", 0) / 1e9, sn.get("seconds", 0), sn.get("status"),
                                           sn.get("bytes", 0) / 1e9, meta["clients"], meta["duration"]), "",
                  "| PUTs | req/s | p50 ms | p99 ms | max ms |", "|---|---:|---:|---:|---:|"]
        for name, r in (("without snapshot", base), ("with snapshot", snap)):
            lines.append("| %s | %s | %s | %s | %s |" % (name, fmt(r.get("rps"), "%.0f"), fmt(r.get("p50_ms"), "%.2f"),
                                                      fmt(r.get("p99_ms"), "%.2f"), fmt(r.get("max_ms"), "%.1f")))
        if base.get("p99_ms") and snap.get("p99_ms"):
            lines += ["", "p99 with the snapshot: %.2fx without (target <= 2x)." % (snap["p99_ms"] / base["p99_ms"])]
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
