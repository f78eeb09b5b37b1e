"""The memory budget (`--memory-budget-mb`): 500 concurrent memory-hungry requests (1 MB batch uploads,
projections of large documents, streams) keep the server's anonymous memory under a 256 MB budget; what does
not fit waits, and what waits too long gets 503 in RavenDB's error shape, never an out-of-memory kill.
Without the budget the same load peaked at 1.7 GB on the development machine."""

from __future__ import annotations

import concurrent.futures as cf
import json
import threading
import time
from collections import Counter

import requests

from corvid_support import CorvidServer, create_database

BUDGET_MB = 256


def anon_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) // 1024
    return 0


class PeakSampler(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, anon_mb(self.pid))
            time.sleep(0.005)


def batch_body(n: int) -> bytes:
    commands = [
        {"Type": "PUT", "Id": f"big/{n}/{i}", "Document": {"Bio": "x" * 10_000, "@metadata": {"@collection": "Big"}}, "ChangeVector": None}
        for i in range(100)
    ]
    return json.dumps({"Commands": commands}).encode()


def test_hungry_requests_stay_within_the_budget(tmp_path):
    server = CorvidServer(tmp_path / "data", extra_args=["--memory-budget-mb", str(BUDGET_MB)])
    url = server.start()
    try:
        create_database(url, "mem")
        pid = server.proc.pid
        bodies = [batch_body(n) for n in range(250)]

        def upload(n):
            return requests.post(f"{url}/databases/mem/bulk_docs", data=bodies[n], headers={"Content-Type": "application/json"}, timeout=120)

        def project(_):
            return requests.post(f"{url}/databases/mem/queries", json={"Query": "from Big select Bio", "PageSize": 500}, timeout=120)

        def stream(_):
            return requests.get(f"{url}/databases/mem/streams/queries", params={"query": "from Big limit 300"}, timeout=120)

        sampler = PeakSampler(pid)
        sampler.start()
        with cf.ThreadPoolExecutor(500) as pool:
            futures = [pool.submit(upload, n) for n in range(250)]
            futures += [pool.submit(project, n) for n in range(200)]
            futures += [pool.submit(stream, n) for n in range(50)]
            responses = [f.result() for f in futures]
        sampler.done.set()
        sampler.join()
        print(f"peak anonymous memory {sampler.peak} MB")

        codes = Counter(r.status_code for r in responses)
        assert set(codes) <= {200, 201, 503}, codes
        for r in responses:
            if r.status_code == 503:
                assert r.json()["Type"].endswith("ServerTooBusyException"), r.text
        assert codes[201] > 0 and codes[200] > 0, codes
        assert sampler.peak < BUDGET_MB, f"anonymous memory peaked at {sampler.peak} MB (budget {BUDGET_MB} MB)"
        budget = requests.get(f"{url}/admin/metrics").json()["MemoryBudget"]
        assert budget["BudgetBytes"] == BUDGET_MB << 20
        assert budget["AdmittedAfterWait"] + budget["Rejected"] > 0, budget  # the budget did hold requests back
        assert budget["ReservedBytes"] == 0 and budget["Waiting"] == 0, budget
        # Every acknowledged batch is there.
        stored = requests.get(f"{url}/databases/mem/stats").json()["CountOfDocuments"]
        assert stored == 100 * sum(1 for r in responses[:250] if r.status_code == 201)
    finally:
        server.stop()


def test_a_request_that_waits_too_long_gets_503(tmp_path):
    # A 16 MB budget (6.4 MB reservable) and a 300 ms queue: of 40 uploads of 3 MB at once, some wait past it.
    server = CorvidServer(tmp_path / "data", extra_args=["--memory-budget-mb", "16", "--query-queue-timeout-ms", "300"])
    url = server.start()
    try:
        create_database(url, "tight")
        body = json.dumps(
            {"Commands": [{"Type": "PUT", "Id": f"t/{i}", "Document": {"Bio": "y" * 30_000}, "ChangeVector": None} for i in range(100)]}
        ).encode()
        with cf.ThreadPoolExecutor(40) as pool:
            responses = list(pool.map(lambda _: requests.post(f"{url}/databases/tight/bulk_docs", data=body, timeout=60), range(40)))
        codes = Counter(r.status_code for r in responses)
        assert codes[503] > 0 and codes[201] > 0, codes
        refused = next(r for r in responses if r.status_code == 503)
        assert "memory budget" in refused.json()["Message"] and "--memory-budget-mb" in refused.json()["Message"]
        assert requests.get(f"{url}/admin/metrics").json()["MemoryBudget"]["Rejected"] == codes[503]
    finally:
        server.stop()
