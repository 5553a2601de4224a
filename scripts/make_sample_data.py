"""Write the rest of pairstore/sample_data/: INVENTED problems and pairs for the demo and tests.

    python scripts/make_sample_data.py

Problems follow GSM8K's and MATH's own formats (columns and answer markup) but are
written for this project from templates: no benchmark text. Also an UltraFeedback-
binarized-format sample and handcrafted compliance pairs. Deterministic.
"""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb, gcd
from pathlib import Path

import xxhash

OUT = Path(__file__).resolve().parent.parent / "pairstore" / "sample_data"


def rnd(tag: str, i: int, lo: int, hi: int) -> int:
    return lo + xxhash.xxh3_64_intdigest(f"sample-data:{tag}:{i}".encode()) % (hi - lo + 1)


NAMES = ["Mia", "Tomas", "Priya", "Kofi", "Lena", "Arjun", "Noor", "Emeka", "Sofia", "Hiro"]


def gsm8k_like(i: int) -> dict:
    n = NAMES[i % len(NAMES)]
    a, b, c = rnd("a", i, 3, 19), rnd("b", i, 4, 24), rnd("c", i, 2, 30)
    kind = i % 4
    if kind == 0:
        ab = a * b
        c = min(c, ab - 1)
        r = ab - c
        q = (
            f"{n} buys {a} packs of stickers with {b} stickers in each pack. "
            f"{n} gives away {c} stickers. How many stickers are left?"
        )
        s = (
            f"{n} buys {a}*{b} = <<{a}*{b}={ab}>>{ab} stickers.\n"
            f"After giving away {c}, {n} has {ab}-{c} = <<{ab}-{c}={r}>>{r} stickers left.\n#### {r}"
        )
    elif kind == 1:
        total = a * b * 10
        r = total // b
        q = f"A bakery packs {total} rolls into bags of {b}. How many bags does it fill?"
        s = f"It fills {total}/{b} = <<{total}/{b}={r}>>{r} bags.\n#### {r}"
    elif kind == 2:
        price, k = a * 5, b
        r = price * k + c
        q = (
            f"{n} rents a bike for {k} hours at ${price} per hour and pays a ${c} deposit fee. "
            f"How much does {n} pay in dollars?"
        )
        s = (
            f"The hours cost {price}*{k} = <<{price}*{k}={price * k}>>{price * k} dollars.\n"
            f"With the fee: {price * k}+{c} = <<{price * k}+{c}={r}>>{r} dollars.\n#### {r:,}"
        )
    else:
        pages, per = a * b * 3, a
        r = pages // per
        q = f"{n} reads {per} pages a day. How many days does a {pages}-page book take?"
        s = f"It takes {pages}/{per} = <<{pages}/{per}={r}>>{r} days.\n#### {r}"
    return {"question": q, "answer": s}


