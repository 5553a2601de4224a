"""Self-repair pairs (GSM8K, MATH): a model's verified-correct samples against its wrong ones.

    pairstore mine self-repair --model so7a --dataset gsm8k --pairs-per-problem 2 --seed 1
    from miners.self_repair import mine_self_repair
    mine_self_repair(store, model="so7a", dataset="gsm8k", pairs_per_problem=2, seed=1)

Input: the model's generations on training problems (generations.item_kind =
'problem', item_id = problems.problem_id), usually several samples per
problem at a temperature. Each output's answer is read and compared with
the gold answer by miners.verify (kind 'gsm8k' or 'math'; the verdict cached
per distinct answer) and scanned by audits.loops.scan. The verdicts and loop
flags are written back to `generations`.

Per problem (samples with the same text count once; all their generation
ids become origins):
- chosen candidates: verified correct and not flagged by the scanner (a
  correct answer that loops is never chosen);
- rejected candidates: verified wrong (a definite verdict: a committed answer
  compared unequal, or an empty, looped or truncated output);
- `unknown` samples (the verifier cannot tell: no answer found, verifiers
  disagree, comparison undecided, ...) are never either side: each is dropped
  and counted as 'unknown: <reason>';
- with both: up to `pairs_per_problem` pairs (source 'self_repair'), picked in
  a seeded order (xxh3 of seed, problem, text) that spreads the picks over
  distinct wrong answers first, then distinct correct ones;
- with wrong answers but no usable correct one, and at least one definite
  verdict among the samples: the reference solution,
  rewritten into the model's answer style (miners.patterns:
  GSM8K calculator marks removed and `#### 72` -> `Final answer: 72`; MATH
  solution + `Final answer: <gold>`), is chosen against up to
  `pairs_per_problem` wrong answers (source 'gold_repair');
- the pair's prompt is the rejected sample's prompt without a system message; its family is the
  dataset ('gsm8k' or 'math').

The generations are read a batch of whole problems at a time (miners.batches: one query a batch, on
a cursor), judged, and their verdicts and pairs written before the next batch is read, all
in one transaction: the generations read do not grow memory; what the transaction writes does (the
pairs' keys, whose index DuckDB holds in memory, about 0.5 KB a pair, and the verdicts' UPDATE at its
end: docs/scale.md).

`workers`: processes for verifying and scanning (default 1; None: one per core, at most 4, from 20,000
outputs on). The result does not depend on it; more processes pay only on idle cores
(bench/results/mining.md). Worker processes are spawned, so a script that calls this with workers != 1 needs
the `if __name__ == "__main__":` guard.

Dropped, by reason (per problem unless said): 'holdout' (the problem is an
active holdout member or its match key is held out), 'no wrong answer',
'no correct answer' (only with gold_repair=False), 'every sample unknown' (no
pair at all, not even a gold repair), 'unknown: <reason>' (per generation),
plus add_pairs' 'empty side', 'identical sides', 'duplicate' (per pair).
`stats` counts problems, generations, correct, wrong, unknown and 'correct but
flagged'.
Origins: ('problem', problem_id, rule) and ('generation', gen_id, rule) for
each sample on either side.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from miners.batches import item_batches
from miners.judge import Judged, OutputJudge, mine_in_batches, unknown_reason
from miners.patterns import solution_in_answer_style
from miners.registry import WORKERS_HELP, MineResult, new_result, option, register, without_system
from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.keys import content_id, seeded_rank
from pairstore.tables.pairs import Origin, Pair

DATASETS = ("gsm8k", "math")


def spread_picks(n_chosen: int, n_rejected: int, k: int) -> list[tuple[int, int]]:
    """Up to k distinct (chosen index, rejected index) combinations, each new pick preferring the
    least-used rejected answer, then the least-used chosen one, then the lowest indices (the
    candidates come in seeded order)."""
    picks: list[tuple[int, int]] = []
    used_c: Counter[int] = Counter()
    used_r: Counter[int] = Counter()
    taken = set()
    for _ in range(min(k, n_chosen * n_rejected)):
        best = min(
            ((i, j) for i in range(n_chosen) for j in range(n_rejected) if (i, j) not in taken),
            key=lambda c: (used_r[c[1]], used_c[c[0]], c[0] + c[1], c[1], c[0]),
        )
        taken.add(best)
        used_c[best[0]] += 1
        used_r[best[1]] += 1
        picks.append(best)
    return picks


def _distinct(samples: list[dict], seed: int, problem_id: str) -> list[list[dict]]:
    """Samples grouped by identical output text, groups in seeded order."""
    by_text: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        by_text[s["output"]].append(s)
    return sorted(
        by_text.values(),
        key=lambda g: (seeded_rank(seed, problem_id, content_id(g[0]["output"])), g[0]["gen_id"]),
    )


@dataclass(frozen=True, kw_only=True)
class SelfRepairOptions:
    model: str = option(help="The model whose sampled generations are mined.")
    dataset: str = option(help="Problems of this dataset.", choices=DATASETS)
    pairs_per_problem: int = option(1, help="At most this many pairs per problem.", min=1)
    seed: int = option(0, help="Seed of the pair selection.", seed=True)
    gold_repair: bool = option(
        True, help="Do not use the reference solution where every sample is wrong.", flag="--no-gold-repair"
    )
    workers: int | None = option(1, help=WORKERS_HELP, min=1)


@register("self_repair", version="1", options=SelfRepairOptions, sources=("self_repair", "gold_repair"))
def mine_self_repair(store, options: SelfRepairOptions) -> MineResult:
    """Pairs of a model's verified-correct vs wrong samples on GSM8K/MATH; gold solution \
where all are wrong."""
    model, dataset, pairs_per_problem = options.model, options.dataset, options.pairs_per_problem
    workers = options.workers
    if dataset not in DATASETS:
        raise BadInput(f"unknown dataset {dataset!r} (expected gsm8k or math)", field="dataset")
    if not model:
        raise BadInput("a model name is required", field="model")
    if pairs_per_problem < 1:
        raise BadInput("pairs per problem must be at least 1", field="pairs_per_problem")
    result = new_result(mine_self_repair)
    holdout = HoldoutFilter.load(store)
    where = "g.item_kind = 'problem' AND g.model = ? AND p.dataset = ?"
    outputs = store.scalar(
        f"SELECT count(*) FROM generations g JOIN problems p ON g.item_id = p.problem_id WHERE {where}",
        [model, dataset],
    )
    # Streamed a batch of whole problems at a time, so the generations read do not grow memory.
    batches = item_batches(
        store,
        f"""
        SELECT g.gen_id, p.problem_id, g.sample_index, g.prompt, g.output, p.gold, p.solution,
               p.question, p.match_key AS problem_match_key
        FROM generations g JOIN problems p ON g.item_id = p.problem_id
        WHERE {where}""",
        [model, dataset],
        key="problem_id",
        order=("problem_id", "sample_index", "gen_id"),
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
        judging_stage="mine self_repair: verify and scan",
    )


