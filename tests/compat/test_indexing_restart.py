"""Automatic indexes across restarts: SIGKILL while an index is being built, graceful stop, RESET after
restart. After every restart, query answers (with WaitForNonStaleResults) equal the answer computed in
Python from the documents written, and a non-stale answer is never incomplete."""

from __future__ import annotations

import random
import threading
import time

import requests

from corvid_support import create_database, unique_db_name

RQL = "from Items where Group = $g and Score >= $min order by Score as long, Serial as long"
PARAMS = {"g": "G3", "min": 500}


def make_docs(n: int, seed: int) -> dict[str, dict]:
    rng = random.Random(seed)
    return {
        f"items/{i}": {"Group": rng.choice(["g1", "G2", "g3", "G3", "g4"]), "Score": rng.randint(0, 1000), "Serial": i, "Pad": "x" * rng.randint(0, 64)}
        for i in range(1, n + 1)
    }


def expected(docs: dict) -> list[str]:
    hits = [k for k, d in docs.items() if d["Group"].lower() == PARAMS["g"].lower() and d["Score"] >= PARAMS["min"]]
    return sorted(hits, key=lambda k: (docs[k]["Score"], docs[k]["Serial"]))


def put_docs(http, url, db, docs: dict, batch: int = 2500) -> None:
    items = list(docs.items())
    for i in range(0, len(items), batch):
        commands = [
            {"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": "Items"}}}
            for k, v in items[i : i + batch]
        ]
        r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=120)
        assert r.status_code == 201, r.text


def run_query(http, url, db, wait: bool = True) -> dict:
    body = {"Query": RQL, "QueryParameters": PARAMS}
    if wait:
        body.update(WaitForNonStaleResults=True, WaitForNonStaleResultsTimeout="00:01:00")
    r = http.post(f"{url}/databases/{db}/queries", json=body, timeout=90)
    assert r.status_code == 200, r.text
    return r.json()


def result_ids(body: dict) -> list[str]:
    return [x["@metadata"]["@id"] for x in body["Results"]]


def index_names(http, url, db) -> list[str]:
    r = http.get(f"{url}/databases/{db}/indexes", params={"start": 0, "pageSize": 100, "namesOnly": "true"})
    assert r.status_code == 200, r.text
    return r.json()["Results"]


def check_after_restart(http, url, db, docs, index_name) -> None:
    # The index survived (it was acknowledged in a query answer before the stop).
    assert index_name in index_names(http, url, db)
    # Without waiting: stale is allowed, but a non-stale answer must be complete and right.
    quick = run_query(http, url, db, wait=False)
    assert quick["IndexName"] == index_name
    if quick["IsStale"] is False:
        assert result_ids(quick) == expected(docs)
    else:
        assert set(result_ids(quick)) <= set(expected(docs))
    body = run_query(http, url, db)
    assert body["IsStale"] is False
    assert body["IndexName"] == index_name
    assert result_ids(body) == expected(docs)
    assert body["TotalResults"] == len(expected(docs))
    stats = http.get(f"{url}/databases/{db}/indexes/stats", params={"name": index_name}).json()["Results"][0]
    assert stats["EntriesCount"] == len(docs)
    assert stats["IsStale"] is False