def math_like(i: int) -> dict:
    a, b = rnd("ma", i, 12, 400), rnd("mb", i, 3, 29)
    kind = i % 5
    if kind == 0:
        q, sol, typ = (
            f"What is the remainder when ${a}$ is divided by ${b}$?",
            f"We have ${a} = {b} \\cdot {a // b} + {a % b}$, so the remainder is $\\boxed{{{a % b}}}$.",
            "Number Theory",
        )
    elif kind == 1:
        c = b * rnd("mc", i, 2, 9)
        g = gcd(a, c)
        f = Fraction(a, c)
        ans = f"\\frac{{{f.numerator}}}{{{f.denominator}}}" if f.denominator != 1 else str(f.numerator)
        q, sol, typ = (
            f"Simplify $\\frac{{{a}}}{{{c}}}$.",
            (
                f"The greatest common divisor of ${a}$ and ${c}$ is ${g}$, "
                f"so the fraction is $\\boxed{{{ans}}}$."
            ),
            "Prealgebra",
        )
    elif kind == 2:
        c = rnd("mx", i, 20, 90)
        x = Fraction(c - b, a % 9 + 2)
        ans = f"\\frac{{{x.numerator}}}{{{x.denominator}}}" if x.denominator != 1 else str(x.numerator)
        if x < 0 and x.denominator != 1:
            ans = f"-\\frac{{{-x.numerator}}}{{{x.denominator}}}"
        q, sol, typ = (
            f"Solve for $x$: ${a % 9 + 2}x + {b} = {c}$.",
            f"Subtract ${b}$: ${a % 9 + 2}x = {c - b}$, so $x = \\boxed{{{ans}}}$.",
            "Algebra",
        )
    elif kind == 3:
        n, k = b % 12 + 4, b % 4 + 2
        q, sol, typ = (
            f"Compute $\\dbinom{{{n}}}{{{k}}}$.",
            f"$\\dbinom{{{n}}}{{{k}}} = \\frac{{{n}!}}{{{k}!\\,{n - k}!}} = \\boxed{{{comb(n, k)}}}$.",
            "Counting & Probability",
        )
    else:
        lo, hi = b, b + a % 7 + 2
        q, sol, typ = (
            f"Find all integers $n$ with ${lo} \\le n \\le {hi}$ and $n$ even. Give the set.",
            "The even integers in range are $\\boxed{\\{"
            + ", ".join(str(v) for v in range(lo, hi + 1) if v % 2 == 0)
            + "\\}}$.",
            "Prealgebra",
        )
    return {"problem": q, "level": f"Level {i % 5 + 1}", "type": typ, "solution": sol}


def ultrafeedback_like(i: int) -> dict:
    topics = [
        "how to water succulents",
        "why the sky looks blue",
        "how to write a polite reminder email",
        "what a binary search does",
        "how to store fresh herbs",
        "why bread dough rises",
    ]
    t = topics[i % len(topics)]
    prompt = f"Explain {t} to a beginner (question {i + 1})."
    good = f"Here is a short explanation of {t}: start with the key idea, then one example, then a tip."
    bad = f"{t.capitalize()} is complicated. Search online."
    return {
        "prompt": prompt,
        "prompt_id": xxhash.xxh3_64_hexdigest(prompt.encode()),
        "chosen": [{"role": "user", "content": prompt}, {"role": "assistant", "content": good}],
        "rejected": [{"role": "user", "content": prompt}, {"role": "assistant", "content": bad}],
        "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": good}],
        "score_chosen": 8.0,
        "score_rejected": 3.0,
    }


def compliance_like(i: int) -> tuple[dict, dict]:
    n = rnd("cw", i, 3, 9)
    prompt = f"List exactly {n} fruits, one per line, no other text."
    fruits = ["apple", "pear", "plum", "fig", "kiwi", "mango", "lime", "date", "grape"]
    good = "\n".join(fruits[:n])
    bad = f"Sure! Here are some fruits: {', '.join(fruits[: n + 1])}. Let me know if you want more!"
    return (
        {"prompt": prompt, "chosen": good, "rejected": bad},
        {"prompt": f"Reply with only the word OK (request {i + 1}).", "target": "OK"},
    )


def write_jsonl(name: str, rows) -> None:
    with open(OUT / name, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {name}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    write_jsonl("gsm8k-train.jsonl", [gsm8k_like(i) for i in range(60)])
    write_jsonl("gsm8k-test.jsonl", [gsm8k_like(i) for i in range(1000, 1020)])
    write_jsonl("math-train.jsonl", [math_like(i) for i in range(40)])
    write_jsonl("math-test.jsonl", [math_like(i) for i in range(1000, 1015)])
    write_jsonl("ultrafeedback-train_prefs.jsonl", [ultrafeedback_like(i) for i in range(24)])
    comp = [compliance_like(i) for i in range(12)]
    write_jsonl("compliance-pairs.jsonl", [c[0] for c in comp])
    write_jsonl("compliance-sft.jsonl", [c[1] for c in comp])


if __name__ == "__main__":
    main()
