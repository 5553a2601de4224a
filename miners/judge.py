"""Judging model outputs for mining: the verifier's verdict and the loop scanner's report, cached.

with OutputJudge() as judge:                     # closes its worker processes, if it started any
    judged = judge.judge_all([(output, gold, "gsm8k"), ...], workers=None)
    record_judgments(store, dict(zip(gen_ids, judged)))  # verdicts and loop flags onto `generations`
    judge.forget()                                   # between batches of a stream: drop per-text caches
unknown_reason(judged_item)                          # an unknown verdict: dropped, counted by this key

A verdict is correct, wrong or unknown (miners.verify). Miners turn only the definite ones into
pairs; an unknown is dropped and counted in MineResult.dropped as "unknown: <reason>".
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing import get_context
from types import TracebackType

from audits.loops import LoopReport, scan, scan_many
from miners.registry import MineResult
from miners.verify import UNKNOWN, Verdict, Verifier, extract_answer
from pairstore.holdout.sets import HoldoutFilter
from pairstore.progress import current as current_progress
from pairstore.store.store import Store, bounded_memory
from pairstore.tables.generations import record_verdicts
from pairstore.tables.pairs import Pair, PairStage, commit_staged_pairs, stage_pairs


@dataclass
class Judged:
    """One output judged: the verifier's verdict (and its answer), the scanner's report."""

    verdict: Verdict
    report: LoopReport

    @property
    def answer(self) -> str | None:
        return self.verdict.answer

    @property
    def correct(self) -> bool:
        return self.verdict.label == "correct"

    @property
    def wrong(self) -> bool:
        return self.verdict.label == "wrong"

    @property
    def unknown(self) -> bool:
        return self.verdict.label == UNKNOWN

    @property
    def flagged(self) -> bool:
        return bool(self.report.flagged)


def unknown_reason(judged: Judged) -> str:
    """The key an unknown verdict is counted under in a miner's `dropped`: "unknown: no answer found"."""
    return f"unknown: {judged.verdict.reason}"


