#!/usr/bin/env python3
"""Subscriptions benchmark driver (stdlib only; see bench/README.md, "Subscriptions").

    subs.py run --url URL --db DB --docs N [--batch 4096] [--doc-bytes 300]

1. Bulk-inserts N `Orders` documents (POST /bulk_insert, chunked) and times it: the peer rate.
2. Creates a subscription on `from Orders` and drains it with one worker speaking the TCP protocol
   directly (header, options, batches, Acknowledge after each EndOfBatch): documents/s delivered.
3. Catch-up: a second subscription; a worker takes half the documents and disconnects; a new worker
   reconnects and the time until it has received the rest is measured (and the time to its first batch).

Prints one JSON record. The worker does not parse documents (it counts `Data` messages), so the figure is
the server's delivery rate, not a client's JSON parser's.
"""

import argparse
import http.client
import json
import socket
import sys
import time
import urllib.parse

DATA = b'{"Type":"Data","Data":'
END = b'{"Type":"EndOfBatch"}'
CONFIRM = b'{"Type":"Confirm"}'


def request(url, method, path, body=None):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError("%s %s -> %d %s" % (method, path, r.status, data[:300]))
    return json.loads(data) if data else None


def bulk_insert(url, db, n, doc_bytes):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=3600)
    c.putrequest("POST", "/databases/%s/bulk_insert?id=1" % db)
    c.putheader("Content-Type", "application/json")
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    filler = "x" * max(0, doc_bytes - 120)
    t0 = time.time()
    chunk = [b"["]
    size = 1
    for i in range(n):
        doc = '{"Id":"orders/%d","Type":"PUT","Document":{"Customer":"customers/%d","Total":%d.5,"Lines":%d,"Note":"%s","@metadata":{"@collection":"Orders"}}}' % (
            i, i % 1000, i % 9973, i % 7, filler)
        piece = (b"," if i else b"") + doc.encode()
        chunk.append(piece)
        size += len(piece)
        if size > 1 << 20:
            data = b"".join(chunk)
            c.send(b"%x\r\n" % len(data) + data + b"\r\n")
            chunk, size = [], 0
    chunk.append(b"]")
    data = b"".join(chunk)
    c.send(b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n")
    r = c.getresponse()
    r.read()
    if r.status >= 300:
        raise RuntimeError("bulk insert -> %d" % r.status)
    return time.time() - t0


class Worker:
    """A subscription worker on a raw socket."""

    def __init__(self, url, db, name, batch):
        info = request(url, "GET", "/info/tcp")
        host, port = info["Url"][len("tcp://"):].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.buf = b""
        self.send({"DatabaseName": db, "Operation": "Subscription", "OperationVersion": 51000, "AuthorizeInfo": None})
        self.expect(b'"Status":"Ok"')
        self.send({"SubscriptionName": name, "Strategy": "OpenIfFree", "MaxDocsPerBatch": batch})
        self.expect(b'"Accepted"')

    def send(self, obj):
        self.sock.sendall(json.dumps(obj).encode())

    def expect(self, marker):
        """Consumes the stream through `marker` (what is left of that reply is whitespace or braces, which the
        markers searched next never match)."""
        while marker not in self.buf:
            self.fill()
        self.buf = self.buf[self.buf.index(marker) + len(marker):]

    def fill(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise EOFError("server closed the connection")
        self.buf += data

    def batch(self):
        """Documents in the next batch; acknowledges it and waits for Confirm."""
        while END not in self.buf:
            self.fill()
        at = self.buf.index(END)
        docs = self.buf.count(DATA, 0, at)
        self.buf = self.buf[at + len(END):]
        self.send({"Type": "Acknowledge", "ChangeVector": ""})
        self.expect(CONFIRM)
        return docs

    def close(self):
        self.sock.close()


def drain(url, db, name, batch, want):
    w = Worker(url, db, name, batch)
    t0 = time.time()
    got, first = 0, None
    while got < want:
        got += w.batch()
        if first is None:
            first = time.time() - t0
    secs = time.time() - t0
    w.close()
    return got, secs, first


def cmd_run(a):
    rec = {"docs": a.docs, "batch": a.batch, "doc_bytes": a.doc_bytes}
    secs = bulk_insert(a.url, a.db, a.docs, a.doc_bytes)
    rec["bulk_insert_s"] = round(secs, 2)
    rec["bulk_insert_docs_per_s"] = round(a.docs / secs, 1)
    request(a.url, "PUT", "/databases/%s/subscriptions" % a.db, {"Name": "bench", "Query": "from Orders"})
    got, secs, first = drain(a.url, a.db, "bench", a.batch, a.docs)
    rec.update(delivered=got, delivery_s=round(secs, 2), delivery_docs_per_s=round(got / secs, 1), first_batch_s=round(first, 3))
    request(a.url, "PUT", "/databases/%s/subscriptions" % a.db, {"Name": "catchup", "Query": "from Orders"})
    half, _, _ = drain(a.url, a.db, "catchup", a.batch, a.docs // 2)
    t0 = time.time()
    rest, secs, first = drain(a.url, a.db, "catchup", a.batch, a.docs - half)
    rec.update(catchup_docs=rest, catchup_s=round(time.time() - t0, 2), catchup_first_batch_s=round(first, 3),
               catchup_docs_per_s=round(rest / secs, 1), catchup_exact=(half + rest == a.docs))
    state = request(a.url, "GET", "/databases/%s/subscriptions/state?name=catchup" % a.db)
    rec["catchup_position"] = state["ChangeVectorForNextBatchStartingPoint"]
    print(json.dumps(rec))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--url", required=True)
    r.add_argument("--db", required=True)
    r.add_argument("--docs", type=int, required=True)
    r.add_argument("--batch", type=int, default=4096)
    r.add_argument("--doc-bytes", type=int, default=300)
    a = p.parse_args()
    cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
