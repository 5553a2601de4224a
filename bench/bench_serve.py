"""`pairstore serve` on a store of 100k battles: page loads and votes, against the same app holding one
store connection for its whole life.

    .venv/bin/python bench/bench_serve.py [--battles 100000] [--runs 20] [--rounds 3]

The store: --battles native battles (two turns of text each, inserted with SQL for setup speed), 34 of
them held out in judge34, and two models' stored answers to those 34 (the Queue's input). The app runs
under uvicorn on a loopback port; a client with the session cookie times, per request, the wall clock
from sending to the last byte (http.client, one connection per request as a browser's first load):

  * pages: Arena, Browse (counts, sets, rounds, the 50 latest battles not held out), a battle, a
    holdout set's page, the Queue's next item (choosing it reads every member's answers);
  * votes: an Arena vote (the POST that writes the battle through the ingest checks, its redirect not
    followed) and a Queue vote (a judgment).

Three arms, each a process of its own (server and client) on a fresh copy of one store, interleaved
(bench/contenders.py: rounds A B C, C B A, ...; CPU time and peak memory of the process beside the
latencies): shipped (one connection kept while requests come, closed 1 s after the last, 5 s at most),
per request (`--hold-s 0`: the store opened read-only for a page, for writing for a vote, closed after
each) and held for life (one read-write connection for the server's life: the floor, which locks every
other process out).
Goals: a page under 200 ms and a vote under 100 ms (median) with the shipped design (requests in a
row, so most find the connection open and one in about every 5 s reopens it). Writes
bench/results/serve.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from contenders import Contender, markdown_table, ratio_text, ratios, run_interleaved, summarize  # noqa: E402
from machine import cpu_model, nproc, ram_text  # noqa: E402 (bench/machine.py)

import pairstore.cli.serve.app as serve_app  # noqa: E402
from pairstore.cli.serve.state import StoreAccess  # noqa: E402
from pairstore.files import atomic_write_text  # noqa: E402
from pairstore.store.store import open_store  # noqa: E402
from tests.serve_helpers import running  # noqa: E402

RESULT = ROOT / "bench" / "results" / "serve.md"
PAGE_GOAL_MS, VOTE_GOAL_MS = 200, 100


class Echo:
    settings = {"kind": "echo"}

    def __init__(self, text):
        self.text = text

    def complete(self, messages):
        return self.text


class HeldAccess(StoreAccess):
    """The baseline: one read-write connection for the server's life (no other process can write)."""

    def __init__(self, path, *, wait_s: float = 10.0, hold_s: float = 0.0):
        import threading

        self.path, self.wait_s = str(path), wait_s
        self._store = open_store(self.path)
        self._turn = None
        self._closed = threading.Event()
        self._lock = threading.Lock()

    @contextmanager
    def _open(self, *, read_only: bool):
        with self._lock:
            yield self._store


