#!/usr/bin/env python3
"""Seeded synthetic documents for the Corvid benchmarks (python stdlib only).

The same generator feeds Corvid and every peer, so both store byte-identical JSON.

Subcommands
  doc          print one document (compact JSON, exactly --size bytes)
  pg-copy      write `id<TAB>body` lines for PostgreSQL COPY ... FROM STDIN (text format)
  corvid-load  POST documents to Corvid's /databases/{db}/bulk_docs in batches; prints JSON stats
  ids          print the ids that pg-copy / corvid-load use, one per line

Document i of seed s is a pure function of (s, i): re-running gives the same bytes.
Every document carries "@metadata": {"@collection": <collection>} so that the Corvid PUT
body and the PostgreSQL jsonb value are the same text.
"""
import argparse
import http.client
import json
import random
import sys
import time
import urllib.parse

FIRST = ["Ada", "Alan", "Barbara", "Brian", "Claude", "Donald", "Edsger", "Frances", "Grace",
         "Guido", "Hedy", "Ivan", "John", "Ken", "Leslie", "Linus", "Margaret", "Niklaus",
         "Radia", "Rob", "Sophie", "Tim", "Whitfield", "Yukihiro"]
LAST = ["Lovelace", "Turing", "Liskov", "Kernighan", "Shannon", "Knuth", "Dijkstra", "Allen",
        "Hopper", "Rossum", "Lamarr", "Sutherland", "McCarthy", "Thompson", "Lamport",
        "Torvalds", "Hamilton", "Wirth", "Perlman", "Pike", "Wilson", "Berners-Lee", "Diffie",
        "Matsumoto"]
CITIES = [("Lisbon", "PT"), ("Haifa", "IL"), ("Oslo", "NO"), ("Austin", "US"), ("Lyon", "FR"),
          ("Kraków", "PL"), ("Osaka", "JP"), ("Porto Alegre", "BR"), ("Leeds", "GB"),
          ("Tartu", "EE"), ("Pune", "IN"), ("Ghent", "BE")]
STREETS = ["Main St", "Oak Avenue", "Harbour Road", "Rue de la Paix", "Elm Street",
           "Kings Way", "Station Road", "Via Roma", "Mill Lane", "Park Drive"]
TAGS = ["admin", "beta", "billing", "churn-risk", "enterprise", "trial", "vip", "newsletter",
        "mobile", "desktop", "api", "partner", "eu", "us", "apac", "support"]
WORDS = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud "
         "exercitation ullamco laboris nisi aliquip ex ea commodo consequat").split()


def make_doc(seed, i, size=500, collection="Bench"):
    """Return the compact JSON text (str, ASCII-safe) of document i, exactly `size` bytes."""
    r = random.Random(seed * 1_000_003 + i)
    first, last = r.choice(FIRST), r.choice(LAST)
    city, country = r.choice(CITIES)
    doc = {
        "name": f"{first} {last}",
        "email": f"{first.lower()}.{last.lower()}{r.randint(1, 9999)}@example.com",
        "age": r.randint(18, 90),
        "active": r.random() < 0.8,
        "score": round(r.uniform(0, 1000), 2),
        "tags": r.sample(TAGS, r.randint(1, 4)),
        "address": {"street": f"{r.randint(1, 400)} {r.choice(STREETS)}", "city": city,
                    "zip": f"{r.randint(10000, 99999)}", "country": country},
        "createdAt": "20%02d-%02d-%02dT%02d:%02d:%02d.0000000Z" % (
            r.randint(15, 25), r.randint(1, 12), r.randint(1, 28),
            r.randint(0, 23), r.randint(0, 59), r.randint(0, 59)),
        "bio": "",
        "@metadata": {"@collection": collection},
    }
    base = len(json.dumps(doc, separators=(",", ":"), ensure_ascii=True))
    room = size - base
    words, have = [], 0
    while have < room + 1:
        w = r.choice(WORDS)
        words.append(w)
        have += len(w) + 1
    doc["bio"] = " ".join(words)[:max(room, 0)].rstrip() if room > 0 else ""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=True)
    # rstrip may have removed a trailing space: pad with a period to hit the exact size
    if len(text) < size:
        doc["bio"] += "." * (size - len(text))
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=True)
    return text


