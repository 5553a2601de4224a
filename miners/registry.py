"""The miner registry, shared by the library and `pairstore mine`, and what every miner has in common.

    from miners.registry import run_miner, miner_names
    result = run_miner(store, "battle")            # -> MineResult
    result.kept, result.dropped, result.pair_ids

    pairstore mine list                           # the registered miners
    pairstore mine battle

A miner is a function `fn(store, **options) -> MineResult` registered under a
name with a version (`@register("battle", version="1")`). The name and
version are recorded on every pair it writes (pairs.miner, pairs.miner_version,
pair_origins.miner). Every miner writes through pairstore.pairs.add_pairs, so
a rerun adds nothing (pairs dedup by content id; a new origin of a known pair
is added to pair_origins) and empty or identical sides are dropped by reason.

`HoldoutFilter` is the source-level holdout check all miners share: active
`holdout` members (any set) by item id, match key and task key, and the items
of every evaluation suite (`eval_items`, which the export gate checks as set
"eval:<suite>"). The export gate checks again; this filter only keeps miners
from producing pairs the gate would refuse.
"""

from __future__ import annotations

import importlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pairstore.errors import NotFound
from pairstore.keys import match_key
from pairstore.pairs import Pair, add_pairs

# Modules that register the built-in miners; imported on first use of the registry.
BUILTIN_MODULES = ("miners.battle", "miners.self_repair", "miners.loopfix", "miners.style", "miners.importers")


@dataclass
class MineResult:
    """What one miner run did: new pairs, drops by reason, and tallies of what it looked at."""

    miner: str
    version: str
    kept: int = 0                                        # new pairs written
    new_origins: int = 0                                 # origins written (new and known pairs)
    dropped: Counter = field(default_factory=Counter)    # reason -> count (see each miner's docstring)
    stats: Counter = field(default_factory=Counter)      # what was looked at: battles, generations, wrong, ...
    pair_ids: list[str] = field(default_factory=list)    # ids of every pair the miner produced, in order
    by_source: Counter = field(default_factory=Counter)  # produced pairs per source (self_repair/gold_repair)
    # seconds: verify_s / scan_s inside the verifier / scanner (summed over worker processes),
    # judge_wall_s judging on the clock, write_s writing verdicts, pairs and origins
    timings: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"miner": self.miner, "version": self.version, "kept": self.kept,
                "new_origins": self.new_origins, "dropped": dict(sorted(self.dropped.items())),
                "stats": dict(sorted(self.stats.items())), "by_source": dict(sorted(self.by_source.items())),
                "pairs": len(self.pair_ids)}


@dataclass(frozen=True)
class MinerSpec:
    name: str
    version: str
    fn: Callable[..., MineResult]
    summary: str


_REGISTRY: dict[str, MinerSpec] = {}
_loaded = False


def register(name: str, *, version: str):
    """Decorator: register `fn(store, **options) -> MineResult` as miner `name`."""

    def wrap(fn):
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"miner {name!r} registered twice")
        summary = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        _REGISTRY[name] = MinerSpec(name, version, fn, summary)
        fn.miner_name, fn.miner_version = name, version
        return fn

    return wrap


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True


