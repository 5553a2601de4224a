"""Draw the eighth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key being the file's path (for
a pooled group, the group's name). The labels are in labels.tsv, written by hand by reading each drawn
output before any verifier ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout8/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout8/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "34h8"
HERE = Path(__file__).parent
ID_PREFIX = "r"

csv.field_size_limit(1 << 30)

PS = "AGI-Edgerunners/Plan-and-Solve-Prompting"
PS_COMMIT = "9d5a176f5b4de1011d426009ab6398dc76046e88"
# text-davinci-003, zero-shot, the PS+ trigger sentences ("Let's first understand the problem, extract
# relevant variables ... devise a plan ... show the answer"); `chain-of-thought` is the whole completion.
# (file under generated_result/, benchmark, kind, rows)
PS_FILES = [
    ("gsm8k-zero_shot-305-text-davinci-003.json", "GSM8K", "gsm8k", 16),
    ("SVAMP-zero_shot-307-text-davinci-003.json", "SVAMP", "gsm8k", 7),
    ("MultiArith-zero_shot-302-text-davinci-003.json", "MultiArith", "gsm8k", 6),
    ("AddSub-zero_shot-301-text-davinci-003.json", "AddSub", "gsm8k", 4),
    ("SingleEq-zeri_shot-301-text-davinci-003.json", "SingleEq", "gsm8k", 4),
    ("AQuA-zero_shot-305-text-davinci-003.json", "AQuA", "math", 12),
]
AQUA_OPTIONS = re.compile(r"\(([A-E])\)")

ROUTELLM = "lm-sys/RouteLLM"
ROUTELLM_COMMIT = "0b64fdafe049e596a3f5657c219329f24af24198"
ROUTELLM_RESPONSES = "routellm/evals/gsm8k/gsm8k_responses.csv"
ROUTELLM_TEST = "routellm/evals/gsm8k/test.jsonl"
# (column, family, rows): both models answered every GSM8K test question; the CSV holds the whole reply
ROUTELLM_MODELS = [
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mistral", 50),
    ("gpt-4-1106-preview", "GPT", 14),
]

THESIS = "Mara4444/MSc_Thesis"
THESIS_COMMIT = "e8aa60343b1a5cc1bd76d4be30095f4cfa49dff6"
# Llama-2-chat (and BLOOMZ, English only) on MGSM (the 250 GSM8K problems; machine-translated for the
# languages MGSM lacks) with a zero-shot chain-of-thought or an answer-only instruction; every response CSV
# is one quoted "Response: ..." per line, in the order of the questions, without a header. The golds are
# the shared `answer_number` column of the translated MGSM files (every language has the same 250 answers
# in the same order).
THESIS_GOLDS = "datasets/mgsm/mgsm_ind_Latn.csv"
# (group, model, files, rows drawn from the pooled responses)
THESIS_NATIVE = [
    "German",
    "French",
    "Spanish",
    "Italian",
    "Portuguese",
    "Dutch",
    "Danish",
    "Indonesian",
    "Turkish",
    "Vietnamese",
    "Russian",
    "Chinese",
    "Japanese",
    "Korean",
    "Swahili",
    "Hindi",
]
THESIS_GROUPS = [
    (
        "llama-2-7b cot, instruction in the task's language",
        "meta-llama/Llama-2-7b-chat-hf",
        "Llama",
        [f"results/mgsm/llama-2-7b_mgsm_{lang}_cot_instr_{lang}.csv" for lang in THESIS_NATIVE],
        50,
    ),
    (
        "llama-2-7b basic (answer only), instruction in the task's language",
        "meta-llama/Llama-2-7b-chat-hf",
        "Llama",
        [f"results/mgsm/llama-2-7b_mgsm_{lang}_basic_instr_{lang}.csv" for lang in THESIS_NATIVE],
        10,
    ),
    (
        "llama-2-13b cot, English instruction",
        "meta-llama/Llama-2-13b-chat-hf",
        "Llama",
        [
            f"results/mgsm/llama-2-13b_mgsm_{lang}_cot_instr_English.csv"
            for lang in (
                "German",
                "French",
                "Spanish",
                "Indonesian",
                "Russian",
                "Chinese",
                "Japanese",
                "English",
            )
        ],
        14,
    ),
    (
        "bloomz-7b1 basic (answer only), English",
        "bigscience/bloomz-7b1",
        "BLOOM",
        ["results/mgsm/bloomz-7b1_mgsm_English_basic_instr_English.csv"],
        8,
    ),
    (
        "bloomz-7b1-chat basic (answer only), English",
        "bloomz-7b1-chat",
        "BLOOM",
        ["results/mgsm/bloomz-7b1-chat_mgsm_English_basic_instr_English.csv"],
        8,
    ),
]
# targeted draws over every Llama-2 MGSM response file of the repository (every language, both instruction
# languages, both prompts), for two forms the random draw above meets rarely: a number grouped by dots, and an
# answer marker of another language followed by an ASCII colon. A row drawn above is not drawn again.
# (group, pattern the response must contain, rows)
THESIS_LLAMA_FILES = re.compile(r"results/mgsm/llama-2-(7b|13b)_mgsm_.*\.csv")
THESIS_TARGETED = [
    (
        "Llama-2 responses holding a number grouped by dots",
        re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![\d.,]*\d)"),
        12,
    ),
    (
        "Llama-2 responses holding an answer marker of another language and a colon",
        re.compile(
            r"(Jawaban(?:nya)?|Antwort|Respuesta|Réponse|Risposta|Resposta|Antwoord|Svar|Cevap|Ответ|Відповідь|"
            r"Odpowiedź|Odpověď|Válasz|Răspuns|Trả lời|Đáp án|答案|答え|정답|Jibu|उत्तर|คำตอบ)\s*:",
            re.IGNORECASE,
        ),
        12,
    ),
]

STORY = "ChicagoHAI/story-cot-nlp-0ab6"
STORY_COMMIT = "3da2e5e7ec09e9194df58a630ab59d7c9cacce5f"
STORY_PATH = "results/raw_outputs.jsonl"
# Qwen2.5-0.5B-Instruct on ten GSM8K test questions under four prompt styles (direct, stepwise CoT, story
# CoT, story with self-consistency); `raw_output` is the whole reply
STORY_ROWS = 40

LAZY = "Hypogenic-AI/fix-lazy-llms-gemini"
LAZY_COMMIT = "984ab9992464ba538f7965456f1ae59e551a6c47"
# gpt-4o-mini (through OpenRouter) on 50 GSM8K test questions under several system prompts: the first file
# holds four replies per question (baseline, harsh critic, budget control, combined), the others one
LAZY_FILES = [
    "results/raw_results_gsm8k.jsonl",
    "results/raw_results_gsm8k_polite.jsonl",
    "results/raw_results_gsm8k_reflexion.jsonl",
    "results/raw_results_gsm8k_skeptical.jsonl",
    "results/raw_results_gsm8k_skeptical_combined.jsonl",
]
LAZY_ROWS = 25

DRIFT = "lchen001/LLMDrift"
DRIFT_COMMIT = "4938eb720aed5210dd2153644fa35cf38b9c6d26"
# four OpenAI chat snapshots (gpt-3.5-turbo-0301/0613, gpt-4-0314/0613) on two math tasks, 2023:
# "Is N a prime number? Think step by step and then answer "[Yes]" or "[No]"." and "How many happy numbers are
# there between A and B? Think step by step and then answer within "\boxed" (e.g, \boxed{10})."
# (file, what, rows drawn per model)
DRIFT_FILES = [
    ("generation/PRIME_FULL_EVAL.csv", "prime", 3),
    ("generation/COUNTAHAPPYNUMBER_EVAL.csv", "happy numbers", 4),
]

CONV = "Hypogenic-AI/chain-of-thought-conv-1189-codex"
CONV_COMMIT = "497fcf551aa74852893ee41533059102e197ae65"
CONV_PATH = "results/raw/model_outputs.jsonl"
# claude-sonnet-4.5 (through OpenRouter) and gpt-4.1 on 15 GSM8K test questions, two repeats, with and
# without a chain-of-thought instruction; the prompt asks for a last line 'FINAL_ANSWER: <answer>'.
# (model, family, rows)
CONV_MODELS = [
    ("anthropic/claude-sonnet-4.5", "Claude", 30),
    ("gpt-4.1", "GPT", 8),
]


def files_at(mirror: Mirror, repo: str, commit: str, folder: str) -> list[str]:
    command = ["git", f"--git-dir={mirror.git_dir(repo)}", "ls-tree", "--name-only", f"{commit}:{folder}"]
    names = subprocess.run(command, check=True, capture_output=True).stdout.decode("utf-8").split("\n")
    return sorted(f"{folder}/{name}" for name in names if name)


def jsonl_at(mirror: Mirror, repo: str, commit: str, path: str) -> list[dict]:
    return [json.loads(line) for line in read_at(mirror, repo, commit, path).splitlines() if line.strip()]


def gsm8k_gold(solution: str) -> str:
    """The number after GSM8K's ``####``, thousands commas removed."""
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def number_gold(value: float | str) -> str:
    """A gold stored as a float (``18.0``) written as the number it is (``18``, ``0.5``)."""
    number = float(value)
    return str(int(number)) if number == int(number) else repr(number)


