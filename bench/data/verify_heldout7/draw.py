"""Draw the seventh held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key being the file's path
(for a gaokao group, pooled over its runs, ``experiment/model``; for the gpt-4.1 file,
``path:condition``). The labels are in
labels.tsv, written by hand by reading each drawn output before any verifier ran on it. No verifier or
grader is run here.

    python bench/data/verify_heldout7/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout7/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "22g"
HERE = Path(__file__).parent
ID_PREFIX = "g"

GAOKAO = "iamyb/llm-gaokao-math-eval"
GAOKAO_COMMIT = "7b58eaf4574046c73e49cd75590dd4e30bfe3adf"
# the 2026 national paper 1 (the 14 objective questions: single choice, multiple choice, fill in the
# blank), three runs per model; `response` is the model's answer message (its thinking is a separate
# field, `reasoning_content`, not kept). Two prompts: without and with the question type in the prompt.
GAOKAO_PAPER = "2026全国1(山东,广东,湖南,湖北,河北,江苏,福建,浙江,河南,江西,安徽)"
GAOKAO_RUNS = (
    "2026_gaokao_math_quanguo1.json",
    "2026_gaokao_math_quanguo1_1.json",
    "2026_gaokao_math_quanguo1_2.json",
)
# (experiment folder, model folder, family, how many of its runs, prompt, rows drawn from the pooled runs)
GAOKAO_GROUPS = [
    ("2026_gaokao_math_ng1_qwen_vs_gemma", "gemma-4-26B-A4B-it-UD-Q6_K_XL", "Gemma", 3, "untyped", 25),
    ("2026_gaokao_math_ng1_qwen_vs_gemma", "gemma-4-31B-it-UD-Q6_K_XL", "Gemma", 3, "untyped", 25),
    ("2026_gaokao_math_ng1_type_qwen_vs_gemma", "gemma-4-26B-A4B-it-UD-Q6_K_XL", "Gemma", 3, "typed", 10),
    ("2026_gaokao_math_ng1_type_qwen_vs_gemma", "gemma-4-31B-it-UD-Q6_K_XL", "Gemma", 3, "typed", 10),
    ("2026_gaokao_math_ng1_qwen_vs_gemma", "Qwen3.5-4B-UD-Q8_K_XL-MTP", "Qwen", 1, "untyped", 10),
    ("2026_gaokao_math_ng1_qwen_vs_gemma", "Qwen3.5-9B-UD-Q6_K_XL-MTP", "Qwen", 1, "untyped", 10),
    ("2026_gaokao_math_ng1_qwen_vs_gemma", "Qwen3.6-35b-A3B-UD-Q6_K_XL-MTP", "Qwen", 3, "untyped", 25),
    ("2026_gaokao_math_ng1_type_qwen_vs_gemma", "Qwen3.6-35b-A3B-UD-Q6_K_XL-MTP", "Qwen", 3, "typed", 15),
    ("2026_gaokao_math_ng1_deepseek_flash_vs_qwen_36_27b", "deepseek-v4-flash", "DeepSeek", 3, "untyped", 30),
]
GAOKAO_PROMPTS = {
    "untyped": "'请解答以下数学题。逐步推理，将最终答案放在 \\boxed{} 中。'",
    "typed": "the question type named in the prompt ('（单选题）' / '（多选题）' / '（填空题）'), "
    "answer in \\boxed{}",
}
OPTION_LINE = re.compile(r"^([A-E])[.．、]", re.MULTILINE)

MATH_GPT4 = "sieu-n/llm-math-benchmark"
# the run's results are in this commit only (the copy's default branch is older)
MATH_GPT4_COMMIT = "e4ec60443091d13905c7814f23d796fe05664ece"
MATH_GPT4_DIR = "results/math-csv-repro/exp-2024-02-17_20-50-54"
MATH_GPT4_ROWS = 60

RFT = "Haskely/gsm8k-rft-llama7b-u13b_evaluation"
RFT_COMMIT = "2d123ff92f0943eecc4bf02221bfab124feddc9c"
# OFA-Sys/gsm8k-rft-llama7b-u13b (LLaMA-7B fine-tuned on rejection-sampled GSM8K solutions) on the GSM8K
# test set, Alpaca prompt, greedy; the fp32 run with the attention mask passed, and a bf16 batched run
# whose pad tokens leaked into the context (the README's own finding). (run folder, what it is, rows)
RFT_RUNS = [
    ("output_torch.float32_bs32", "fp32, batch 32, attention mask passed", 60),
    ("output_bf16_bs64", "bf16, batch 64, pad tokens attended", 10),
]

PILOT = "lunaatang/llm-math-reasoning-eval"
PILOT_COMMIT = "b4ad2039844c9032c166bebf5655002679fca24a"
# a robustness pilot: twelve algebra/number-theory/geometry problems, each also rewritten four ways
# (problem understanding, irrelevant disturbance, misleading hint, scenario reframe), solved by
# claude-sonnet-5 ('Final Answer: \\boxed{...}' asked); `raw_response` is the whole reply.
# (path, what it is, rows)
PILOT_FILES = [
    ("results/stable_results.jsonl", "five runs over the frozen variants", 30),
    ("results/mathcheck_results.jsonl", "one run, variants generated on the fly", 10),
]

CAREFUL = "Hypogenic-AI/careful-llm-words-claude"
CAREFUL_COMMIT = "1a5dd7b3cc9ad0c17a9d021163e61a430b46fe91"
CAREFUL_PATH = "results/gsm8k_results.json"
# gpt-4.1 at temperature 0 on 100 GSM8K test questions under three prompts; `full_response` is the
# whole reply (the sentence-thinking prompt asks for a '[THINKING: ...]' block after every sentence,
# all prompts ask for '#### N'). (condition, what the prompt asks, rows)
CAREFUL_CONDITIONS = [
    ("sentence_thinking", "a '[THINKING: ...]' block after every sentence, then '#### N'", 12),
    ("cot", "step by step, then '#### N'", 8),
]


def jsonl_at(mirror: Mirror, repo: str, commit: str, path: str) -> list[dict]:
    return [json.loads(line) for line in read_at(mirror, repo, commit, path).splitlines() if line.strip()]


def without_dollars(gold: str) -> str:
    """The corpora's golds have one layer of ``$...$`` removed (bench/data/README.md, "Row format")."""
    return gold[1:-1] if len(gold) > 1 and gold.startswith("$") and gold.endswith("$") else gold


