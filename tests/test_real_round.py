"""A real round from a user's own files, through the CLI, with no glue.

The test writes files in the layouts public tools publish (Chatbot Arena conversations, vLLM's
RequestOutputs, a TRL conversational pair file) and reads GSM8K's Hub snapshot as published. It ingests
them, holds battles out, mines battle and self-repair pairs (the generations found their problems by
question text), is refused at export naming the leak, drops it with `--drop-held-out`, loads the folder
with `datasets.load_dataset` and takes one step of the user's own TRL `DPOTrainer` on it.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/test_real_round.py -q
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import Result

from tests.ingest.test_arena_filters import arena_row
from tests.ingest.test_generations import TEMPLATE, CompletionOutput
from tests.paths import FIXTURES

GSM8K = FIXTURES / "real" / "gsm8k"  # the Hub snapshot of openai/gsm8k: main/{train,test}-*.parquet
HELD = "What is the capital of Peru, and why was it founded beside the Rimac river rather than the coast?"

# Chatbot Arena battles of the own model vicuna-13b: wins, losses, a tie, a both-bad vote; q3 is held out.
BATTLES = [
    arena_row(
        "q1", "vicuna-13b", "koala-13b", "model_a", "Tell me a joke about tides.", "Why did...", "Knock."
    ),
    arena_row("q2", "koala-13b", "vicuna-13b", "model_a", "Name a warm color.", "Orange.", "Blue."),
    arena_row("q3", "alpaca-13b", "vicuna-13b", "model_b", HELD, "Lima is inland.", "Lima, founded in 1535."),
    arena_row("q4", "vicuna-13b", "alpaca-13b", "tie", "Say hello in French.", "Bonjour.", "Salut."),
    arena_row("q5", "vicuna-13b", "koala-13b", "model_b", "Why is the sky blue?", "Magic.", "Rayleigh."),
    arena_row("q6", "vicuna-13b", "koala-13b", "model_a", "Give a synonym of big.", "Large.", "Tiny."),
    arena_row("q7", "koala-13b", "vicuna-13b", "tie (bothbad)", "Write a haiku on rust.", "Red.", "Iron."),
]

# A past round's pairs in TRL's conversational preference layout; line 3 holds the held-out prompt.
ATTACHED = [
    ("Explain photosynthesis in one sentence.", "Plants turn light into sugar.", "Plants eat soil."),
    ("What does a compiler do?", "It translates source code to machine code.", "It compiles."),
    (HELD, "Lima was founded inland for its river and its defence.", "Because of the beach."),
    ("Name a prime number above 10.", "11.", "12."),
]


def vllm_outputs(path: Path, questions_and_golds: list[tuple[str, str]]) -> None:
    """What docs/bring-your-data.md's vLLM script writes: each RequestOutput as it is, one a line. The
    first request went through the chat template (as `LLM.chat` sends it); each has a right and a wrong
    sample."""
    with open(path, "w", encoding="utf-8") as f:
        for i, (question, gold) in enumerate(questions_and_golds):
            texts = [
                f"Let me work it out.\nFinal answer: {gold}",
                f"I think so.\nFinal answer: {int(gold) + 7}",
            ]
            outputs = [
                CompletionOutput(k, t, [1, 2, 3], -2.0, None, "stop", None) for k, t in enumerate(texts)
            ]
            prompt = TEMPLATE.format(q=question) if i == 0 else question
            f.write(json.dumps({"request_id": str(i), "prompt": prompt,
                                "outputs": [dataclasses.asdict(c) for c in outputs]}) + "\n")  # fmt: skip


def gsm8k_train_rows() -> list[tuple[str, str]]:
    """(question, gold) of the snapshot's train split, read as a sampling script reads it."""
    rows = pq.read_table(GSM8K / "main" / "train-00000-of-00001.parquet").to_pylist()
    return [(r["question"], r["answer"].rsplit("####", 1)[1].strip()) for r in rows]


