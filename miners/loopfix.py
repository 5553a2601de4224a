"""Loop-fix pairs: a model's wrong or looping outputs on generated tasks against the task's canonical answer.

    pairstore mine loopfix --model so7a [--per-task K --seed S]
    from miners.loopfix import mine_loopfix; mine_loopfix(store, model="so7a")

Input: generations on generator tasks (generations.item_kind = 'task',
item_id = tasks.task_id). Each output is verified against tasks.gold
(miners.verify, kind 'task') and scanned (audits.loops.scan); the verdicts
and loop flags are written back to `generations`. An output verified wrong,
or verified correct but flagged by the scanner (a loop is what the pair
fixes), is the rejected side; an `unknown` verdict is no label, looping or
not: dropped and counted as 'unknown: <reason>'; the chosen side is the task's canonical answer
(tasks.chosen: short, correct, ending in a final-answer line). Pair source
'loopfix', family = the task family, task_key set. The prompt is the
generation's prompt without a system message.

The generations are read a batch of whole tasks at a time (miners.batches: one query a batch,
on a cursor), judged, and their verdicts and pairs written before the next batch is read, all
in one transaction: the generations read do not grow memory; what the transaction writes does (the
pairs' keys, whose index DuckDB holds in memory, about 0.5 KB a pair, and the verdicts' UPDATE at its
end: docs/scale.md).

`workers`: processes for verifying and scanning (default 1; None: one per core, at most 4, from 20,000
outputs on). The result does not depend on it; more processes pay only on idle cores
(bench/results/mining.md). Worker processes are spawned, so a script that calls this with workers != 1 needs
the `if __name__ == "__main__":` guard.

Dropped, by reason (per generation): 'holdout' (the task's key is held out —
pairstore.holdout.sets.held_task_keys, evaluation items included — or the task id
or match key is), 'correct' (right and clean: nothing to fix), 'unknown:
<reason>' (the verifier cannot tell), 'per-task
limit' (more bad outputs than `per_task`; the kept ones are picked in seeded
order), plus add_pairs' 'empty side', 'identical sides', 'duplicate'.
`stats` counts 'wrong' and 'looped' separately (an output both wrong and
looped counts in both). Origins: ('generation', gen_id, rule) and ('task',
task_id, "canonical chosen answer").
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from miners.batches import item_batches
from miners.judge import Judged, OutputJudge, mine_in_batches, unknown_reason
from miners.registry import WORKERS_HELP, MineResult, new_result, option, register, without_system
from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.keys import seeded_rank
from pairstore.tables.pairs import Origin, Pair


def loopfix_rule(judged, gold: str) -> str:
    parts = []
    if judged.wrong:
        parts.append(f"wrong: answer {judged.answer!r} ≠ gold {gold!r}")
    if judged.flagged:
        r = judged.report
        unit = getattr(r, "max_repeat_unit", "") or ""
        parts.append(f"looped: max_repeat {r.max_repeat}" + (f" × {unit[:40]!r}" if unit else ""))
    return "; ".join(parts) + " → task's canonical answer chosen"


@dataclass(frozen=True, kw_only=True)
class LoopfixOptions:
    model: str | None = option(None, help="The model whose generations on generated tasks are mined.")
    per_task: int | None = option(
        None, help="At most this many pairs per task (seeded pick; default: all).", min=1
    )
    seed: int = option(0, help="Seed of the per-task pick.", seed=True)
    workers: int | None = option(1, help=WORKERS_HELP, min=1)


@register("loopfix", version="1", options=LoopfixOptions, sources=("loopfix",))
def mine_loopfix(store, options: LoopfixOptions) -> MineResult:
    """Wrong or looped outputs on generated tasks rejected against the task's canonical answer."""
    model, per_task, workers = options.model, options.per_task, options.workers
    if per_task is not None and per_task < 1:
        raise BadInput("per task must be at least 1", field="per_task")
    result = new_result(mine_loopfix)
    holdout = HoldoutFilter.load(store)
    where = "g.item_kind = 'task' AND (? IS NULL OR g.model = ?)"
    outputs = store.scalar(
        f"SELECT count(*) FROM generations g JOIN tasks t ON g.item_id = t.task_id WHERE {where}",
        [model, model],
    )
    # Streamed a batch of whole tasks at a time, so the generations read do not grow memory.
    batches = item_batches(
        store,
        f"""
        SELECT g.gen_id, g.model, g.sample_index, g.prompt, g.output, t.task_id, t.family, t.task_key,
               t.gold, t.chosen, t.match_key AS task_match_key
        FROM generations g JOIN tasks t ON g.item_id = t.task_id
        WHERE {where}""",
        [model, model],
        key="task_id",
        order=("task_id", "model", "sample_index", "gen_id"),
    )
    return mine_in_batches(
        store,
        result,
        holdout,
        batches,
        outputs=outputs,
        workers=workers,
        mine_batch=lambda rows, judge, n, advance: _mine_batch(
            rows, result, judge, holdout, options, n, advance
        ),
        judging_stage="mine: verify and scan",
        reading_stage="mine loopfix: generations",
    )


def _mine_batch(
    rows: list[dict],
    result: MineResult,
    judge: OutputJudge,
    holdout: HoldoutFilter,
    options: LoopfixOptions,
    workers: int,
    advance: Callable[[int], object],
) -> tuple[dict[str, Judged], list[Pair], float]:
    """The tasks of one batch (every generation of each, in task order): (the judged generations by
    gen_id, the pairs, the seconds spent judging)."""
    per_task, seed = options.per_task, options.seed
    todo = []
    for r in rows:
        result.stats["generations"] += 1
        if holdout.holds("task", r["task_id"], stored_match_key=r["task_match_key"], task_key=r["task_key"]):
            result.dropped["holdout"] += 1
            advance(1)
            continue
        todo.append(r)
    t_judge = time.perf_counter()
    judged = dict(
        zip(
            (r["gen_id"] for r in todo),
            judge.judge_all([(r["output"], r["gold"], "task") for r in todo], workers, advance),
        )
    )
    t_judge = time.perf_counter() - t_judge
    bad_by_task: dict[str, list[dict]] = defaultdict(list)
    for r in todo:
        j = judged[r["gen_id"]]
        if j.correct and not j.flagged:
            result.dropped["correct"] += 1
            continue
        if j.unknown:
            result.dropped[unknown_reason(j)] += 1
            continue
        result.stats["wrong"] += int(j.wrong)
        result.stats["looped"] += int(j.flagged)
        r["judged"] = j
        bad_by_task[r["task_id"]].append(r)
    pairs = []
    for task_id, bad in bad_by_task.items():
        if per_task is not None and len(bad) > per_task:
            bad = sorted(bad, key=lambda r: (seeded_rank(seed, task_id, r["gen_id"]), r["gen_id"]))
            result.dropped["per-task limit"] += len(bad) - per_task
            bad = bad[:per_task]
        for r in bad:
            pairs.append(
                Pair(
                    prompt=without_system([dict(m) for m in r["prompt"]]),
                    chosen=r["chosen"],
                    rejected=r["output"],
                    source="loopfix",
                    family=r["family"],
                    task_key=r["task_key"],
                    origins=[
                        Origin("generation", r["gen_id"], loopfix_rule(r["judged"], r["gold"])),
                        Origin("task", task_id, "canonical chosen answer"),
                    ],
                )
            )
    return judged, pairs, t_judge
