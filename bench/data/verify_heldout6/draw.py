"""Draw the sixth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source file's draw takes ``random.Random(f"{SEED}:{repository}:{path}")``. The labels are in
labels.tsv, written by hand by reading each drawn output before any verifier ran on it. No verifier or
grader is run here.

    python bench/data/verify_heldout6/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout6/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "22f"
HERE = Path(__file__).parent
ID_PREFIX = "s"

MATH_LLM = "zhentingqi/Math_LLM"
# the result files were deleted from the repository after this commit, so the draw reads them there
MATH_LLM_COMMIT = "14ae92f91987caabd7cfb94114b973207a41a2c9"
# 4-shot chain-of-thought baselines ("Question 5: ...", "Answer 5: Let's think step by step. ... The
# answer is 8."): `model_response` is the prompt followed by the model's continuation, cut at the first
# blank line; the row keeps the continuation alone. (path, model, family, benchmark, rows)
MATH_LLM_FILES = [
    ("out/baselines/result_gsm8k_llama-2-7b-chat_4-shot.json", "Llama-2-7b-chat", "Llama", "GSM8K", 15),
    ("out/baselines/result_gsm8k_llama-2-13b-chat_4-shot.json", "Llama-2-13b-chat", "Llama", "GSM8K", 15),
    ("out/baselines/result_gsm8k_llama-2-70b-chat_4-shot.json", "Llama-2-70b-chat", "Llama", "GSM8K", 25),
    ("out/baselines/result_SVAMP_llama-2-70b-chat_4-shot.json", "Llama-2-70b-chat", "Llama", "SVAMP", 25),
    (
        "out/baselines/result_gsm8k_Mixtral-8x7B-Instruct-v0.1_4-shot.json",
        "Mixtral-8x7B-Instruct-v0.1",
        "Mistral",
        "GSM8K",
        30,
    ),
    (
        "out/baselines/result_SVAMP_Mixtral-8x7B-Instruct-v0.1_4-shot.json",
        "Mixtral-8x7B-Instruct-v0.1",
        "Mistral",
        "SVAMP",
        20,
    ),
    (
        "out/baselines/result_multiarith_Mixtral-8x7B-Instruct-v0.1_4-shot.json",
        "Mixtral-8x7B-Instruct-v0.1",
        "Mistral",
        "MultiArith",
        30,
    ),
]

ALGOVERSE = "StanchPillow55/Algoverse-Self-Correction-Classification"
# a self-correction study's full-scale GSM8K runs: the first turn's whole response to "Show your
# complete reasoning and work ... then state your final answer." (path, model, family, rows)
ALGOVERSE_FILES = [
    ("runs/fullscale_gpt-4o-mini_gsm8k_20250916T023606Z/traces.jsonl", "gpt-4o-mini", "GPT", 70),
    (
        "runs/fullscale_claude-haiku_gsm8k_20250916T065436Z/traces.jsonl",
        "claude-3-haiku-20240307",
        "Claude",
        50,
    ),
]
ALGOVERSE_GOLD = "data/gsm8k/test_1k.jsonl"
# turns whose response is the harness's own error line, not a model output
API_ERROR = "API_ERROR"

QWEN3 = "Anirudhcheruvu/Qwen3-0.6B-GSM8K-Experiments"
# Qwen3-0.6B on the GSM8K test set under several prompts, and after the author's full fine-tune on
# GSM8K's solutions: `model_output` is the whole generation. (path, prompt, rows)
QWEN3_FILES = [
    ("inference_scores/zero_shot_model_outputs.jsonl", "direct answer, '#### N' asked", 5),
    ("inference_scores/cot_model_outputs.jsonl", "chain of thought, '#### N'", 20),
    ("inference_scores/few_shot_model_outputs.jsonl", "few-shot chain of thought, '#### N'", 10),
    (
        "inference_scores/thinking_model_outputs_reduced_batch.jsonl",
        "thinking mode, <think> then '#### N'",
        15,
    ),
    ("inference_scores/Qwen3-GSM8k-SFT-FP32-temp0.jsonl", "after full SFT on GSM8K, greedy", 10),
]

NOTHINK = "Muqi1029/NoThink-project"
# the results were deleted after this commit; the file holds five deepseek-chat answers to GSM8K
NOTHINK_COMMIT = "790dca593cdad91a54dd58efa3abc4a341a5b583"
NOTHINK_PATH = "results/ds-api_deepseek-chat_gsm8k_0424.json"


def gsm8k_gold(solution: str) -> str:
    """GSM8K's reference number, the text after its ``####``."""
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def same_number(a: str, b: str) -> bool:
    """The Math_LLM project's own comparison (its evaluate script): both as floats within 1e-5."""
    try:
        return abs(float(a) - float(b)) <= 1e-5
    except ValueError:
        return False


