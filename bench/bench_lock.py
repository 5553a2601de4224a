"""Other writers beside steady voting: `pairstore ingest battles` of 10,000 battles while 16 annotators vote
in `pairstore serve`, with the store's turns (this tree) against the code before them (a baseline tree).

    .venv/bin/python bench/bench_lock.py [--voters 16] [--battles 10000] [--rounds 3] [--baseline REV]

Each contender is one run of the whole scene in its own process (bench/contenders.py: interleaved rounds,
CPU time of the run and its children beside wall time, peak memory): the server under uvicorn on a
loopback port (its own process, the shipped `--hold-s 1`), `--voters` threads voting as fast as the server
answers, half in the Arena (the page, a prompt both models answer, the vote) and half in the Queue (the
next held-out item of two models, the vote), each vote's POST timed from send to answer, and, 2 s in,
`pairstore ingest battles` of a file of `--battles` new battles (open_db timed: how long it waited for the
store, how long it held it). The scene ends 2 s after the ingest ends. Then the store is read: every
acknowledged vote must be there, and the ingest's battles if it succeeded.

Contenders: this tree (turns at the store: the server lets go as soon as the command waits, votes wait in
the server's queue and land together), and the baseline tree (`git archive REV`, by default the merge base
with main) with `--hold-s 1` and with `--hold-s 0`, the two ways the server could share the file before.
The models answer at once (echo), so what is measured is the store's sharing, not generation.
Writes bench/results/lock.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from contenders import Contender, run_interleaved, summarize  # noqa: E402
from machine import cpu_model, nproc, ram_text  # noqa: E402

RESULT = BENCH / "results" / "lock.md"
WARMUP_S, COOLDOWN_S, MAX_SCENE_S = 2.0, 2.0, 300.0

# The server of one tree: that tree's create_app with two echo models, on a socket bound to port 0 (the
# port printed), the store shared with `hold_s` as `pairstore serve --hold-s` does.
SERVER = """
import socket, sys
import uvicorn
from pairstore.cli.serve.app import ServeConfig, create_app

class Echo:
    settings = {"kind": "echo"}
    def __init__(self, text):
        self.text = text
    def complete(self, messages):
        return self.text

db, hold_s = sys.argv[1], float(sys.argv[2])
config = ServeConfig(db, {"brook": Echo("4"), "rival": Echo("four")}, "brook")
config.hold_s = hold_s
app = create_app(config)
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on")).run(sockets=[sock])
"""


# `pairstore ingest` as the CLI runs it, with open_db timed (either tree's): how long the command waited for
# the store and how long it held it, written as JSON to the file BENCH_STORE_TIMES names.
INGEST = """
import json, os, sys, time
import pairstore.cli.base as base
opened = base.open_db
def timed(*args, **kwargs):
    t0 = time.perf_counter()
    store = opened(*args, **kwargs)
    t1 = time.perf_counter()
    close = store.close
    def closing():
        close()
        with open(os.environ["BENCH_STORE_TIMES"], "w") as f:
            json.dump({"waited_s": t1 - t0, "held_s": time.perf_counter() - t1}, f)
    store.close = closing
    return store
from pairstore.cli import main
for module in list(sys.modules.values()):  # every command module's own name for it
    if getattr(module, "open_db", None) is opened:
        module.open_db = timed
