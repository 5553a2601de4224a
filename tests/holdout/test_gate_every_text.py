"""The gate reads every text of a training row against every text of a held-out member, and runs again
before training: answers as chosen / rejected / NLL completion, a member inside an answer, a benchmark item
inside an answer (the gate and `audit decontam` agree), file shapes that used to drop fields, ids a row
carries, escaped and templated prompts, non-Latin case; `train dpo`, `--emit-sbatch` and `audit mixtures`
refuse (exit 3) when today's gate would, naming what changed; the evidence lists removed members and
`holdout show` keeps their history. Near neighbours of each must pass."""

from __future__ import annotations

import json
import re

import pytest

from tests.tiers import fast_share

QUESTION = (
    "Which three temples in Kyoto would you visit in late autumn to see the maple leaves at their best?"
)
ANSWER = (
    "Start at Tofuku-ji before eight, walk to Eikan-do by late morning, and finish at Kiyomizu-dera for "
    "the sunset view over the city."
)
OPPONENT = "Honestly any temple will do in autumn, they all have plenty of maple trees around them anyway."
RUSSIAN = "Какая самая высокая гора в Европе и какова её высота над уровнем моря?"
GREEK = "Ποια είναι η πρωτεύουσα της Ελλάδας και πόσους κατοίκους έχει σήμερα;"
CODE = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n# why is this slow for n = 40?"
SHORT = "Tell me a joke"  # four words: found as a whole turn, answer or sentence
MEMBERS = {
    "h-long": (QUESTION, ANSWER, OPPONENT),
    "h-ru": (
        RUSSIAN,
        "Эльбрус, его высота 5642 метра над уровнем моря, это самая высокая гора Европы.",
        "Не знаю.",
    ),
    "h-el": (
        GREEK,
        "Η Αθήνα είναι η πρωτεύουσα και έχει περίπου τρία εκατομμύρια κατοίκους σήμερα.",
        "Δεν ξέρω.",
    ),
    "h-code": (
        CODE,
        "It recomputes the same values exponentially many times; memoize it or loop.",
        "It is fine.",
    ),
    "h-short": (SHORT, "Why did the scarecrow win an award? Because he was outstanding in his field.", "No."),
}


def held_out(run_cli, tmp_path, write_jsonl, members=MEMBERS):
    battles = [
        {"battle_id": bid, "prompt": q, "own_answer": a, "opponent_answer": o, "vote": "win"}
        for bid, (q, a, o) in members.items()
    ]
    assert run_cli("ingest", "battles", write_jsonl(tmp_path / "battles.jsonl", battles)).exit_code == 0
    (tmp_path / "ids.txt").write_text("\n".join(members) + "\n")
    res = run_cli("holdout", "add", "judge", "--ids-file", tmp_path / "ids.txt")
    assert res.exit_code == 0, res.output
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    assert run_cli("round", "add", tmp_path / "base.toml").exit_code == 0


def leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records, name="leak"):
    path = write_jsonl(tmp_path / f"{name}.jsonl", records)
    res = run_cli("ingest", "pairs", path, "--source", name)
    assert res.exit_code == 0, res.output
    (tmp_path / f"{name}.toml").write_text(dpo_recipe(name, blocks=[f'source = "{name}"']))
    assert run_cli("round", "add", tmp_path / f"{name}.toml").exit_code == 0
    return path


def refused_members(run_cli, tmp_path, name="leak") -> set[str]:
    res = run_cli("export", "--round", name, "--out", tmp_path / f"out-{name}")
    assert res.exit_code == 3, res.output
    assert not (tmp_path / f"out-{name}").exists(), "nothing is written on a refusal"
    return {m.split("/", 1)[1] for m in re.search(r"held-out items: (.*)", res.output).group(1).split(", ")}