def math_llm_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, family, benchmark, n in MATH_LLM_FILES:
        records = json.loads(read_at(mirror, MATH_LLM, MATH_LLM_COMMIT, path))
        for i in sorted(heldout_draw.rng_for(SEED, MATH_LLM, path).sample(range(len(records)), n)):
            r = records[i]
            question = r["question"]
            response = r["model_response"]
            # the prompt ends with "Question 5: <question>"; what follows is the model's
            start = response.rfind(question)
            if start < 0:
                raise SystemExit(f"{path} record {i}: the question is not in model_response")
            pred = response[start + len(question) :]
            # SVAMP's gold is stored as a JSON number (46.0); the corpora keep golds as text
            gold = str(r["final_ans"] if benchmark == "MultiArith" else r["answer"])
            if benchmark == "GSM8K":
                gold = gsm8k_gold(gold)
            out.append(
                {
                    "pred": pred,
                    "gold": gold,
                    "kind": "gsm8k",
                    "source": f"{MATH_LLM} {path}@{MATH_LLM_COMMIT[:7]} record {i} (id {r['id']}) "
                    f"model={model} family={family} ({benchmark} test, 4-shot chain of thought, "
                    "'The answer is N.'; the continuation after the prompt)",
                    "source_label": same_number(r["model_answer"], gold),
                }
            )
    return out


def algoverse_rows(mirror: Mirror) -> list[dict]:
    gold = {}
    for line in mirror.read(ALGOVERSE, ALGOVERSE_GOLD).splitlines():
        if line.strip():
            g = json.loads(line)
            gold[str(g["id"])] = gsm8k_gold(g["answer"])
    out = []
    for path, model, family, n in ALGOVERSE_FILES:
        pool = []
        for i, line in enumerate(mirror.read(ALGOVERSE, path).splitlines()):
            if not line.strip():
                continue
            r = json.loads(line)
            first = r["turns"][0]
            if API_ERROR in first["response_text"]:
                continue
            pool.append((i, r, first))
        picked = heldout_draw.rng_for(SEED, ALGOVERSE, path).sample(pool, n)
        for i, r, first in sorted(picked, key=lambda c: c[0]):
            out.append(
                {
                    "pred": first["response_text"],
                    "gold": gold[str(r["problem_id"])],
                    "kind": "gsm8k",
                    "source": f"{ALGOVERSE} {path} line {i} (problem {r['problem_id']}, turn 0) "
                    f"model={model} family={family} (GSM8K test, 'show all your work and reasoning, "
                    "then state your final answer')",
                    "source_label": first["is_correct"],
                }
            )
    return out


def qwen3_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, prompt, n in QWEN3_FILES:
        records = [json.loads(line) for line in mirror.read(QWEN3, path).splitlines() if line.strip()]
        for i in sorted(heldout_draw.rng_for(SEED, QWEN3, path).sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r["model_output"],
                    "gold": gsm8k_gold(r["ground_truth_answer"]),
                    "kind": "gsm8k",
                    "source": f"{QWEN3} {path} line {i} (id {r['id']}) model=Qwen3-0.6B family=Qwen "
                    f"(GSM8K test, {prompt})",
                    "source_label": None,
                }
            )
    return out


def nothink_rows(mirror: Mirror) -> list[dict]:
    records = json.loads(read_at(mirror, NOTHINK, NOTHINK_COMMIT, NOTHINK_PATH))["data"]
    return [
        {
            "pred": r["output"],
            "gold": gsm8k_gold(r["answer"]),
            "kind": "gsm8k",
            "source": f"{NOTHINK} {NOTHINK_PATH}@{NOTHINK_COMMIT[:7]} record {i} model=deepseek-chat "
            "family=DeepSeek (GSM8K test, the question alone, answer through the DeepSeek API)",
            "source_label": None,
        }
        for i, r in enumerate(records)
    ]


def draw(mirror: Mirror) -> list[dict]:
    rows = math_llm_rows(mirror) + algoverse_rows(mirror) + qwen3_rows(mirror) + nothink_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