def index_stats(http, url, db) -> list[dict]:
    r = http.get(f"{url}/databases/{db}/indexes/stats", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["Results"]


def kill_while_building(server, http, db, min_processed: int = 0, timeout: float = 20.0) -> dict:
    """Poll /indexes/stats until an index is listed, stale, and has committed at least `min_processed`
    documents (LastProcessedDocumentEtag), then SIGKILL the server; returns the stats seen last."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for st in index_stats(http, server.url, db):
            processed = max((c["LastProcessedDocumentEtag"] for c in st["Collections"].values()), default=0)
            if st["IsStale"] and processed >= min_processed:
                server.kill()
                return st
        time.sleep(0.002)
    raise AssertionError(f"never saw the index stale with at least {min_processed} documents processed")


def query_in_background(url, db) -> threading.Thread:
    def go():
        try:
            requests.post(f"{url}/databases/{db}/queries", json={"Query": RQL, "QueryParameters": PARAMS}, timeout=30)
        except requests.RequestException:
            pass  # the server is killed under this request

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_sigkill_while_index_is_being_built(server_factory):
    server = server_factory()
    db = unique_db_name("idxcrash")
    create_database(server.url, db)
    docs = make_docs(20000, 1)
    with requests.Session() as http:
        put_docs(http, server.url, db, docs)
        t = query_in_background(server.url, db)  # creates the index; the request waits a little for it
        building = kill_while_building(server, http, db, min_processed=1)  # part of the build is committed
        t.join(30)
        index_name = building["Name"]
        assert index_name == "Auto/Items/ByGroupAndScoreAndSerial"
        assert 0 < building["Collections"]["Items"]["LastProcessedDocumentEtag"] < len(docs)

        url = server.start()
        check_after_restart(http, url, db, docs, index_name)

        # Indexing goes on incrementally after the restart: updates and deletes are visible.
        rng = random.Random(2)
        changed = {f"items/{rng.randint(1, 20000)}": {"Group": "G3", "Score": rng.randint(500, 1000), "Serial": 0, "Pad": ""} for _ in range(200)}
        for k, v in changed.items():
            v["Serial"] = int(k.split("/")[1])
        put_docs(http, url, db, changed)
        docs.update(changed)
        gone = sorted(expected(docs)[:50])
        r = http.post(f"{url}/databases/{db}/bulk_docs", json={"Commands": [{"Id": k, "ChangeVector": None, "Type": "DELETE"} for k in gone]})
        assert r.status_code == 201
        for k in gone:
            del docs[k]
        body = run_query(http, url, db)
        assert result_ids(body) == expected(docs)

        # Crash again right after those writes; the index catches up from where it was.
        server.kill()
        url = server.start()
        check_after_restart(http, url, db, docs, index_name)


def test_sigkill_repeatedly_during_build(server_factory):
    """Several kills at different moments of the same build (the build resumes by itself after each
    restart); the final answer is still exact."""
    server = server_factory()
    db = unique_db_name("idxcrash2")
    create_database(server.url, db)
    docs = make_docs(30000, 3)
    kills = []
    with requests.Session() as http:
        put_docs(http, server.url, db, docs)
        query_in_background(server.url, db)
        # first kill right after the index is created, then at later points of the resumed build
        for min_processed in (0, 1, 16000):
            try:
                kills.append(kill_while_building(server, http, db, min_processed=min_processed, timeout=5.0))
            except AssertionError:
                break  # the build finished before this point: nothing left to interrupt
            server.start()
        assert kills, "at least one kill landed during the build"
        index_name = kills[0]["Name"]
        assert index_name in index_names(http, server.url, db)
        check_after_restart(http, server.url, db, docs, index_name)


def test_graceful_restart_keeps_index_and_results(server_factory):
    server = server_factory()
    db = unique_db_name("idxstop")
    create_database(server.url, db)
    docs = make_docs(6000, 4)
    with requests.Session() as http:
        put_docs(http, server.url, db, docs)
        body = run_query(http, server.url, db)
        index_name = body["IndexName"]
        assert result_ids(body) == expected(docs)
        # graceful stop while the index is busy with a new batch of writes
        more = make_docs(9000, 5)
        more = {k: v for k, v in more.items() if int(k.split("/")[1]) > 6000}
        put_docs(http, server.url, db, more)
        docs.update(more)
        assert server.stop() == 0, server.log_text()[-2000:]
        url = server.start()
        check_after_restart(http, url, db, docs, index_name)


def test_reset_after_restart_gives_the_same_answer(server_factory):
    server = server_factory()
    db = unique_db_name("idxreset")
    create_database(server.url, db)
    docs = make_docs(8000, 6)
    with requests.Session() as http:
        put_docs(http, server.url, db, docs)
        index_name = run_query(http, server.url, db, wait=False)["IndexName"]
        server.kill()
        url = server.start()
        before = run_query(http, url, db)
        assert result_ids(before) == expected(docs)
        r = requests.request("RESET", f"{url}/databases/{db}/indexes", params={"name": index_name})
        assert r.status_code in (200, 204), r.text
        after = run_query(http, url, db)
        assert after["IndexName"] == index_name
        assert result_ids(after) == result_ids(before)
        # and the reset index is durable across another restart
        url = server.restart()
        check_after_restart(http, url, db, docs, index_name)


MR_INDEX = {
    "Name": "Sales/ByShop",
    "Maps": ["map('Sales', s => ({ Shop: s.Shop, Total: s.Amount, Count: 1 }))"],
    "Reduce": "groupBy(x => x.Shop).aggregate(g => ({ Shop: g.key, Total: g.values.reduce((a, v) => a + v.Total, 0), Count: g.values.reduce((a, v) => a + v.Count, 0) }))",
}


def mr_expected(sales: dict) -> dict:
    out: dict = {}
    for s in sales.values():
        total, count = out.get(s["Shop"], (0, 0))
        out[s["Shop"]] = (total + s["Amount"], count + 1)
    return out


def mr_results(http, url, db) -> dict:
    body = {"Query": "from index 'Sales/ByShop' where Count > 0", "WaitForNonStaleResults": True, "WaitForNonStaleResultsTimeout": "00:01:00"}
    r = http.post(f"{url}/databases/{db}/queries", params={"pageSize": 100000}, json=body, timeout=90)
    assert r.status_code == 200, r.text
    assert r.json()["IsStale"] is False
    results = {x["Shop"]: (x["Total"], x["Count"]) for x in r.json()["Results"]}
    assert r.json()["TotalResults"] == len(results)
    return results


def test_sigkill_right_after_map_reduce_batches_converges_to_a_recomputation(server_factory):
    """Reduce results are committed by the indexing thread a moment after the map-reduce store; the results
    index keeps recent segments in memory until a checkpoint. Killed right after batches that update, move
    and delete (emptying whole shops), the restarted index answers exactly what a recomputation gives."""
    server = server_factory()
    db = unique_db_name("mrcrash")
    create_database(server.url, db)
    rng = random.Random(7)
    sales = {f"sales/{i}": {"Shop": f"shop{rng.randint(1, 40)}", "Amount": rng.randint(1, 500)} for i in range(1, 3001)}

    def write(changes: dict, deletes: list) -> None:
        commands = [{"Id": k, "ChangeVector": None, "Type": "PUT", "Document": {**v, "@metadata": {"@collection": "Sales"}}} for k, v in changes.items()]
        commands += [{"Id": k, "ChangeVector": None, "Type": "DELETE"} for k in deletes]
        r = http.post(f"{server.url}/databases/{db}/bulk_docs", json={"Commands": commands}, timeout=60)
        assert r.status_code == 201, r.text

    with requests.Session() as http:
        write(sales, [])
        assert http.put(f"{server.url}/databases/{db}/admin/indexes", json={"Indexes": [MR_INDEX]}).status_code == 201
        assert mr_results(http, server.url, db) == mr_expected(sales)
        for round_ in range(3):
            # A graceful stop checkpoints the results as they are, with every shop present.
            server.stop()
            server.start()
            assert mr_results(http, server.url, db) == mr_expected(sales)
            # Empty two shops entirely, move some sales, change amounts; then kill as soon as they are indexed.
            emptied = {f"shop{rng.randint(1, 40)}" for _ in range(2)}
            gone = [k for k, v in sales.items() if v["Shop"] in emptied]
            for k in gone:
                del sales[k]
            changed = {k: {"Shop": f"shop{rng.randint(41, 45)}" if rng.random() < 0.3 else sales[k]["Shop"], "Amount": rng.randint(1, 500)}
                       for k in rng.sample(sorted(sales), 200)}
            sales.update(changed)
            write(changed, gone)
            assert mr_results(http, server.url, db) == mr_expected(sales), f"round {round_}, before the kill"
            server.kill()
            server.start()
            got = mr_results(http, server.url, db)
            assert not emptied & set(got), f"round {round_}: emptied shops still answered: {emptied & set(got)}"
            assert got == mr_expected(sales), f"round {round_}, after the kill"