def audited(run_cli, path) -> set[str]:
    res = run_cli("audit", "leaks", "--holdout", "judge", path, "--json")
    assert res.exit_code == 0, res.output
    [f] = json.loads(res.output)["files"]
    return set(f["leaked_ids"]) | set(f["near_ids"])


def dpo(prompt, chosen="A careful, complete answer.", rejected="A sloppy answer."):
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected}


# -- answers are read, on both sides ------------------------------------------------------------------

ANSWER_LEAKS = {
    "member's answer as chosen": lambda q, a, o: dpo("Plan my day, please.", chosen=a),
    "opponent's answer as rejected": lambda q, a, o: (
        dpo("Plan my day, please.", rejected=o)
        if len(o.split()) >= 8
        else dpo("Plan my day, please.", rejected=a)
    ),
    "member's answer as an NLL completion": lambda q, a, o: {"prompt": "Plan my day.", "completion": a},
    "member prompt inside an answer": lambda q, a, o: dpo(
        "Give me a practice question.", chosen=f"Practice question: {q} Answer: it depends."
    ),
    "member prompt as the whole rejected answer": lambda q, a, o: dpo("Ask me something.", rejected=q),
}


@pytest.mark.parametrize("leak", fast_share(sorted(ANSWER_LEAKS)))
def test_answers_are_read_against_every_member_text(leak, run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out(run_cli, tmp_path, write_jsonl)
    records = [ANSWER_LEAKS[leak](*m) for m in MEMBERS.values()]
    records.append(dpo("An ordinary question about bread.", chosen="Knead it for ten minutes, then rest it."))
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert refused_members(run_cli, tmp_path) == set(MEMBERS)
    assert audited(run_cli, path) == set(MEMBERS)


def test_benchmark_item_inside_a_chosen_answer_is_refused_and_decontam_agrees(
    run_cli, tmp_path, write_jsonl, dpo_recipe
):
    item = (
        "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
        "for her friends every day with four."
    )
    bench = write_jsonl(tmp_path / "gsm.jsonl", [{"question": item, "answer": "#### 18"}])
    assert run_cli("audit", "decontam", "--benchmark", "g", "--path", bench, "--register").exit_code == 0
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    assert run_cli("round", "add", tmp_path / "base.toml").exit_code == 0
    leak_round(
        run_cli,
        tmp_path,
        write_jsonl,
        dpo_recipe,
        [dpo("Give me a word problem.", chosen=f"Try this: {item}")],
    )
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "o")
    assert res.exit_code == 3 and "benchmark:g" in res.output, res.output
    res = run_cli("audit", "decontam", "--benchmark", "g", "--path", bench, "--all-pairs", "--json")
    assert res.exit_code == 0 and json.loads(res.output)["contaminated_rows"] == 1, res.output


# -- encodings, markup, punctuation, scripts ---------------------------------------------------------

