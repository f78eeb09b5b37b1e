#!/usr/bin/env python3
"""Export/import benchmark helpers (bench/run-smuggler.sh): attachments for the S2 data, Corvid's smuggler
export and import with the server's peak memory, PostgreSQL's pg_dump/pg_restore timed, and a snapshot
backup taken while single-document writes run.  Python 3 stdlib only.

  smuggler.py attach-gen DATA --share 0.1 --size 4096 --seed 42   attachments.bulk + attachments.tsv
  smuggler.py load-attachments URL DB DATA                          bulk insert of attachments.bulk
  smuggler.py export URL DB OUT --pid PID                           POST /smuggler/export into OUT
  smuggler.py import URL DB FILE --pid PID                          POST /smuggler/import of FILE
  smuggler.py timed NAME -- CMD...                                  wall time and max RSS of a command
  smuggler.py snapshot URL DB FOLDER                                one snapshot backup, waited for
  smuggler.py pad URL DB MIN_BYTES DATADIR                          large attachments until DATADIR >= MIN_BYTES
"""
import argparse
import http.client
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s2"))
import s2  # noqa: E402  (stream_bulk, proc_status, split_url, request)

CHUNK = 1 << 20


# ------------------------------------------------------------------------------------------- memory
def reset_peak(pid):
    """Resets VmHWM of the process (Linux: "5" into clear_refs), so each phase reports its own peak."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Peak:
    """Peak memory of one phase: VmHWM after a reset, and polled VmRSS/RssAnon as a cross-check."""

    def __init__(self, pid):
        self.pid = pid
        self.poller = s2.RssPoller(pid, every=0.1) if pid else None

    def __enter__(self):
        if self.poller:
            self.reset = reset_peak(self.pid)
            self.poller.start()
        return self

    def __exit__(self, *exc):
        if self.poller:
            self.poller.stop.set()
            self.poller.join()

    def record(self):
        if not self.poller:
            return {}
        st = s2.proc_status(self.pid)
        return {"VmHWM_mib": st.get("VmHWM") if self.reset else None, "peak_VmRSS_mib": self.poller.peak["VmRSS"],
                "peak_RssAnon_mib": self.poller.peak["RssAnon"], "end_VmRSS_mib": st.get("VmRSS")}


# -------------------------------------------------------------------------------------- attachments
def attachment_ids(meta, share, seed):
    rng = random.Random(seed + 7)
    n = meta["params"]["posts"]
    return [i for i in range(1, n + 1) if rng.random() < share]


def cmd_attach_gen(a):
    meta = json.load(open(os.path.join(a.data, "meta.json")))
    params = {"share": a.share, "size": a.size, "seed": a.seed, "docs": meta["params"], "version": 2}
    mpath = os.path.join(a.data, "attachments.json")
    if os.path.exists(mpath) and json.load(open(mpath)).get("params") == params:
        print(open(mpath).read())
        return
    rng = random.Random(a.seed)
    # Half random (like already compressed files), half a repeated pattern; every content has its own hash.
    base = bytes(rng.getrandbits(8) for _ in range(256)) * (a.size // 256 + 1)
    count = total = 0
    with open(os.path.join(a.data, "attachments.bulk.tmp"), "wb") as bulk, \
            open(os.path.join(a.data, "attachments.tsv.tmp"), "w") as tsv:
        bulk.write(b"[")
        for k, i in enumerate(attachment_ids(meta, a.share, a.seed)):
            size = max(16, int(a.size * (0.5 + rng.random())))
            content = (b"posts/%d;" % i + rng.randbytes(size // 2) + base[:size])[:size]
            head = {"Id": "posts/%d" % i, "Type": "AttachmentPUT", "Name": "file.bin",
                    "ContentType": "application/octet-stream", "ContentLength": len(content)}
            bulk.write((b"," if k else b"") + json.dumps(head, separators=(",", ":")).encode() + content)
            tsv.write("posts/%d\tfile.bin\tapplication/octet-stream\t\\\\x%s\n" % (i, content.hex()))
            count += 1
            total += len(content)
        bulk.write(b"]")
    os.rename(os.path.join(a.data, "attachments.bulk.tmp"), os.path.join(a.data, "attachments.bulk"))
    os.rename(os.path.join(a.data, "attachments.tsv.tmp"), os.path.join(a.data, "attachments.tsv"))
    out = {"params": params, "attachments": count, "attachment_bytes": total}
    json.dump(out, open(mpath, "w"))
    print(json.dumps(out))


def bulk_file(url, db, path, op_id):
    progress, result = {"f": 0}, {}
    t0 = time.time()
    s2.stream_bulk(url, db, path, progress, "f", result, op_id)
    r = result["f"]
    if r.get("status") != 201:
        sys.exit("bulk insert of %s failed: %s" % (path, r))
    return time.time() - t0


def cmd_load_attachments(a):
    secs = bulk_file(a.url, a.db, os.path.join(a.data, "attachments.bulk"), 11)
    print(json.dumps({"seconds": round(secs, 2)}))


def cmd_pad(a):
    """Adds 64 MiB attachments (incompressible) until the data directory holds MIN_BYTES."""
    def size():
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.datadir) for f in fs)
    piece = 64 << 20
    k = 0
    tmp = os.path.join(a.tmp, "pad.bulk")
    while size() < a.min_bytes:
        with open(tmp, "wb") as f:
            f.write(b"[")
            for j in range(4):
                head = {"Id": "pad/%d" % k, "Type": "AttachmentPUT", "Name": "blob-%d" % j,
                        "ContentType": "application/octet-stream", "ContentLength": piece}
                f.write((b"," if j else b"") + json.dumps(head).encode())
                f.write(os.urandom(piece))
            f.write(b"]")
        # An attachment needs its document.
        s2.request(a.url, "PUT", "/databases/%s/docs?id=pad/%d" % (a.db, k),
                   json.dumps({"Pad": k, "@metadata": {"@collection": "Pads"}}))
        bulk_file(a.url, a.db, tmp, 100 + k)
        k += 1
    os.remove(tmp) if os.path.exists(tmp) else None
    print(json.dumps({"pad_documents": k, "data_dir_bytes": size()}))


# --------------------------------------------------------------------------------- export / import
def stats(url, db):
    st, body = s2.request(url, "GET", "/databases/%s/stats" % db)
    j = json.loads(body) if st == 200 else {}
    return {"documents": j.get("CountOfDocuments"), "attachments": j.get("CountOfAttachments"),
            "unique_attachments": j.get("CountOfUniqueAttachments")}


def cmd_export(a):
    host, port = s2.split_url(a.url)
    options = json.dumps({"CompressionAlgorithm": a.compression}) if a.compression else "{}"
    with Peak(a.pid) as peak:
        t0 = time.time()
        c = http.client.HTTPConnection(host, port, timeout=3600)
        c.request("POST", "/databases/%s/smuggler/export?operationId=%d" % (a.db, a.op), body=options,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            sys.exit("export: HTTP %d %s" % (r.status, r.read()[:300]))
        first = None
        n = 0
        with open(a.out, "wb") as f:
            while True:
                chunk = r.read(CHUNK)
                if not chunk:
                    break
                first = first or time.time()
                f.write(chunk)
                n += len(chunk)
        secs = time.time() - t0
    out = {"seconds": round(secs, 2), "dump_bytes": n, "first_byte_s": round((first or t0) - t0, 3),
           "rss": peak.record(), "source": stats(a.url, a.db)}
    print(json.dumps(out))


def multipart_body(path, boundary):
    yield ("--%s\r\nContent-Disposition: form-data; name=\"importOptions\"\r\n\r\n{}\r\n" % boundary).encode()
    yield ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dump.ravendbdump\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n" % boundary).encode()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            yield chunk
    yield ("\r\n--%s--\r\n" % boundary).encode()


def cmd_import(a):
    host, port = s2.split_url(a.url)
    boundary = "corvidbench%d" % os.getpid()
    with Peak(a.pid) as peak:
        t0 = time.time()
        c = http.client.HTTPConnection(host, port, timeout=3600)
        c.putrequest("POST", "/databases/%s/smuggler/import?operationId=%d" % (a.db, a.op))
        c.putheader("Content-Type", "multipart/form-data; boundary=%s" % boundary)
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        for part in multipart_body(a.file, boundary):
            c.send(b"%x\r\n" % len(part) + part + b"\r\n")
        c.send(b"0\r\n\r\n")
        r = c.getresponse()
        body = r.read()
        secs = time.time() - t0
    if r.status != 200:
        sys.exit("import: HTTP %d %s" % (r.status, body[:300]))
    print(json.dumps({"seconds": round(secs, 2), "rss": peak.record(), "target": stats(a.url, a.db)}))


# ------------------------------------------------------------------------------------------ others
def cmd_timed(a):
    """Runs a command; prints its wall time and the peak RSS of its children (pg_dump, pg_restore)."""
    t0 = time.time()
    rc = subprocess.call(a.argv)
    secs = time.time() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit("%s exited %d" % (a.name, rc))
    print(json.dumps({"seconds": round(secs, 2), "client_max_rss_mib": ru.ru_maxrss // 1024}))


def wait_op(url, path, timeout=3600):
    t0 = time.time()
    while time.time() - t0 < timeout:
        st, body = s2.request(url, "GET", path)
        j = json.loads(body)
        if j.get("Status") != "InProgress":
            return j
        time.sleep(0.05)
    sys.exit("operation %s still running" % path)


def cmd_snapshot(a):
    t0 = time.time()
    st, body = s2.request(a.url, "POST", "/databases/%s/admin/backup" % a.db,
                          json.dumps({"BackupType": "Snapshot", "LocalSettings": {"Disabled": False, "FolderPath": a.folder}}))
    if st != 200:
        sys.exit("backup: HTTP %d %s" % (st, body[:300]))
    j = wait_op(a.url, "/databases/%s/operations/state?id=%d" % (a.db, json.loads(body)["OperationId"]))
    secs = time.time() - t0
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.folder) for f in fs)
    print(json.dumps({"seconds": round(secs, 2), "status": j.get("Status"), "bytes": size,
                      "started_at": round(t0, 3), "ended_at": round(time.time(), 3)}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("attach-gen")
    g.add_argument("data"), g.add_argument("--share", type=float, default=0.1)
    g.add_argument("--size", type=int, default=4096), g.add_argument("--seed", type=int, default=42)
    la = sub.add_parser("load-attachments")
    la.add_argument("url"), la.add_argument("db"), la.add_argument("data")
    pd = sub.add_parser("pad")
    pd.add_argument("url"), pd.add_argument("db"), pd.add_argument("min_bytes", type=int), pd.add_argument("datadir")
    pd.add_argument("--tmp", default="/tmp")
    ex = sub.add_parser("export")
    ex.add_argument("url"), ex.add_argument("db"), ex.add_argument("out"), ex.add_argument("--pid", type=int)
    ex.add_argument("--compression", default=""), ex.add_argument("--op", type=int, default=1)
    im = sub.add_parser("import")
    im.add_argument("url"), im.add_argument("db"), im.add_argument("file"), im.add_argument("--pid", type=int)
    im.add_argument("--op", type=int, default=2)
    t = sub.add_parser("timed")
    t.add_argument("name"), t.add_argument("argv", nargs=argparse.REMAINDER)
    sn = sub.add_parser("snapshot")
    sn.add_argument("url"), sn.add_argument("db"), sn.add_argument("folder")
    a = p.parse_args()
    if a.cmd == "timed" and a.argv and a.argv[0] == "--":
        a.argv = a.argv[1:]
    {"attach-gen": cmd_attach_gen, "load-attachments": cmd_load_attachments, "pad": cmd_pad, "export": cmd_export,
     "import": cmd_import, "timed": cmd_timed, "snapshot": cmd_snapshot}[a.cmd](a)


if __name__ == "__main__":
    main()