def build_store(path: Path, n: int) -> list[str]:
    with open_store(path) as s:
        s.con.execute(
            """INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, category,
                   own_model, opponent_model, voted_at, match_key, record_hash, source_file, origin)
            SELECT 'b' || lpad(i::VARCHAR, 7, '0'),
                   [{'role': 'user', 'content': 'Question ' || i || ': what is ' || (i % 97) || ' times 13?'},
                    {'role': 'user', 'content': 'And plus ' || (i % 11) || '?'}],
                   ['The product is ' || ((i % 97) * 13) || '.', 'Then ' || ((i % 97) * 13 + i % 11) || '.'],
                   ['I think it is ' || ((i % 97) * 12) || '.', 'So ' || ((i % 97) * 12 + 1) || '.'],
                   2, ['win', 'loss', 'tie', 'both_bad'][1 + i % 4], 'math', 'brook', 'rival-' || (i % 5),
                   TIMESTAMP '2026-01-01' + INTERVAL (i) MINUTE, md5(i::VARCHAR), md5('r' || i::VARCHAR),
                   'bench', 'file'
            FROM range(?) t(i)""",
            [n],
        )
        ids = [f"b{i:07d}" for i in range(0, n, max(1, n // 34))][:34]
        s.con.execute("INSERT INTO holdout_sets (set_name, description) VALUES ('judge34', 'bench')")
        for bid in ids:
            s.con.execute(
                "INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text) "
                "VALUES ('judge34', ?, 'battle', ?, ?)",
                [bid, bid, bid],
            )
            for model in ("sm11a", "so7a"):
                s.con.execute(
                    "INSERT INTO generations (gen_id, model, item_kind, item_id, prompt, output, "
                    "sample_index, source_file) "
                    "VALUES (?, ?, 'prompt', ?, [{'role': 'user', 'content': 'q'}], ?, 0, 'bench')",
                    [f"{model}-{bid}", model, bid, f"answer of {model} to {bid}"],
                )
    return ids


class Client:
    def __init__(self, base: str):
        u = urllib.parse.urlsplit(base)
        self.host, self.port, self.cookie = u.hostname, u.port, ""

    def request(self, method, path, form=None):
        body = urllib.parse.urlencode(form).encode() if form else None
        headers = {"Cookie": self.cookie} if self.cookie else {}
        if body:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode()
        ms = (time.perf_counter() - t0) * 1000
        conn.close()
        cookie = resp.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return resp.status, resp.getheader("location"), text, ms


def _csrf(html):
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def measure(base: str, runs: int, open_id: str) -> dict[str, list[float]]:
    c = Client(base)
    c.request("GET", "/arena")
    times: dict[str, list[float]] = {}
    pages = {
        "Arena page": "/arena",
        "Browse page": "/browse",
        "battle page": f"/browse/battle/{open_id}",
        "holdout set page": "/browse/holdout/judge34",
        "Queue page (next item)": "/queue?set=judge34&a=sm11a&b=so7a",
    }
    for _ in range(runs):
        for name, path in pages.items():
            status, _, _, ms = c.request("GET", path)
            assert status == 200, (name, status)
            times.setdefault(name, []).append(ms)
        status, _, html, _ = c.request("GET", "/arena")
        status, loc, _, _ = c.request(
            "POST", "/arena/start", {"csrf": _csrf(html), "prompt": "What is 2 + 2?"}
        )
        assert status == 303, status
        status, _, html, _ = c.request("GET", loc)
        status, _, _, ms = c.request("POST", loc + "/vote", {"csrf": _csrf(html), "vote": "a"})
        assert status == 303, status
        times.setdefault("Arena vote", []).append(ms)
        status, _, html, _ = c.request("GET", "/queue?set=judge34&a=sm11a&b=so7a")
        sid = re.search(r'name="submission_id" value="([^"]+)"', html)
        if sid:
            status, _, _, ms = c.request(
                "POST", "/queue/vote?set=judge34&a=sm11a&b=so7a",
                {"csrf": _csrf(html), "submission_id": sid.group(1), "vote": "tie"},
            )  # fmt: skip
            assert status == 303, status
            times.setdefault("Queue vote", []).append(ms)
    return times


ARMS = {"shipped (held 1 s after a request)": 1.0, "per request": 0.0, "held for life": None}


def app_for(db: Path, hold_s):
    serve_app.StoreAccess = HeldAccess if hold_s is None else StoreAccess
    try:
        config = serve_app.ServeConfig(str(db), {"brook": Echo("4"), "rival": Echo("four")}, "brook")
        config.hold_s = hold_s or 0.0
        return serve_app.create_app(config)
    finally:
        serve_app.StoreAccess = StoreAccess


def child(arm: str, db: Path, runs: int) -> None:
    """One contender run: serve the store at `db` (a fresh copy) the arm's way, time the requests, print
    one JSON line of milliseconds per request kind."""
    with running(app_for(db, ARMS[arm])) as base:
        print(json.dumps(measure(base, runs, "b0000001")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battles", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20, help="requests of each kind in each run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the three arms")
    ap.add_argument("--child", nargs=3, metavar=("ARM", "DB", "RUNS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), int(args.child[2]))
        return 0
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.duckdb"
        t0 = time.perf_counter()
        build_store(template, args.battles)
        build_s = time.perf_counter() - t0

        def fresh(db: Path) -> Callable[[], object]:
            return lambda: shutil.copyfile(template, db)

        contenders = []
        for k, arm in enumerate(ARMS):
            db = Path(tmp) / f"arm{k}.duckdb"
            argv = [sys.executable, str(Path(__file__).resolve()), "--child", arm, str(db), str(args.runs)]
            contenders.append(
                Contender(arm, argv, env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT), before=fresh(db))
            )
        runs = run_interleaved(contenders, rounds=args.rounds)
    load1 = os.getloadavg()[0]
    arms = list(ARMS)
    results: dict[str, dict[str, list[float]]] = {arm: {} for arm in arms}
    for r in runs:
        for kind, ms in json.loads(r.stdout.strip().splitlines()[-1]).items():
            results[r.name].setdefault(kind, []).extend(ms)
    kinds = list(results[arms[0]])
    lines = [
        "## serve: page loads and votes on a store of 100k battles",
        "",
        f"`.venv/bin/python bench/bench_serve.py --battles {args.battles} --runs {args.runs} "
        f"--rounds {args.rounds}`; {cpu_model()}, {nproc()} cores, {ram_text()}; load average {load0:.1f} "
        f"at the start, {load1:.1f} at the end; store built in {build_s:.0f} s. Each arm serves a fresh "
        "copy of the store in a process of its own (server and client), the arms interleaved "
        f"(bench/contenders.py: {args.rounds} rounds, A B C, C B A, ...), {args.runs} requests of each kind "
        "a run. Milliseconds per request from send to last byte over loopback, median and p95 over every "
        "run (Queue votes: one per held-out item, at most 34 a run).",
        "",
        "| request | " + " | ".join(f"{a}: median | p95" for a in arms) + " | goal (shipped) |",
        "| --- | " + " | ".join("--- | ---" for _ in arms) + " | --- |",
    ]
    ok = True
    for kind in kinds:
        goal = VOTE_GOAL_MS if "vote" in kind else PAGE_GOAL_MS
        cells = []
        for arm in arms:
            xs = sorted(results[arm].get(kind, []))
            cells += (
                [f"{statistics.median(xs):.1f}", f"{xs[int(0.95 * (len(xs) - 1))]:.1f}"] if xs else ["-", "-"]
            )
        med = statistics.median(results[arms[0]][kind])
        ok &= med < goal
        lines.append(
            f"| {kind} | " + " | ".join(cells) + f" | < {goal} ms: {'met' if med < goal else 'MISSED'} |"
        )
    page_ms = statistics.median(x for k, xs in results[arms[0]].items() if "vote" not in k for x in xs)
    vote_ms = statistics.median(x for k, xs in results[arms[0]].items() if "vote" in k for x in xs)
    lines += [
        "",
        f"Headline: shipped: a page {page_ms:.0f} ms, a vote {vote_ms:.0f} ms (median; goals "
        f"{PAGE_GOAL_MS} and {VOTE_GOAL_MS} ms); per request / shipped "
        f"{ratio_text(ratios(runs, arms[1], arms[0]))} CPU",
        "",
        "The processes as a whole (the server and its client, every request of a run; the store copied "
        "before each run, untimed):",
        "",
        markdown_table(summarize(runs)),
        "",
        f"CPU per round against the shipped arm: per request {ratio_text(ratios(runs, arms[1], arms[0]))}, "
        f"held for life {ratio_text(ratios(runs, arms[2], arms[0]))}.",
        "",
        "Shipped: the server keeps one connection while requests come and closes it 1 s after the last (5 s "
        "at most), so a `pairstore` command beside it waits at most that long; per request (`--hold-s 0`) "
        "opens and closes the store in every request, the file never held between requests; held for life "
        "is the floor, a server that locks every other process out. A request that reopens the store pays "
        "DuckDB's open of the file (tens of milliseconds on a quiet machine, several times that under load).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULT, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