def gaokao_rows(mirror: Mirror) -> list[dict]:
    out = []
    for experiment, model, family, runs, prompt, n in GAOKAO_GROUPS:
        pool = []
        for run in GAOKAO_RUNS[:runs]:
            path = f"eval/results/{experiment}/2026/{GAOKAO_PAPER}/{model}/{run}"
            cases = json.loads(read_at(mirror, GAOKAO, GAOKAO_COMMIT, path))["task_states"]["cases"]
            for task_id in sorted(cases):
                # a case whose request got no reply stores `response: null`: not a model output
                if cases[task_id]["response"] is not None:
                    pool.append((path, task_id, cases[task_id]))
        key = f"{experiment}/{model}"
        picked = heldout_draw.rng_for(SEED, GAOKAO, key).sample(range(len(pool)), n)
        for i in sorted(picked):
            path, task_id, case = pool[i]
            row = {
                "pred": case["response"],
                "gold": without_dollars(case["expected"]),
                "kind": "math",
                "source": f"{GAOKAO} {path}@{GAOKAO_COMMIT[:7]} case {task_id} model={model} "
                f"family={family} (2026 gaokao math, national paper 1, in Chinese; {GAOKAO_PROMPTS[prompt]})",
                "source_label": case["correct"],
            }
            letters = OPTION_LINE.findall(case["prompt"])
            if letters:
                row["options"] = letters
            out.append(row)
    return out


