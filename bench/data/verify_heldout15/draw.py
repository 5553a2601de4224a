"""Draw the fifteenth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key naming the pool (the
results file). The labels are in labels.tsv, written by hand by reading each drawn output before any verifier
ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout15/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout15/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, json_lines, read_at  # noqa: E402

SEED = "g1h15"
HERE = Path(__file__).parent
ID_PREFIX = "b"

SUBQ = "DT6A/GSM8K-AI-SubQ"
SUBQ_COMMIT = "d21dba9e94e08be1ee13d3f294da9f1229a24d52"
# GSM8K test questions (1,319) answered through sub-questions: a question generator (ChatGPT itself in
# eval_chat.jsonl, a behaviour-cloned GPT-2 medium in eval_filtered_bc_medium.jsonl) splits each problem into
# sub-questions, then the answering model named by the folder (gpt-3.5-turbo as "chatgpt", LLaMA 7B and 13B,
# Mistral 7B) answers them; the prompt asks for "AN:" answers and "Final answer:" with the number alone.
# eval_responses/<answerer>/<file>.jsonl keeps the reply (`answers`), the gold (`answer`, "18.0" as a string
# in the chatgpt files, a float in the others) and the sub-questions it was given (`questions`); no
# correctness flag. The LLaMA and Mistral replies often run on past "Final answer:" into invented next
# problems.
# (answerer folder, model, family)
SUBQ_MODELS = [
    ("chatgpt", "gpt-3.5-turbo", "GPT"),
    ("llama7b", "LLaMA 7B", "Llama"),
    ("llama13b", "LLaMA 13B", "Llama"),
    ("mistral", "Mistral 7B", "Mistral"),
]
# (file stem, question generator, rows)
SUBQ_FILES = [
    ("eval_chat", "ChatGPT sub-questions", 8),
    ("eval_filtered_bc_medium", "filtered-BC GPT-2 medium sub-questions", 6),
]

RWKV = "w1c2j3/Gsm8k_rwkv"
RWKV_COMMIT = "dfb9c06e55894ff902f62d01f8064e5297ed809d"
# An RWKV-7 reasoning model (the file is named for a 0.5B run; the script's default checkpoint is
# rwkv7-g1b-1.5b) on the 1,319 GSM8K test questions: prompt "User: <question>\n\nAssistant: <think>", the
# reasoning sampled (at most 1,024 tokens, stopping at a blank line) and then "\nTherefore, the answer is
# \(\boxed{" forced before a greedy answer that stops at the closing brace. out/gsm8k_0p5b.jsonl keeps the
# whole generated text with the forced words (`gen`), the gold (`a`) and the source's `correct`.
RWKV_PATH = "out/gsm8k_0p5b.jsonl"
RWKV_ROWS = 32

R1ZERO = "XiaoruiWang/cs336-assignment5-alignment"
R1ZERO_COMMIT = "809fc5edfa9a07cdafd235d4b59e4983318e9cf1"
# Qwen2.5-Math-1.5B (base) on the 1,319 GSM8K test questions under the r1_zero prompt ("... <think> reasoning
# process here </think> <answer> answer here </answer>", the prompt ending "Assistant: <think>"), sampled at
# temperature 1.0, at most 1,024 tokens, stopping after "</answer>". outputs/math_baseline_results.jsonl keeps
# the reply (`response`, the "<think>" that opens it is in the prompt), the gold (`ground_truth`) and the
# source's `format_reward`, `answer_reward` and `reward`.
R1ZERO_PATH = "outputs/math_baseline_results.jsonl"
R1ZERO_ROWS = 28

DHANVIN = "Dhanvin/spring2024-assignment5-alignment"
DHANVIN_COMMIT = "1757c951da2af24050dc8909cd1b8b40da1e252d"
# Meta-Llama-3-8B (the model the evaluation script names) on the 1,319 GSM8K test questions, greedy, at most
# 1,024 tokens, stopping at the first newline, under three prompts: the bare question (eval_results.jsonl),
# "... ensure that you end with the following sentence: "Therefore, the correct answer is _"" (
# eval_results_explain.jsonl) and "... in a single sentence of the form "The correct answer is _."" (
# eval_results_single_sentence.jsonl). model_predictions_store/gsm8k/eval_results/<file> keeps the reply
# (`model_response`), the gold (`ground_truth_answer`) and the source's `metrics.accurate`.
# (file, prompt, rows)
DHANVIN_FILES = [
    ("eval_results.jsonl", "bare question", 6),
    ("eval_results_explain.jsonl", "'Therefore, the correct answer is _' asked", 6),
    ("eval_results_single_sentence.jsonl", "'The correct answer is _.' asked", 6),
]

AKSHIT = "go-akshit/spring2024-assignment5-alignment"
AKSHIT_COMMIT = "a83532466ee2bc89436ea7b9a97250d405af45f5"
# Meta-Llama-3-8B base (gsm8k_eval.json) and the same model after instruction tuning (gsm8k_eval_sft.json)
# on GSM8K test questions, under the assignment's zero-shot system prompt ("# Query:\n```<question>\n
# Answer:```\n# Answer:\n```"). Each file keeps only the wrong answers (`incorrect_predictions`: prompt,
# reply, the source's parsed number, gold) and the unparsed ones (`failed_parse`: prompt and reply, no
# gold, so not drawn); the rows come from `incorrect_predictions`, record n its index there.
# (file, model, rows)
AKSHIT_FILES = [
    ("gsm8k_eval.json", "Meta-Llama-3-8B", 5),
    ("gsm8k_eval_sft.json", "Meta-Llama-3-8B (SFT)", 5),
]


def gold_text(value) -> str:
    gold = str(value).strip()
    if gold.startswith("$") and gold.endswith("$") and len(gold) > 2:
        gold = gold[1:-1].strip()
    return gold


def drawn_indices(repo: str, path: str, n: int, golds: list[str]) -> list[int]:
    """n records with a gold, drawn from the file's records (counted from 0) by the file's own seed."""
    eligible = [i for i, gold in enumerate(golds) if gold]
    return sorted(heldout_draw.rng_for(SEED, repo, path).sample(eligible, n))


def drawn_rows(
    repo: str,
    commit: str,
    path: str,
    n: int,
    records: list[Any],
    read: Callable[[Any], tuple[str, object, str]],
    about: str,
) -> list[dict]:
    """n rows drawn from one results file's records: `read` gives a record's (reply, gold, the source's
    own correctness flag); `about` the model and prompt, after the record's place in the source. Every
    source here answers GSM8K test questions."""
    read_records = [read(r) for r in records]
    golds = [gold_text(gold) for _, gold, _ in read_records]
    return [
        {
            "pred": read_records[i][0],
            "gold": golds[i],
            "kind": "gsm8k",
            "source": f"{repo} {path}@{commit[:7]} record {i} {about}",
            "source_label": read_records[i][2],
        }
        for i in drawn_indices(repo, path, n, golds)
    ]


def subq_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for folder, model, family in SUBQ_MODELS:
        for stem, generator, n in SUBQ_FILES:
            path = f"eval_responses/{folder}/{stem}.jsonl"
            rows += drawn_rows(
                SUBQ,
                SUBQ_COMMIT,
                path,
                n,
                json_lines(read_at(mirror, SUBQ, SUBQ_COMMIT, path)),
                lambda r: (r["answers"], r["answer"], ""),
                f"model={model} family={family} (GSM8K test, answering {generator}; 'Final answer:' asked)",
            )
    return rows


def rwkv_rows(mirror: Mirror) -> list[dict]:
    return drawn_rows(
        RWKV,
        RWKV_COMMIT,
        RWKV_PATH,
        RWKV_ROWS,
        json_lines(read_at(mirror, RWKV, RWKV_COMMIT, RWKV_PATH)),
        lambda r: (r["gen"], r["a"], str(r["correct"])),
        "model=RWKV-7 reasoning model (0p5b run) family=RWKV "
        "(GSM8K test; '\\boxed{' forced after the reasoning)",
    )


def r1zero_rows(mirror: Mirror) -> list[dict]:
    return drawn_rows(
        R1ZERO,
        R1ZERO_COMMIT,
        R1ZERO_PATH,
        R1ZERO_ROWS,
        json_lines(read_at(mirror, R1ZERO, R1ZERO_COMMIT, R1ZERO_PATH)),
        lambda r: (r["response"], r["ground_truth"], str(r["answer_reward"])),
        "model=Qwen2.5-Math-1.5B family=Qwen (GSM8K test; r1_zero prompt, '<answer> </answer>' asked)",
    )


def dhanvin_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for name, prompt, n in DHANVIN_FILES:
        path = f"model_predictions_store/gsm8k/eval_results/{name}"
        rows += drawn_rows(
            DHANVIN,
            DHANVIN_COMMIT,
            path,
            n,
            json_lines(read_at(mirror, DHANVIN, DHANVIN_COMMIT, path)),
            lambda r: (r["model_response"], r["ground_truth_answer"], str(r["metrics"]["accurate"])),
            f"model=Meta-Llama-3-8B family=Llama (GSM8K test; {prompt}; one line)",
        )
    return rows


def akshit_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for path, model, n in AKSHIT_FILES:
        rows += drawn_rows(
            AKSHIT,
            AKSHIT_COMMIT,
            path,
            n,
            json.loads(read_at(mirror, AKSHIT, AKSHIT_COMMIT, path))["incorrect_predictions"],
            lambda r: (r[1], r[3], "False"),
            f"model={model} family=Llama "
            "(GSM8K test; incorrect_predictions record; zero-shot '# Answer:' prompt)",
        )
    return rows


def draw(mirror: Mirror) -> list[dict]:
    rows = [
        *subq_rows(mirror),
        *rwkv_rows(mirror),
        *r1zero_rows(mirror),
        *dhanvin_rows(mirror),
        *akshit_rows(mirror),
    ]
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
