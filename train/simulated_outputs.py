"""Simulated model outputs for the demo's GSM8K/MATH problems: an invented "model" whose answers are
right, wrong, looped or hedged with fixed, seeded rates.

    records = simulate_outputs(store, model="so7a", samples=4, seed=12076)

A real run samples a checkpoint (`pairstore train sample`), as the demo does on its training tasks;
the demo's tiny character-level model cannot read word problems, so self-repair mining is fed these
instead. They are labeled as simulated
(`decoding.simulated = true`) and written through the ordinary generations ingest. The
rates echo the model card's failure modes: wrong arithmetic, degenerate repetition on
format-constrained requests, hedging tails.
"""

from __future__ import annotations

import re

from pairstore.keys import seeded_rank

# Outcome shares (per mille) for problem samples.
PROBLEM_OUTCOMES = (("correct", 520), ("wrong", 300), ("looped", 90), ("hedged", 90))


def _pick(outcomes, seed: int, *key) -> str:
    r = seeded_rank(seed, *map(str, key)) % 1000
    for name, share in outcomes:
        if r < share:
            return name
        r -= share
    return outcomes[-1][0]


def _wrong(gold: str) -> str:
    """A plausible wrong answer: an integer off by a little, else a changed last digit."""
    g = gold.replace(",", "").strip()
    if re.fullmatch(r"-?\d+", g):
        return str(int(g) + (1 if int(g) % 2 else -1) * 3)
    m = re.search(r"\d(?!.*\d)", gold)
    if m:
        d = str((int(m.group()) + 1) % 10)
        return gold[: m.start()] + d + gold[m.end() :]
    return gold + "0"


def _loop(phrase: str, times: int = 60) -> str:
    return "Let me work through this carefully. " + " ".join([phrase] * times)


def _problem_answer(dataset: str, solution: str, answer: str) -> str:
    if dataset == "gsm8k":
        body = re.sub(r"<<[^>]*>>", "", solution.rsplit("####", 1)[0]).strip()
        return f"{body}\nFinal answer: {answer}"
    return f"{solution.strip()}\nThe answer is ${answer}$."


def simulate_outputs(store, *, model: str, samples: int = 4, seed: int = 0) -> list[dict]:
    """Generation records (for `ingest_generations`) on every problem, K samples each."""
    records = []
    for pid, dataset, question, solution, gold in store.con.execute(
        "SELECT problem_id, dataset, question, solution, gold FROM problems ORDER BY problem_id"
    ).fetchall():
        for k in range(samples):
            outcome = _pick(PROBLEM_OUTCOMES, seed, pid, k)
            if outcome == "looped":
                text = _loop(f"so the total is {question.split()[0]} and then")
            else:
                ans = gold if outcome in ("correct", "hedged") else _wrong(gold)
                text = _problem_answer(dataset, solution, ans)
                if outcome == "hedged":
                    text += "\nI hope it is correct."
            records.append(
                {
                    "item_kind": "problem",
                    "item_id": pid,
                    "output": text,
                    "sample_index": k,
                    "temperature": 0.8,
                    "seed": seed,
                    "decoding": {"simulated": True},
                }
            )
    return records
