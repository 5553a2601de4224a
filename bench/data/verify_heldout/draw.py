"""Draw the held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{path}")``. The labels are in
labels.tsv, one line per row id, written by hand by reading each drawn output before any verifier
ran on it (columns: id, T/F, tag, NA where the output commits to no answer, note). No verifier or
grader is run here.

    python bench/data/verify_heldout/draw.py --mirror DIR          # DIR/owner+name/repo
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from pathlib import Path

SEED = 22
HERE = Path(__file__).parent

GSM_PLUS = "qtli/GSM-Plus"
MATH_V = "mathllm/MATH-V"
MATHVISTA = "lupantech/MathVista"
GRPO_LOGS = "damek/assignment5-alignment"

# (path, model as the source names it, rows)
GSM_PLUS_FILES = [
    ("results/gsm8k_results/gpt4.json", "GPT-4", 35),
    ("results/gsm8k_results/gpt-3.5-turbo.json", "GPT-3.5-Turbo", 35),
    ("results/gsm8k_results/metamath_70b.json", "MetaMath-70B (Llama-2)", 30),
    ("results/gsm8k_results/metamath_7b.json", "MetaMath-7B (Llama-2)", 20),
    ("results/gsm8k_results/abel_70b.json", "Abel-70B (Llama-2)", 30),
    ("results/gsm8k_results/abel_7b.json", "Abel-7B (Llama-2)", 15),
]
MATH_V_FILES = [
    ("outputs/closed-source/Gemini/Gemini-Pro-CoT.jsonl", "Gemini-Pro-Vision (CoT)", 25),
    ("outputs/closed-source/Qwen/Qwen-VL-Max-CoT.jsonl", "Qwen-VL-Max (CoT)", 25),
    ("outputs/open-source/Internlm/InternLM-XComposer2-VL-CoT.jsonl", "InternLM-XComposer2-VL (CoT)", 25),
    ("outputs/open-source/Sphinx/SPHINX-MoE.jsonl", "SPHINX-MoE (Mixtral-8x7B)", 15),
    ("outputs/open-source/LLavA/LLaVA-v1.5-13B.jsonl", "LLaVA-v1.5-13B (Vicuna/Llama-2)", 12),
    ("outputs/closed-source/GPT/GPT4-CoT (Text Only).jsonl", "GPT-4 (CoT, text only)", 20),
]
# at most this share of a MATH-V draw is multiple choice (a letter for gold)
MATH_V_CHOICE_SHARE = 1 / 3
MATHVISTA_FILES = [
    ("results/claude/output_claude.json", "Claude-2", 25),
    ("results/bard/output_bard.json", "Bard", 25),
    ("results/chatgpt/output_chatgpt.json", "ChatGPT (gpt-3.5-turbo)", 10),
]

# GRPO training logs that print sampled GSM8K rollouts (Generation / Metrics / GT Answer blocks)
GRPO_LOG_FILES = [
    (
        "cs336_alignment/outputs/grpo_train_loop_log.txt",
        "Qwen2.5-Math-1.5B (GRPO policy, r1-zero <think>/<answer> prompt)",
        25,
    ),
    (
        "cs336_alignment/outputs/grpo_prompt_ablation.txt",
        "Qwen2.5-Math-1.5B (GRPO policy, question-only prompt)",
        20,
    ),
]
GRPO_BLOCK = re.compile(r"Generation: (.*?)\nMetrics: +(\{.*?\})\nGT Answer: +(.*?)\n", re.S)


class Mirror:
    def __init__(self, root: Path):
        self.root = root

    def read(self, repo: str, path: str) -> str:
        git_dir = self.root / repo.replace("/", "+") / "repo"
        out = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"], check=True, capture_output=True
        )
        return out.stdout.decode("utf-8")


def rng_for(repo: str, path: str) -> random.Random:
    return random.Random(f"{SEED}:{repo}:{path}")


def gsm_plus_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, n in GSM_PLUS_FILES:
        data = json.loads(mirror.read(GSM_PLUS, path))
        for i in sorted(rng_for(GSM_PLUS, path).sample(range(len(data)), n)):
            r = data[i]
            pred = r.get("model_prediction", r.get("completion"))
            gold = r.get("gold", r.get("answer"))
            out.append(
                {
                    "pred": pred,
                    "gold": str(gold),
                    "kind": "gsm8k",
                    "source": f"{GSM_PLUS} {path} record {i} model={model} (GSM8K test)",
                    "source_label": r.get("result"),
                }
            )
    return out


def math_v_rows(mirror: Mirror) -> list[dict]:
    problems = {}
    for line in mirror.read(MATH_V, "data/test.jsonl").splitlines():
        p = json.loads(line)
        problems[p["id"]] = p
    out = []
    for path, model, n in MATH_V_FILES:
        rows = [json.loads(line) for line in mirror.read(MATH_V, path).splitlines() if line.strip()]
        order = rng_for(MATH_V, path).sample(range(len(rows)), len(rows))
        picked, choices = [], 0
        for i in order:
            is_choice = bool(problems[rows[i]["id"]]["options"])
            if is_choice and choices >= int(n * MATH_V_CHOICE_SHARE):
                continue
            choices += is_choice
            picked.append(i)
            if len(picked) == n:
                break
        for i in sorted(picked):
            r = rows[i]
            p = problems[r["id"]]
            out.append(
                {
                    "pred": r["response"],
                    "gold": p["answer"],
                    "kind": "math",
                    "source": f"{MATH_V} {path} record {i} (problem {r['id']}) model={model} (MATH-Vision)",
                    "source_label": r.get("correct"),
                    "options": p["options"],
                }
            )
    return out


def mathvista_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, n in MATHVISTA_FILES:
        data = json.loads(mirror.read(MATHVISTA, path))
        free = sorted((k for k, v in data.items() if v["question_type"] == "free_form"), key=int)
        for pid in sorted(rng_for(MATHVISTA, path).sample(free, n), key=int):
            r = data[pid]
            out.append(
                {
                    "pred": r["response"],
                    "gold": str(r["answer"]),
                    "kind": "math",
                    "source": f"{MATHVISTA} {path} pid {pid} model={model} (MathVista testmini, free form)",
                    "source_label": r.get("true_false"),
                    "question_hint": r["query"].split("\n", 1)[0],
                }
            )
    return out


def grpo_log_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, n in GRPO_LOG_FILES:
        blocks = GRPO_BLOCK.findall(mirror.read(GRPO_LOGS, path))
        for i in sorted(rng_for(GRPO_LOGS, path).sample(range(len(blocks)), n)):
            generation, metrics, gold = blocks[i]
            out.append(
                {
                    # the log prints one space after "Generation:" before the completion
                    "pred": generation[1:] if generation.startswith(" ") else generation,
                    "gold": gold.strip(),
                    "kind": "gsm8k",
                    "source": f"{GRPO_LOGS} {path} rollout block {i} model={model} (GSM8K)",
                    "source_label": "'answer_reward': 1.0" in metrics,
                }
            )
    return out


def draw(mirror: Mirror) -> list[dict]:
    # new sources go at the end, so that the ids of the rows drawn before stay as they are
    rows = gsm_plus_rows(mirror) + math_v_rows(mirror) + mathvista_rows(mirror) + grpo_log_rows(mirror)
    return [{"id": f"h{n:04d}", **row} for n, row in enumerate(rows, 1)]


def read_labels(path: Path) -> dict[str, dict]:
    labels = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row_id, equal, tag, no_answer, note = (line.split("\t") + ["", "", ""])[:5]
        labels[row_id] = {"equal": equal == "T", "tag": tag, "no_answer": no_answer == "NA", "note": note}
    return labels


def join(drawn: list[dict], labels: dict[str, dict]) -> list[dict]:
    if set(labels) != {row["id"] for row in drawn}:
        raise SystemExit("labels.tsv and the draw name different rows")
    out = []
    for row in drawn:
        lab = labels[row["id"]]
        joined = {k: row[k] for k in ("id", "pred", "gold", "kind")}
        joined["equal"] = lab["equal"]
        joined["source"] = row["source"]
        joined["tag"] = lab["tag"]
        if lab["no_answer"]:
            joined["no_answer"] = True
        if lab["note"]:
            joined["note"] = lab["note"]
        if row.get("options"):
            joined["options"] = row["options"]
        joined["source_label"] = row["source_label"]
        joined["heldout"] = True
        out.append(joined)
    return out


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mirror", type=Path, required=True, help="folder of bare git copies (owner+name/repo)"
    )
    args = parser.parse_args()
    drawn = draw(Mirror(args.mirror))
    write_jsonl(HERE / "heldout.jsonl", join(drawn, read_labels(HERE / "labels.tsv")))


if __name__ == "__main__":
    main()
