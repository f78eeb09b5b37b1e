#!/usr/bin/env python3
"""Turn load-generator output and server counters into JSON records (python stdlib only).

Subcommands (each prints one JSON object on stdout):
  wrk FILE                      parse wrk stdout containing the WRK_JSON line from wrk_docs.lua
  pgbench OUTFILE LOGPREFIX     parse pgbench stdout + per-transaction logs (-l --log-prefix)
  metrics-delta BEFORE AFTER DB docs per fsync from two GET /admin/metrics snapshots
  cpu PID [--tree]              CPU seconds (utime+stime) of PID; --tree adds live children
                                and reaped children (cutime+cstime), e.g. for a postmaster
  rss PID                       VmRSS / VmHWM in MiB
  cpustat                       aggregate /proc/stat cpu line (jiffies: total, steal, idle) as JSON
  steal BEFORE AFTER            steal and busy percentages between two cpustat snapshots
  merge A.json B.json ... [k=v] merge JSON objects (later wins), add k=v fields (v parsed as JSON
                                when possible)
"""
import glob
import json
import os
import re
import sys

CLK = os.sysconf("SC_CLK_TCK")


def pct(sorted_vals, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, int(round(p / 100.0 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def cmd_wrk(path):
    text = open(path, errors="replace").read()
    m = re.search(r"^WRK_JSON (\{.*\})\s*$", text, re.M)
    if not m:
        sys.stderr.write(f"no WRK_JSON line in {path}:\n{text[-2000:]}\n")
        print(json.dumps({"error": "no wrk output"}))
        return
    w = json.loads(m.group(1))
    secs = w["duration_us"] / 1e6
    errors = w["err_connect"] + w["err_read"] + w["err_write"] + w["err_timeout"]
    ok = max(0, w["requests"] - w["err_status"])
    rec = {
        "requests": w["requests"],
        "ok": ok,
        "seconds": round(secs, 3),
        "rps": round(ok / secs, 1) if secs else None,
        "non2xx": w["err_status"],
        "sock_errors": errors,
        "p50_ms": w["p50_us"] / 1000.0,
        "p90_ms": w["p90_us"] / 1000.0,
        "p99_ms": w["p99_us"] / 1000.0,
        "p999_ms": w["p999_us"] / 1000.0,
        "max_ms": w["lat_max_us"] / 1000.0,
        "mean_ms": round(w["lat_mean_us"] / 1000.0, 3),
    }
    print(json.dumps(rec))


def cmd_pgbench(outfile, logprefix):
    text = open(outfile, errors="replace").read()
    rec = {}
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", text)
    rec["tps_reported"] = float(m.group(1)) if m else None
    m = re.search(r"number of transactions actually processed: (\d+)", text)
    rec["requests"] = int(m.group(1)) if m else None
    m = re.search(r"number of failed transactions: (\d+)", text)
    rec["failed"] = int(m.group(1)) if m else 0
    if "aborted" in text or "error" in text.lower():
        errs = [l for l in text.splitlines() if "error" in l.lower() or "aborted" in l]
        rec["messages"] = errs[:5]
    lats = []
    t_first = t_last = None
    for f in glob.glob(logprefix + ".*"):
        with open(f) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 6 or parts[2] in ("skipped", "failed"):
                    continue
                lat = int(parts[2])
                lats.append(lat)
                t_end = int(parts[4]) + int(parts[5]) / 1e6
                if t_first is None or t_end - lat / 1e6 < t_first:
                    t_first = t_end - lat / 1e6
                if t_last is None or t_end > t_last:
                    t_last = t_end
    lats.sort()
    rec["logged"] = len(lats)
    rec["ok"] = len(lats)
    rec["rps"] = rec["tps_reported"]
    rec["seconds"] = round(t_last - t_first, 3) if lats else None
    for name, p in (("p50_ms", 50), ("p90_ms", 90), ("p99_ms", 99), ("p999_ms", 99.9)):
        v = pct(lats, p)
        rec[name] = v / 1000.0 if v is not None else None
    rec["max_ms"] = lats[-1] / 1000.0 if lats else None
    rec["mean_ms"] = round(sum(lats) / len(lats) / 1000.0, 3) if lats else None
    rec["non2xx"] = rec["failed"]
    print(json.dumps(rec))


def _load_metrics(path, db):
    try:
        j = json.load(open(path))
    except Exception as e:  # noqa: BLE001
        return None, f"metrics not JSON: {e}"
    d = j.get("Databases", {}).get(db) if isinstance(j, dict) else None
    if not isinstance(d, dict):
        return None, "no Databases.%s object" % db
    if "MergerCommits" not in d or "MergedCommands" not in d:
        return None, "Databases.%s lacks MergerCommits/MergedCommands (keys: %s)" % (db, sorted(d)[:12])
    return d, None


def cmd_metrics_delta(before, after, db):
    b, e1 = _load_metrics(before, db)
    a, e2 = _load_metrics(after, db)
    if e1 or e2:
        print(json.dumps({"docs_per_fsync": None, "metrics_error": e1 or e2}))
        return
    dc = a["MergerCommits"] - b["MergerCommits"]
    dm = a["MergedCommands"] - b["MergedCommands"]
    # MergerFsyncs counts every disk flush (a fully durable LMDB commit flushes twice); older servers
    # only reported commits.
    df = a["MergerFsyncs"] - b["MergerFsyncs"] if "MergerFsyncs" in a and "MergerFsyncs" in b else dc
    rec = {"merger_commits": dc, "merger_fsyncs": df, "merged_commands": dm,
           "docs_per_fsync": round(dm / df, 2) if df > 0 else None}
    if dc > 0 and "AverageCommitMs" in a and "AverageCommitMs" in b:
        total = a["AverageCommitMs"] * a["MergerCommits"] - b["AverageCommitMs"] * b["MergerCommits"]
        rec["commit_ms_avg"] = round(total / dc, 3)
    if "LargestBatch" in a:
        rec["largest_batch_ever"] = a["LargestBatch"]
    print(json.dumps(rec))


def _stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    # fields[0] is state (field 3); utime=14, stime=15, cutime=16, cstime=17 (1-based)
    return [int(fields[i]) for i in (11, 12, 13, 14)], int(fields[1])


def cmd_cpu(pid, tree):
    pid = int(pid)
    try:
        (ut, st, cut, cst), _ = _stat(pid)
    except FileNotFoundError:
        print(json.dumps({"cpu_s": None}))
        return
    total = ut + st
    if tree:
        total += cut + cst
        for p in os.listdir("/proc"):
            if not p.isdigit() or int(p) == pid:
                continue
            try:
                (u2, s2, _, _), ppid = _stat(p)
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue
            if ppid == pid:
                total += u2 + s2
    print(json.dumps({"cpu_s": round(total / CLK, 2)}))


def cmd_rss(pid):
    rec = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                rec["rss_mib"] = round(int(line.split()[1]) / 1024, 1)
            elif line.startswith("VmHWM:"):
                rec["rss_peak_mib"] = round(int(line.split()[1]) / 1024, 1)
    except FileNotFoundError:
        pass
    print(json.dumps(rec))


def cmd_cpustat():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice (guest* are included in user)
    total = sum(v[:8])
    print(json.dumps({"total": total, "idle": v[3] + v[4], "steal": v[7] if len(v) > 7 else 0}))


def cmd_steal(before, after):
    try:
        b, a = json.load(open(before)), json.load(open(after))
        dt = a["total"] - b["total"]
        print(json.dumps({"steal_pct": round(100.0 * (a["steal"] - b["steal"]) / dt, 1) if dt else None,
                          "machine_busy_pct": round(100.0 * (dt - (a["idle"] - b["idle"])) / dt, 1) if dt else None}))
    except (OSError, ValueError, KeyError):
        print("{}")


def cmd_merge(args):
    out = {}
    for a in args:
        if "=" in a and not os.path.exists(a):
            k, v = a.split("=", 1)
            try:
                out[k] = json.loads(v)
            except ValueError:
                out[k] = v
        else:
            try:
                with open(a) as f:
                    txt = f.read().strip()
                if txt:
                    out.update(json.loads(txt))
            except (OSError, ValueError) as e:
                out.setdefault("merge_errors", []).append(f"{a}: {e}")
    print(json.dumps(out))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    c, args = sys.argv[1], sys.argv[2:]
    if c == "wrk":
        cmd_wrk(args[0])
    elif c == "pgbench":
        cmd_pgbench(args[0], args[1])
    elif c == "metrics-delta":
        cmd_metrics_delta(args[0], args[1], args[2])
    elif c == "cpu":
        cmd_cpu(args[0], "--tree" in args)
    elif c == "rss":
        cmd_rss(args[0])
    elif c == "cpustat":
        cmd_cpustat()
    elif c == "steal":
        cmd_steal(args[0], args[1])
    elif c == "merge":
        cmd_merge(args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