def ok(result: Result, *expected: str) -> str:
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.output, (text, result.output)
    return result.output


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_round_from_public_files_to_a_trl_step(
    run_cli, tmp_path, write_jsonl, dpo_recipe, tiny, one_torch_thread
):
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    # 1. battles, as lmsys/chatbot_arena_conversations publishes its rows
    arena = write_jsonl(tmp_path / "chatbot_arena_conversations.jsonl", BATTLES)
    ok(run_cli("ingest", "battles", arena, "--format", "arena", "--own-model", "vicuna-13b"), "added 7")

    # 2. GSM8K's Hub snapshot, and a vLLM run's outputs on its questions, found by the question text
    ok(run_cli("ingest", "problems", "--dataset", "gsm8k", "--path", GSM8K), "added 3")
    problems = gsm8k_train_rows()
    vllm_outputs(tmp_path / "vllm_outs.jsonl", problems)
    ok(run_cli("ingest", "generations", tmp_path / "vllm_outs.jsonl", "--model", "so7a", "--format", "vllm"),
       "added 6")  # fmt: skip

    # 3. a pair file in TRL's conversational layout holding a held-out battle's prompt on line 3
    trl_rows = [{"prompt": [{"role": "user", "content": p}], "chosen": [{"role": "assistant", "content": c}],
                 "rejected": [{"role": "assistant", "content": r}]} for p, c, r in ATTACHED]  # fmt: skip
    attached = write_jsonl(tmp_path / "past_round.jsonl", trl_rows)
    ok(run_cli("ingest", "pairs", attached, "--source", "attached"), "added 4")

    # 4. holdout: q3 by id, and a stratified sample of two others
    (tmp_path / "held.txt").write_text("q3\n")
    ok(run_cli("holdout", "add", "judge", "--ids-file", tmp_path / "held.txt"), "judge: 1 members added")
    sampled = json.loads(
        ok(
            run_cli(
                "holdout",
                "sample",
                "judge34",
                "--n",
                "2",
                "--seed",
                "12076",
                "--where",
                "battle_id <> 'q3'",
                "--json",
            )
        )
    )
    held_battles = {"q3", *sampled["sampled"]}
    assert len(held_battles) == 3

    # 5. mining: battle votes (held-out battles never mined) and self-repair from the vLLM generations
    battle = json.loads(ok(run_cli("mine", "battle", "--json")))
    assert battle["dropped"]["holdout"] == len(held_battles)
    votes = {b["question_id"]: b["winner"] for b in BATTLES if b["question_id"] not in held_battles}
    assert battle["pairs"] == sum(w in ("model_a", "model_b") for w in votes.values())
    repair = json.loads(ok(run_cli("mine", "self-repair", "--model", "so7a", "--dataset", "gsm8k", "--json")))
    assert repair["by_source"] == {"self_repair": len(problems)} and repair["stats"]["wrong"] == len(problems)

    # 6. a round mixing the three sources: refused naming the leak, then exported without it
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    blocks = ['source = "battle"', 'source = "self_repair"', 'source = "attached"']
    (tmp_path / "m1.toml").write_text(dpo_recipe("m1", blocks=blocks))
    ok(run_cli("round", "add", tmp_path / "base.toml", tmp_path / "m1.toml"))
    out = tmp_path / "mixtures"
    refused = run_cli("export", "--round", "m1", "--out", out)
    assert refused.exit_code == 3, refused.output
    hits = re.findall(r"^  judge q3 pair (\S+) .*$", refused.output, re.M)
    assert len(hits) == 1, refused.output
    (hit,) = [line for line in refused.output.splitlines() if line.startswith("  judge q3 pair")]
    assert "[[mix]] block 3 (source attached)" in hit and re.search(r"past_round\.jsonl:3\b", hit), hit
    assert not out.exists()
    ok(run_cli("export", "--round", "m1", "--out", out, "--drop-held-out"), "dropped 1 pair(s)")
    evidence = json.loads((out / "m1.training_evidence.json").read_text(encoding="utf-8"))
    dropped = evidence["gate"]["dropped_held_out"]
    assert [(d["pair_id"], d["set"], d["item_id"]) for d in dropped] == [(hits[0], "judge", "q3")]

    # 7. the folder is a dataset
    data = datasets.load_dataset(str(out), split="train")
    assert data.num_rows == pq.read_table(out / "m1.parquet").num_rows == battle["pairs"] + len(problems) + 3
    rows = data.to_list()
    assert HELD not in json.dumps(rows)
    # each self-repair pair asks its question once, as a user turn: the templated vLLM prompt was read
    # back into messages, so the trainer's template does not render markup inside a user's text
    asked = [r["prompt"][1:] for r in rows if r["source"] == "self_repair"]
    assert sorted(asked, key=str) == sorted(([{"role": "user", "content": q}] for q, _ in problems), key=str)

    # 8. the user's own TRL script on it: nothing of pairstore in between
    model = AutoModelForCausalLM.from_pretrained(str(tiny))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny))
    args = DPOConfig(
        output_dir=str(tmp_path / "dpo"),
        max_steps=1,
        per_device_train_batch_size=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        max_length=256,
        seed=0,
    )
    trainer = DPOTrainer(
        model=model, ref_model=None, args=args, train_dataset=data, processing_class=tokenizer
    )
    result = trainer.train()
    assert trainer.state.global_step == 1 and result.training_loss > 0
