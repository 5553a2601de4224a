"""Blind pairwise judging of two models' stored answers to the members of a holdout set, both orders.

    judge_set(store, "judge34", "sm11a", "so7a", ask=OpenAIChat("qwen", url).complete, judge="qwen")
    judge_set(store, "judge34", "sm11a", "so7a")          # the offline default: the rule judge

The judge sees the user turns and the two answers labelled A and B, never the model names, and is asked
twice, the second time with the answers swapped, so a judge that prefers a position shows it. Each order
is one `judgments` row (model_a = the model shown as A), with the judge's name and the SHA-256 of the
prompt template. A verdict the judge's text does not state in the asked form is `unknown`: counted, never
stored. The tally reads an item's two verdicts together (the same model preferred in both orders, or in
one with a tie in the other, wins it; opposite preferences are a tie) and counts a win double where the
loser's answer has a heavy flaw (fabrication, hallucinated output, degenerate repetition, broken
placeholder), as the documented model's blind judging did.

The rule judge (no model needed): an empty answer or one the repetition scanner flags has a heavy flaw
(degenerate repetition); a flawed answer loses to a clean one, anything else is a tie.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field

from audits.loops import scan
from pairstore.errors import BadInput, NotFound
from pairstore.ingest.judgments import HEAVY_FLAWS, add_judgment_records
from pairstore.progress import current as current_progress

RULE_JUDGE = "rule judge (loops and empty answers are heavy flaws)"

JUDGE_SYSTEM = (
    "You are an impartial judge comparing two AI assistants' answers to the same user request. "
    "You do not know which assistants wrote them. Judge correctness first, then helpfulness; ignore "
    "length and order of presentation."
)
JUDGE_TEMPLATE = """[User request]
{question}

[Answer A]
{answer_a}

[Answer B]
{answer_b}

Heavy flaws: fabrication (invented facts or citations), hallucinated_output (claimed results of code or
tools that were not run), degenerate_repetition (text looping on itself), broken_placeholder (template
placeholders or unfilled answer slots left in the text).

Reply with one JSON object and nothing else:
{{"winner": "A" | "B" | "tie", "flaws_a": [heavy flaws in A], "flaws_b": [heavy flaws in B]}}"""

PROMPT_HASH = hashlib.sha256((JUDGE_SYSTEM + "\x1e" + JUDGE_TEMPLATE).encode("utf-8")).hexdigest()


@dataclass
class Verdict:
    winner: str  # a, b or tie (positions as shown)
    flaws_a: list[str]
    flaws_b: list[str]


@dataclass
class JudgeResult:
    set_name: str
    model_a: str
    model_b: str
    judge: str
    items: int = 0
    asked: int = 0
    stored: int = 0
    unknown: int = 0
    skipped: Counter = field(default_factory=Counter)
    tally: dict = field(default_factory=dict)  # model_a wins, model_b wins, ties, weighted

    def as_dict(self) -> dict:
        return {**self.__dict__, "skipped": dict(self.skipped)}


def judge_messages(question: str, answer_a: str, answer_b: str) -> list[dict]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": JUDGE_TEMPLATE.format(question=question, answer_a=answer_a, answer_b=answer_b),
        },
    ]


_OBJECT = re.compile(r"\{[^{}]*\}", re.S)


def parse_verdict(text: str) -> Verdict | None:
    """The first JSON object in the judge's reply that states a winner A, B or tie; None (unknown) else."""
    for m in _OBJECT.finditer(text or ""):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        winner = str(obj.get("winner", "")).strip().lower()
        if winner not in ("a", "b", "tie"):
            continue
        flaws = {}
        for side in ("a", "b"):
            got = obj.get(f"flaws_{side}") or []
            if not isinstance(got, list):
                return None
            flaws[side] = sorted({f for f in got if f in HEAVY_FLAWS})
        return Verdict(winner, flaws["a"], flaws["b"])
    return None


def rule_verdict(answer_a: str, answer_b: str) -> Verdict:
    def flaws(answer):
        return ["degenerate_repetition"] if not answer.strip() or scan(answer).flagged else []

    fa, fb = flaws(answer_a), flaws(answer_b)
    winner = "tie" if bool(fa) == bool(fb) else ("b" if fa else "a")
    return Verdict(winner, fa, fb)