def math_gpt4_rows(mirror: Mirror) -> list[dict]:
    outputs = json.loads(read_at(mirror, MATH_GPT4, MATH_GPT4_COMMIT, f"{MATH_GPT4_DIR}/output-str.json"))
    verdicts = json.loads(read_at(mirror, MATH_GPT4, MATH_GPT4_COMMIT, f"{MATH_GPT4_DIR}/predictions.json"))
    pool = sorted(k for k in outputs if isinstance(outputs[k], str))
    picked = heldout_draw.rng_for(SEED, MATH_GPT4, MATH_GPT4_DIR).sample(pool, MATH_GPT4_ROWS)
    return [
        {
            "pred": outputs[k],
            "gold": verdicts[k]["answer"],
            "kind": "math",
            "source": f"{MATH_GPT4} {MATH_GPT4_DIR}/output-str.json@{MATH_GPT4_COMMIT[:7]} problem {k} "
            "model=gpt-4 (OpenAI assistant with code interpreter) family=GPT (MATH test, intermediate "
            "algebra; whole reply with code blocks and their printed results, answer in \\boxed{})",
            "source_label": verdicts[k]["is_equiv"],
        }
        for k in sorted(picked)
    ]


def rft_rows(mirror: Mirror) -> list[dict]:
    out = []
    for folder, what, n in RFT_RUNS:
        path = f"{folder}/gen_datas.jsonl"
        records = jsonl_at(mirror, RFT, RFT_COMMIT, path)
        correct = {r["index"] for r in json.loads(read_at(mirror, RFT, RFT_COMMIT, f"{folder}/correct.json"))}
        for i in sorted(heldout_draw.rng_for(SEED, RFT, path).sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r["output_str"],
                    "gold": r["gsm8k_data"]["answer"].rsplit("####", 1)[1].strip().replace(",", ""),
                    "kind": "gsm8k",
                    "source": f"{RFT} {path}@{RFT_COMMIT[:7]} line {i} (index {r['index']}) "
                    f"model=OFA-Sys/gsm8k-rft-llama7b-u13b family=Llama (GSM8K test, Alpaca prompt, {what}; "
                    "calculator marks, '#### N')",
                    "source_label": r["index"] in correct,
                }
            )
    return out


def pilot_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, what, n in PILOT_FILES:
        records = jsonl_at(mirror, PILOT, PILOT_COMMIT, path)
        for i in sorted(heldout_draw.rng_for(SEED, PILOT, path).sample(range(len(records)), n)):
            r = records[i]
            run = f", run {r['run']}" if "run" in r else ""
            out.append(
                {
                    "pred": r["raw_response"],
                    "gold": r["gold"],
                    "kind": "math",
                    "source": f"{PILOT} {path}@{PILOT_COMMIT[:7]} line {i} ({r['id']}, {r['variant']}{run}) "
                    f"model=claude-sonnet-5 family=Claude ({r['category']} problem, {what}; "
                    "'Final Answer: \\boxed{...}')",
                    "source_label": r["correct"],
                }
            )
    return out


def careful_rows(mirror: Mirror) -> list[dict]:
    results = json.loads(read_at(mirror, CAREFUL, CAREFUL_COMMIT, CAREFUL_PATH))
    out = []
    for condition, what, n in CAREFUL_CONDITIONS:
        records = results[condition]
        rng = heldout_draw.rng_for(SEED, CAREFUL, f"{CAREFUL_PATH}:{condition}")
        for i in sorted(rng.sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r["full_response"],
                    "gold": r["gold_answer"],
                    "kind": "gsm8k",
                    "source": f"{CAREFUL} {CAREFUL_PATH}@{CAREFUL_COMMIT[:7]} {condition}[{i}] model=gpt-4.1 "
                    f"family=GPT (GSM8K test, temperature 0; {what})",
                    "source_label": r["correct"],
                }
            )
    return out


def draw(mirror: Mirror) -> list[dict]:
    rows = (
        gaokao_rows(mirror)
        + math_gpt4_rows(mirror)
        + rft_rows(mirror)
        + pilot_rows(mirror)
        + careful_rows(mirror)
    )
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
