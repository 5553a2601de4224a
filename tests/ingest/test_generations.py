"""Generations find their items by the question a sampler asked or by the dataset's own id, in bulk: a
record with item_kind and prompt needs no id, vLLM's and lm-eval's outputs go in as those tools write
them (docs/bring-your-data.md's commands run here), and an output whose item is not found, or fits
several, is one line saying how it was looked up."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex

import pytest
from click.testing import CliRunner

from audits.loops import scan
from pairstore.cli import cli
from pairstore.errors import BadInput
from pairstore.ingest import batches
from pairstore.ingest.evals import ingest_evals
from pairstore.ingest.generations import ingest_generations
from pairstore.ingest.problems import ingest_problems
from pairstore.store.store import open_store
from pairstore.tables.evals import add_eval_items
from tests.paths import ROOT

QUESTIONS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. "
    "How much did she earn?",
]
TEMPLATE = "<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def gsm8k(tmp_path, questions=QUESTIONS):
    path = tmp_path / "gsm8k" / "train.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps({"question": q, "answer": f"Work.\n#### {i}"}) + "\n"
                            for i, q in enumerate(questions)))  # fmt: skip
    return path


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def stored(store, model):
    return store.rows(
        "SELECT g.item_kind, g.item_id, p.question, g.output, g.sample_index FROM generations g "
        "LEFT JOIN problems p ON p.problem_id = g.item_id WHERE model = ? ORDER BY g.output",
        [model],
    )


def test_a_record_names_its_problem_by_the_question_asked(store, tmp_path):
    ingest_problems(store, "gsm8k", path=gsm8k(tmp_path))
    recs = [
        {"item_kind": "problem", "prompt": QUESTIONS[0], "output": "72", "sample_index": 0},
        {
            "item_kind": "problem",
            "prompt": "  " + QUESTIONS[0].upper() + "  ",
            "output": "71",
            "sample_index": 1,
        },
        {"item_kind": "problem", "prompt": [{"role": "user", "content": QUESTIONS[1]}], "output": "$10"},
    ]
    got = ingest_generations(store, write(tmp_path / "g.jsonl", recs), model="so7a")
    assert (got.read, got.added) == (3, 3)
    rows = stored(store, "so7a")
    assert [(r["question"], r["output"]) for r in rows] == [(QUESTIONS[1], "$10"), (QUESTIONS[0], "71"),
                                                            (QUESTIONS[0], "72")]  # fmt: skip
    assert all(r["item_id"].startswith("gsm8k:") for r in rows)
    # the same outputs named by id are the same generations
    by_id = [{"item_kind": "problem", "item_id": rows[2]["item_id"], "output": "72", "sample_index": 0}]
    assert ingest_generations(store, write(tmp_path / "h.jsonl", by_id), model="so7a").added == 0


def test_a_problem_is_found_by_its_datasets_own_id(store, tmp_path):
    math = tmp_path / "math.jsonl"
    write(math, [{"problem": "Compute $1+1$.", "solution": "$\\boxed{2}$", "answer": "2",
                  "subject": "Algebra", "level": 1, "unique_id": "train/algebra/1.json"}])  # fmt: skip
    ingest_problems(store, "math", path=math)
    recs = [{"item_kind": "problem", "item_id": "train/algebra/1.json", "output": "2"}]
    ingest_generations(store, write(tmp_path / "g.jsonl", recs), model="m")
    assert store.scalar("SELECT item_id FROM generations") == store.scalar("SELECT problem_id FROM problems")


def test_an_unmatched_or_ambiguous_output_is_one_line_saying_how_it_was_looked_up(store, tmp_path):
    ingest_problems(store, "gsm8k", path=gsm8k(tmp_path, [*QUESTIONS, QUESTIONS[0] + "!!"]))
    miss = [{"item_kind": "problem", "prompt": QUESTIONS[1], "output": "a"},
            {"item_kind": "problem", "prompt": "A question nobody stored?", "output": "b"}]  # fmt: skip
    with pytest.raises(BadInput) as e:
        ingest_generations(store, write(tmp_path / "miss.jsonl", miss), model="m")
    assert (e.value.line, e.value.field) == (2, "prompt")
    assert "no stored problem has this question (looked up by the prompt's match key" in str(e.value)
    twice = [{"item_kind": "problem", "prompt": QUESTIONS[0], "output": "a"}]
    with pytest.raises(BadInput, match=r"line 1, field 'prompt': the question fits 2 stored problems"):
        ingest_generations(store, write(tmp_path / "twice.jsonl", twice), model="m")
    by_id = [{"item_kind": "problem", "item_id": "gsm8k:nope", "output": "a"}]
    with pytest.raises(BadInput, match=r"no problem with id 'gsm8k:nope' .*looked up by problem_id and the"):
        ingest_generations(store, write(tmp_path / "id.jsonl", by_id), model="m")
    assert store.scalar("SELECT count(*) FROM generations") == 0


def test_ten_thousand_outputs_by_question_are_read_as_whole_columns(store, tmp_path, monkeypatch):
    taken = []
    real = batches.Reading.direct_table
    monkeypatch.setattr(batches.Reading, "direct_table", lambda *a: taken.append(1) or real(*a))
    questions = [f"Question number {i}: what is {i} plus {i}?" for i in range(500)]
    ingest_problems(store, "gsm8k", path=gsm8k(tmp_path, questions))
    recs = [{"item_kind": "problem", "prompt": q.lower(), "output": f"{2 * i} ({k})", "sample_index": k}
            for k in range(20) for i, q in enumerate(questions)]  # fmt: skip
    got = ingest_generations(store, write(tmp_path / "g.jsonl", recs), model="m")
    assert got.added == 10_000 and taken
    assert store.scalar("SELECT count(DISTINCT item_id) FROM generations") == 500


# -- vLLM and lm-eval, as docs/bring-your-data.md shows them -------------------------------------------


@dataclasses.dataclass
class CompletionOutput:  # vllm.outputs.CompletionOutput's fields, as dataclasses.asdict writes them
    index: int
    text: str
    token_ids: list
    cumulative_logprob: float | None
    logprobs: list | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


def vllm_file(path, questions):
    """What the script of docs/bring-your-data.md writes: one RequestOutput a line, a chat template applied
    to the second."""
    with open(path, "w") as f:
        for i, q in enumerate(questions):
            prompt = TEMPLATE.format(q=q) if i % 2 else q
            outputs = [
                CompletionOutput(k, f"Answer {i}.{k}", [1, 2, 3], -1.5, None, "stop", None) for k in range(4)
            ]
            f.write(json.dumps({"request_id": str(i), "prompt": prompt,
                                "outputs": [dataclasses.asdict(c) for c in outputs]}) + "\n")  # fmt: skip
    return path


def lm_eval_file(path, questions):
    """A GSM8K samples log as lm-evaluation-harness writes it: two filters per document."""
    with open(path, "w") as f:
        for doc_id, q in enumerate(questions):
            for filt in ("strict-match", "flexible-extract"):
                f.write(json.dumps({
                    "doc_id": doc_id, "doc": {"question": q, "answer": f"Work.\n#### {doc_id}"},
                    "target": f"Work.\n#### {doc_id}",
                    "arguments": {"gen_args_0": {"arg_0": f"Question: {q}\nAnswer:",
                                                 "arg_1": {"until": ["\n\n"]}}},
                    "resps": [[f"The answer is {doc_id}."]], "filtered_resps": [str(doc_id)], "filter": filt,
                    "metrics": ["exact_match"], "doc_hash": "d", "prompt_hash": "p", "target_hash": "t",
                    "exact_match": 1.0,
                }) + "\n")  # fmt: skip
    return path


def doc_commands() -> list[str]:
    text = (ROOT / "docs" / "bring-your-data.md").read_text(encoding="utf-8")
    section = text.split("## Generations from your sampler", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [line for line in block.splitlines() if line.strip()]


def test_the_documented_commands_take_vllm_and_lm_eval_outputs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gsm8k(tmp_path)
    vllm_file(tmp_path / "vllm_outs.jsonl", QUESTIONS)
    lm_eval_file(tmp_path / "samples_gsm8k.jsonl", ["What is 6 times 7?", "What is 9 minus 4?"])
    db = tmp_path / "s.duckdb"
    for command in doc_commands():
        words = shlex.split(command)
        assert words[0] == "pairstore"
        result = CliRunner().invoke(cli, ["--db", str(db), *words[1:]])
        assert result.exit_code == 0, (command, result.output)
    with open_store(db, read_only=True) as store:
        rows = stored(store, "so7a")
        by_kind = store.rows("SELECT item_kind, count(*) AS n FROM generations GROUP BY 1 ORDER BY 1")
    assert [r["n"] for r in by_kind] == [2, 8]  # 2 lm-eval responses (one per doc), 8 vLLM outputs
    problems = [r for r in rows if r["item_kind"] == "problem"]
    assert {r["question"] for r in problems} == set(QUESTIONS)  # the templated prompt found its problem
    assert sorted(r["sample_index"] for r in problems) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_eval_results_find_their_item_by_its_question(store, tmp_path):
    items = [{"item_id": f"q{i}", "kind": "gsm8k", "prompt": [{"role": "user", "content": q}], "gold": str(i)}
             for i, q in enumerate(QUESTIONS)]  # fmt: skip
    add_eval_items(store, "s", items)
    recs = [{"prompt": QUESTIONS[1].lower(), "correct": True}, {"item_id": "q0", "correct": False}]
    assert ingest_evals(store, write(tmp_path / "r.jsonl", recs), model="m", suite="s", scan=scan).added == 2
    assert store.rows("SELECT item_id, correct FROM evals ORDER BY item_id") == [
        {"item_id": "q0", "correct": False},
        {"item_id": "q1", "correct": True},
    ]
    with pytest.raises(
        BadInput, match=r"line 1, field 'prompt': no eval item of suite 's' has this question"
    ):
        ingest_evals(store, write(tmp_path / "x.jsonl", [{"prompt": "Other?", "score": 1}]), model="n",
                     suite="s", scan=scan)  # fmt: skip


RENDERED = {  # the same question as three chat templates render it for a completion endpoint
    "chatml": "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n"
    "<|im_start|>assistant\n",
    "llama3": "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\n{q}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "gemma": "<bos><start_of_turn>user\n{q}<end_of_turn>\n<start_of_turn>model\n",
}


@pytest.mark.parametrize("template", sorted(RENDERED))
def test_a_vllm_prompt_a_chat_template_rendered_is_stored_as_its_messages(store, tmp_path, template):
    """Mined pairs take the sample's prompt: markup stored as a user's text would be rendered twice."""
    ingest_problems(store, "gsm8k", path=gsm8k(tmp_path))
    prompt = RENDERED[template].format(q=QUESTIONS[0])
    rec = {"request_id": "0", "prompt": prompt, "outputs": [{"index": 0, "text": "72"}]}
    ingest_generations(store, write(tmp_path / "v.jsonl", [rec]), model="m", fmt="vllm")
    (stored_prompt,) = store.rows("SELECT prompt FROM generations")
    system = [] if template == "gemma" else [{"role": "system", "content": "Be brief."}]
    assert stored_prompt["prompt"] == [*system, {"role": "user", "content": QUESTIONS[0]}]


def test_a_string_that_is_not_wholly_a_rendering_stays_one_user_message(store, tmp_path):
    prompt = "Answer this. " + RENDERED["chatml"].format(q=QUESTIONS[1])  # text outside the turns
    rec = {"request_id": "0", "prompt": prompt, "outputs": [{"index": 0, "text": "$10"}]}
    ingest_generations(store, write(tmp_path / "v.jsonl", [rec]), model="m", fmt="vllm", item_kind="prompt")
    assert store.scalar("SELECT prompt FROM generations") == [{"role": "user", "content": prompt}]