def _members(store, set_name: str) -> list[tuple[str, list[dict]]]:
    if not store.scalar("SELECT count(*) FROM holdout_sets WHERE set_name = ?", [set_name]):
        raise NotFound(f"no holdout set {set_name!r}")
    return [
        (bid, [dict(m) for m in prompt])
        for bid, prompt in store.con.execute(
            "SELECT b.battle_id, b.prompt FROM holdout h JOIN battles b ON b.battle_id = h.item_id "
            "WHERE h.set_name = ? AND h.item_kind = 'battle' AND h.removed_at IS NULL ORDER BY b.battle_id",
            [set_name],
        ).fetchall()
    ]


def _answer(store, model: str, battle_id: str) -> str | None:
    row = store.one(
        "SELECT output FROM generations WHERE model = ? AND item_id = ? "
        "ORDER BY sample_index, created_at LIMIT 1",
        [model, battle_id],
    )
    return None if row is None else row[0]


def combine(first: Verdict, second: Verdict) -> tuple[str, bool]:
    """An item's outcome from its two orders (first: model_a shown as A; second: model_b shown as A), in
    terms of the models ('a' = model_a), and whether the loser had a heavy flaw in either order."""
    as_models = [first.winner, {"a": "b", "b": "a"}.get(second.winner, "tie")]
    decisive = {w for w in as_models if w != "tie"}
    outcome = decisive.pop() if len(decisive) == 1 else "tie"
    if outcome == "tie":
        return "tie", False
    loser_flawed = bool(first.flaws_b if outcome == "a" else first.flaws_a) or bool(
        second.flaws_a if outcome == "a" else second.flaws_b
    )
    return outcome, loser_flawed


def judge_set(
    store, set_name: str, model_a: str, model_b: str, *, ask=None, judge: str | None = None
) -> JudgeResult:
    """Judge every active battle member of `set_name` both models answered; `ask(messages) -> text` is the
    judge model (None: the rule judge)."""
    if model_a == model_b:
        raise BadInput("--a and --b are the same model", field="b")
    name = judge or (RULE_JUDGE if ask is None else None)
    if not name:
        raise BadInput("a model judge needs a name", field="judge")
    result = JudgeResult(set_name, model_a, model_b, name)
    records: list[dict] = []
    outcomes: Counter[str] = Counter()
    members = _members(store, set_name)
    for battle_id, prompt in current_progress().track(members, "judge: held-out battles", unit="battles"):
        found = {m: _answer(store, m, battle_id) for m in (model_a, model_b)}
        answers = {m: a for m, a in found.items() if a is not None}
        if len(answers) < 2:
            result.skipped["no stored answer"] += 1
            continue
        result.items += 1
        question = "\n\n".join(m["content"] for m in prompt if m["role"] == "user")
        verdicts: list[Verdict | None] = []
        for shown_a, shown_b in ((model_a, model_b), (model_b, model_a)):
            verdict: Verdict | None
            if ask is None:
                verdict = rule_verdict(answers[shown_a], answers[shown_b])
            else:
                result.asked += 1
                verdict = parse_verdict(ask(judge_messages(question, answers[shown_a], answers[shown_b])))
            verdicts.append(verdict)
            if verdict is None:
                result.unknown += 1
                continue
            rec = {
                "battle_id": battle_id,
                "item_kind": "battle",
                "model_a": shown_a,
                "model_b": shown_b,
                "winner": verdict.winner,
                "heavy_flaw_a": bool(verdict.flaws_a),
                "heavy_flaw_b": bool(verdict.flaws_b),
                "flaws_a": verdict.flaws_a,
                "flaws_b": verdict.flaws_b,
                "judge": name,
                "origin": "judge",
            }
            if ask is not None:
                rec["prompt_hash"] = PROMPT_HASH
            records.append(rec)
        first, second = verdicts
        if first is not None and second is not None:
            outcome, heavy = combine(first, second)
            outcomes[outcome] += 1
            if outcome != "tie":
                outcomes[f"weighted_{outcome}"] += 2 if heavy else 1
        else:
            outcomes["unknown"] += 1
    if records:
        got = add_judgment_records(store, records, source=f"pairstore judge {name}")
        result.stored = got.added
        if got.skipped:
            result.skipped.update(got.skipped)
    result.tally = {
        f"{model_a} wins": outcomes["a"],
        f"{model_b} wins": outcomes["b"],
        "ties": outcomes["tie"],
        "unknown": outcomes["unknown"],
        f"{model_a} weighted": outcomes["weighted_a"],
        f"{model_b} weighted": outcomes["weighted_b"],
    }
    return result
