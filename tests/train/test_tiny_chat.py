"""The demo's tiny chat model (train/tiny_chat.py) and its training script, on CPU in seconds.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_tiny_chat.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from generators.registry import FAMILIES, FAMILY_NAMES
from generators.tasks import generate_tasks
from pairstore.keys import sha256_file
from tests.paths import ROOT
from train import tiny_chat
from train.tiny_chat import (
    DEMO_DIFFICULTY,
    DEMO_FAMILIES,
    DEMO_SEED,
    DEMO_SUITE_N,
    DEMO_TRAIN_N,
    TaskStream,
    TrainConfig,
    encode,
    make_tokenizer,
    render_prompt,
)

# A model small enough to train a few steps in about a second.
SMALL = [
    "--n-layer",
    "1",
    "--n-embd",
    "32",
    "--n-head",
    "2",
    "--intermediate",
    "64",
    "--batch",
    "4",
    "--probe-per-family",
    "2",
    "--max-new-tokens",
    "8",
    "--threads",
    "1",
]
SHIPPED = Path(tiny_chat.__file__).resolve().parents[1] / "pairstore" / "sample_data" / "so7a"


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    # The test machine is shared: one thread per process avoids oversubscription stalls.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def train_small(out: Path, *extra: str) -> Path:
    import importlib.util

    path = ROOT / "scripts" / "train_demo_model.py"
    spec = importlib.util.spec_from_file_location("train_demo_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(out), *SMALL, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory) -> Path:
    return train_small(tmp_path_factory.mktemp("tiny_chat") / "b", "--steps", "4", "--eval-every", "2")


# ---------------------------------------------------------------------------- tokenizer


def test_tokenizer_is_one_token_per_character_and_round_trips():
    tok = make_tokenizer()
    texts = [
        t.prompt + "\n" + t.chosen
        for name in FAMILY_NAMES
        for d in (1, 2, 3)
        for t in generate_tasks(5, 3, [name], difficulty=d)
    ]
    texts += [FAMILIES["short_arithmetic"].make(5, i, 2).chosen for i in range(5)] + [
        "a . b ,  c\n\nd ?",
        "  ",
    ]
    unk = tok.convert_tokens_to_ids("<unk>")
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        # One token per character, except the answer line's prefix, which is one token.
        assert len(ids) == len(text) - text.count("Final answer: ") * 13 and unk not in ids, text
        assert tok.decode(ids) == text
    assert [
        tok.convert_ids_to_tokens(i)
        for i in tok("user: Final answer: 7", add_special_tokens=False)["input_ids"]
    ] == ["user", ":", " ", "Final answer: ", "7"]
    # Special tokens are single ids 0..5 (train.tiny's order); an unknown character is <unk>.
    assert [
        tok.convert_tokens_to_ids(t) for t in ("<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>")
    ] == list(range(6))
    assert tok("é", add_special_tokens=False)["input_ids"] == [unk]
    rendered = render_prompt(tok, "What is 2 + 3?")
    assert rendered == (
        "<s><|im_start|>system\nBe exact.<|im_end|>\n<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    ids, n_prompt = encode(tok, "What is 2 + 3?", "2 + 3 = 5\nFinal answer: 5")
    assert (
        ids[0] == 1 and ids[-1] == 5 and tok.decode(ids[n_prompt:]) == "2 + 3 = 5\nFinal answer: 5<|im_end|>"
    )
    assert tok.convert_ids_to_tokens(ids[:3]) == ["<s>", "<|im_start|>", "system"]


def test_short_arithmetic_tasks_have_code_computed_golds():
    sums = generate_tasks(3, 50, ["short_arithmetic"], difficulty=2)
    assert len({t.task_key for t in sums}) == 50 and {t.params["op"] for t in sums} == {"+", "-"}
    for t in sums:
        a, b, op = t.params["a"], t.params["b"], t.params["op"]
        assert 10 <= b <= a <= 99 if op == "-" else 10 <= min(a, b) <= max(a, b) <= 99
        assert t.chosen == f"{a} {op} {b} = {t.gold}\nFinal answer: {t.gold}"
        assert int(t.gold) == (a + b if op == "+" else a - b) >= 0


# ---------------------------------------------------------------------------- the task stream


def test_stream_never_draws_a_held_out_key_and_repeats_itself():
    cfg = TrainConfig(batch=16, probe_per_family=5)
    demo = tiny_chat.generated_keys(cfg.exclude_generated)
    probe = tiny_chat.probe_tasks(cfg, demo)
    held = tiny_chat.held_out_keys(cfg)
    assert demo <= held and {t.task_key for t in probe} <= held and not {t.task_key for t in probe} & demo
    # The demo's tasks: the suite, then training tasks avoiding its keys (as generate_loopfix makes them).
    suite, train_tasks = tiny_chat.demo_tasks()
    assert len(suite) == DEMO_SUITE_N and len(train_tasks) == DEMO_TRAIN_N
    assert {t.task_key for t in suite} | {t.task_key for t in train_tasks} == demo
    assert {t.family for t in suite} == set(DEMO_FAMILIES) and {t.difficulty for t in suite} == {
        DEMO_DIFFICULTY
    }
    stream = TaskStream(cfg, held)
    drawn = [t for step in range(30) for t in stream.batch(step)]
    assert not {t.task_key for t in drawn} & held
    again = TaskStream(cfg, held)
    assert [t.task_id for step in range(30) for t in again.batch(step)] == [t.task_id for t in drawn]
    assert {t.family for t in drawn} == {name for name, _, _ in cfg.mix}


# ---------------------------------------------------------------------------- the training script


@pytest.mark.slow
def test_training_script_writes_a_bundle_served_like_the_others(small_bundle):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from train.serving import load_serving

    for name in (
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "system_prompt.txt",
        "generation_config.json",
        "serving_config.json",
        "tiny_chat_config.json",
        "training_evidence.json",
    ):
        assert (small_bundle / name).is_file(), name
    assert not list(small_bundle.glob("*.bin"))
    # transformers 4.x cannot load a tokenizer_config naming transformers 5's TokenizersBackend.
    assert (
        json.loads((small_bundle / "tokenizer_config.json").read_text())["tokenizer_class"]
        == "PreTrainedTokenizerFast"
    )
    evidence = json.loads((small_bundle / "training_evidence.json").read_text())
    assert evidence["steps_trained"] == 4 and [h["step"] for h in evidence["history"]] == [2, 4]
    assert evidence["config"] == json.loads((small_bundle / "tiny_chat_config.json").read_text())
    assert evidence["config"]["n_embd"] == 32 and evidence["config"]["seed"] == DEMO_SEED

    tok = AutoTokenizer.from_pretrained(str(small_bundle))
    model = AutoModelForCausalLM.from_pretrained(str(small_bundle))
    assert model.config.num_hidden_layers == 1 and len(tok) == model.config.vocab_size
    s = load_serving(small_bundle)
    assert s.end_of_turn == "<|im_end|>" and s.system_prompt == "Be exact." and s.max_new_tokens == 8
    text = s.render(s.with_system([{"role": "user", "content": "What is 2 + 3?"}]))
    assert text == render_prompt(tok, "What is 2 + 3?")
    ids = torch.tensor([s.encode(text)])
    out = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=4,
        do_sample=False,
        eos_token_id=s.eos_ids,
        pad_token_id=s.pad_id,
    )
    assert out.shape[1] > ids.shape[1]


@pytest.mark.slow
def test_training_is_deterministic(tmp_path, small_bundle):
    again = train_small(tmp_path / "again", "--steps", "4", "--eval-every", "2")
    assert sha256_file(again / "model.safetensors") == sha256_file(small_bundle / "model.safetensors")
    other = train_small(tmp_path / "other", "--steps", "4", "--eval-every", "2", "--seed", "5")
    assert sha256_file(other / "model.safetensors") != sha256_file(small_bundle / "model.safetensors")


def test_stop_at_accuracy_ends_training_at_that_evaluation(tmp_path):
    out = train_small(tmp_path / "stop", "--steps", "6", "--eval-every", "2", "--stop-at-accuracy", "0")
    evidence = json.loads((out / "training_evidence.json").read_text())
    assert evidence["steps_trained"] == 2 and evidence["stopped_at_accuracy"] == 2


# ---------------------------------------------------------------------------- the shipped incumbent


def test_shipped_incumbent_is_small_safe_and_never_saw_the_demo_tasks():
    files = [p for p in SHIPPED.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 20 * 1024 * 1024
    assert not [p for p in files if p.suffix in (".bin", ".pt", ".pth", ".pkl", ".ckpt")]
    cfg = json.loads((SHIPPED / "tiny_chat_config.json").read_text())
    assert cfg["exclude_generated"] == tiny_chat.demo_task_calls()
    evidence = json.loads((SHIPPED / "training_evidence.json").read_text())
    assert evidence["config"] == cfg and evidence["history"]
