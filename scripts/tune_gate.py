"""Choose and measure the holdout gate's fuzzy threshold on the labelled near-duplicate set.

    python scripts/tune_gate.py                  # grid on split == "tune", then one measurement on "test"
    python scripts/tune_gate.py --threshold 80   # measure one threshold on both splits
    python scripts/tune_gate.py --common         # the threshold of stock needles on the labelled sentences

Each labelled pair (tests/fixtures/gate/near_duplicates.jsonl) is read as a held-out member (`a`) and a
training row (`b`) through the gate's own text stages (pairstore.holdout.matching.match_texts): match key,
whole text or sentence, embedded, near copy. Word rarity comes from the control corpus
(tests/fixtures/gate/control_prompts.jsonl) standing in for a store's prompts. A pair labelled `same` is
a positive. Prints precision and recall per split, and the misses by kind.

`--common` chooses COMMON_NEEDLE_PROMPTS: every whole text and sentence of five words or more of the control
corpus is counted by the distinct prompts that hold it (pairstore.holdout.text_match.Commonness, the
gate's own count); tests/fixtures/gate/common_needles.jsonl labels each one held by two prompts or more
`stock` (a refusal, a greeting, a task's boilerplate instruction) or `content` (a name, a number, a
line of code, a fact), by reading. The threshold is one more than the most prompts any content sentence
has: no content sentence is ever skipped.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from pairstore.holdout import matching
from pairstore.holdout.matching import Needle, Rarity, RowText, match_texts, needles_of_text, tokens
from pairstore.holdout.text_match import COMMON_MIN_WORDS, Commonness
from pairstore.keys import match_key
from pairstore.normalize import word_text

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "gate"


def load(name: str) -> list[dict]:
    with open(FIXTURES / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def control_rarity(words: set[str] | None = None) -> Rarity:
    return Rarity.of_texts((word_text(r["prompt"]) for r in load("control_prompts.jsonl")), words)


def predicted(row: dict, rarity: Rarity) -> str | None:
    needles: list[Needle] = needles_of_text("t", row["id"], "holdout", [row["a"]])
    text = RowText.of([row["b"]], [])
    for n in needles:
        got = match_texts(n, text, rarity)
        if got:
            return got[0]
    return None


def measure(rows: list[dict], rarity: Rarity) -> dict:
    tp = fp = fn = tn = 0
    misses: Counter = Counter()
    false: Counter = Counter()
    for r in rows:
        hit = predicted(r, rarity) is not None
        same = r["label"] == "same"
        tp += hit and same
        fp += hit and not same
        fn += (not hit) and same
        tn += (not hit) and not same
        if same and not hit:
            misses[r["kind"]] += 1
        if hit and not same:
            false[r["kind"]] += 1
    return {
        "pairs": len(rows),
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "missed_by_kind": dict(misses.most_common()),
        "false_by_kind": dict(false.most_common()),
    }


def choose_common_threshold() -> dict:
    """COMMON_NEEDLE_PROMPTS from the labelled sentences (see the module docstring)."""
    rows = load("control_prompts.jsonl")
    holders = Commonness.of_items((match_key(r["prompt"]), [r["prompt"], r["answer"]]) for r in rows).holders
    judged = [
        (r["label"], holders.get(r["text"], 1))
        for r in load("common_needles.jsonl")
        if len(r["text"].split()) >= COMMON_MIN_WORDS
    ]
    content_max = max(n for label, n in judged if label == "content")
    stock = [n for label, n in judged if label == "stock"]
    chosen = content_max + 1
    return {
        "chosen": chosen,
        "sentences_judged": len(judged),
        "content_most_prompts": content_max,
        "stock": len(stock),
        "stock_skipped_at_chosen": sum(n >= chosen for n in stock),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--common", action="store_true", help="choose the threshold of stock needles")
    args = ap.parse_args(argv)
    if args.common:
        print(json.dumps(choose_common_threshold(), indent=2))
        return 0
    rows = load("near_duplicates.jsonl")
    words = {t for r in rows for t in tokens(word_text(r["a"])) + tokens(word_text(r["b"]))}
    rarity = control_rarity(words)
    tune = [r for r in rows if r["split"] == "tune"]
    test = [r for r in rows if r["split"] == "test"]
    out = {}
    if args.threshold is None:
        grid = {}
        for t in (70, 75, 78, 80, 82, 85, 88, 90, 92):
            matching.FUZZY_THRESHOLD = float(t)
            m = measure(tune, rarity)
            grid[t] = m
            print(
                f"tune threshold {t}: precision {m['precision']} recall {m['recall']} "
                f"fp {m['fp']} fn {m['fn']}"
            )

        # The best F1 on `tune`, ties to the higher (stricter) threshold.
        def f1(m):
            p, r = m["precision"] or 0, m["recall"] or 0
            return round(2 * p * r / (p + r), 4) if p + r else 0

        best = max(grid, key=lambda t: (f1(grid[t]), t))
        out["chosen_threshold"] = best
        matching.FUZZY_THRESHOLD = float(best)
    else:
        matching.FUZZY_THRESHOLD = args.threshold
        out["chosen_threshold"] = args.threshold
    out["tune"] = measure(tune, rarity)
    out["test"] = measure(test, rarity)
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
