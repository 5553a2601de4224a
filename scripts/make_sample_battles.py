"""Write pairstore/sample_data/battles.jsonl: INVENTED sample battles for the demo and tests.

    python scripts/make_sample_battles.py

Every battle here is made up for this project (no real user data, no benchmark
text). Deterministic: the same script writes the same bytes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OUT = Path(__file__).resolve().parent.parent / "pairstore" / "sample_data" / "battles.jsonl"

# (category, question template, good answer template, weak answer template); {a} {b} fill numbers.
TOPICS = [
    (
        "math",
        "What is {a} times {b}? Show the work briefly.",
        "{a} × {b} = {p}.\n\nFinal answer: {p}",
        "Let me compute {a} times {b} digit by digit, the way {name} does it on a {thing}... I believe it is "
        "{w}.",
    ),
    (
        "math",
        "A shop sells pencils at {a} cents each. How much do {b} pencils cost, in cents?",
        "Each pencil costs {a} cents, so {name}'s {b} pencils cost {a} × {b} = {p} cents.\n\n"
        "Final answer: {p}",
        "{b} pencils at {a} cents is {w} cents, about the price of a {thing}. I hope it is correct, {name}.",
    ),
    (
        "reasoning",
        "If every glorp is a snib and I have {a} glorps, do I have at least {a} snibs?",
        "Yes. Each of the {a} glorps is a snib, so {name}'s {thing} holds at least {a} snibs.",
        "Not necessarily; snibs and glorps are unrelated, like {name} and a {thing}, so we cannot say.",
    ),
    (
        "coding",
        "Write a Python one-liner that sums the numbers from 1 to {a}.",
        "```python\nprint(sum(range(1, {a} + 1)))\n```\nThis prints {s}, {name}.",
        "```python\nprint(sum(range({a})))\n```\nThis prints the sum, {name}; paste it into your {thing}.",
    ),
    (
        "writing",
        "Give me a two-line slogan for a bakery called Crumb {a}.",
        "Crumb {a}: warm from the oven,\nbaked for {name} and the people you're lovin'.",
        "Bakery bakery bread bread. Crumb {a} is a bakery that bakes bread for {name} and the {thing}.",
    ),
    (
        "chat",
        "I have {a} minutes before a meeting. What is a quick way to calm down?",
        "Try box breathing: in for 4, hold 4, out 4, hold 4, for {a} rounds if you can. Then note one thing "
        "you want to say first, as {name} would.",
        "Meetings are stressful. Everyone gets nervous, {name} too. You should relax and look at a {thing}.",
    ),
    (
        "format",
        "Count the letter r in the word 'strawberry{a}'. Answer with just the number.",
        "3",
        "{name}, the word strawberry{a} has the letter r, the letter r, the letter r, the letter r...",
    ),
    (
        "format",
        "What is the digit sum of {p}? Reply with one number.",
        "{ds}",
        "{name}, the digit sum of {p} is the sum of the digits of {p}, which is the sum of the digits...",
    ),
    (
        "knowledge",
        "My {a}-year-old asks: what is the process by which plants turn light into chemical energy? "
        "One word.",
        "Photosynthesis.",
        "Respiration.",
    ),
    (
        "math",
        "Simplify the fraction {a}/{c}.",
        "gcd({a}, {c}) = {g}, so {a}/{c} = {sa}/{sc}.\n\nFinal answer: {sa}/{sc}",
        "{a}/{c} is already simplest.",
    ),
]
# Invented names and things that make each battle's answers its own: a held-out battle's answer must
# not stand, word for word, in another battle (the gate reads every answer).
NAMES = """Ada Bram Cora Dov Edda Finn Gita Hugo Ines Jory Kaia Lev Mira Nils Oona Pim Quill Rhea Soren
Tova Ugo Vera Wim Xena Yael Zeno Alba Basil Clio Dario Elin Fabio Greta Hal Ilse Joost Kira Luca Maren
Noor""".split()
THINGS = """teapot lantern bicycle notebook compass kettle violin umbrella hammock telescope mitten
sailboat typewriter cactus accordion skateboard harmonica lighthouse snowglobe wheelbarrow backpack
metronome paperweight birdhouse hourglass kayak trombone windmill saddle abacus""".split()
VOTES = ["win"] * 45 + ["loss"] * 43 + ["tie"] * 19 + ["both_bad"] * 13
OPPONENTS = ["rival-7b-chat", "open-helper-13b", "quickbot-v2"]


def rnd(i: int, salt: str, lo: int, hi: int) -> int:
    return lo + xxhash.xxh3_64_intdigest(f"sample:{i}:{salt}".encode()) % (hi - lo + 1)


def fill(t: str, i: int, variant: int = 0) -> str:
    """Template `t` filled for battle `i`; `variant` re-draws only the name and the thing (a prompt has
    neither, so it stays the same)."""
    from math import gcd

    a, b = rnd(i, "a", 3, 97), rnd(i, "b", 3, 97)
    c = a * rnd(i, "c", 2, 9)
    g = gcd(a, c)
    p = a * b
    return t.format(
        a=a,
        b=b,
        p=p,
        w=p + rnd(i, "w", 1, 9),
        s=a * (a + 1) // 2,
        c=c,
        g=g,
        sa=a // g,
        sc=c // g,
        ds=sum(int(d) for d in str(p)),
        name=NAMES[rnd(i, f"name:{variant}", 0, len(NAMES) - 1)],
        thing=THINGS[rnd(i, f"thing:{variant}", 0, len(THINGS) - 1)],
    )


def battle(i: int, variant: int = 0) -> dict:
    vote = VOTES[(i * 37) % len(VOTES)]
    cat, q, good, weak = TOPICS[i % len(TOPICS)]
    own, opp = (fill(good, i, variant), fill(weak, i, variant))
    if vote == "loss":
        own, opp = opp, own
    if vote == "both_bad":
        own, opp = fill(weak, i, variant), fill(weak, i + 1000, variant)
    rec = {
        "battle_id": f"sb{i:04d}",
        "vote": vote,
        "category": cat,
        "own_model": "brook-s2",
        "opponent_model": OPPONENTS[i % 3],
        "voted_at": f"2026-0{1 + i % 9}-{10 + i % 18}T1{i % 10}:00:00Z",
    }
    if i % 11 == 5:  # multi-turn battles: each side keeps its own history
        rec["turns"] = [
            {"user": fill(q, i), "own": own, "opponent": opp},
            {
                "user": fill(
                    "Thanks. Can you say that again in one short sentence for the {thing} notes of {name}?",
                    i,
                    variant,
                ),
                "own": "In short: " + own.splitlines()[0],
                "opponent": "Sure: " + opp.splitlines()[0],
            },
        ]
    else:
        rec.update(prompt=fill(q, i), own_answer=own, opponent_answer=opp)
    return rec


def texts(rec: dict) -> tuple[list[str], list[str]]:
    """(prompts, answers) of a battle record, every turn."""
    turns = rec.get("turns") or [
        {"user": rec["prompt"], "own": rec["own_answer"], "opponent": rec["opponent_answer"]}
    ]
    return [t["user"] for t in turns], [t[side] for t in turns for side in ("own", "opponent")]


def shared_answer(rows: list[dict]) -> int | None:
    """The index of a battle one of whose answers or follow-up turns (ANSWER_MIN_WORDS words or more, as
    the gate reads them) stands word for word in another battle's prompt or answers; None when each is its
    own. A first turn may repeat: the same question asked in two battles."""
    from pairstore.holdout.matching import ANSWER_MIN_WORDS
    from pairstore.holdout.normalize import word_text

    words = [[f" {word_text(t)} " for t in sum(texts(r), [])] for r in rows]
    for i, rec in enumerate(rows):
        prompts, answers = texts(rec)
        for text in prompts[1:] + answers:
            needle = f" {word_text(text)} "
            if len(needle.split()) < ANSWER_MIN_WORDS:
                continue
            for j, other in enumerate(words):
                if j != i and any(needle in t for t in other):
                    return max(i, j)
    return None


def unique_battles(n: int) -> list[dict]:
    """n battles whose answers are each their own: a battle that shares one is re-drawn (another name and
    thing, same prompt and vote) until none does. Deterministic."""
    variants = [0] * n
    rows = [battle(i) for i in range(n)]
    while (i := shared_answer(rows)) is not None:
        variants[i] += 1
        if variants[i] > 100:
            raise SystemExit(f"battle {i}: no variant with answers of its own")
        rows[i] = battle(i, variants[i])
    return rows


def main() -> None:
    rows = unique_battles(120)
    # One opponent answer that names its maker: the battle miner must never train it as chosen.
    rows[7].update(
        vote="loss", opponent_answer="As an AI developed by OpenAI, I can say: " + rows[7]["opponent_answer"]
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(rows)} battles to {OUT}")


if __name__ == "__main__":
    main()