class OutputJudge:
    """Verifier + scanner over many outputs, each distinct text judged once.

    Many samples of one problem share a few distinct answers; the Verifier caches its comparison per
    (answer, gold, kind), so it runs once per distinct answer; extraction is a cheap pass over each
    text. Times spent in each are accumulated for the benchmark, and the verifier's counts are in
    `verifier.stats`.
    """

    def __init__(self) -> None:
        self.verifier = Verifier()
        self._scan = scan
        self._judged: dict[tuple, Judged] = {}
        self._reports: dict[str, LoopReport] = {}  # per distinct text; scanned ahead in batches (prescan)
        self._pool: tuple[int, ProcessPoolExecutor] | None = None  # (workers, pool), kept across calls
        self.verify_s = 0.0
        self.scan_s = 0.0

    def __enter__(self) -> OutputJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes judge_all started (a later call starts them again)."""
        if self._pool is not None:
            self._pool[1].shutdown()
            self._pool = None

    def forget(self) -> None:
        """Drop what is cached per text (verdicts, scanner reports): a miner streaming its generations calls
        it between batches of whole problems, so memory does not grow with them. Counts and times stay."""
        self._judged.clear()
        self._reports.clear()

    def extract(self, output: str, kind: str) -> str | None:
        t0 = time.perf_counter()
        answer = extract_answer(output, kind)
        self.verify_s += time.perf_counter() - t0
        return answer

    def verdict(self, output: str, gold: str, kind: str, looped: bool | None = None) -> Verdict:
        t0 = time.perf_counter()
        verdict = self.verifier.verify(output, gold, kind, looped=looped)
        self.verify_s += time.perf_counter() - t0
        return verdict

    def scan(self, output: str):
        report = self._reports.get(output)
        if report is not None:
            return report
        t0 = time.perf_counter()
        report = self._reports[output] = self._scan(output)
        self.scan_s += time.perf_counter() - t0
        return report

    def prescan(self, outputs: list[str]) -> None:
        """Scan the outputs not scanned yet in batches (audits.loops.scan_many): one numpy pass over
        many texts costs a fraction of a scan() per text. judge() then takes each report from here
        (a text is scanned once, whichever golds it is judged against)."""
        todo = list(dict.fromkeys(o for o in outputs if o not in self._reports))
        t0 = time.perf_counter()
        for start in range(0, len(todo), PRESCAN_BATCH):
            batch = todo[start : start + PRESCAN_BATCH]
            self._reports.update(zip(batch, scan_many(batch)))
        self.scan_s += time.perf_counter() - t0

    def judge(self, output: str, gold: str, kind: str) -> Judged:
        key = (output, gold, kind)
        judged = self._judged.get(key)
        if judged is None:
            # Samples often repeat word for word (low temperature, short answers): judge each text once.
            report = self.scan(output)
            looped = bool(report.tail_loop or report.catastrophic)  # the verifier need not scan again
            judged = self._judged[key] = Judged(self.verdict(output, gold, kind, looped=looped), report)
        return judged

    def judge_all(
        self,
        items: list[tuple[str, str, str]],
        workers: int | None = 1,
        advance: Callable[[int], object] | None = None,
    ) -> list[Judged]:
        """judge() over (output, gold, kind) items, in order; across `workers` processes when many.

        workers None: parallel_workers(len(items)). The items go to the workers in contiguous chunks,
        so the samples of one problem share a worker's verdict cache; the result is the same whatever
        the number of workers. Workers are spawned once and kept until close() (the caller's main
        module must be import-safe: the usual __main__ guard). `advance(n)` hears the progress; without
        it the call reports a progress stage of its own.
        """
        if workers is None:
            workers = parallel_workers(len(items))
        if advance is None:
            with current_progress().stage("mine: verify and scan", total=len(items), unit="outputs") as stage:
                return self.judge_all(items, workers, stage.advance)
        if workers <= 1 or len(items) < 2 * workers:
            return self.judge_in_order(items, advance)
        n_chunks = workers * 4
        size = -(-len(items) // n_chunks)
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        out: list[Judged] = []
        for judged, verify_s, scan_s, stats in self._workers(workers).map(_judge_chunk, chunks):
            out.extend(judged)
            advance(len(judged))
            self.verify_s += verify_s
            self.scan_s += scan_s
            self.verifier.stats.update(stats)
        return out

    def _workers(self, workers: int) -> ProcessPoolExecutor:
        if self._pool is None or self._pool[0] != workers:
            self.close()
            # spawn, not fork: the parent holds an open DuckDB connection and threads.
            self._pool = (workers, ProcessPoolExecutor(workers, mp_context=get_context("spawn")))
        return self._pool[1]

    def judge_in_order(self, items: list[tuple[str, str, str]], advance=None) -> list[Judged]:
        """judge() over the items in this process, in order: each batch of PRESCAN_BATCH outputs is
        scanned in one scan_many pass first; advance(n) (a progress stage's) after each batch."""
        out: list[Judged] = []
        for start in range(0, len(items), PRESCAN_BATCH):
            batch = items[start : start + PRESCAN_BATCH]
            self.prescan([it[0] for it in batch])
            out.extend(self.judge(*it) for it in batch)
            if advance is not None:
                advance(len(batch))
        return out


# Below this many outputs one process is faster than starting workers (about a second each).
PARALLEL_MIN = 20_000


def parallel_workers(outputs: int) -> int:
    """The worker processes `workers=None` means for this many outputs: one per core (at most 4) from
    PARALLEL_MIN outputs on, else one."""
    return min(4, os.cpu_count() or 1) if outputs >= PARALLEL_MIN else 1


# Outputs per scan_many call in prescan: large enough for numpy to pay off, small enough to bound
# the memory of one pass.
PRESCAN_BATCH = 4096


def _judge_chunk(items):
    """Worker side of OutputJudge.judge_all: (judged items, verifier seconds, scanner seconds, the
    verifier's counts)."""
    judge = OutputJudge()
    return judge.judge_in_order(items), judge.verify_s, judge.scan_s, judge.verifier.stats


def readings_json(verdict: Verdict) -> str | None:
    """Each verifier's reading as JSON where there are two (where they disagree, both are kept)."""
    if len(verdict.readings) < 2:
        return None
    return json.dumps([r.as_dict() for r in verdict.readings], ensure_ascii=False, sort_keys=True)


def judgment_rows(judged: dict[str, Judged]) -> list[dict]:
    """The `generations` verdict columns (pairstore.tables.generations.VERDICT_SCHEMA) of judged outputs."""
    return [
        {
            "gen_id": gid,
            "extracted_answer": j.answer,
            "verdict": j.verdict.label,
            "verdict_reason": j.verdict.reason,
            "verdict_readings": readings_json(j.verdict),
            "loop_flagged": bool(j.report.flagged),
            "loop_catastrophic": bool(j.report.catastrophic),
            "loop_tail": bool(j.report.tail_loop),
            "max_repeat": int(j.report.max_repeat),
            "n_tokens": int(j.report.n_tokens),
        }
        for gid, j in judged.items()
    ]


def record_judgments(store, judged: dict[str, Judged]) -> int:
    """Write verdicts and loop flags back to `generations` (ingest leaves them NULL). Returns rows updated."""
    return record_verdicts(store, judgment_rows(judged))


class JudgedWriter:
    """What a streaming miner writes, batch by batch: each batch's verdicts and loop flags onto
    `generations` and its pairs into a stage, in one transaction a batch; when the block ends without an
    error, every staged pair into `pairs` in one transaction (a run's pairs land whole or not at all).
    Neither grows with the generations in memory: a committed batch's UPDATE can be checkpointed and
    the staged pairs spill, where one transaction held every verdict's old value. A run that fails leaves
    the verdicts of the batches it finished (each is what the verifier says of that output) and no pair.
    Inside a caller's transaction every write joins it. The seconds spent go to result.timings.

        with JudgedWriter(store, result, judge, holdout) as out:
            for batch in ...:
                out.write(judged, pairs, judge_wall_s=seconds)
    """

    def __init__(self, store: Store, result: MineResult, judge: OutputJudge, holdout: HoldoutFilter) -> None:
        self.store, self.result, self.judge, self.holdout = store, result, judge, holdout
        self.judge_wall_s = 0.0
        self.write_s = 0.0

    def __enter__(self) -> JudgedWriter:
        self._pairs = PairStage(self.store, miner=self.result.miner, miner_version=self.result.version)
        return self

    def write(self, judged: dict[str, Judged], pairs: list[Pair], *, judge_wall_s: float) -> None:
        t0 = time.perf_counter()
        with self.store.transaction():
            record_verdicts(self.store, judgment_rows(judged))
            stage_pairs(self._pairs, self.result, pairs, self.holdout)
        self.judge_wall_s += judge_wall_s
        self.write_s += time.perf_counter() - t0

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        t0 = time.perf_counter()
        try:
            if exc_type is None:
                commit_staged_pairs(self._pairs, self.result)
        finally:
            self._pairs.close()
        self.write_s += time.perf_counter() - t0
        self.result.timings = {
            "verify_s": self.judge.verify_s,
            "scan_s": self.judge.scan_s,
            "judge_wall_s": self.judge_wall_s,
            "write_s": self.write_s,
        }


# What a streaming miner does with one batch of whole items: (the judged outputs by gen_id, the pairs,
# the seconds spent judging), given the rows, the judge, the worker count and the progress callback.
MineBatch = Callable[[list[dict], "OutputJudge", int, Callable[[int], object]], tuple[dict, list, float]]


def mine_in_batches(
    store: Store,
    result: MineResult,
    holdout: HoldoutFilter,
    batches: Iterable[list[dict]],
    *,
    outputs: int,
    workers: int | None,
    mine_batch: MineBatch,
    judging_stage: str,
    reading_stage: str | None = None,
) -> MineResult:
    """The loop every streaming miner shares: one judge, one writer (a transaction a batch, one for the
    pairs), each batch mined and written, the judge's per-batch memory let go, DuckDB's memory bounded;
    `outputs` sizes the progress stages and the pool."""
    progress = current_progress()
    result.keep_ids = False  # the number and digest of the pairs produced, not a list that grows with them
    with (
        bounded_memory(store.con),  # nothing it holds must stay in memory, so DuckDB may spill beyond this
        OutputJudge() as judge,
        JudgedWriter(store, result, judge, holdout) as out,
        ExitStack() as stages,
    ):
        reading = (
            stages.enter_context(progress.stage(reading_stage, total=outputs, unit="outputs"))
            if reading_stage
            else None
        )
        judging = stages.enter_context(progress.stage(judging_stage, total=outputs, unit="outputs"))
        workers = parallel_workers(outputs) if workers is None else workers
        for rows in batches:
            if reading is not None:
                reading.advance(len(rows))
            judged, pairs, judge_s = mine_batch(rows, judge, workers, judging.advance)
            out.write(judged, pairs, judge_wall_s=judge_s)
            judge.forget()
    return result