def ps_rows(mirror: Mirror) -> list[dict]:
    out = []
    for name, benchmark, kind, n in PS_FILES:
        path = f"generated_result/{name}"
        records = json.loads(read_at(mirror, PS, PS_COMMIT, path))
        for i in sorted(heldout_draw.rng_for(SEED, PS, path).sample(range(len(records)), n)):
            r = records[i]
            row = {
                "pred": r["chain-of-thought"],
                "gold": r["answer"] if kind == "math" else number_gold(r["answer"]),
                "kind": kind,
                "source": f"{PS} {path}@{PS_COMMIT[:7]} record {i} ({r['ID']}) "
                f"model=text-davinci-003 family=GPT "
                f"({benchmark}, zero-shot plan-and-solve prompt; the completion after the trigger sentence)",
                "source_label": bool(r["ans"]),
            }
            if kind == "math":
                row["options"] = AQUA_OPTIONS.findall(r["question"].split("Answer Choices:")[1])
            out.append(row)
    return out


def routellm_rows(mirror: Mirror) -> list[dict]:
    golds = {
        r["question"]: gsm8k_gold(r["answer"])
        for r in jsonl_at(mirror, ROUTELLM, ROUTELLM_COMMIT, ROUTELLM_TEST)
    }
    records = list(
        csv.DictReader(io.StringIO(read_at(mirror, ROUTELLM, ROUTELLM_COMMIT, ROUTELLM_RESPONSES)))
    )
    out = []
    for column, family, n in ROUTELLM_MODELS:
        rng = heldout_draw.rng_for(SEED, ROUTELLM, f"{ROUTELLM_RESPONSES}:{column}")
        for i in sorted(rng.sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r[f"{column}_response"],
                    "gold": golds[r["prompt"]],
                    "kind": "gsm8k",
                    "source": f"{ROUTELLM} {ROUTELLM_RESPONSES}@{ROUTELLM_COMMIT[:7]} row {i} model={column} "
                    f"family={family} (GSM8K test; gold from {ROUTELLM_TEST} by question)",
                    "source_label": r[column] == "True",
                }
            )
    return out