def miners() -> dict[str, MinerSpec]:
    """name -> MinerSpec of every registered miner, sorted by name."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def miner_names() -> list[str]:
    return list(miners())


def get_miner(name: str) -> MinerSpec:
    specs = miners()
    key = name.replace("-", "_")
    if key not in specs:
        raise NotFound(f"no miner {name!r} (registered: {', '.join(specs)})")
    return specs[key]


def run_miner(store, name: str, **options) -> MineResult:
    """Run the registered miner `name` on `store` with its options."""
    return get_miner(name).fn(store, **options)


def new_result(fn) -> MineResult:
    """An empty result stamped with the registered name and version of miner function `fn`."""
    return MineResult(miner=fn.miner_name, version=fn.miner_version)


def write_pairs(store, result: MineResult, pairs: Iterable[Pair], holdout: HoldoutFilter | None = None
                ) -> MineResult:
    """Write `pairs` through add_pairs and fold its counts into `result`.

    With a holdout filter, a pair whose prompt's match key (or task key) is
    held out is dropped as 'holdout' here too: a last check for prompts
    that reach a miner by another road than their item id.
    """
    kept = []
    for p in pairs:
        if holdout is not None and holdout.holds_pair(p):
            result.dropped["holdout"] += 1
            continue
        kept.append(p)
    added = add_pairs(store, kept, miner=result.miner, miner_version=result.version)
    result.kept += added.added
    result.new_origins += added.new_origins
    result.dropped.update(added.dropped)
    result.pair_ids.extend(added.pair_ids)
    ids = set(added.pair_ids)
    for p in kept:
        if p.pair_id in ids:
            result.by_source[p.source] += 1
    return result


@dataclass
class HoldoutFilter:
    """The held-out ids, match keys and task keys a miner must not mine from."""

    item_ids: dict[str, set[str]] = field(default_factory=dict)   # item kind -> ids
    match_keys: set[str] = field(default_factory=set)
    task_keys: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, store) -> HoldoutFilter:
        from pairstore.holdout import active_members, held_task_keys

        f = cls()
        for row in active_members(store):
            f.item_ids.setdefault(row["item_kind"], set()).add(row["item_id"])
            f.match_keys.add(row["match_key"])
        f.task_keys |= held_task_keys(store)
        for row in store.rows("SELECT item_id, match_key, task_key FROM eval_items"):
            f.item_ids.setdefault("eval_item", set()).add(row["item_id"])
            f.match_keys.add(row["match_key"])
            if row["task_key"]:
                f.task_keys.add(row["task_key"])
        return f

    def holds(self, kind: str, item_id: str | None, *, prompt=None, stored_match_key: str | None = None,
              task_key: str | None = None) -> bool:
        """True when the item is a member by id, its prompt's or stored match key, or its task key."""
        if item_id is not None and item_id in self.item_ids.get(kind, ()):
            return True
        if stored_match_key is not None and stored_match_key in self.match_keys:
            return True
        if prompt is not None and self.match_keys and match_key(prompt) in self.match_keys:
            return True
        return task_key is not None and task_key in self.task_keys

    def holds_pair(self, pair: Pair) -> bool:
        if pair.task_key is not None and pair.task_key in self.task_keys:
            return True
        return bool(self.match_keys) and match_key(pair.messages()) in self.match_keys

    def __len__(self) -> int:
        return sum(len(v) for v in self.item_ids.values())


def seeded_rank(seed: int, *parts: str) -> int:
    """A stable 64-bit rank for seeded selection: xxh3_64 of the seed and the parts."""
    import xxhash

    return xxhash.xxh3_64_intdigest("\x1f".join([str(seed), *parts]).encode("utf-8"))


def without_system(messages: list[dict]) -> list[dict]:
    """A pair prompt carries no system message: the round's recipe supplies it at export."""
    return [m for m in messages if m["role"] != "system"]


@dataclass
class Judged:
    """One output judged: the verifier's answer and verdict, the scanner's report."""

    answer: str | None
    correct: bool
    report: object          # audits.loops.LoopReport

    @property
    def flagged(self) -> bool:
        return bool(self.report.flagged)