def doc_id(prefix, i):
    return f"{prefix}{i}"


def cmd_doc(a):
    sys.stdout.write(make_doc(a.seed, a.index, a.size, a.collection))
    if not a.no_newline:
        sys.stdout.write("\n")


def cmd_ids(a):
    out = sys.stdout
    for i in range(a.start, a.start + a.count):
        out.write(doc_id(a.prefix, i) + "\n")


def _copy_escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def cmd_pg_copy(a):
    out = sys.stdout
    buf = []
    for i in range(a.start, a.start + a.count):
        buf.append(_copy_escape(doc_id(a.prefix, i)) + "\t"
                   + _copy_escape(make_doc(a.seed, i, a.size, a.collection)) + "\n")
        if len(buf) >= 5000:
            out.write("".join(buf))
            buf.clear()
    out.write("".join(buf))


def cmd_corvid_load(a):
    u = urllib.parse.urlsplit(a.url)
    if u.scheme == "https":  # a secured server: trust --cafile, authenticate with --cert (PEM, key inside)
        import ssl
        context = ssl.create_default_context(cafile=a.cafile)
        if a.cert:
            context.load_cert_chain(a.cert)
        conn = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=300, context=context)
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=300)
    path = f"/databases/{urllib.parse.quote(a.db)}/bulk_docs"
    t0 = time.perf_counter()
    sent = 0
    batch_lat = []
    i = a.start
    end = a.start + a.count
    while i < end:
        n = min(a.batch, end - i)
        parts = []
        for k in range(i, i + n):
            parts.append('{"Id":%s,"ChangeVector":null,"Type":"PUT","Document":%s}'
                         % (json.dumps(doc_id(a.prefix, k)),
                            make_doc(a.seed, k, a.size, a.collection)))
        body = ('{"Commands":[' + ",".join(parts) + "]}").encode()
        tb = time.perf_counter()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        batch_lat.append(time.perf_counter() - tb)
        if resp.status not in (200, 201):
            sys.stderr.write(f"bulk_docs batch at {i} -> HTTP {resp.status}: {data[:500]!r}\n")
            sys.exit(1)
        if a.check and i == a.start:
            try:
                res = json.loads(data)["Results"]
                assert len(res) == n, f"expected {n} results, got {len(res)}"
            except Exception as e:  # noqa: BLE001
                sys.stderr.write(f"bulk_docs reply not as expected ({e}): {data[:300]!r}\n")
                sys.exit(1)
        sent += n
        i += n
    dt = time.perf_counter() - t0
    batch_lat.sort()
    print(json.dumps({"docs": sent, "seconds": round(dt, 3), "docs_per_s": round(sent / dt, 1),
                      "batch": a.batch,
                      "batch_p50_ms": round(batch_lat[len(batch_lat) // 2] * 1000, 2),
                      "batch_max_ms": round(batch_lat[-1] * 1000, 2)}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, count=True):
        sp.add_argument("--seed", type=int, default=42)
        sp.add_argument("--size", type=int, default=500, help="bytes per document (default 500)")
        sp.add_argument("--collection", default="Bench")
        if count:
            sp.add_argument("--count", type=int, required=True)
            sp.add_argument("--start", type=int, default=0)
            sp.add_argument("--prefix", default="bench/", help="id = prefix + index")

    sp = sub.add_parser("doc"); common(sp, count=False)
    sp.add_argument("--index", type=int, default=0)
    sp.add_argument("-n", "--no-newline", action="store_true")
    sp.set_defaults(fn=cmd_doc)

    sp = sub.add_parser("ids"); common(sp); sp.set_defaults(fn=cmd_ids)
    sp = sub.add_parser("pg-copy"); common(sp); sp.set_defaults(fn=cmd_pg_copy)

    sp = sub.add_parser("corvid-load"); common(sp)
    sp.add_argument("--url", required=True)
    sp.add_argument("--db", default="bench")
    sp.add_argument("--batch", type=int, default=1000)
    sp.add_argument("--check", action="store_true", help="verify the first reply has one result per command")
    sp.add_argument("--cafile", help="https: the CA certificate to trust")
    sp.add_argument("--cert", help="https: the client certificate (PEM with its key)")
    sp.set_defaults(fn=cmd_corvid_load)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