def thesis_rows(mirror: Mirror) -> list[dict]:
    gold_rows = list(
        csv.reader(io.StringIO(read_at(mirror, THESIS, THESIS_COMMIT, THESIS_GOLDS)), delimiter=";")
    )
    golds = [row[-1].strip() for row in gold_rows[1:]]

    def responses(path: str) -> list[str]:
        rows = list(csv.reader(io.StringIO(read_at(mirror, THESIS, THESIS_COMMIT, path)), delimiter=";"))
        if len(rows) != len(golds):
            raise SystemExit(f"{path}: {len(rows)} responses for {len(golds)} questions")
        return [row[0] for row in rows]

    def row(path: str, i: int, text: str, model: str, family: str, group: str) -> dict:
        return {
            "pred": text,
            "gold": golds[i],
            "kind": "gsm8k",
            "source": f"{THESIS} {path}@{THESIS_COMMIT[:7]} question {i} model={model} family={family} "
            f"(MGSM, {group}; gold: {THESIS_GOLDS} row {i})",
            "source_label": None,
        }

    out = []
    drawn = set()
    for group, model, family, paths, n in THESIS_GROUPS:
        pool = [(path, i, text) for path in paths for i, text in enumerate(responses(path))]
        for j in sorted(heldout_draw.rng_for(SEED, THESIS, group).sample(range(len(pool)), n)):
            path, i, text = pool[j]
            drawn.add((path, i))
            out.append(row(path, i, text, model, family, group))
    llama_files = [
        p for p in files_at(mirror, THESIS, THESIS_COMMIT, "results/mgsm") if THESIS_LLAMA_FILES.fullmatch(p)
    ]
    texts = {path: responses(path) for path in llama_files}
    for group, pattern, n in THESIS_TARGETED:
        pool = [
            (path, i, text)
            for path in llama_files
            for i, text in enumerate(texts[path])
            if (path, i) not in drawn and pattern.search(text)
        ]
        for j in sorted(heldout_draw.rng_for(SEED, THESIS, group).sample(range(len(pool)), n)):
            path, i, text = pool[j]
            drawn.add((path, i))
            model = (
                "meta-llama/Llama-2-13b-chat-hf" if "llama-2-13b" in path else "meta-llama/Llama-2-7b-chat-hf"
            )
            out.append(row(path, i, text, model, "Llama", f"targeted: {group}"))
    return out


