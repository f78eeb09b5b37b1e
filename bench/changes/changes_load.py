#!/usr/bin/env python3
"""Changes API load generator (standard library only): websocket subscribers watching every document of a
database while writers put documents through `POST /bulk_docs`.

  changes_load.py latency    --url URL --db DB [--subscribers 100] [--rate 5000] [--duration 10]
      Writers aim at --rate documents/s; every --probe-every-th document is a probe (`probe/<n>`). Each
      subscriber records when each probe's DocumentChange arrived; the latency of a probe is measured from
      the moment its batch was acknowledged (HTTP 201) and, as an upper bound, from when it was sent.
  changes_load.py throughput --url URL --db DB [--subscribers 100] [--duration 10] [--concurrency 8]
      Writers put as fast as the server acknowledges (--concurrency requests in flight); prints documents/s.

Subscribers run in --procs processes (asyncio in each; CLOCK_MONOTONIC is shared between processes), the
writers in the main one. Prints one JSON line. The websocket client is the small part of RFC 6455 a
subscriber needs (handshake, masked client frames, unmasked server frames).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import os
import re
import struct
import sys
import time
from urllib.parse import urlsplit

PROBE = re.compile(rb'"Id":"probe/(\d+)"')


# ---- a minimal websocket client ---------------------------------------------------------------------------

async def ws_connect(host: str, port: int, path: str):
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    status = await reader.readline()
    if b" 101 " not in status:
        raise RuntimeError(f"websocket upgrade refused: {status!r}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    return reader, writer


def ws_text_frame(text: str) -> bytes:
    payload = text.encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    return header + mask + masked


async def ws_read_frame(reader) -> tuple[int, bytes]:
    first, second = await reader.readexactly(2)
    n = second & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    return first & 0x0F, await reader.readexactly(n)


# ---- subscribers --------------------------------------------------------------------------------------------

async def subscriber(host, port, db, stop, arrivals, counts, ready):
    reader, writer = await ws_connect(host, port, f"/databases/{db}/changes")
    writer.write(ws_text_frame(json.dumps({"CommandId": 1, "Command": "watch-docs", "Param": None})))
    await writer.drain()
    # The confirmation is read frame by frame; after it the stream is read in large chunks and searched as
    # bytes (frame headers never contain the patterns), so a subscriber costs one read per chunk, not per
    # frame: the load generator must not take the server's cores.
    while True:
        opcode, payload = await ws_read_frame(reader)
        if opcode == 0x1 and b'"Confirm"' in payload:
            break
    ready.release()
    received = 0
    tail = b""
    keep = 64  # longer than any pattern: a match cut by a chunk boundary is found in tail + chunk

    async def read_all():
        nonlocal received, tail
        while True:
            chunk = await reader.read(1 << 16)
            if not chunk:
                return
            now = time.monotonic()
            data = tail + chunk
            # Only matches ending in the new bytes count: the ones wholly in the tail were counted before.
            start = max(0, len(tail) - len(b'"DocumentChange"') + 1)
            received += data.count(b'"DocumentChange"', start)
            for match in PROBE.finditer(data):
                if match.end() > len(tail):
                    arrivals.append((int(match.group(1)), now))
            tail = data[-keep:]

    task = asyncio.ensure_future(read_all())
    while not stop.is_set() and not task.done():
        await asyncio.sleep(0.2)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    counts.append(received)
    writer.close()


def subscriber_process(host, port, db, n, stop, ready_q, out_q):
    async def main():
        arrivals, counts = [], []
        ready = asyncio.Semaphore(0)
        tasks = [asyncio.create_task(subscriber(host, port, db, stop, arrivals, counts, ready)) for _ in range(n)]
        for _ in range(n):
            await ready.acquire()
        ready_q.put(n)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors = [repr(r) for r in results if isinstance(r, BaseException)]
        out_q.put({"arrivals": arrivals, "counts": counts, "errors": errors})

    asyncio.run(main())


# ---- writers ------------------------------------------------------------------------------------------------

class HttpConnection:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        chunked = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            await self.reader.readexactly(length)
        return status


def batch_body(first: int, count: int, probe_every: int, pad: str) -> tuple[bytes, list[int]]:
    commands, probes = [], []
    for n in range(first, first + count):
        if probe_every and n % probe_every == 0:
            doc_id = f"probe/{n}"
            probes.append(n)
        else:
            doc_id = f"load/{n}"
        commands.append({"Type": "PUT", "Id": doc_id, "ChangeVector": None, "Document": {"n": n, "pad": pad, "@metadata": {"@collection": "Load"}}})
    return json.dumps({"Commands": commands}).encode(), probes


async def write_load(args, host, port, stop_at, rate):
    """Writes until stop_at; with a rate, paces batches to it. Returns (documents acknowledged, sent/acked
    times of probes, errors)."""
    path = f"/databases/{args.db}/bulk_docs"
    pad = "x" * args.doc_bytes
    sent_at, acked_at = {}, {}
    state = {"next": 0, "acked": 0, "errors": 0}
    started = time.monotonic()

    async def worker():
        conn = HttpConnection(host, port)
        while time.monotonic() < stop_at:
            first = state["next"]
            state["next"] += args.batch
            if rate:
                due = started + first / rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            body, probes = batch_body(first, args.batch, args.probe_every, pad)
            t0 = time.monotonic()
            for p in probes:
                sent_at[p] = t0
            try:
                status = await conn.post(path, body)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                state["errors"] += 1
                conn = HttpConnection(host, port)
                continue
            t1 = time.monotonic()
            if status == 201:
                state["acked"] += args.batch
                for p in probes:
                    acked_at[p] = t1
            else:
                state["errors"] += 1

    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    elapsed = time.monotonic() - started
    return state["acked"], elapsed, sent_at, acked_at, state["errors"]


def pct(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run(args):
    url = urlsplit(args.url)
    host, port = url.hostname, url.port or 80
    # Subscribers connect and confirm their watch before writing starts.
    ctx = multiprocessing.get_context("fork")
    ready_q, out_q = ctx.Queue(), ctx.Queue()
    connect_budget = 30.0
    stop = ctx.Event()
    procs = []
    per = [args.subscribers // args.procs + (1 if i < args.subscribers % args.procs else 0) for i in range(args.procs)]
    for n in per:
        if n:
            p = ctx.Process(target=subscriber_process, args=(host, port, args.db, n, stop, ready_q, out_q), daemon=True)
            p.start()
            procs.append(p)
    connected = 0
    deadline = time.monotonic() + connect_budget
    while connected < args.subscribers and time.monotonic() < deadline:
        try:
            connected += ready_q.get(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:
            break
    if connected < args.subscribers:
        stop.set()
        print(json.dumps({"error": f"only {connected} of {args.subscribers} subscribers confirmed their watch"}))
        return 1
    rate = args.rate if args.mode == "latency" else 0
    write_stop = time.monotonic() + args.duration
    acked, elapsed, sent_at, acked_at, errors = asyncio.run(write_load(args, host, port, write_stop, rate))
    time.sleep(args.drain)
    stop.set()
    results = [out_q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=5)
    arrivals = [a for r in results for a in r["arrivals"]]
    counts = [c for r in results for c in r["counts"]]
    sub_errors = [e for r in results for e in r["errors"]]
    from_ack = [max(0.0, t - acked_at[p]) * 1000 for p, t in arrivals if p in acked_at]
    before_ack = sum(1 for p, t in arrivals if p in acked_at and t < acked_at[p])
    from_send = [(t - sent_at[p]) * 1000 for p, t in arrivals if p in sent_at]
    expected = len(acked_at) * args.subscribers
    report = {
        "mode": args.mode,
        "subscribers": args.subscribers,
        "target_rate": rate or None,
        "docs_acked": acked,
        "write_seconds": round(elapsed, 3),
        "writes_per_s": round(acked / elapsed, 1) if elapsed else 0,
        "write_errors": errors,
        "probes_acked": len(acked_at),
        "probe_deliveries": len(from_ack),
        "probe_deliveries_expected": expected,
        "delivered_before_ack": before_ack,
        "latency_from_ack_ms": {"p50": pct(from_ack, 50), "p99": pct(from_ack, 99), "max": max(from_ack, default=None)},
        "latency_from_send_ms": {"p50": pct(from_send, 50), "p99": pct(from_send, 99)},
        "notifications_per_subscriber": {"min": min(counts, default=0), "max": max(counts, default=0)},
        "subscriber_errors": sub_errors[:5],
    }
    print(json.dumps(report))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["latency", "throughput"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--subscribers", type=int, default=100)
    ap.add_argument("--procs", type=int, default=2, help="processes the subscribers are spread over")
    ap.add_argument("--rate", type=int, default=5000, help="latency mode: documents/s written")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--drain", type=float, default=3, help="seconds subscribers keep reading after the writes")
    ap.add_argument("--batch", type=int, default=25, help="documents per bulk_docs request")
    ap.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    ap.add_argument("--probe-every", type=int, default=50)
    ap.add_argument("--doc-bytes", type=int, default=200)
    args = ap.parse_args()
    if args.subscribers == 0:
        args.procs = 1
    sys.exit(run(args))


if __name__ == "__main__":
    main()
