"""Judging model outputs for mining: the verifier's verdict and the loop scanner's report, cached.

judge = OutputJudge()
judged = judge.judge_all([(output, gold, "gsm8k"), ...], workers=None)
record_judgments(store, dict(zip(gen_ids, judged)))    # verdicts and loop flags onto `generations`
count_unknown(result, judged_item)                      # an unknown verdict: dropped, counted by reason

A verdict is correct, wrong or unknown (miners.verify). Miners turn only the definite ones into
pairs; an unknown is dropped and counted in MineResult.dropped as "unknown: <reason>".
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

from audits.loops import LoopReport, scan
from miners.registry import MineResult, write_pairs
from miners.verify import UNKNOWN, Verdict, Verifier, extract_answer
from pairstore.holdout.sets import HoldoutFilter
from pairstore.progress import current as current_progress
from pairstore.tables.generations import record_verdicts
from pairstore.tables.pairs import Pair


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

    def __init__(self):
        self.verifier = Verifier()
        self._scan = scan
        self._judged: dict[tuple, Judged] = {}
        self.verify_s = 0.0
        self.scan_s = 0.0

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
        t0 = time.perf_counter()
        report = self._scan(output)
        self.scan_s += time.perf_counter() - t0
        return report

    def judge(self, output: str, gold: str, kind: str) -> Judged:
        key = (output, gold, kind)
        judged = self._judged.get(key)
        if judged is None:
            # Samples often repeat word for word (low temperature, short answers): judge each text once.
            report = self.scan(output)
            looped = bool(report.tail_loop or report.catastrophic)  # the verifier need not scan again
            judged = self._judged[key] = Judged(self.verdict(output, gold, kind, looped=looped), report)
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
        with current_progress().stage("mine: verify and scan", total=len(items), unit="outputs") as stage:
            if workers <= 1 or len(items) < 2 * workers:
                out: list[Judged] = []
                for it in items:
                    out.append(self.judge(*it))
                    stage.advance()
                return out
            n_chunks = workers * 4
            size = -(-len(items) // n_chunks)
            chunks = [items[i : i + size] for i in range(0, len(items), size)]
            out = []
            # spawn, not fork: the parent holds an open DuckDB connection and threads.
            with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
                for judged, verify_s, scan_s, stats in pool.map(_judge_chunk, chunks):
                    out.extend(judged)
                    stage.advance(len(judged))
                    self.verify_s += verify_s
                    self.scan_s += scan_s
                    self.verifier.stats.update(stats)
            return out


# Below this many outputs one process is faster than starting workers (about a second each).
PARALLEL_MIN = 20_000


def _judge_chunk(items):
    """Worker side of OutputJudge.judge_all: (judged items, verifier seconds, scanner seconds, the
    verifier's counts)."""
    judge = OutputJudge()
    return [judge.judge(*it) for it in items], judge.verify_s, judge.scan_s, judge.verifier.stats


def readings_json(verdict: Verdict) -> str | None:
    """Each verifier's reading as JSON where there are two (where they disagree, both are kept)."""
    if len(verdict.readings) < 2:
        return None
    return json.dumps([r.as_dict() for r in verdict.readings], ensure_ascii=False, sort_keys=True)


def record_judgments(store, judged: dict[str, Judged]) -> int:
    """Write verdicts and loop flags back to `generations` (ingest leaves them NULL). Returns rows updated."""
    return record_verdicts(
        store,
        [
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
        ],
    )


def write_judged_pairs(
    store,
    result: MineResult,
    judge: OutputJudge,
    judged: dict[str, Judged],
    pairs: list[Pair],
    holdout: HoldoutFilter,
    *,
    judge_wall_s: float,
) -> MineResult:
    """One transaction: the verdicts and loop flags onto `generations`, then the mined pairs; the seconds
    spent judging and writing go to result.timings."""
    t0 = time.perf_counter()
    with store.transaction():
        record_judgments(store, judged)
        write_pairs(store, result, pairs, holdout)
    result.timings = {
        "verify_s": judge.verify_s,
        "scan_s": judge.scan_s,
        "judge_wall_s": judge_wall_s,
        "write_s": time.perf_counter() - t0,
    }
    return result
