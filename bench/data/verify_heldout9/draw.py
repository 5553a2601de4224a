"""Draw the ninth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key being the file's path (for
a pooled group, the group's name). The labels are in labels.tsv, written by hand by reading each drawn
output before any verifier ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout9/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout9/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "34h9"
HERE = Path(__file__).parent
ID_PREFIX = "w"

csv.field_size_limit(1 << 30)

SHAPES = "bowenyu066/language-shapes-reasoning"
SHAPES_COMMIT = "9cf81be3ce556f16998fc76ecb101b96afcdebc3"
# MMATH (374 competition problems: AIME, CNMO, MATH-500 and more) answered in five languages by three API
# models, and GSM8K (English and a Chinese translation) answered by two open 8B models under several output
# token limits, some with the problem first translated; every CSV row holds the whole `raw_output` (for the
# open models, the decoded sequence with the chat prompt, which itself shows the '#### <number>' template).
# (group, family, files, rows drawn from the pooled rows)
MMATH_LANGS = ("en", "es", "ja", "th", "zh")
SHAPES_GROUPS = [
    (
        "chatgpt-5.1",
        "GPT",
        [f"results/mmath/mmath_chatgpt-5.1_{lang}_direct_maxtok8192.csv" for lang in MMATH_LANGS],
        35,
    ),
    (
        "deepseek-v3.2",
        "DeepSeek",
        [f"results/mmath/mmath_deepseek-v3.2_{lang}_direct_maxtok8192.csv" for lang in MMATH_LANGS],
        35,
    ),
    (
        "gemini-2.5-flash",
        "Gemini",
        [f"results/mmath/mmath_gemini-2.5_{lang}_direct_maxtok8192.csv" for lang in MMATH_LANGS],
        35,
    ),
    (
        "meta-llama/Llama-3.1-8B-Instruct",
        "Llama",
        [
            f"results/gsm8k/gsm8k_llama-3.1-8b_{setting}_maxtok{tokens}.csv"
            for setting in ("en_direct", "zh_direct", "zh_zh_translate_then_solve")
            for tokens in (128, 256, 512, 1024, 4096)
        ],
        40,
    ),
    (
        "Qwen/Qwen3-8B",
        "Qwen",
        [
            f"results/gsm8k/gsm8k_qwen3-8b_{setting}_maxtok{tokens}.csv"
            for setting in ("en_direct", "zh_direct", "zh_zh_translate_then_solve")
            for tokens in (128, 256, 512, 1024, 4096)
        ],
        40,
    ),
    (
        "Llama-3.1-8B-Instruct with a LoRA fine-tuned on English or Chinese GSM8K",
        "Llama",
        [
            f"results/gsm8k_finetuned/gsm8k_llama-3.1-8b-ft-{run}_maxtok4096.csv"
            for run in (
                "en_en_direct",
                "en_zh_direct",
                "zh_en_direct",
                "zh_zh_direct",
                "zh_zh_zh_translate_then_solve",
            )
        ],
        15,
    ),
]

# The plain draw gave few rows that are not equal (54 of 325 by the hand labels), so a second draw per
# group takes rows the source itself flagged wrong, from the rows not drawn already; the flag chooses the
# pool only, and every row is labelled by reading it (several flagged-wrong rows are equal).
SHAPES_WRONG = [8, 8, 8, 8, 8, 5]  # in the order of SHAPES_GROUPS

GEMBENCH = "neulab/gemini-benchmark"
GEMBENCH_COMMIT = "45d7e65a15ed1691d74fe1d068c8ccab97d25a6e"
# four models on SVAMP and MAWPS MultiArith with the 8-shot chain-of-thought exemplars
# ('... The answer is N.');
# `generated_text` is the whole completion (Mixtral's continues with invented 'Q:'/'A:' turns).
# (model folder, family, rows drawn from the pooled two files)
GEMBENCH_MODELS = [
    ("gemini-pro", "Gemini", 35),
    ("gpt-3.5-turbo", "GPT", 15),
    ("gpt-4-1106-preview", "GPT", 15),
    ("mixtral", "Mistral", 40),
]
GEMBENCH_TASKS = ("svamp", "mawpsmultiarith")
GEMBENCH_WRONG = [10, 5, 5, 10]  # flagged-wrong rows, in the order of GEMBENCH_MODELS

CAREFUL = "Hypogenic-AI/careful-llm-words-4e0d-codex"
CAREFUL_COMMIT = "27e5912779f6997849889d616638b8c768a2f1bc"
CAREFUL_PATH = "results/raw_outputs.jsonl"
# gpt-4.1 (temperature 0.2, 320 output tokens) on 50 GSM8K test questions under three prompts (direct; a
# '[PAUSE] ... [/PAUSE]' filler between sentences; a '[THINK] ... [/THINK]' check between sentences), the
# last line asked as 'FINAL_ANSWER: <number>'; `output` is the whole reply
CAREFUL_ROWS = 20


def jsonl_at(mirror: Mirror, repo: str, commit: str, path: str) -> list[dict]:
    return [json.loads(line) for line in read_at(mirror, repo, commit, path).splitlines() if line.strip()]


def without_dollars(gold: str) -> str:
    """The corpora's golds have one layer of ``$...$`` removed (bench/data/README.md, "Row format")."""
    return gold[1:-1] if len(gold) > 1 and gold.startswith("$") and gold.endswith("$") else gold


