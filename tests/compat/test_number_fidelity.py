"""A document reads back exactly as written: every number's text (big integers, all the digits of a double,
decimals with their scale, -0, exponents as written), every string, key order and nesting, through PUT,
batches, bulk insert and patches that touch other fields; the official client's floats; queries by a
17-digit double; and the limits (nesting, numbers beyond a double) refused with clear errors everywhere."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest

from corvid_support import assert_error_json, doc_url

# The values of the issue that first showed the problem, each as the client wrote it.
REGRESSION_NUMBERS = [
    "-99.15168890000001",
    "79228162514264337593543950335",
    "-79228162514264337593543950335",
    "-0",
    "-0.0",
    "1.10",
    "0.30000000000000004",
    "1E-7",
    "1e5",
    "2.5E+10",
    "-3.25e-300",
    "18446744073709551616",
    "123456789012345678901234567890.123456789",
    "5e-324",
    "1.7976931348623157e308",
    "0.1000000000000000055511151231257827",
]


class Num:
    """A number as its JSON text, so comparisons see the text and not a float."""

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Num) and other.text == self.text

    def __repr__(self):
        return f"Num({self.text})"


def exact(text: str):
    """Parse JSON keeping numbers as text and objects as ordered key/value lists (key order is compared)."""
    return json.loads(text, parse_float=Num, parse_int=Num, object_pairs_hook=list)


def without_metadata(pairs: list) -> list:
    return [(k, v) for k, v in pairs if k != "@metadata"]


def read_back(http, url, db, doc_id) -> list:
    r = http.get(doc_url(url, db, doc_id))
    assert r.status_code == 200, r.text
    results = dict(exact(r.text))["Results"]
    return without_metadata(results[0])


# -- random documents ---------------------------------------------------------------------------
def random_number(rng: random.Random) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return str(rng.randint(-(10 ** rng.randint(1, 40)), 10 ** rng.randint(1, 40)))
    if kind == 1:
        return repr(rng.uniform(-1000, 1000) * 10 ** rng.randint(-20, 20))
    if kind == 2:  # a decimal with its scale, trailing zeros included
        digits = str(rng.randint(0, 10**30))
        scale = rng.randint(1, 28)
        text = digits.rjust(scale + 1, "0")
        return ("-" if rng.random() < 0.3 else "") + text[:-scale] + "." + text[-scale:] + "0" * rng.randint(0, 3)
    if kind == 3:
        mantissa = f"{rng.randint(1, 9)}.{rng.randint(0, 10**8)}"
        return f"{mantissa}{rng.choice('eE')}{rng.choice(['', '+', '-'])}{rng.randint(0, 300)}"
    if kind == 4:
        return rng.choice(["-0", "0", "-0.0", "0.0", "1.0", "-1", "1E0", "0e0"])
    if kind == 5:  # all 17 significant digits of a double
        return f"{rng.uniform(-1, 1) * 10 ** rng.randint(-5, 5):.16e}"
    if kind == 6:
        return repr(rng.random())
    if kind == 7:
        return rng.choice(REGRESSION_NUMBERS)
    return str(rng.randint(-(2**63), 2**64))


STRING_PIECES = [
    "plain", "é", "日本語", "😀", "\\u0000", "\\ud83d\\ude00", "\\u00e9", "\\n\\t\\r\\b\\f", '\\"', "\\\\", "\\/",
    "\u2028", "ﬃ", " ", "[", "{", "]", "}", ",", ":", "1e400",
]


def random_string(rng: random.Random) -> str:
    if rng.random() < 0.02:
        return '"' + "long ✓ " * rng.randint(10_000, 30_000) + '"'
    return '"' + "".join(rng.choice(STRING_PIECES) for _ in range(rng.randint(0, 6))) + '"'


def random_value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth < 6 and roll < 0.15:
        return "[" + ", ".join(random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))) + "]"
    if depth < 6 and roll < 0.3:
        return random_object(rng, depth + 1, rng.randint(0, 5))
    if roll < 0.7:
        return random_number(rng)
    if roll < 0.9:
        return random_string(rng)
    return rng.choice(["true", "false", "null"])


def random_object(rng: random.Random, depth: int, fields: int, metadata: str = "") -> str:
    keys = [f"k{i}_{rng.choice(['', 'é', '😀', 'Z', 'a'])}" for i in range(fields)]
    rng.shuffle(keys)
    members = [f"{json.dumps(k)}: {random_value(rng, depth)}" for k in keys]
    if metadata:
        members.insert(rng.randint(0, len(members)), f'"@metadata": {metadata}')
    return "{" + ",\n ".join(members) + "}"


def random_document(rng: random.Random) -> str:
    return random_object(rng, 1, rng.randint(1, 12), metadata='{"@collection": "Fidelity", "Client-Number": 1.50}')


# -- the tests ------------------------------------------------------------------------------------
def test_regression_values_read_back_as_written(server_url, db_name, http):
    members = ", ".join(f'"n{i}": {t}' for i, t in enumerate(REGRESSION_NUMBERS))
    text = "{" + members + ', "list": [' + ", ".join(REGRESSION_NUMBERS) + "]}"
    r = http.put(doc_url(server_url, db_name, "numbers/1"), data=text.encode())
    assert r.status_code == 201, r.text
    back = read_back(http, server_url, db_name, "numbers/1")
    assert back == without_metadata(exact(text))
    raw = http.get(doc_url(server_url, db_name, "numbers/1")).text
    assert '"n0":-99.15168890000001,' in raw and '"n1":79228162514264337593543950335,' in raw and '"n3":-0,' in raw


@pytest.mark.parametrize("path", ["put", "batch", "bulk_insert", "patch"])
def test_random_documents_round_trip_on_every_write_path(server_url, db_name, http, path):
    rng = random.Random(f"fidelity-{path}")
    docs = {f"fidelity/{path}/{i}": random_document(rng) for i in range(60)}
    if path in ("put", "patch"):
        for doc_id, text in docs.items():
            r = http.put(doc_url(server_url, db_name, doc_id), data=text.encode())
            assert r.status_code == 201, r.text
    elif path == "batch":
        commands = ", ".join(f'{{"Id": {json.dumps(i)}, "Type": "PUT", "ChangeVector": null, "Document": {t}}}' for i, t in docs.items())
        r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=("{\"Commands\": [" + commands + "]}").encode())
        assert r.status_code == 201, r.text
    else:
        commands = ", ".join(f'{{"Id": {json.dumps(i)}, "Type": "PUT", "Document": {t}}}' for i, t in docs.items())
        r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 1}, data=("[" + commands + "]").encode())
        assert r.status_code == 201, r.text
    if path == "patch":
        for doc_id in docs:
            r = http.patch(
                doc_url(server_url, db_name, doc_id),
                json={"Patch": {"Script": "this.touched = args.v; this.sum = 0.1 + 0.2;", "Values": {"v": 7}}},
            )
            assert r.status_code == 200 and r.json()["Status"] == "Patched", r.text
    for doc_id, text in docs.items():
        expected = without_metadata(exact(text))
        if path == "patch":
            expected += [("touched", Num("7")), ("sum", Num("0.30000000000000004"))]
        assert read_back(http, server_url, db_name, doc_id) == expected, doc_id
    # Client metadata keeps its numbers too.
    r = http.get(doc_url(server_url, db_name, next(iter(docs))))
    assert '"Client-Number":1.50' in r.text


def test_official_client_floats_load_unchanged(store):
    rng = random.Random(15)
    values = [rng.uniform(-1000, 1000) * 10 ** rng.randint(-12, 12) for _ in range(10_000)]
    with store.open_session() as s:
        for i in range(100):
            s.store({"values": values[i * 100 : (i + 1) * 100]}, f"floats/{i}")
        s.save_changes()
    with store.open_session() as s:
        loaded = s.load([f"floats/{i}" for i in range(100)], dict)
        back = [v for i in range(100) for v in loaded[f"floats/{i}"]["values"]]
    mismatches = [(a, b) for a, b in zip(values, back) if a != b]
    assert not mismatches, f"{len(mismatches)} of 10,000 changed, e.g. {mismatches[:3]}"


def test_decimals_keep_their_scale_and_digits(server_url, db_name, http):
    rng = random.Random(16)
    decimals = []
    for _ in range(10_000):
        digits = rng.randint(0, 10**28)
        scale = rng.randint(0, 28)
        decimals.append(Decimal(digits).scaleb(-scale) * rng.choice([1, -1]))
    texts = [str(d) if "E" not in str(d) else format(d, "f") for d in decimals]
    for i in range(20):
        body = '{"Amounts": [' + ", ".join(texts[i * 500 : (i + 1) * 500]) + "]}"
        r = http.put(doc_url(server_url, db_name, f"money/{i}"), data=body.encode())
        assert r.status_code == 201, r.text
    back = []
    for i in range(20):
        back += [n.text for n in dict(read_back(http, server_url, db_name, f"money/{i}"))["Amounts"]]
    assert back == texts


def test_query_finds_a_document_by_a_17_digit_double(store):
    rng = random.Random(17)
    values = [float(f"{rng.uniform(-100, 100):.16e}") for _ in range(200)]
    with store.open_session() as s:
        for i, v in enumerate(values):
            s.store({"Longitude": v, "@metadata": {"@collection": "Places"}}, f"places/{i}")
        s.store({"Longitude": -99.15168890000001}, "places/northwind")
        s.save_changes()
    with store.open_session() as s:
        found = list(s.advanced.raw_query("from Places where Longitude = $x", dict).add_parameter("x", -99.15168890000001).wait_for_non_stale_results())
    # -99.1516889 is a different double: a lossy parse would find nothing (or the wrong document).
    assert [d["Longitude"] for d in found] == [-99.15168890000001]
    with store.open_session() as s:
        for i in (0, 57, 199):
            found = list(s.advanced.raw_query("from Places where Longitude = $x", dict).add_parameter("x", values[i]))
            assert [d["Longitude"] for d in found] == [values[i]]
        # A range whose bound is one of the values includes exactly it and the ones below.
        v = values[3]
        below = sum(1 for w in values + [-99.15168890000001] if w < v)
        inclusive = [d["Longitude"] for d in s.advanced.raw_query("from Places where Longitude <= $x", dict).add_parameter("x", v)]
        exclusive = [d["Longitude"] for d in s.advanced.raw_query("from Places where Longitude < $x", dict).add_parameter("x", v)]
        assert v in inclusive and len(inclusive) == below + 1
        assert v not in exclusive and len(exclusive) == below


def test_strings_round_trip(server_url, db_name, http):
    text = (
        '{"nul": "a\\u0000b", "pair": "\\ud83d\\ude00", "raw": "😀é日本", "escapes": "\\"\\\\\\/\\b\\f\\n\\r\\t",'
        ' "unicode": "\\u00e9\\u2028\\uFFFF", "long": "' + "x✓" * 500_000 + '"}'
    )
    r = http.put(doc_url(server_url, db_name, "strings/1"), data=text.encode())
    assert r.status_code == 201, r.text
    back = dict(read_back(http, server_url, db_name, "strings/1"))
    assert back == dict(exact(text))
    assert back["nul"] == "a\x00b" and back["pair"] == "😀" and len(back["long"]) == 1_000_000


def test_lone_surrogate_is_refused(server_url, db_name, http):
    for body in (b'{"s": "\\ud83d x"}', b'{"s": "\\ud83d"}', b'{"s": "\\ude00"}'):
        r = http.put(doc_url(server_url, db_name, "strings/bad"), data=body)
        assert r.status_code == 400, body
        message = assert_error_json(r)["Message"].lower()
        assert "surrogate" in message or "hex escape" in message, message
    assert http.get(doc_url(server_url, db_name, "strings/bad")).status_code == 404


def _nested(depth: int) -> str:
    """A document nesting `depth` levels: the document itself and depth-1 arrays."""
    return '{"a": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def test_numbers_beyond_a_double_are_refused_on_every_path(server_url, db_name, http):
    for text in ('{"x": 1e400}', '{"x": [1, {"y": -2E309}]}', '{"@metadata": {"n": 1e999}}'):
        r = http.put(doc_url(server_url, db_name, "big/1"), data=text.encode())
        assert r.status_code == 400, r.text
        assert "outside the range of a double" in assert_error_json(r)["Message"]
    body = '{"Commands": [{"Id": "big/2", "Type": "PUT", "ChangeVector": null, "Document": {"x": 1e400}}]}'
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=body.encode())
    assert r.status_code == 400 and "outside the range" in assert_error_json(r)["Message"]
    body = '[{"Id": "big/3", "Type": "PUT", "Document": {"x": 1e400}}]'
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 2}, data=body.encode())
    assert r.status_code == 400 and "outside the range" in assert_error_json(r)["Message"]
    for i in (1, 2, 3):
        assert http.get(doc_url(server_url, db_name, f"big/{i}")).status_code == 404


def test_nesting_limit_is_enforced_on_every_write_path(server_url, db_name, http):
    """The default limit is 256 levels: a document at the limit is stored and readable by every reader
    (projection, patch, include, query); one level more is refused on PUT, batch, bulk insert and patch."""
    at_limit, over = _nested(256), _nested(257)
    r = http.put(doc_url(server_url, db_name, "deep/ok"), data=at_limit.encode())
    assert r.status_code == 201, r.text
    r = http.put(doc_url(server_url, db_name, "deep/over"), data=over.encode())
    assert r.status_code == 400 and "256 levels" in assert_error_json(r)["Message"]
    body = '{"Commands": [{"Id": "deep/over", "Type": "PUT", "ChangeVector": null, "Document": ' + over + "}]}"
    r = http.post(f"{server_url}/databases/{db_name}/bulk_docs", data=body.encode())
    assert r.status_code == 400 and "256 levels" in assert_error_json(r)["Message"]
    body = '[{"Id": "deep/over", "Type": "PUT", "Document": ' + over + "}]"
    r = http.post(f"{server_url}/databases/{db_name}/bulk_insert", params={"id": 3}, data=body.encode())
    assert r.status_code == 400 and "256 levels" in assert_error_json(r)["Message"]
    assert http.get(doc_url(server_url, db_name, "deep/over")).status_code == 404
    # Every reader of the stored document at the limit answers.
    r = http.get(doc_url(server_url, db_name, "deep/ok"))
    assert r.status_code == 200 and r.text.count("[") >= 255
    http.put(doc_url(server_url, db_name, "deep/ref"), data=b'{"ref": "deep/ok", "@metadata": {"@collection": "Refs"}}')
    r = http.get(f"{server_url}/databases/{db_name}/docs", params={"id": "deep/ref", "include": "ref"})
    assert r.status_code == 200 and "deep/ok" in r.json()["Includes"]
    r = http.post(f"{server_url}/databases/{db_name}/queries", json={"Query": "from Refs as r load r.ref as d select { deep: d.a }"})
    assert r.status_code == 200, r.text
    r = http.patch(doc_url(server_url, db_name, "deep/ok"), json={"Patch": {"Script": "this.b = 1", "Values": {}}})
    assert r.status_code == 200, r.text
    # A patch that nests deeper than the limit is refused and changes nothing.
    r = http.patch(doc_url(server_url, db_name, "deep/ok"), json={"Patch": {"Script": "this.c = [this.a]", "Values": {}}})
    assert r.status_code == 400 and "256 levels" in assert_error_json(r)["Message"]
    back = dict(read_back(http, server_url, db_name, "deep/ok"))
    assert "c" not in back and back["b"] == Num("1")


def test_nesting_limit_is_a_setting(server_factory, http):
    srv = server_factory(extra_args=["--max-json-depth", "1000"])
    http.put(f"{srv.url}/admin/databases", json={"DatabaseName": "deep"}).raise_for_status()
    r = http.put(doc_url(srv.url, "deep", "deep/1"), data=_nested(1000).encode())
    assert r.status_code == 201, r.text
    r = http.get(doc_url(srv.url, "deep", "deep/1"))
    assert r.status_code == 200 and r.text.count("[") >= 999
    r = http.patch(doc_url(srv.url, "deep", "deep/1"), json={"Patch": {"Script": "this.b = 1", "Values": {}}})
    assert r.status_code == 200 and r.json()["Status"] == "Patched", r.text
    # The index thread and a JavaScript projection read it too.
    deep = '{"n": 5, "@metadata": {"@collection": "Deep"}, ' + _nested(999)[1:]
    assert http.put(doc_url(srv.url, "deep", "deep/3"), data=deep.encode()).status_code == 201
    r = http.post(f"{srv.url}/databases/deep/queries", json={"Query": "from Deep where n = 5", "WaitForNonStaleResults": True})
    assert r.status_code == 200 and '"TotalResults":1,' in r.text, r.text[:300]  # too deep for Python's json
    r = http.post(f"{srv.url}/databases/deep/queries", json={"Query": "from Deep as d select { x: d.a, n: d.n }"})
    assert r.status_code == 200 and '"n":5' in r.text, r.text[:300]
    r = http.put(doc_url(srv.url, "deep", "deep/2"), data=_nested(1001).encode())
    assert r.status_code == 400 and "1000 levels" in assert_error_json(r)["Message"]
    assert srv.running


def test_sorting_and_grouping_read_numbers_as_correctly_rounded_doubles(store):
    """Adjacent doubles (one unit in the last place apart) sort in their order, and sum() adds the doubles
    the documents hold, as RavenDB's indexes do (decimals beyond a double's precision compare as doubles)."""
    import math

    rng = random.Random(18)
    base = [rng.uniform(-1e6, 1e6) for _ in range(40)]
    values = [v for b in base for v in (b, math.nextafter(b, math.inf), math.nextafter(b, -math.inf))]
    rng.shuffle(values)
    with store.open_session() as s:
        for i, v in enumerate(values):
            s.store({"X": v, "G": i % 3}, f"adjacents/{i}")
        s.save_changes()
    with store.open_session() as s:
        ordered = [d["X"] for d in s.advanced.raw_query("from adjacents order by X as double", dict).wait_for_non_stale_results()]
        assert ordered == sorted(values)
        groups = list(s.advanced.raw_query("from adjacents group by G select G, sum(X) as Total", dict).wait_for_non_stale_results())
    for g in groups:
        members = [v for i, v in enumerate(values) if i % 3 == g["G"]]
        assert math.isclose(g["Total"], math.fsum(members), rel_tol=1e-12, abs_tol=1e-6), (g, math.fsum(members))