sys.argv[0] = "pairstore"
main()
"""

# What the store holds after a run: the votes stored, the ingest's battles stored.
COUNT = """
import json, sys
from pairstore.store.store import open_store
s = open_store(sys.argv[1], read_only=True)
votes = s.scalar("SELECT count(*) FROM battles WHERE origin = 'serve'")
votes += s.scalar("SELECT count(*) FROM judgments WHERE origin = 'serve'")
print(json.dumps([votes, s.scalar("SELECT count(*) FROM battles WHERE battle_id LIKE 'bench-%'")]))
"""


def battle_records(n: int, seed: int = 0) -> list[dict]:
    """n native battles with distinct prompts (deterministic)."""
    out = []
    for i in range(n):
        a, b = (i * 7919 + seed) % 997, (i * 104729 + seed) % 991
        out.append(
            {
                "battle_id": f"bench-{i:06d}",
                "prompt": f"Batch question {i}: what is {a} plus {b}?",
                "own_answer": f"{a} + {b} = {a + b}.",
                "opponent_answer": f"It is {a + b + 1}.",
                "own_model": "brook",
                "opponent_model": f"rival-{i % 5}",
                "vote": ("win", "loss", "tie")[i % 3],
                "category": "math",
                "voted_at": f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z",
            }
        )
    return out


class Voter:
    """One annotator: a cookie, and the timing of every vote's POST."""

    def __init__(self, port: int):
        self.port, self.cookie = port, ""
        self.votes: list[tuple[float, float, int]] = []  # (sent, answered, status), perf_counter seconds

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, str, str]:
        body = urllib.parse.urlencode(form).encode() if form else None
        headers = {"Cookie": self.cookie} if self.cookie else {}
        if body:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode()
        finally:
            conn.close()
        cookie = resp.getheader("set-cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return resp.status, resp.getheader("location") or "", text

    def run(self, stop: threading.Event, where: str) -> None:
        (self.judge if where == "queue" else self.arena)(stop)

    def judge(self, stop: threading.Event) -> None:
        """Queue votes: the next held-out item of the two models, judged a tie."""
        query = f"set={QUEUE_SET}&a=sm11a&b=so7a"
        while not stop.is_set():
            try:
                status, _, page = self.request("GET", f"/queue?{query}")
                csrf = re.search(r'name="csrf" value="([^"]+)"', page)
                item = re.search(r'name="submission_id" value="([^"]+)"', page)
                if status != 200 or csrf is None or item is None:
                    time.sleep(0.05)
                    continue
                form = {"csrf": csrf.group(1), "submission_id": item.group(1), "vote": "tie"}
                sent = time.perf_counter()
                status, _, _ = self.request("POST", f"/queue/vote?{query}", form)
                self.votes.append((sent, time.perf_counter(), status))
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)

    def arena(self, stop: threading.Event) -> None:
        """Arena votes: a prompt, both answers, a vote."""
        while not stop.is_set():
            try:
                status, _, page = self.request("GET", "/arena")
                csrf = re.search(r'name="csrf" value="([^"]+)"', page)
                if status != 200 or csrf is None:
                    time.sleep(0.05)
                    continue
                status, where, _ = self.request(
                    "POST", "/arena/start", {"csrf": csrf.group(1), "prompt": "2+2?"}
                )
                if status != 303:
                    time.sleep(0.05)
                    continue
                status, _, page = self.request("GET", where)
                csrf = re.search(r'name="csrf" value="([^"]+)"', page)
                if status != 200 or csrf is None:
                    continue
                sent = time.perf_counter()
                status, _, _ = self.request("POST", where + "/vote", {"csrf": csrf.group(1), "vote": "a"})
                self.votes.append((sent, time.perf_counter(), status))
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)


