"""The gate, `audit leaks` and `audit decontam` name the same members on every file: random mixtures of
held-out texts (every text of a member, in every place of a row, disguised) and ordinary rows, built
from seeds. Gate-refused member ids == `audit leaks --json` member ids == the members placed; for
benchmark items (13 words or more, what a 13-gram can find) the gate's ids == `audit decontam`'s."""

from __future__ import annotations

import json
import random
import re
from importlib import resources

import pytest

from tests.holdout.test_gate_every_text import MEMBERS, TEXT_LEAKS, audited, dpo, held_out, leak_round

BENCHMARK = {
    "g1": "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
    "for her friends every day with four.",
    "g2": "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total does "
    "it take to make seven robes for the guild?",
}
# Disguises of any text, prompt or answer (the prompt-only templates of TEXT_LEAKS are drawn for prompts).
ANY_TEXT = {
    "as is": lambda t: t,
    "upper case": str.upper,
    "HTML entities between every word": TEXT_LEAKS["HTML entities between every word"],
    "markdown bold": TEXT_LEAKS["markdown bold glued to a number"],
    "greeting and thanks around it": TEXT_LEAKS["greeting and thanks around it"],
    "trailing spaces and CRLF": lambda t: t.replace("\n", "\r\n") + "   \r\n",
}
ORDINARY_PROMPT = "Plan my afternoon in the city, please."


def ordinary_rows() -> list[dict]:
    """Ordinary rows: the shipped sample battles (invented; none is a member here), prompt and answers."""
    path = resources.files("pairstore") / "sample_data" / "battles.jsonl"
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        b = json.loads(line)
        if "prompt" in b and b["own_answer"] != b["opponent_answer"]:
            rows.append(dpo(b["prompt"], chosen=b["own_answer"], rejected=b["opponent_answer"]))
    return rows


def placed(rng: random.Random, member: tuple[str, str, str]) -> dict:
    """One row holding one text of the member, in one place of the row, disguised."""
    q, a, o = member
    answers = [t for t in (a, o) if len(t.split()) >= 8]
    place = rng.choice(["prompt", "chosen", "rejected", "completion", "inside"] if answers else ["prompt"])
    if place == "prompt":
        disguise = rng.choice(sorted(TEXT_LEAKS) + sorted(ANY_TEXT))
        return dpo({**TEXT_LEAKS, **ANY_TEXT}[disguise](q))
    text = ANY_TEXT[rng.choice(sorted(ANY_TEXT))](rng.choice(answers))
    if place == "chosen":
        return dpo(ORDINARY_PROMPT, chosen=text)
    if place == "rejected":
        return dpo(ORDINARY_PROMPT, rejected=text)
    if place == "completion":
        return {"prompt": ORDINARY_PROMPT, "completion": text}
    return dpo("Give me a practice question.", chosen=f"Practice question: {q} Answer: it depends.")


def mixture(seed: int) -> tuple[list[dict], set[str], set[str]]:
    """(rows, members placed, benchmark items placed): some of each among 40 ordinary rows."""
    rng = random.Random(seed)
    members = set(rng.sample(sorted(MEMBERS), rng.randint(1, len(MEMBERS))))
    items = set(rng.sample(sorted(BENCHMARK), rng.randint(0, len(BENCHMARK))))
    rows = rng.sample(ordinary_rows(), 40)
    for m in sorted(members):
        rows += [placed(rng, MEMBERS[m]) for _ in range(rng.randint(1, 3))]
    for i in sorted(items):
        rows.append(rng.choice([dpo(BENCHMARK[i]), dpo(ORDINARY_PROMPT, chosen=f"Try this: {BENCHMARK[i]}")]))
    rng.shuffle(rows)
    return rows, members, items


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_gate_audit_leaks_and_decontam_name_the_same_members(
    seed, run_cli, tmp_path, write_jsonl, dpo_recipe
):
    held_out(run_cli, tmp_path, write_jsonl)
    bench = write_jsonl(
        tmp_path / "bench.jsonl", [{"id": k, "question": v, "answer": "#### 1"} for k, v in BENCHMARK.items()]
    )
    assert run_cli("audit", "decontam", "--benchmark", "g", "--path", bench, "--register").exit_code == 0
    rows, members, items = mixture(seed)
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, rows)
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "out")
    assert res.exit_code == 3, res.output
    assert not (tmp_path / "out").exists()
    named = re.search(r"held-out items: (.*)", res.output).group(1).split(", ")
    gate = {m.split("/", 1)[1] for m in named if m.startswith("judge/")}
    gate_items = {m.split("/", 1)[1] for m in named if m.startswith("benchmark:g/")}
    assert set(named) == {f"judge/{m}" for m in gate} | {f"benchmark:g/{i}" for i in gate_items}
    assert gate == audited(run_cli, path) == members
    res = run_cli("audit", "decontam", "--benchmark", "g", "--path", bench, "--all-pairs", "--json")
    assert res.exit_code == 0, res.output
    assert gate_items == {r["item_id"] for r in json.loads(res.output)["rows"]} == items