def number_gold(value: float | str) -> str:
    """A gold stored as a float (``18.0``) written as the number it is (``18``, ``0.5``)."""
    number = float(value)
    return str(int(number)) if number == int(number) else repr(number)


def shapes_pool(mirror: Mirror, paths: list[str]) -> list[tuple[str, int, dict]]:
    pool = []
    for path in paths:
        records = list(csv.DictReader(io.StringIO(read_at(mirror, SHAPES, SHAPES_COMMIT, path))))
        pool.extend((path, i, r) for i, r in enumerate(records))
    return pool


def shapes_row(model: str, family: str, path: str, i: int, r: dict) -> dict:
    mmath = r["dataset"] == "mmath"
    benchmark = (
        f"MMATH, {r['language']}, competition math" if mmath else f"GSM8K test, {r['language']}, {r['mode']}"
    )
    return {
        "pred": r["raw_output"],
        "gold": without_dollars(r["gold"]),
        "kind": "math" if mmath else "gsm8k",
        "source": f"{SHAPES} {path}@{SHAPES_COMMIT[:7]} row {i} ({r['id']}) model={model} family={family} "
        f"({benchmark}, {r['max_tokens']} output tokens at most; '#### <number>' asked)",
        "source_label": r["correct"] == "1",
    }


def shapes_rows(mirror: Mirror) -> tuple[list[dict], list[dict]]:
    """The plain draw, and the second draw among the rows the source flagged wrong (not drawn before)."""
    plain, flagged = [], []
    for (model, family, paths, n), wrong in zip(SHAPES_GROUPS, SHAPES_WRONG):
        pool = shapes_pool(mirror, paths)
        picked = sorted(heldout_draw.rng_for(SEED, SHAPES, model).sample(range(len(pool)), n))
        plain.extend(shapes_row(model, family, *pool[j]) for j in picked)
        rest = [j for j in range(len(pool)) if j not in set(picked) and pool[j][2]["correct"] != "1"]
        again = sorted(heldout_draw.rng_for(SEED, SHAPES, f"{model} flagged wrong").sample(rest, wrong))
        flagged.extend(shapes_row(model, family, *pool[j]) for j in again)
    return plain, flagged


def gembench_row(model: str, family: str, path: str, task: str, i: int, r: dict) -> dict:
    return {
        "pred": r["generated_text"],
        "gold": number_gold(r["answer"]),
        "kind": "gsm8k",
        "source": f"{GEMBENCH} {path}@{GEMBENCH_COMMIT[:7]} record {i} (qid {r['qid']}) model={model} "
        f"family={family} ({'SVAMP' if task == 'svamp' else 'MAWPS MultiArith'}, 8-shot chain of thought)",
        "source_label": str(r["is_correct"]) == "1",
    }


def gembench_rows(mirror: Mirror) -> tuple[list[dict], list[dict]]:
    """The plain draw, and the second draw among the rows the source flagged wrong (not drawn before)."""
    plain, flagged = [], []
    for (model, family, n), wrong in zip(GEMBENCH_MODELS, GEMBENCH_WRONG):
        pool = []
        for task in GEMBENCH_TASKS:
            path = f"outputs/{task}/{model}/output.jsonl"
            pool.extend(
                (path, task, i, r) for i, r in enumerate(jsonl_at(mirror, GEMBENCH, GEMBENCH_COMMIT, path))
            )
        picked = sorted(heldout_draw.rng_for(SEED, GEMBENCH, model).sample(range(len(pool)), n))
        plain.extend(gembench_row(model, family, *pool[j]) for j in picked)
        rest = [j for j in range(len(pool)) if j not in set(picked) and str(pool[j][3]["is_correct"]) != "1"]
        again = sorted(heldout_draw.rng_for(SEED, GEMBENCH, f"{model} flagged wrong").sample(rest, wrong))
        flagged.extend(gembench_row(model, family, *pool[j]) for j in again)
    return plain, flagged


def careful_rows(mirror: Mirror) -> list[dict]:
    records = jsonl_at(mirror, CAREFUL, CAREFUL_COMMIT, CAREFUL_PATH)
    lines = [i for i, r in enumerate(records) if r["task"] == "gsm8k"]
    picked = heldout_draw.rng_for(SEED, CAREFUL, CAREFUL_PATH).sample(lines, CAREFUL_ROWS)
    return [
        {
            "pred": records[i]["output"],
            "gold": records[i]["gold"],
            "kind": "gsm8k",
            "source": f"{CAREFUL} {CAREFUL_PATH}@{CAREFUL_COMMIT[:7]} record {i} "
            f"(item {records[i]['item_id']}, {records[i]['condition']}) model=gpt-4.1 family=GPT "
            "(GSM8K test; 'FINAL_ANSWER: <number>' asked)",
            "source_label": records[i]["exact_match"] == 1,
        }
        for i in sorted(picked)
    ]


def draw(mirror: Mirror) -> list[dict]:
    shapes, shapes_flagged = shapes_rows(mirror)
    gembench, gembench_flagged = gembench_rows(mirror)
    # the second draws come last, so the first draw's ids (w0001-w0325) are the ones it was labelled under
    rows = shapes + gembench + careful_rows(mirror) + shapes_flagged + gembench_flagged
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