def scene(tree: str, base_store: str, battles_file: str, voters: int, hold_s: float) -> dict:
    """One run: server, voters, the ingest beside them; the figures as a dict."""
    work = Path(tempfile.mkdtemp(prefix="bench-lock-"))
    times_file = work / "store_times.json"
    env = {
        **os.environ,
        "PYTHONPATH": tree,
        "PAIRSTORE_BUSY_WAIT": "10",
        "BENCH_STORE_TIMES": str(times_file),
    }
    db = work / "store.duckdb"
    shutil.copyfile(base_store, db)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(db), str(hold_s)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # its shutdown's own lines; the figures come from the store and the voters
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        people = [Voter(port) for _ in range(voters)]
        stop = threading.Event()
        threads = [
            threading.Thread(target=v.run, args=(stop, "queue" if i % 2 else "arena"), daemon=True)
            for i, v in enumerate(people)
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(WARMUP_S)
        ingest_start = time.perf_counter()
        ingest = subprocess.run(
            [
                sys.executable,
                "-c",
                INGEST,
                "--db",
                str(db),
                "ingest",
                "battles",
                battles_file,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=MAX_SCENE_S,
        )
        ingest_end = time.perf_counter()
        time.sleep(COOLDOWN_S)
        stop.set()
        for t in threads:
            t.join(120)
        t1 = time.perf_counter()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    votes = [v for p in people for v in p.votes]
    acked = [v for v in votes if v[2] == 303]
    during = [v for v in acked if v[0] < ingest_end and v[1] > ingest_start]
    check = subprocess.run(
        [sys.executable, "-c", COUNT, str(db)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    stored_votes, stored_ingest = json.loads(check.stdout)
    store_times = json.loads(times_file.read_text()) if times_file.exists() else {}
    shutil.rmtree(work, ignore_errors=True)
    ms = sorted((b - a) * 1000 for a, b, _ in acked)
    ms_during = sorted((b - a) * 1000 for a, b, _ in during)

    def pct(xs: list[float], q: float) -> float | None:
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None

    return {
        "ingest_rc": ingest.returncode,
        "ingest_error": (ingest.stderr.strip().splitlines() or [""])[-1] if ingest.returncode else "",
        "ingest_s": ingest_end - ingest_start,
        "ingest_waited_s": store_times.get("waited_s"),
        "ingest_held_s": store_times.get("held_s"),
        "ingested": stored_ingest,
        "votes_acked": len(acked),
        "votes_failed": len(votes) - len(acked),
        "votes_stored": stored_votes,
        "lost": len(acked) - stored_votes,
        "scene_s": t1 - t0,
        "votes_per_s": len(acked) / (t1 - t0),
        "votes_during_ingest": len(during),
        "p50_ms": statistics.median(ms) if ms else None,
        "p99_ms": pct(ms, 0.99),
        "max_ms": ms[-1] if ms else None,
        "p99_during_ms": pct(ms_during, 0.99),
    }


# A holder that is never idle: it takes the store, writes, holds it 50 ms, lets it go and takes it back at
# once, as a server busy with votes does on a machine fast enough to keep it busy. Each tree's own way: in
# turn where the tree has turns, DuckDB's lock alone before (what the web app did).
GREEDY = """
import sys
try:
    from pairstore.store.lock import open_in_turn
    def take(path):
        return open_in_turn(path, what="busy server", wait_s=60)
except ImportError:
    from pairstore.errors import StoreBusy
    from pairstore.store.store import open_store
    def take(path):
        while True:
            try:
                return open_store(path)
            except StoreBusy:
                pass
import time
first = True
while True:
    store = take(sys.argv[1])
    store.con.execute("INSERT INTO audit_log (action, subject) VALUES ('busy', 'x')")
    if first:
        print("holding", flush=True)
        first = False
    time.sleep(0.05)
    store.close()
"""


def busy_scene(tree: str, base_store: str, battles_file: str) -> dict:
    """One run: the ingest beside a holder that is never idle; the figures as a dict."""
    work = Path(tempfile.mkdtemp(prefix="bench-lock-busy-"))
    times_file = work / "store_times.json"
    env = {
        **os.environ,
        "PYTHONPATH": tree,
        "PAIRSTORE_BUSY_WAIT": "10",
        "BENCH_STORE_TIMES": str(times_file),
    }
    db = work / "store.duckdb"
    shutil.copyfile(base_store, db)
    holder = subprocess.Popen(
        [sys.executable, "-c", GREEDY, str(db)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        started = time.perf_counter()
        ingest = subprocess.run(
            [sys.executable, "-c", INGEST, "--db", str(db), "ingest", "battles", battles_file],
            env=env,
            capture_output=True,
            text=True,
            timeout=MAX_SCENE_S,
        )
        ingest_s = time.perf_counter() - started
    finally:
        holder.kill()
        holder.wait()
    store_times = json.loads(times_file.read_text()) if times_file.exists() else {}
    shutil.rmtree(work, ignore_errors=True)
    return {
        "ingest_rc": ingest.returncode,
        "ingest_error": (ingest.stderr.strip().splitlines() or [""])[-1] if ingest.returncode else "",
        "ingest_s": ingest_s,
        "ingest_waited_s": store_times.get("waited_s"),
    }


def baseline_tree(rev: str, into: Path) -> str:
    """The files of `rev` (git archive) in a folder: the code as it was."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return str(into)


# The base store: the sample battles, and QUEUE_ITEMS battles held out in QUEUE_SET with two models' answers
# (what the Queue's voters judge).
BASE = """
import json, sys
from pathlib import Path
from pairstore.holdout.sets import add_from_ids_file
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.generations import ingest_generations
from pairstore.store.store import open_store
db, sample, queue, work, set_name = sys.argv[1:6]
s = open_store(db)
ingest_battles(s, sample)
ingest_battles(s, queue)
ids = [json.loads(line)["battle_id"] for line in open(queue)]
Path(work, "ids.txt").write_text("\\n".join(ids) + "\\n")
add_from_ids_file(s, set_name, Path(work, "ids.txt"))
for model in ("sm11a", "so7a"):
    out = Path(work, model + ".jsonl")
    out.write_text("".join(json.dumps({"item_kind": "prompt", "item_id": i, "prompt": [{"role": "user",
        "content": "held-out question " + i}], "output": model + " answers " + i}) + "\\n" for i in ids))
    ingest_generations(s, out, model=model)
s.close()
"""
QUEUE_SET, QUEUE_ITEMS = "queue", 1000


def prepare(tmp: Path, battles: int) -> tuple[str, str]:
    """(the base store, the ingest file of `battles` new battles)."""
    store = tmp / "base.duckdb"
    queue = tmp / "queue.jsonl"
    queue.write_text(
        "".join(
            json.dumps({**r, "battle_id": f"q-{r['battle_id']}"}) + "\n"
            for r in battle_records(QUEUE_ITEMS, 7)
        )
    )
    sample = ROOT / "pairstore" / "sample_data" / "battles.jsonl"
    subprocess.run(
        [sys.executable, "-c", BASE, str(store), str(sample), str(queue), str(tmp), QUEUE_SET],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    path = tmp / "battles.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for rec in battle_records(battles):
            f.write(json.dumps(rec) + "\n")
    return str(store), str(path)


def warm(tree: str, tmp: Path) -> None:
    """One small ingest with the tree's code, so its compiled caches are made before any run is timed."""
    db, recs = tmp / f"warm-{abs(hash(tree))}.duckdb", tmp / "warm.jsonl"
    recs.write_text("".join(json.dumps(r) + "\n" for r in battle_records(50, seed=1)))
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from pairstore.cli import main; main()",
            "--db",
            str(db),
            "ingest",
            "battles",
            str(recs),
        ],
        env={**os.environ, "PYTHONPATH": tree},
        check=True,
        capture_output=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--voters", type=int, default=16)
    ap.add_argument("--battles", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--baseline", default=None, help="The git revision of the code before (default: merge base)"
    )
    ap.add_argument(
        "--one", nargs=5, metavar=("TREE", "STORE", "BATTLES", "VOTERS", "HOLD_S"), help=argparse.SUPPRESS
    )
    ap.add_argument("--one-busy", nargs=3, metavar=("TREE", "STORE", "BATTLES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one_busy:  # a contender's run of the never-idle holder's scene
        print(json.dumps(busy_scene(*args.one_busy)), flush=True)
        return 0
    if args.one:  # a contender's run: the scene once, its figures as one JSON line
        tree, store, battles, voters, hold_s = args.one
        print(json.dumps(scene(tree, store, battles, int(voters), float(hold_s))), flush=True)
        return 0
    rev = (
        args.baseline
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        store, battles = prepare(tmp, args.battles)
        old = baseline_tree(rev, tmp / "baseline")
        for tree in (str(ROOT), old):
            warm(tree, tmp)
        arms = {
            "turns (this tree), hold 1 s": (str(ROOT), 1.0),
            f"before ({rev[:7]}), hold 1 s": (old, 1.0),
            f"before ({rev[:7]}), hold 0 s": (old, 0.0),
        }
        contenders = [
            Contender(
                name,
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--one",
                    tree,
                    store,
                    battles,
                    str(args.voters),
                    str(hold),
                ],
            )
            for name, (tree, hold) in arms.items()
        ]
        runs = run_interleaved(contenders, rounds=args.rounds, timeout=MAX_SCENE_S * 2)
        busy_arms = {"turns (this tree)": str(ROOT), f"before ({rev[:7]})": old}
        busy = run_interleaved(
            [
                Contender(
                    name, [sys.executable, str(Path(__file__).resolve()), "--one-busy", tree, store, battles]
                )
                for name, tree in busy_arms.items()
            ],
            rounds=args.rounds,
            timeout=MAX_SCENE_S * 2,
        )
    load1 = os.getloadavg()[0]
    busy_figures = {
        name: [json.loads(r.stdout.strip().splitlines()[-1]) for r in st.runs]
        for name, st in summarize(busy).items()
    }
    figures = {
        name: [json.loads(r.stdout.strip().splitlines()[-1]) for r in stats.runs]
        for name, stats in summarize(runs).items()
    }
    stats = summarize(runs)

    def med(name: str, key: str, fmt: str = "{:.0f}") -> str:
        xs = [f[key] for f in figures[name] if f[key] is not None]
        return fmt.format(statistics.median(xs)) if xs else "-"

    def top(name: str, key: str) -> str:
        xs = [f[key] for f in figures[name] if f[key] is not None]
        return f"{max(xs):.2f}" if xs else "-"

    lines = [
        f"## lock: `pairstore ingest` of {args.battles:,} battles beside {args.voters} voters",
        "",
        f"`.venv/bin/python bench/bench_lock.py --voters {args.voters} --battles {args.battles} "
        f"--rounds {args.rounds}`; {cpu_model()}, {nproc()} cores, {ram_text()}; load average {load0:.1f} at "
        f"the start, {load1:.1f} at the end. Each run: the server (its own process), {args.voters} voters "
        f"voting as fast as it answers (half in the Arena, half in the Queue over {QUEUE_ITEMS:,} held-out "
        f"items), and {WARMUP_S:.0f} s in, `pairstore ingest battles` of "
        f"{args.battles:,} new battles (PAIRSTORE_BUSY_WAIT 10 s); the run ends {COOLDOWN_S:.0f} s after the "
        "ingest. Medians over the rounds (interleaved); a vote is timed from its POST to the answer. "
        "Lost: votes acknowledged but not in the store.",
        "",
        "| contender | ingest ok | ingest s | waited for the store s (max) | held it s | votes stored "
        "| votes refused | votes/s | vote p50 ms | vote p99 ms | p99 during ingest ms | lost | CPU s "
        "| wall s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, fs in figures.items():
        ok = sum(1 for f in fs if f["ingest_rc"] == 0 and f["ingested"] == args.battles)
        lines.append(
            f"| {name} | {ok} of {len(fs)} | {med(name, 'ingest_s', '{:.1f}')} | "
            f"{med(name, 'ingest_waited_s', '{:.2f}')} ({top(name, 'ingest_waited_s')}) | "
            f"{med(name, 'ingest_held_s', '{:.1f}')} | "
            f"{med(name, 'votes_stored')} | {med(name, 'votes_failed')} | "
            f"{med(name, 'votes_per_s', '{:.1f}')} | {med(name, 'p50_ms')} | "
            f"{med(name, 'p99_ms')} | {med(name, 'p99_during_ms')} | {sum(f['lost'] for f in fs)} | "
            f"{stats[name].median_cpu:.1f} | {stats[name].median_wall:.1f} |"
        )
    lines += [
        "",
        "The same ingest beside a holder that is never idle (it takes the store, writes, holds it 50 ms, "
        "lets it go and takes it back at once: a server kept busy by votes on a machine fast enough for it), "
        "each tree's own way of taking the store:",
        "",
        "| contender | ingest ok | waited for the store s: median (max) | ingest s | CPU s | wall s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    busy_stats = summarize(busy)
    for name, fs in busy_figures.items():
        ok = sum(1 for f in fs if f["ingest_rc"] == 0)
        waits = [f["ingest_waited_s"] for f in fs if f["ingest_waited_s"] is not None]
        waited = f"{statistics.median(waits):.2f} ({max(waits):.2f})" if waits else "never got it"
        lines.append(
            f"| {name} | {ok} of {len(fs)} | {waited} | {statistics.median(f['ingest_s'] for f in fs):.1f} | "
            f"{busy_stats[name].median_cpu:.1f} | {busy_stats[name].median_wall:.1f} |"
        )
    figures.update({f"never-idle holder, {k}": v for k, v in busy_figures.items()})
    errors = sorted({f["ingest_error"] for fs in figures.values() for f in fs if f["ingest_error"]})
    lines += [""]
    if errors:
        lines += ["The ingest's error where it failed: " + "; ".join(f"`{e}`" for e in errors), ""]
    before_failed = sum(
        1 for name, fs in figures.items() if name.startswith("before") for f in fs if f["ingest_rc"] != 0
    )
    before_runs = sum(len(fs) for name, fs in figures.items() if name.startswith("before"))
    lines += [
        "With turns the command waits in line, and the server lets the store go as soon as it sees it "
        "(after the request in hand). Votes that come while the ingest writes wait in the server's queue "
        "and land together, in order, when it is done: their latency then is the ingest's hold. "
        "With --hold-s 0 the file was free between requests, but every request opened it again.",
        "",
        (
            f"The code before failed {before_failed} of its {before_runs} ingests here."
            if before_failed
            else f"Here the code before got the store too, in all {before_runs} of its runs."
        )
        + f" At this load the server answered about {med(next(iter(figures)), 'votes_per_s', '{:.0f}')} "
        "votes/s, and between requests the file was free often enough for a retry to find it. The "
        "starvation needs a holder that takes the store back within the retry's 50 ms, which a busy server "
        "on an idle machine does. With turns the wait does not depend on that luck: a waiter gets the store "
        "at the holder's next release (`tests/store/test_lock.py::test_a_waiting_process_gets_the_store_at_"
        "the_next_release...`, deterministic: without the waiting file the waiter sat through dozens of the "
        "holder's turns).",
        "",
        "Every run's figures: " + json.dumps(figures, sort_keys=True),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
