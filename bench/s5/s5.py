#!/usr/bin/env python3
"""S5: phone catalogue — full-text on Name, facets on Brand / OS / price ranges, radius queries sorted by
distance. Driver of bench/run-s5.sh (Python stdlib only).

Document i of seed s is a pure function of (s, i):
  {"Name": "Samsung Galaxy S 21 Ultra 5G", "Brand": one of 20 (weighted), "OS": Android / iOS / HarmonyOS /
   KaiOS (by brand), "Price": k + 0.99 (never exactly 200 or 500, so every system's range bounds agree),
   "Location": {"Lat", "Lng"} scattered (about 20 km) around one of 60 cities, "@metadata": {"@collection": "Phones"}}

Subcommands (each prints one JSON object)
  prepare --count N --out-dir D    phones.bulk (Corvid bulk insert), phones.tsv (COPY), phones.os.ndjson, wrk body
                                   files per shape and system, PostgreSQL parameter tables
  corvid-load / corvid-index       bulk insert; create the static index and time its cold build
  os-load                          create the OpenSearch index (keyword Brand/OS, double Price, geo_point), _bulk, refresh
  crosscheck                       facet counts and radius totals in the three systems for a few parameters
  cold                             first queries after a restart vs the same queries warm
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import searchbench as sb  # noqa: E402

INDEX = "Phones/Search"
OS_INDEX = "phones"

BRANDS = [  # name, weight, OS choices, series
    ("Samsung", 20, ["Android"], ["Galaxy S", "Galaxy A", "Galaxy Z Fold", "Galaxy Z Flip", "Galaxy M", "Galaxy Note"]),
    ("Apple", 16, ["iOS"], ["iPhone", "iPhone SE"]),
    ("Xiaomi", 12, ["Android"], ["Redmi Note", "Redmi", "Mi", "Poco"]),
    ("Oppo", 7, ["Android"], ["Reno", "Find X", "A"]),
    ("Vivo", 6, ["Android"], ["X", "V", "Y", "iQOO"]),
    ("Huawei", 6, ["HarmonyOS", "Android"], ["P", "Mate", "Nova", "Pura"]),
    ("Honor", 4, ["Android"], ["Magic", "X", "Play"]),
    ("OnePlus", 4, ["Android"], ["Nord", "Open", ""]),
    ("Google", 4, ["Android"], ["Pixel", "Pixel Fold"]),
    ("Motorola", 4, ["Android"], ["Moto G", "Edge", "Razr"]),
    ("Nokia", 3, ["Android", "KaiOS"], ["G", "C", "X", "Lumia"]),
    ("Sony", 2, ["Android"], ["Xperia 1", "Xperia 5", "Xperia 10"]),
    ("Realme", 3, ["Android"], ["GT", "Narzo", "C"]),
    ("Asus", 1, ["Android"], ["Zenfone", "ROG Phone"]),
    ("Nothing", 1, ["Android"], ["Phone", "CMF Phone"]),
    ("Fairphone", 1, ["Android"], ["Fairphone"]),
    ("Tecno", 2, ["Android"], ["Camon", "Spark", "Phantom"]),
    ("Infinix", 2, ["Android"], ["Hot", "Note", "Zero"]),
    ("ZTE", 1, ["Android"], ["Blade", "Axon", "Nubia"]),
    ("Alcatel", 1, ["Android", "KaiOS"], ["1", "3", "Go Flip"]),
]
VARIANTS = ["", "", "", "Pro", "Max", "Ultra", "Lite", "Plus", "Mini", "5G", "Neo", "Prime", "Edge", "Fold"]
COLORS = ["Black", "White", "Blue", "Green", "Silver", "Gold", "Graphite", "Purple", "Red", "Titanium"]
_CUMB = []
_acc = 0
for _b in BRANDS:
    _acc += _b[1]
    _CUMB.append(_acc)


def _cities():
    r = random.Random(99)
    # 60 centres on land-ish latitudes across several continents
    boxes = [(36, 60, -10, 30), (25, 48, -122, -72), (-35, -5, -70, -38), (5, 40, 70, 122), (-38, -12, 115, 153)]
    out = []
    for k in range(60):
        la0, la1, lo0, lo1 = boxes[k % len(boxes)]
        out.append((round(r.uniform(la0, la1), 4), round(r.uniform(lo0, lo1), 4)))
    return out


CITIES = _cities()
SEARCH_WORDS = ["galaxy", "iphone", "redmi", "pixel", "ultra", "pro", "lite", "max", "note", "xperia", "mate",
                "reno", "nord", "edge", "plus", "mini", "neo", "fold", "moto", "zenfone", "5g", "blue", "titanium"]


def make_phone(seed, i):
    r = random.Random(seed * 1_000_003 + i)
    x = r.random() * _CUMB[-1]
    name, w, oses, series = BRANDS[next(k for k, c in enumerate(_CUMB) if c > x)]
    osn = oses[0] if len(oses) == 1 or r.random() < 0.7 else oses[1]
    s = r.choice(series)
    title = " ".join(x for x in (name, s, str(r.randint(1, 60)), r.choice(VARIANTS), r.choice(COLORS)) if x)
    price = min(1999, max(29, int(math.exp(r.gauss(5.7, 0.7))))) + 0.99
    la, lo = CITIES[r.randrange(len(CITIES))]
    lat = max(-89.9, min(89.9, la + r.gauss(0, 0.18)))
    lng = lo + r.gauss(0, 0.25)
    return {"Name": title, "Brand": name, "OS": osn, "Price": round(price, 2),
            "Location": {"Lat": round(lat, 6), "Lng": round(lng, 6)}}


def _copy_escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


# Double literals: with integer literals RavenDB (and Corvid) compare the long-truncated value, so 500.99 would
# count as "between 200 and 500"; 200.0 / 500.0 give the same buckets as OpenSearch's and PostgreSQL's.
FACETS = "select facet(Brand), facet(OS), facet(Price < 200.0, Price between 200.0 and 500.0, Price > 500.0)"


def corvid_facet(q=None):
    if q is None:
        return {"Query": f"from index '{INDEX}' {FACETS}", "QueryParameters": {}}
    return {"Query": f"from index '{INDEX}' where search(Name, $q) {FACETS}", "QueryParameters": {"q": q}}


def corvid_radius(lat, lng, r):
    return {"Query": f"from index '{INDEX}' where spatial.within(Location, spatial.circle($r, $lat, $lng)) "
                     f"order by spatial.distance(Location, spatial.point($lat, $lng)) limit 20",
            "QueryParameters": {"r": r, "lat": lat, "lng": lng}}


OS_AGGS = {"brand": {"terms": {"field": "Brand", "size": 100}}, "os": {"terms": {"field": "OS", "size": 20}},
           "price": {"range": {"field": "Price", "ranges": [{"to": 200}, {"from": 200, "to": 500}, {"from": 500}]}}}


def os_facet(q=None):
    b = {"size": 0, "track_total_hits": True, "aggs": OS_AGGS}
    if q is not None:
        b["query"] = {"match": {"Name": q}}
    return b


def os_radius(lat, lng, r):
    pt = {"lat": lat, "lon": lng}
    return {"size": 20, "track_total_hits": True, "query": {"geo_distance": {"distance": f"{r}km", "Location": pt}},
            "sort": [{"_geo_distance": {"Location": pt, "order": "asc", "unit": "km"}}]}


def geo_params(seed, n=2000):
    r = random.Random(seed + 5)
    out = []
    for _ in range(n):
        la, lo = CITIES[r.randrange(len(CITIES))]
        out.append((round(la + r.uniform(-0.05, 0.05), 5), round(lo + r.uniform(-0.05, 0.05), 5), r.choice([2, 5, 10, 25])))
    return out


def cmd_prepare(a):
    t0 = time.perf_counter()
    D, nbytes = a.out_dir, 0
    with open(f"{D}/phones.bulk", "w") as bulk, open(f"{D}/phones.tsv", "w") as tsv, open(f"{D}/phones.os.ndjson", "w") as osb:
        bulk.write("[")
        for i in range(a.count):
            d = make_phone(a.seed, i)
            js = json.dumps(d, separators=(",", ":"))
            nbytes += len(js)
            jm = js[:-1] + ',"@metadata":{"@collection":"Phones"}}'
            bulk.write(("," if i else "") + '{"Id":"phones/%d","Type":"PUT","Document":%s}' % (i, jm))
            tsv.write(f"phones/{i}\t{_copy_escape(jm)}\n")
            od = dict(d, Location={"lat": d["Location"]["Lat"], "lon": d["Location"]["Lng"]})
            osb.write('{"index":{"_id":"%d"}}\n%s\n' % (i, json.dumps(od, separators=(",", ":"))))
        bulk.write("]")
    r = random.Random(a.seed + 3)
    words = [r.choice(SEARCH_WORDS) for _ in range(2000)]
    geo = geo_params(a.seed)
    sb.write_bodies(f"{D}/corvid_facet.txt", [corvid_facet()])
    sb.write_bodies(f"{D}/corvid_facet_q.txt", [corvid_facet(w) for w in words])
    sb.write_bodies(f"{D}/corvid_radius.txt", [corvid_radius(*g) for g in geo])
    sb.write_bodies(f"{D}/os_facet.txt", [os_facet()])
    sb.write_bodies(f"{D}/os_facet_q.txt", [os_facet(w) for w in words])
    sb.write_bodies(f"{D}/os_radius.txt", [os_radius(*g) for g in geo])
    with open(f"{D}/q_word.tsv", "w") as f:
        f.writelines(f"{k + 1}\t{w}\n" for k, w in enumerate(words))
    with open(f"{D}/q_geo.tsv", "w") as f:
        f.writelines(f"{k + 1}\t{g[0]}\t{g[1]}\t{g[2] * 1000}\n" for k, g in enumerate(geo))
    print(json.dumps({"docs": a.count, "json_bytes": nbytes, "avg_doc_bytes": round(nbytes / a.count, 1),
                      "seconds": round(time.perf_counter() - t0, 1)}))


def index_definition():
    return {"Name": INDEX,
            "Maps": ["from p in docs.Phones select new { p.Name, p.Brand, p.OS, p.Price, "
                     "Location = CreateSpatialField(p.Location.Lat, p.Location.Lng) }"],
            "Fields": {"Name": {"Indexing": "Search"}, "Brand": {"Indexing": "Exact"}, "OS": {"Indexing": "Exact"}}}


def cmd_corvid_load(a):
    print(json.dumps(sb.corvid_bulk_insert(a.url, a.db, a.file)))


def cmd_corvid_index(a):
    out = sb.corvid_create_index(a.url, a.db, index_definition(), a.count, "Phones")
    out["definition"] = index_definition()
    print(json.dumps(out))


OS_MAPPING = {"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
              "mappings": {"properties": {"Name": {"type": "text"}, "Brand": {"type": "keyword"}, "OS": {"type": "keyword"},
                                          "Price": {"type": "double"}, "Location": {"type": "geo_point"}}}}


def cmd_os_load(a):
    c = sb.conn(a.url)
    sb.req(c, "DELETE", f"/{OS_INDEX}")
    st, data = sb.req(c, "PUT", f"/{OS_INDEX}", OS_MAPPING)
    if st != 200:
        print(json.dumps({"error": f"PUT /{OS_INDEX} -> {st}: {sb.short(data)}"}))
        return
    t0 = time.perf_counter()
    bulk = sb.os_bulk_load(a.url, OS_INDEX, f"{a.dir}/phones.os.ndjson", a.concurrency, 5000)
    t1 = time.perf_counter()
    sb.req(c, "POST", f"/{OS_INDEX}/_refresh")
    t2 = time.perf_counter()
    sb.req(c, "PUT", f"/{OS_INDEX}/_settings", {"index": {"refresh_interval": "1s"}})
    st2, d2 = sb.req(c, "GET", f"/{OS_INDEX}/_count")
    sb.req(c, "POST", f"/{OS_INDEX}/_forcemerge?max_num_segments=1") if a.forcemerge else None
    t3 = time.perf_counter()
    print(json.dumps({"bulk": bulk, "bulk_s": round(t1 - t0, 3), "refresh_s": round(t2 - t1, 3), "total_s": round(t2 - t0, 3),
                      "docs_per_s": round(a.count / (t2 - t0), 1), "count": json.loads(d2).get("count") if st2 == 200 else None,
                      "forcemerge_s": round(t3 - t2, 3) if a.forcemerge else None}))


# ---- cross-check --------------------------------------------------------------------------------------
def _corvid_facets(j):
    out = {}
    for fr in j.get("Results") or []:
        out[fr["Name"].lower()] = {str(v["Range"]).lower(): v["Count"] for v in fr["Values"] if v["Count"]}
    return out


def _os_facets(j):
    a = j["aggregations"]
    pr = a["price"]["buckets"]
    names = ["price < 200.0", "price between 200.0 and 500.0", "price > 500.0"]
    return {"brand": {b["key"].lower(): b["doc_count"] for b in a["brand"]["buckets"]},
            "os": {b["key"].lower(): b["doc_count"] for b in a["os"]["buckets"]},
            "price": {names[k]: b["doc_count"] for k, b in enumerate(pr) if b["doc_count"]}}


def _pg_facets(psql, q):
    where = "" if q is None else f"WHERE to_tsvector('simple', body->>'Name') @@ to_tsquery('simple', '{q}')"
    sql = (f"SELECT 'brand', lower(body->>'Brand'), count(*) FROM phones {where} GROUP BY 2 UNION ALL "
           f"SELECT 'os', lower(body->>'OS'), count(*) FROM phones {where} GROUP BY 2 UNION ALL "
           f"SELECT 'price', CASE WHEN (body->>'Price')::float8 < 200 THEN 'price < 200.0' WHEN (body->>'Price')::float8 <= 500 "
           f"THEN 'price between 200.0 and 500.0' ELSE 'price > 500.0' END, count(*) FROM phones {where} GROUP BY 2")
    out = {}
    for line in subprocess.run(psql + ["-At", "-F", "\t", "-c", sql], capture_output=True, text=True, check=True).stdout.splitlines():
        k, v, n = line.split("\t")
        out.setdefault(k, {})[v] = int(n)
    return out


def cmd_crosscheck(a):
    c, oc = sb.conn(a.url), sb.conn(a.os_url)
    psql = a.psql_cmd.split()
    out = []
    for q in [None] + SEARCH_WORDS[:a.per_shape]:
        st, j, ms, raw = sb.corvid_query(c, a.db, corvid_facet(q)["Query"], corvid_facet(q)["QueryParameters"], True)
        cv = _corvid_facets(j) if st == 200 else f"HTTP {st}: {sb.short(raw, 200)}"
        st2, d2 = sb.req(oc, "POST", f"/{OS_INDEX}/_search?request_cache=false", os_facet(q))
        ov = _os_facets(json.loads(d2)) if st2 == 200 else f"HTTP {st2}: {sb.short(d2, 200)}"
        pv = _pg_facets(psql, q)
        out.append({"shape": "facet", "q": q, "agree": cv == ov == pv, "corvid": cv, "opensearch": ov, "postgres": pv})
    for (lat, lng, r) in geo_params(a.seed)[:a.per_shape]:
        b = corvid_radius(lat, lng, r)
        st, j, ms, raw = sb.corvid_query(c, a.db, b["Query"], b["QueryParameters"], True)
        st2, d2 = sb.req(oc, "POST", f"/{OS_INDEX}/_search", os_radius(lat, lng, r))
        oj = json.loads(d2) if st2 == 200 else {}
        sql = (f"SELECT count(*) FROM phones WHERE earth_box(ll_to_earth({lat},{lng}), {r * 1000}) @> ll_to_earth((body->'Location'->>'Lat')::float8, (body->'Location'->>'Lng')::float8) "
               f"AND earth_distance(ll_to_earth({lat},{lng}), ll_to_earth((body->'Location'->>'Lat')::float8, (body->'Location'->>'Lng')::float8)) < {r * 1000}")
        pg = int(subprocess.run(psql + ["-At", "-c", sql], capture_output=True, text=True, check=True).stdout.strip())
        cids = [d["@metadata"]["@id"].split("/")[1] for d in (j or {}).get("Results", [])] if st == 200 else []
        oids = [h["_id"] for h in oj.get("hits", {}).get("hits", [])]
        ct = (j or {}).get("TotalResults") if st == 200 else f"HTTP {st}: {sb.short(raw, 200)}"
        ot = oj.get("hits", {}).get("total", {}).get("value")
        out.append({"shape": "radius", "q": [lat, lng, r], "agree": ct == ot and cids == oids, "corvid": ct, "opensearch": ot,
                    "postgres_earthdistance": pg, "top20_same_order": cids == oids,
                    "first_ids": {"corvid": cids[:5], "opensearch": oids[:5]}})
    print(json.dumps({"checked": len(out), "disagreements": [r for r in out if not r["agree"]], "all": out}))


# ---- cold queries after a restart -----------------------------------------------------------------------
def cmd_cold(a):
    """Run each query shape once (first = cold) and then `warm` more times; report first vs median."""
    c = sb.conn(a.url)
    geo = geo_params(a.seed)
    shapes = {"facet": corvid_facet(), "facet_q": corvid_facet("ultra"), "radius": corvid_radius(*geo[0])}
    out = {}
    for name, b in shapes.items():
        st, j, ms, raw = sb.corvid_query(c, a.db, b["Query"], b["QueryParameters"])
        first = {"ms": round(ms, 2), "status": st, "IsStale": (j or {}).get("IsStale"), "TotalResults": (j or {}).get("TotalResults")}
        warm = []
        for _ in range(a.warm):
            st2, j2, ms2, raw2 = sb.corvid_query(c, a.db, b["Query"], b["QueryParameters"])
            warm.append(ms2)
        out[name] = {"first": first, "warm_p50_ms": sb.pct(warm, 50), "penalty_x": round(ms / sb.pct(warm, 50), 1) if warm else None,
                     "warm_total": (j2 or {}).get("TotalResults")}
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, url=True):
        if url:
            sp.add_argument("--url", required=True)
        sp.add_argument("--db", default="bench")
        sp.add_argument("--count", type=int, required=True)
        sp.add_argument("--seed", type=int, default=42)

    sp = sub.add_parser("prepare"); common(sp, url=False); sp.add_argument("--out-dir", required=True); sp.set_defaults(fn=cmd_prepare)
    sp = sub.add_parser("corvid-load"); common(sp); sp.add_argument("--file", required=True); sp.set_defaults(fn=cmd_corvid_load)
    sp = sub.add_parser("corvid-index"); common(sp); sp.set_defaults(fn=cmd_corvid_index)
    sp = sub.add_parser("os-load"); common(sp); sp.add_argument("--dir", required=True)
    sp.add_argument("--concurrency", type=int, default=2); sp.add_argument("--forcemerge", type=int, default=0)
    sp.set_defaults(fn=cmd_os_load)
    sp = sub.add_parser("crosscheck"); common(sp); sp.add_argument("--os-url", required=True)
    sp.add_argument("--psql-cmd", required=True); sp.add_argument("--per-shape", type=int, default=4); sp.set_defaults(fn=cmd_crosscheck)
    sp = sub.add_parser("cold"); common(sp); sp.add_argument("--warm", type=int, default=20); sp.set_defaults(fn=cmd_cold)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