def story_rows(mirror: Mirror) -> list[dict]:
    records = [r for r in jsonl_at(mirror, STORY, STORY_COMMIT, STORY_PATH) if r["dataset"] == "gsm8k"]
    picked = heldout_draw.rng_for(SEED, STORY, STORY_PATH).sample(range(len(records)), STORY_ROWS)
    return [
        {
            "pred": records[i]["raw_output"],
            "gold": number_gold(records[i]["gold"]),
            "kind": "gsm8k",
            "source": f"{STORY} {STORY_PATH}@{STORY_COMMIT[:7]} gsm8k record {i} ({records[i]['sample_id']}, "
            f"{records[i]['style']}) model=Qwen/Qwen2.5-0.5B-Instruct family=Qwen (GSM8K test)",
            "source_label": records[i]["correct"],
        }
        for i in sorted(picked)
    ]


def lazy_rows(mirror: Mirror) -> list[dict]:
    pool = []
    for path in LAZY_FILES:
        for line, r in enumerate(jsonl_at(mirror, LAZY, LAZY_COMMIT, path)):
            data = r["original_data"]
            if isinstance(data, str):  # written with str() in the later runs
                data = ast.literal_eval(data)
            replies = r["responses"] if "responses" in r else {"reply": r["response"]}
            for style, text in replies.items():
                pool.append((path, line, style, text, gsm8k_gold(data["answer"])))
    picked = heldout_draw.rng_for(SEED, LAZY, "pooled").sample(range(len(pool)), LAZY_ROWS)
    return [
        {
            "pred": pool[j][3],
            "gold": pool[j][4],
            "kind": "gsm8k",
            "source": f"{LAZY} {pool[j][0]}@{LAZY_COMMIT[:7]} record {pool[j][1]} ({pool[j][2]}) "
            "model=gpt-4o-mini "
            "family=GPT (GSM8K test)",
            "source_label": None,
        }
        for j in sorted(picked)
    ]


def drift_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, what, n in DRIFT_FILES:
        records = list(csv.DictReader(io.StringIO(read_at(mirror, DRIFT, DRIFT_COMMIT, path))))
        for model in sorted({r["model"] for r in records}):
            rows = [i for i, r in enumerate(records) if r["model"] == model]
            rng = heldout_draw.rng_for(SEED, DRIFT, f"{path}:{model}")
            for i in sorted(rng.sample(rows, n)):
                r = records[i]
                gold = r["ref_answer"]
                boxed = re.fullmatch(r"\\+boxed\{(.*)\}", gold)
                out.append(
                    {
                        "pred": r["answer"],
                        # the happy-number golds are stored as '\\boxed{N}': the value is N
                        "gold": boxed.group(1) if boxed else gold,
                        "kind": "math",
                        "source": f"{DRIFT} {path}@{DRIFT_COMMIT[:7]} row {i} (id {r['id']}) "
                        f"model={model.split('/')[-1]} family=GPT ({what}; '{r['query']}')",
                        "source_label": None,
                    }
                )
    return out


def conv_rows(mirror: Mirror) -> list[dict]:
    records = jsonl_at(mirror, CONV, CONV_COMMIT, CONV_PATH)
    out = []
    for model, family, n in CONV_MODELS:
        lines = [i for i, r in enumerate(records) if r["task"] == "gsm8k" and r["model"] == model]
        for i in sorted(heldout_draw.rng_for(SEED, CONV, f"{CONV_PATH}:{model}").sample(lines, n)):
            r = records[i]
            out.append(
                {
                    "pred": r["raw_output"],
                    "gold": r["gold"],
                    "kind": "gsm8k",
                    "source": f"{CONV} {CONV_PATH}@{CONV_COMMIT[:7]} record {i} (item {r['item_id']}, "
                    f"repeat {r['repeat']}, {r['condition']}) model={model} family={family} "
                    "(GSM8K test; 'FINAL_ANSWER: <answer>' asked)",
                    "source_label": None,
                }
            )
    return out


def draw(mirror: Mirror) -> list[dict]:
    rows = (
        ps_rows(mirror)
        + routellm_rows(mirror)
        + thesis_rows(mirror)
        + story_rows(mirror)
        + lazy_rows(mirror)
        + drift_rows(mirror)
        + conv_rows(mirror)
    )
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