TEXT_LEAKS = {
    "HTML entities between every word": lambda q: q.replace(" ", "&nbsp;").replace("'", "&#39;"),
    "double JSON encoding": lambda q: json.dumps(q)[1:-1].replace("\\n", "\\\\n"),
    "rendered ChatML template": lambda q: (
        f"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
    ),
    "Llama-2 template": lambda q: f"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n{q} [/INST]",
    "Llama-3 template": lambda q: (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
        f"{q}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    ),
    "Gemma template": lambda q: f"<start_of_turn>user\n{q}<end_of_turn>\n<start_of_turn>model\n",
    "Alpaca prompt format": lambda q: f"### Instruction:\n{q}\n\n### Response:\n",
    "Question/Answer format": lambda q: f"Question:{q}\nAnswer:",
    "HTML paragraph": lambda q: f"<p>{q}</p>",
    "markdown bold glued to a number": lambda q: f"**{q}**",
    "upper case": str.upper,
    "title case": str.title,
    "greeting and thanks around it": lambda q: f"Hi there! {q} Thanks a lot!",
    "Arabic-Indic digits": lambda q: q.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")),
}


@pytest.mark.parametrize("leak", fast_share(sorted(TEXT_LEAKS)))
def test_escaped_templated_and_recased_members_are_refused(leak, run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out(run_cli, tmp_path, write_jsonl)
    records = [dpo(TEXT_LEAKS[leak](q)) for q, _, _ in MEMBERS.values()]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert refused_members(run_cli, tmp_path) == set(MEMBERS)
    assert audited(run_cli, path) == set(MEMBERS)


NEIGHBOURS = [
    # the same template with other content words, another number, another place: other questions
    QUESTION.replace("Kyoto", "Nara"),
    QUESTION.replace("three", "two"),
    QUESTION.replace("maple leaves", "cherry blossoms"),
    RUSSIAN.replace("Европе", "Азии"),
    GREEK.replace("Ελλάδας", "Κύπρου"),
    CODE.replace("n = 40", "n = 4"),
    "Tell me a joke about cats",
    "Explain the difference between a list and a tuple in Python, with a short example of each.",
]


def test_near_neighbours_of_every_member_pass(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out(run_cli, tmp_path, write_jsonl)
    records = [dpo(n) for n in NEIGHBOURS]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    assert audited(run_cli, path) == set()


def test_near_copies_are_fuzzy_hits(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out(run_cli, tmp_path, write_jsonl)
    records = [
        dpo(QUESTION.replace("would you", "do you").replace("at their", "at the")),  # function words
        dpo(QUESTION.rsplit(" at their", 1)[0]),  # the tail cut
        dpo(RUSSIAN.replace("5642", "5 642")),
    ]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert refused_members(run_cli, tmp_path) == {"h-long", "h-ru"}
    assert audited(run_cli, path) == {"h-long", "h-ru"}


# -- file shapes: read whole or refused ---------------------------------------------------------------


def test_ids_a_row_carries_are_kept_as_origins(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out(run_cli, tmp_path, write_jsonl)
    records = [
        {**dpo("An unrelated prompt about gardening."), "battle_id": "h-long"},
        {**dpo("Another unrelated prompt about tea."), "question_id": "h-ru"},
    ]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert refused_members(run_cli, tmp_path) == {"h-long", "h-ru"}
    assert audited(run_cli, path) == {"h-long", "h-ru"}


def test_instruction_formats_put_every_field_in_the_prompt(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out(run_cli, tmp_path, write_jsonl)
    records = [
        {"instruction": "Answer the question below.", "input": QUESTION, "output": "Tofuku-ji first."},
        {"instruction": "Use the context.", "context": RUSSIAN, "response": "Эльбрус."},
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": GREEK}]},
                {"role": "assistant", "content": "x"},
            ]
        },
        {"conversations": [{"from": "human", "value": CODE}, {"from": "gpt", "value": "Memoize."}]},
        {
            "chosen": f"\n\nHuman: {SHORT}\n\nAssistant: Why did the chicken cross the road?",
            "rejected": f"\n\nHuman: {SHORT}\n\nAssistant: No.",
        },
    ]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert refused_members(run_cli, tmp_path) == set(MEMBERS)
    assert audited(run_cli, path) == set(MEMBERS)


@pytest.mark.parametrize(
    "record, field",
    [
        ({"prompt": "Summarize.", "input": QUESTION, "chosen": "a", "rejected": "b"}, "input"),
        ({"question": "Summarize.", "context": QUESTION, "chosen": "a", "rejected": "b"}, "context"),
        (
            {
                "prompt": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
                "chosen": "a",
                "rejected": "b",
            },
            "prompt[0].content[0]",
        ),
    ],
)
def test_a_field_that_would_be_lost_is_refused(record, field, run_cli, tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "p.jsonl", [record])
    res = run_cli("ingest", "pairs", path, "--source", "x")
    assert res.exit_code == 2 and f"field '{field}'" in res.output, res.output
    res = run_cli("audit", "leaks", "--holdout", "judge", path)
    assert res.exit_code == 2, res.output


# -- the gate again before training ---------------------------------------------------------------------


def _exported(run_cli, tmp_path, write_jsonl, dpo_recipe):
    """A clean round exported, then the battle its first row copies held out."""
    held_out(run_cli, tmp_path, write_jsonl, {"h-short": MEMBERS["h-short"]})
    leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, [dpo(QUESTION), dpo("A question about tea.")])
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output


def _train_refusal(run_cli, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir(exist_ok=True)
    for extra in ([], ["--resume"], ["--emit-sbatch", tmp_path / "job.sbatch"]):
        res = run_cli("train", "dpo", "--round", "leak", "--base", bundle, "--out", tmp_path / "run", *extra)
        assert res.exit_code == 3, (extra, res.output)
        assert not (tmp_path / "job.sbatch").exists()
    return res.output


@pytest.mark.slow
def test_train_dpo_and_audit_mixtures_refuse_a_mixture_todays_gate_refuses(
    run_cli, tmp_path, write_jsonl, dpo_recipe
):
    _exported(run_cli, tmp_path, write_jsonl, dpo_recipe)
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 0, res.output
    # a new holdout set holding the exported battle-like question
    battles = [
        {"battle_id": "late", "prompt": QUESTION, "own_answer": "a", "opponent_answer": "b", "vote": "win"}
    ]
    assert run_cli("ingest", "battles", write_jsonl(tmp_path / "late.jsonl", battles)).exit_code == 0
    (tmp_path / "late.txt").write_text("late\n")
    assert run_cli("holdout", "add", "fresh", "--ids-file", tmp_path / "late.txt").exit_code == 0
    out = _train_refusal(run_cli, tmp_path)
    assert "fresh/late added" in out and "after the export" in out, out
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 3 and "refused" in res.output and "fresh/late" in res.output, res.output


def test_a_member_removed_for_an_export_and_added_back_blocks_training(
    run_cli, tmp_path, write_jsonl, dpo_recipe
):
    held_out(run_cli, tmp_path, write_jsonl, {"h-long": MEMBERS["h-long"]})
    leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, [dpo(QUESTION), dpo("A question about tea.")])
    assert run_cli("holdout", "remove", "judge", "h-long", "--reason", "published").exit_code == 0
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    evidence = json.loads((tmp_path / "out" / "leak.training_evidence.json").read_text())
    [removed] = evidence["gate"]["removed_members"]
    assert (removed["set"], removed["item_id"], removed["reason"]) == ("judge", "h-long", "published")
    assert removed["removed_at"]
    assert run_cli("holdout", "add", "judge", "--ids-file", tmp_path / "ids.txt").exit_code == 0
    out = _train_refusal(run_cli, tmp_path)
    assert "judge/h-long added" in out, out
    res = run_cli("holdout", "show", "judge", "--json")
    [member] = json.loads(res.output)
    assert [h["action"] for h in member["history"]] == ["added", "removed", "added"]
    assert member["history"][1]["reason"] == "published"


def test_lm_eval_items_ingested_after_the_export_block_training(run_cli, tmp_path, write_jsonl, dpo_recipe):
    _exported(run_cli, tmp_path, write_jsonl, dpo_recipe)
    sample = {
        "doc_id": 0,
        "doc": {"question": QUESTION, "answer": "#### 3"},
        "target": "3",
        "resps": [["3"]],
        "filtered_resps": ["3"],
        "exact_match": 1.0,
    }
    path = write_jsonl(tmp_path / "samples_x.jsonl", [sample])
    res = run_cli("ingest", "evals", path, "--model", "m", "--suite", "late-suite", "--format", "lm-eval")
    assert res.exit_code == 0, res.output
    out = _train_refusal(run_cli, tmp_path)
    assert "eval:late-suite/" in out and "after the export" in out, out
