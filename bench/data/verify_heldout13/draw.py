"""Draw the thirteenth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key naming the pool (the
results file). The labels are in labels.tsv, written by hand by reading each drawn output before any verifier
ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout13/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout13/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror  # noqa: E402

SEED = "g1h13"
HERE = Path(__file__).parent
ID_PREFIX = "n"

NNU = "handsomeZR-netizen/nnu-nlp-gsm8k-coursework-2026"
NNU_COMMIT = "d15aafa20c72f304f7a7458ac4ebf4bde3b3a15c"
NNU_DIR = "第二次/gsm8k_seq2seq_transformer/runs"
# GSM8K test (1,319 questions) run through DeepSeek's API (deepseek-v4-flash, deepseek-v4-pro; a '#### N'
# last line asked) and Qwen2.5-Math-1.5B-Instruct few-shot with 512 new tokens. Each record keeps the whole
# reply (`prediction`; for the Qwen run `raw_prediction`, `prediction` being the source's normalized copy),
# the GSM8K solution as gold (`gold`, the value after '####' taken here) and the source's `strict_correct`.
# (run folder, family, rows)
NNU_RUNS = [
    ("deepseek_v4_flash", "DeepSeek", 30),
    ("deepseek_v4_pro", "DeepSeek", 30),
    ("qwen25_math_15b_few_shot_512", "Qwen", 35),
]

GSM = "shreyshahi/gsm8k-evals"
GSM_COMMIT = "00cd21437a35e29984d8bcbd79dbee13f2ab6d2b"
# ten GSM8K problems asked of gpt-4o and gpt-4o-mini under three prompts ('Please solve the following
# problem: ...', the same with a line break, and 'Provide a direct and concise answer ... Only output the
# answer and nothing else'); each record keeps the problem with its GSM8K solution, the reply
# (`traces[-1].response`) and the source's `is_correct` (a gpt-4o-mini extraction compared as a string).
GSM_FILES = [
    ("basetechnique", "gpt-4o"),
    ("basetechnique", "gpt-4o-mini"),
    ("basewithbreakstechnique", "gpt-4o"),
    ("basewithbreakstechnique", "gpt-4o-mini"),
    ("straighttoanswer", "gpt-4o"),
    ("straighttoanswer", "gpt-4o-mini"),
]
GSM_ROWS = 6

AIME = "pingzhili/lm-reasoning-eval"
AIME_COMMIT = "3b586a2fa5460f189214518a9650eae1ea8e472e"
AIME_PATH = (
    "data/evals/Qwen/Qwen3-32B/details/Qwen/Qwen3-32B/2025-07-11T09-28-07.098405/"
    "details_lighteval|aime24|0_2025-07-11T09-28-07.098405.parquet"
)
# lighteval's AIME 2024 run of Qwen3-32B (30 problems, one sample each; the prompt asks for a last line
# 'Therefore, the final answer is: $\boxed{ANSWER}$. I hope it is correct'); each record keeps the whole
# reply (`model_response.text[0]`), the gold (`doc.choices[gold_index]`) and the source's math_pass@1.
AIME_ROWS = 12


def read_bytes_at(mirror: Mirror, repo: str, commit: str, path: str) -> bytes:
    command = ["git", f"--git-dir={mirror.git_dir(repo)}", "show", f"{commit}:{path}"]
    return subprocess.run(command, check=True, capture_output=True).stdout


def read_at(mirror: Mirror, repo: str, commit: str, path: str) -> str:
    return read_bytes_at(mirror, repo, commit, path).decode("utf-8")


def nnu_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for run, family, n in NNU_RUNS:
        path = f"{NNU_DIR}/{run}/test_predictions.jsonl"
        text = read_at(mirror, NNU, NNU_COMMIT, path)
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        for i in sorted(heldout_draw.rng_for(SEED, NNU, path).sample(range(len(records)), n)):
            r = records[i]
            rows.append(
                {
                    "pred": r.get("raw_prediction", r["prediction"]),
                    "gold": r["gold"].split("####")[-1].strip(),
                    "kind": "gsm8k",
                    "source": f"{NNU} {path}@{NNU_COMMIT[:7]} record {i} ({r['id']}) "
                    f"model={r['model_name']} family={family} (GSM8K test)",
                    "source_label": bool(r["strict_correct"]),
                }
            )
    return rows


def gsm_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for technique, model in GSM_FILES:
        path = f"src/traces/{technique}_{model.replace('-', '_')}_traces.json"
        records = json.loads(read_at(mirror, GSM, GSM_COMMIT, path))
        for i in sorted(heldout_draw.rng_for(SEED, GSM, path).sample(range(len(records)), GSM_ROWS)):
            r = records[i]
            rows.append(
                {
                    "pred": r["traces"][-1]["response"],
                    "gold": r["problem"]["answer"].split("####")[-1].strip(),
                    "kind": "gsm8k",
                    "source": f"{GSM} {path}@{GSM_COMMIT[:7]} record {i} model={model} family=GPT "
                    f"(GSM8K; prompt {technique})",
                    "source_label": bool(r["is_correct"]),
                }
            )
    return rows


def aime_rows(mirror: Mirror) -> list[dict]:
    import pyarrow.parquet as pq

    data = read_bytes_at(mirror, AIME, AIME_COMMIT, AIME_PATH)
    records = pq.read_table(io.BytesIO(data)).to_pylist()
    rows = []
    for i in sorted(heldout_draw.rng_for(SEED, AIME, AIME_PATH).sample(range(len(records)), AIME_ROWS)):
        r = records[i]
        doc = r["doc"]
        rows.append(
            {
                "pred": r["model_response"]["text"][0],
                "gold": doc["choices"][doc["gold_index"]],
                "kind": "math",
                "source": f"{AIME} {AIME_PATH}@{AIME_COMMIT[:7]} record {i} (AIME 2024 id {doc['id']}) "
                "model=Qwen3-32B family=Qwen (lighteval aime24, 'Therefore, the final answer is: "
                "$\\boxed{ANSWER}$' asked)",
                "source_label": r["metric"]["math_pass@1:1_samples"] == 1.0,
            }
        )
    return rows


def draw(mirror: Mirror) -> list[dict]:
    rows = nnu_rows(mirror) + gsm_rows(mirror) + aime_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
