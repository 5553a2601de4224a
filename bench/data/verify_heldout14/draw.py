"""Draw the fourteenth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key naming the pool (the
results file). The labels are in labels.tsv, written by hand by reading each drawn output before any verifier
ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout14/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout14/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, json_lines, read_at  # noqa: E402

SEED = "g1h14"
HERE = Path(__file__).parent
ID_PREFIX = "p"

GROUND = "7174Andy/grounding-llm-gsm8k"
GROUND_COMMIT = "a70bc22a2060d23a1cbebfe835cfd703494d6572"
# GSM8K test questions answered by Llama-3.1-8B-Instruct, Qwen2-7B-Instruct and gemma-2-9b-it, plain and
# under activation steering. SEAL/<model>_SEAL/baseline_predictions.json (1,000 questions; the prompt asks
# for step-by-step reasoning "then state your final answer as 'Answer: <NUMBER>' on a new line") keeps the
# reply (`model_generation`) and the gold number (`answer`); SEAL/<model>_SEAL/predictions.json (132
# questions, the steered run; the same 'Answer: <NUMBER>' asked) keeps the reply (`model_generation`) and
# the gold number in `solution` (the two fields are swapped there) and the source's `generated_answer`.
# GCAV/steered_gsm8k_results_<model>_layer<N>.json (132 questions, steered at one layer; the system prompt
# asks for "\boxed{}") keeps the whole decoded text, chat-template words and prompt included (`pred`), the
# gold (`gt`) and the source's `generated_answer`. All are JSON lines.
# (model folder or file stem, model, family, rows)
SEAL_BASE = [
    ("Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct", "Llama", 10),
    ("Qwen2-7B-Instruct", "Qwen2-7B-Instruct", "Qwen", 10),
    ("gemma-2-9b-it", "gemma-2-9b-it", "Gemma", 10),
]
SEAL_STEERED_ROWS = 6
GCAV = [
    ("llama", "Llama-3.1-8B-Instruct", "Llama"),
    ("qwen", "Qwen2-7B-Instruct", "Qwen"),
    ("gemma", "gemma-2-9b-it", "Gemma"),
]
GCAV_LAYERS = (10, 15)
GCAV_ROWS = 4

TEGRA = "bkubwimana/tegra_monitor"
TEGRA_COMMIT = "b9d0fcb624b138983497772f3dc9a0d95c6f75f7"
# DeepScaleR-1.5B-Preview on the 30 AIME 2024 problems, one sample each (t=0.6), under seven limits on new
# tokens; eval/sweep_results/sweep_tokens_<T>/.../<T>t_test2024_qwen-instruct_t0.6_k1_s0_e30.jsonl keeps
# the whole reply (`generated_responses[0]`, `<think>` opened by the model), the gold (`gold_answer`) and
# the source's `is_correct`. The branch holding the runs is not the copy's HEAD (a README-only commit).
# (token limit, rows)
TEGRA_RUNS = [(8192, 14), (4096, 10), (2048, 5), (1024, 3), (512, 2), (128, 1)]

GYM = "NVIDIA-NeMo/Gym"
GYM_HEAD = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"
GYM_OLD = "3be21c2cf865bd5112659359c4773af1135a228f"
# Example rollouts of NeMo Gym's math environments (OpenMathReasoning problems, AIME 2025 problems from
# NeMo-Skills' comp-math-24-25, IMO-AnswerBench; "Make sure to put the answer (and only answer) inside
# \boxed{}"), five records a file, each keeping the Responses-API output (reasoning
# items, tool calls and their outputs, assistant messages), the gold (`expected_answer`) and the source's
# `reward`. The row's output is the text of the assistant messages, in order, joined by a blank line (tool
# calls, tool outputs and encrypted reasoning are not text the model wrote as its answer).
# (commit, path, model, family, problems, rows: None for every record)
GYM_FILES = [
    (
        GYM_OLD,
        "resources_servers/library_judge_math/data/example_rollouts.jsonl",
        "gpt-4.1",
        "GPT",
        "OpenMathReasoning",
        None,
    ),
    (
        GYM_HEAD,
        "resources_servers/math_with_judge/data/example_rollouts.jsonl",
        "gpt-5",
        "GPT",
        "OpenMathReasoning",
        None,
    ),
    (
        GYM_HEAD,
        "responses_api_agents/claude_code_agent/data/example_math_rollouts.jsonl",
        "Qwen3-4B-Instruct-2507",
        "Qwen",
        "OpenMathReasoning",
        None,
    ),
    (
        GYM_HEAD,
        "responses_api_agents/hermes_agent/data/example_math_rollouts.jsonl",
        "policy_model (not named)",
        "unnamed",
        "OpenMathReasoning",
        None,
    ),
    (
        GYM_HEAD,
        "resources_servers/ns_tools/data/example_rollouts.jsonl",
        "NVIDIA-Nemotron-3-Nano-30B-A3B",
        "Nemotron",
        "AIME 2025, comp-math-24-25",
        None,
    ),
    (
        GYM_HEAD,
        "resources_servers/math_with_autograder/data/example_rollouts.jsonl",
        "nvidia-nemotron-nano-9b-v2",
        "Nemotron",
        "IMO-AnswerBench",
        2,
    ),
]


def drawn_indices(repo: str, path: str, n: int | None, total: int) -> list[int]:
    if n is None:
        return list(range(total))
    return sorted(heldout_draw.rng_for(SEED, repo, path).sample(range(total), n))


def ground_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for folder, model, family, n in SEAL_BASE:
        path = f"SEAL/{folder}_SEAL/baseline_predictions.json"
        records = json_lines(read_at(mirror, GROUND, GROUND_COMMIT, path))
        for i in drawn_indices(GROUND, path, n, len(records)):
            r = records[i]
            rows.append(
                {
                    "pred": r["model_generation"],
                    "gold": r["answer"],
                    "kind": "gsm8k",
                    "source": f"{GROUND} {path}@{GROUND_COMMIT[:7]} record {i} model={model} family={family} "
                    "(GSM8K test; 'Answer: <NUMBER>' asked)",
                    "source_label": None,
                }
            )
    for folder, model, family, _ in SEAL_BASE:
        path = f"SEAL/{folder}_SEAL/predictions.json"
        records = json_lines(read_at(mirror, GROUND, GROUND_COMMIT, path))
        for i in drawn_indices(GROUND, path, SEAL_STEERED_ROWS, len(records)):
            r = records[i]
            rows.append(
                {
                    "pred": r["model_generation"],
                    "gold": r["solution"],
                    "kind": "gsm8k",
                    "source": f"{GROUND} {path}@{GROUND_COMMIT[:7]} record {i} model={model} (SEAL-steered) "
                    f"family={family} (GSM8K test; 'Answer: <NUMBER>' asked)",
                    "source_label": str(r["generated_answer"]).strip() == r["solution"].strip(),
                }
            )
    for stem, model, family in GCAV:
        for layer in GCAV_LAYERS:
            path = f"GCAV/steered_gsm8k_results_{stem}_layer{layer}.json"
            records = json_lines(read_at(mirror, GROUND, GROUND_COMMIT, path))
            for i in drawn_indices(GROUND, path, GCAV_ROWS, len(records)):
                r = records[i]
                rows.append(
                    {
                        "pred": r["pred"],
                        "gold": r["gt"],
                        "kind": "gsm8k",
                        "source": f"{GROUND} {path}@{GROUND_COMMIT[:7]} record {i} model={model} "
                        f"(GCAV-steered, layer {layer}) family={family} (GSM8K test; '\\boxed{{}}' asked; "
                        "prompt kept in the output)",
                        "source_label": str(r["generated_answer"]).strip() == r["gt"].strip(),
                    }
                )
    return rows


def tegra_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for tokens, n in TEGRA_RUNS:
        path = (
            f"eval/sweep_results/sweep_tokens_{tokens}/agentica-org/DeepScaleR-1.5B-Preview/aime/"
            f"{tokens}t_test2024_qwen-instruct_t0.6_k1_s0_e30.jsonl"
        )
        records = json_lines(read_at(mirror, TEGRA, TEGRA_COMMIT, path))
        for i in drawn_indices(TEGRA, path, n, len(records)):
            r = records[i]
            rows.append(
                {
                    "pred": r["generated_responses"][0],
                    "gold": r["gold_answer"],
                    "kind": "math",
                    "source": f"{TEGRA} {path}@{TEGRA_COMMIT[:7]} record {i} (AIME 2024 id {r['id']}) "
                    f"model=DeepScaleR-1.5B-Preview family=DeepSeek-R1-distill (Qwen) "
                    f"(at most {tokens} new tokens)",
                    "source_label": bool(r["is_correct"]),
                }
            )
    return rows


def assistant_text(record: dict) -> str:
    texts = [
        part["text"]
        for item in record["response"]["output"]
        if item.get("type") == "message" and item.get("role") == "assistant"
        for part in item.get("content") or []
        if part.get("type") == "output_text"
    ]
    return "\n\n".join(texts)


def gym_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for commit, path, model, family, problems, n in GYM_FILES:
        records = json_lines(read_at(mirror, GYM, commit, path))
        for i in drawn_indices(GYM, path, n, len(records)):
            r = records[i]
            gold = r["expected_answer"].strip()
            for left, right in (("\\(", "\\)"), ("$", "$")):
                if gold.startswith(left) and gold.endswith(right) and len(gold) > len(left) + len(right):
                    gold = gold[len(left) : -len(right)].strip()
            rows.append(
                {
                    "pred": assistant_text(r),
                    "gold": gold,
                    "kind": "math",
                    "source": f"{GYM} {path}@{commit[:7]} record {i} model={model} family={family} "
                    f"(served as {r['response']['model']}; {problems} problem, '\\boxed{{}}' asked)",
                    "source_label": r["reward"] == 1.0,
                }
            )
    return rows


def draw(mirror: Mirror) -> list[dict]:
    rows = ground_rows(mirror) + tegra_rows(mirror) + gym_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
