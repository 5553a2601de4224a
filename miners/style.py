"""Style pairs: the same answer without its hedging tail, or with its final-answer line fixed.

    pairstore mine style [--model M]              # from generations
    pairstore mine style --from-pairs [--source S] # from the chosen side of stored pairs
    from miners.style import mine_style; mine_style(store, model="so7a")

An answer has a style fault when
- it ends in a hedging tail ("I hope it is correct.", "I hope this helps!",
  "Let me know if you have any other questions." and kin:
  miners.patterns.HEDGING_TAIL_PATTERNS), or
- its prompt asks for a final-answer line (miners.patterns.ASKS_FOR_FINAL_ANSWER)
  and its last line is a near miss ("**Final Answer:** 72", "The final answer
  is $\\boxed{72}$.") or missing while an answer can be read elsewhere
  (\\boxed{}, "The answer is", "#### 72": miners.verify.extract_answer).
The pair: chosen = the fixed answer (tail removed, line rewritten to
`Final answer: X` or appended), rejected = the original; source 'style';
the prompt is the original's, without a system message.

From generations, an answer is only fixed when it is otherwise good: on a
problem or task with a gold answer it must verify correct, and it must not be
flagged by the scanner. Generations on evaluation items are never mined.

Dropped, by reason: 'no style fault', 'holdout', 'wrong answer', 'looped',
'final answer missing' (asked for, and no answer to put in it), plus
add_pairs' 'empty side', 'identical sides', 'duplicate'. Origins: ('generation',
gen_id, rule) or ('pair', pair_id, rule), the rule naming each fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from miners.judge import OutputJudge
from miners.patterns import (
    asks_for_final_answer,
    fix_final_answer_line,
    has_final_answer_line,
    strip_hedging_tail,
)
from miners.registry import MineResult, new_result, option, register, without_system, write_pairs
from miners.verify import extract_answer
from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.keys import user_turns
from pairstore.progress import current as current_progress
from pairstore.tables.pairs import Origin, Pair


def style_fix(text: str, prompt, extract=None) -> tuple[str | None, list[str], str | None]:
    """(fixed text or None, the fixes applied, drop reason or None) for one answer to `prompt`."""
    fixed, tail = strip_hedging_tail(text)
    fixes = [f"hedging tail removed: {tail!r}"] if tail else []
    if asks_for_final_answer("\n".join(user_turns(prompt))):
        line_fix = fix_final_answer_line(fixed, extract)
        if line_fix is not None:
            fixed, rule = line_fix
            fixes.append(rule)
        elif not has_final_answer_line(fixed):
            return None, fixes, "final answer missing"
    if not fixes:
        return None, fixes, "no style fault"
    return fixed, fixes, None


@dataclass(frozen=True, kw_only=True)
class StyleOptions:
    model: str | None = option(None, help="Only this model's generations (default: all models).")
    from_pairs: bool = option(False, help="Fix the chosen side of stored pairs instead of generations.")
    source: str | None = option(None, help="With --from-pairs: only pairs of this source.")


@register("style", version="1", options=StyleOptions, sources=("style",))
def mine_style(store, options: StyleOptions) -> MineResult:
    """Hedging tails removed and final-answer lines fixed: chosen = fixed answer, rejected = original."""
    model, from_pairs, source = options.model, options.from_pairs, options.source
    if source is not None and not from_pairs:
        raise BadInput("--source selects stored pairs: use it with --from-pairs", field="source")
    result = new_result(mine_style)
    holdout = HoldoutFilter.load(store)
    pairs = (
        _from_pairs(store, result, source) if from_pairs else _from_generations(store, result, model, holdout)
    )
    return write_pairs(store, result, pairs, holdout)


def _from_pairs(store, result: MineResult, source: str | None) -> list[Pair]:

    out = []
    rows = store.rows(
        """SELECT pair_id, prompt, chosen, family FROM pairs
                           WHERE source <> 'style' AND (? IS NULL OR source = ?) ORDER BY pair_id""",
        [source, source],
    )
    for p in current_progress().track(rows, "mine style: pairs", unit="pairs"):
        result.stats["pairs"] += 1
        prompt = without_system([dict(m) for m in p["prompt"]])
        fixed, fixes, reason = style_fix(p["chosen"], prompt, lambda t: extract_answer(t, "math"))
        if reason:
            result.dropped[reason] += 1
            continue
        assert fixed is not None  # style_fix gives a fixed text or a reason
        rule = "; ".join(fixes) + " → fixed chosen preferred to the original"
        out.append(
            Pair(
                prompt=prompt,
                chosen=fixed,
                rejected=p["chosen"],
                source="style",
                family=p["family"],
                origins=[Origin("pair", p["pair_id"], rule)],
            )
        )
    return out


def _from_generations(store, result: MineResult, model: str | None, holdout: HoldoutFilter) -> list[Pair]:
    rows = store.rows(
        """
        SELECT g.gen_id, g.item_kind, g.item_id, g.prompt, g.output,
               coalesce(p.gold, t.gold) AS gold, coalesce(p.dataset, CASE WHEN t.task_id IS NOT NULL
                   THEN 'task' END) AS kind, t.family, t.task_key
        FROM generations g
        LEFT JOIN problems p ON g.item_kind = 'problem' AND g.item_id = p.problem_id
        LEFT JOIN tasks t ON g.item_kind = 'task' AND g.item_id = t.task_id
        WHERE (? IS NULL OR g.model = ?)
        ORDER BY g.gen_id""",
        [model, model],
    )
    judge = OutputJudge()
    out = []
    for g in current_progress().track(rows, "mine style: generations", unit="outputs"):
        result.stats["generations"] += 1
        prompt = [dict(m) for m in g["prompt"]]
        if g["item_kind"] == "eval_item" or holdout.holds(
            g["item_kind"], g["item_id"], prompt=prompt, task_key=g["task_key"]
        ):
            result.dropped["holdout"] += 1
            continue
        kind = g["kind"] or "math"
        fixed, fixes, reason = style_fix(g["output"], prompt, lambda t, k=kind, j=judge: j.extract(t, k))
        if reason:
            result.dropped[reason] += 1
            continue
        assert fixed is not None  # style_fix gives a fixed text or a reason
        if g["gold"] is not None:
            verdict = judge.verdict(g["output"], g["gold"], kind)
            if verdict.label == "wrong":
                result.dropped["wrong answer"] += 1
                continue
            if verdict.label == "unknown":  # a style fix is chosen only over an answer known correct
                result.dropped[f"unknown: {verdict.reason}"] += 1
                continue
        if judge.scan(g["output"]).flagged:
            result.dropped["looped"] += 1
            continue
        rule = "; ".join(fixes) + " → fixed answer preferred to the original"
        out.append(
            Pair(
                prompt=without_system(prompt),
                chosen=fixed,
                rejected=g["output"],
                source="style",
                family=g["family"],
                task_key=g["task_key"],
                origins=[Origin("generation", g["gen_id"], rule)],
            )
        )
    return out
