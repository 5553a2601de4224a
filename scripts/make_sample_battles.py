"""Write pairstore/sample_data/battles.jsonl: INVENTED sample battles for the demo and tests.

    python scripts/make_sample_battles.py

Every battle here is made up for this project (no real user data, no benchmark
text). Deterministic: the same script writes the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import xxhash

OUT = Path(__file__).resolve().parent.parent / "pairstore" / "sample_data" / "battles.jsonl"

# (category, question template, good answer template, weak answer template); {a} {b} fill numbers.
TOPICS = [
    (
        "math",
        "What is {a} times {b}? Show the work briefly.",
        "{a} × {b} = {p}.\n\nFinal answer: {p}",
        "Let me compute {a} times {b} digit by digit... I believe it is {w}.",
    ),
    (
        "math",
        "A shop sells pencils at {a} cents each. How much do {b} pencils cost, in cents?",
        "Each pencil costs {a} cents, so {b} pencils cost {a} × {b} = {p} cents.\n\nFinal answer: {p}",
        "{b} pencils at {a} cents is {w} cents. I hope it is correct.",
    ),
    (
        "reasoning",
        "If every glorp is a snib and I have {a} glorps, do I have at least {a} snibs?",
        "Yes. Each of the {a} glorps is a snib, so there are at least {a} snibs.",
        "Not necessarily; snibs and glorps are unrelated, so we cannot say.",
    ),
    (
        "coding",
        "Write a Python one-liner that sums the numbers from 1 to {a}.",
        "```python\nprint(sum(range(1, {a} + 1)))\n```\nThis prints {s}.",
        "```python\nprint(sum(range({a})))\n```\nThis prints the sum.",
    ),
    (
        "writing",
        "Give me a two-line slogan for a bakery called Crumb {a}.",
        "Crumb {a}: warm from the oven,\nbaked for the people you're lovin'.",
        "Bakery bakery bread bread. Crumb {a} is a bakery that bakes bread.",
    ),
    (
        "chat",
        "I have {a} minutes before a meeting. What is a quick way to calm down?",
        "Try box breathing: in for 4, hold 4, out 4, hold 4, for {a} rounds if you can. Then note one thing "
        "you want to say first.",
        "Meetings are stressful. Everyone gets nervous. You should relax.",
    ),
    (
        "format",
        "Count the letter r in the word 'strawberry{a}'. Answer with just the number.",
        "3",
        "The word strawberry{a} has the letter r, the letter r, the letter r, the letter r...",
    ),
    (
        "format",
        "What is the digit sum of {p}? Reply with one number.",
        "{ds}",
        "The digit sum of {p} is the sum of the digits of {p}, which is the sum of the digits...",
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
VOTES = ["win"] * 45 + ["loss"] * 43 + ["tie"] * 19 + ["both_bad"] * 13
OPPONENTS = ["rival-7b-chat", "open-helper-13b", "quickbot-v2"]


def rnd(i: int, salt: str, lo: int, hi: int) -> int:
    return lo + xxhash.xxh3_64_intdigest(f"sample:{i}:{salt}".encode()) % (hi - lo + 1)


def fill(t: str, i: int) -> str:
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
    )


def battle(i: int) -> dict:
    vote = VOTES[(i * 37) % len(VOTES)]
    cat, q, good, weak = TOPICS[i % len(TOPICS)]
    own, opp = (fill(good, i), fill(weak, i)) if vote in ("win", "tie") else (fill(weak, i), fill(good, i))
    if vote == "both_bad":
        own, opp = fill(weak, i), fill(weak, i + 1000)
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
                "user": "Thanks. Can you say that again in one short sentence?",
                "own": "In short: " + own.splitlines()[0],
                "opponent": "Sure: " + opp.splitlines()[0],
            },
        ]
    else:
        rec.update(prompt=fill(q, i), own_answer=own, opponent_answer=opp)
    return rec


def main() -> None:
    rows = [battle(i) for i in range(120)]
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