def _mine_batch(
    rows: list[dict],
    result: MineResult,
    judge: OutputJudge,
    holdout: HoldoutFilter,
    options: SelfRepairOptions,
    workers: int,
    advance: Callable[[int], object],
) -> tuple[dict[str, Judged], list[Pair], float]:
    """The problems of one batch (every sample of each, in problem order): (the judged samples by gen_id,
    the pairs, the seconds spent judging)."""
    dataset, pairs_per_problem, seed = options.dataset, options.pairs_per_problem, options.seed
    by_problem: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_problem[r["problem_id"]].append(r)
    mined: dict[str, list[dict]] = {}
    for problem_id, samples in by_problem.items():
        result.stats["problems"] += 1
        first = samples[0]
        if holdout.holds(
            "problem", problem_id, prompt=first["question"], stored_match_key=first["problem_match_key"]
        ):
            result.dropped["holdout"] += 1
            advance(len(samples))
            continue
        mined[problem_id] = samples
    t_judge = time.perf_counter()
    todo = [s for samples in mined.values() for s in samples]
    judged = dict(
        zip(
            (s["gen_id"] for s in todo),
            judge.judge_all([(s["output"], s["gold"], dataset) for s in todo], workers, advance),
        )
    )
    t_judge = time.perf_counter() - t_judge
    pairs: list[Pair] = []
    for problem_id, samples in mined.items():
        first = samples[0]
        gold = first["gold"]
        good, bad = [], []
        for s in samples:
            result.stats["generations"] += 1
            j = judged[s["gen_id"]]
            s["answer"] = j.answer
            if j.correct:
                result.stats["correct"] += 1
                if j.flagged:
                    result.stats["correct but flagged"] += 1
                else:
                    good.append(s)
            elif j.wrong:
                result.stats["wrong"] += 1
                bad.append(s)
            else:  # unknown: never a label, on either side
                result.stats["unknown"] += 1
                result.dropped[unknown_reason(j)] += 1
        if not good and not bad and all(judged[s["gen_id"]].unknown for s in samples):
            result.dropped["every sample unknown"] += 1
            continue
        if not bad:
            result.dropped["no wrong answer"] += 1
            continue
        bad_groups = _distinct(bad, seed, problem_id)
        if good:
            good_groups = _distinct(good, seed, problem_id)
            for i, j in spread_picks(len(good_groups), len(bad_groups), pairs_per_problem):
                pairs.append(
                    _pair(
                        "self_repair",
                        dataset,
                        problem_id,
                        gold,
                        good_groups[i][0]["output"],
                        good_groups[i],
                        bad_groups[j],
                    )
                )
        elif options.gold_repair:
            chosen = solution_in_answer_style(dataset, first["solution"], gold)
            for group in bad_groups[:pairs_per_problem]:
                pairs.append(_pair("gold_repair", dataset, problem_id, gold, chosen, [], group))
        else:
            result.dropped["no correct answer"] += 1
    return judged, pairs, t_judge


def _pair(
    source: str,
    dataset: str,
    problem_id: str,
    gold: str,
    chosen: str,
    chosen_group: list[dict],
    rejected_group: list[dict],
) -> Pair:
    rejected = rejected_group[0]
    if source == "self_repair":
        problem_rule = "self_repair: verified-correct sample chosen, wrong sample rejected"
    else:
        problem_rule = "gold_repair: no usable correct sample; reference solution in answer style chosen"
    origins = [Origin("problem", problem_id, problem_rule)]
    origins += [
        Origin("generation", s["gen_id"], "verified correct, not looped → chosen") for s in chosen_group
    ]
    origins += [
        Origin("generation", s["gen_id"], f"answer {s['answer']!r} ≠ gold {gold!r} → rejected")
        for s in rejected_group
    ]
    return Pair(
        prompt=without_system([dict(m) for m in rejected["prompt"]]),
        chosen=chosen,
        rejected=rejected["output"],
        source=source,
        family=dataset,
        origins=origins,
    )