class OutputJudge:
    """Verifier + scanner over many outputs, with the verdict cached per (answer, gold, kind).

    Many samples of one problem share a few distinct answers, so the verifier's
    comparison runs once per distinct answer; extraction is a cheap pass over
    each text. Times spent in each are accumulated for the benchmark.
    """

    def __init__(self):
        from audits.loops import scan
        from miners.verify import answers_equal, extract_answer

        # is_equivalent(text, gold, kind) == answers_equal(extract_answer(text, kind), gold, kind):
        # extracting once here lets the verdict be cached per distinct answer.
        self._extract, self._equal, self._scan = extract_answer, answers_equal, scan
        self._verdicts: dict[tuple, bool] = {}
        self._judged: dict[tuple, Judged] = {}
        self.verify_s = 0.0
        self.scan_s = 0.0

    def extract(self, output: str, kind: str) -> str | None:
        t0 = time.perf_counter()
        answer = self._extract(output, kind)
        self.verify_s += time.perf_counter() - t0
        return answer

    def verdict(self, output: str, gold: str, kind: str) -> tuple[str | None, bool]:
        t0 = time.perf_counter()
        answer = self._extract(output, kind)
        if answer is None or not answer.strip():
            correct = False
        else:
            key = (answer, gold, kind)
            correct = self._verdicts.get(key)
            if correct is None:
                correct = self._verdicts[key] = bool(self._equal(answer, gold, kind))
        self.verify_s += time.perf_counter() - t0
        return answer, correct

    def scan(self, output: str):
        t0 = time.perf_counter()
        report = self._scan(output)
        self.scan_s += time.perf_counter() - t0
        return report

    def judge(self, output: str, gold: str, kind: str) -> Judged:
        key = (output, gold, kind)
        judged = self._judged.get(key)
        if judged is None:
            # Samples often repeat word for word (low temperature, short answers): judge each text once.
            answer, correct = self.verdict(output, gold, kind)
            judged = self._judged[key] = Judged(answer, correct, self.scan(output))
        return judged

    def judge_all(self, items: list[tuple[str, str, str]], workers: int | None = 1) -> list[Judged]:
        """judge() over (output, gold, kind) items, in order; across `workers` processes when many.

        workers None: one process per core (at most 4) from PARALLEL_MIN items on, else one. The
        items go to the workers in contiguous chunks, so the samples of one problem share a
        worker's verdict cache; the result is the same whatever the number of workers. Workers
        are spawned (the caller's main module must be import-safe: the usual __main__ guard).
        """
        if workers is None:
            workers = min(4, os.cpu_count() or 1) if len(items) >= PARALLEL_MIN else 1
        if workers <= 1 or len(items) < 2 * workers:
            return [self.judge(*it) for it in items]
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        n_chunks = workers * 4
        size = -(-len(items) // n_chunks)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        out: list[Judged] = []
        # spawn, not fork: the parent holds an open DuckDB connection and threads.
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            for judged, verify_s, scan_s in pool.map(_judge_chunk, chunks):
                out.extend(judged)
                self.verify_s += verify_s
                self.scan_s += scan_s
        return out


# Below this many outputs one process is faster than starting workers (about a second each).
PARALLEL_MIN = 20_000


def _judge_chunk(items):
    """Worker side of OutputJudge.judge_all: (judged items, verifier seconds, scanner seconds)."""
    judge = OutputJudge()
    return [judge.judge(*it) for it in items], judge.verify_s, judge.scan_s


_VERDICT_SCHEMA = None


def record_judgments(store, judged: dict[str, Judged]) -> int:
    """Write verdicts and loop flags back to `generations` (ingest leaves them NULL). Returns rows updated."""
    global _VERDICT_SCHEMA
    import pyarrow as pa

    if not judged:
        return 0
    if _VERDICT_SCHEMA is None:
        _VERDICT_SCHEMA = pa.schema([
            ("gen_id", pa.string()), ("extracted_answer", pa.string()), ("verdict", pa.string()),
            ("loop_flagged", pa.bool_()), ("loop_catastrophic", pa.bool_()), ("loop_tail", pa.bool_()),
            ("max_repeat", pa.int32()), ("n_tokens", pa.int32())])
    rows = [{"gen_id": gid, "extracted_answer": j.answer, "verdict": "correct" if j.correct else "wrong",
             "loop_flagged": bool(j.report.flagged), "loop_catastrophic": bool(j.report.catastrophic),
             "loop_tail": bool(j.report.tail_loop), "max_repeat": int(j.report.max_repeat),
             "n_tokens": int(j.report.n_tokens)} for gid, j in judged.items()]
    con = store.con
    con.register("_judged", pa.Table.from_pylist(rows, schema=_VERDICT_SCHEMA))
    try:
        with store.transaction():
            return con.execute("""
                UPDATE generations g SET extracted_answer = j.extracted_answer, verdict = j.verdict,
                    loop_flagged = j.loop_flagged, loop_catastrophic = j.loop_catastrophic,
                    loop_tail = j.loop_tail, max_repeat = j.max_repeat, n_tokens = j.n_tokens
                FROM _judged j
                WHERE g.gen_id = j.gen_id AND (g.verdict IS DISTINCT FROM j.verdict
                    OR g.extracted_answer IS DISTINCT FROM j.extracted_answer
                    OR g.loop_flagged IS DISTINCT FROM j.loop_flagged
                    OR g.max_repeat IS DISTINCT FROM j.max_repeat
                    OR g.n_tokens IS DISTINCT FROM j.n_tokens
                    OR g.loop_catastrophic IS DISTINCT FROM j.loop_catastrophic
                    OR g.loop_tail IS DISTINCT FROM j.loop_tail)""").fetchone()[0]
    finally:
        con.unregister("_judged")
