"""Every command that loads a bundle refuses one that asks to run its own code, before it loads or writes
anything; soup and merge report progress on stderr only."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from pairstore.store.store import open_store

MARKER = "remote-code-ran.txt"


def _sha(p) -> str:
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def hostile_bundle(tiny, folder, *, auto_map: bool = True):
    """A copy of the tiny bundle whose config asks for its own modelling code, with that code beside it:
    importing it writes MARKER next to the bundle, so a test sees whether anything ran it."""
    shutil.copytree(tiny, folder)
    (folder / "modeling_evil.py").write_text(
        f"from pathlib import Path\nPath(__file__).with_name({MARKER!r}).write_text('ran')\n"
    )
    if auto_map:
        config = json.loads((folder / "config.json").read_text())
        config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
        (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


@pytest.fixture
def hostile(tiny, tmp_path):
    return hostile_bundle(tiny, tmp_path / "hostile")


def _commands(hostile, tiny, tmp_path):
    """(command, arguments) for every command that loads a bundle, the hostile bundle in each role."""
    out = tmp_path / "out"
    adapter = tmp_path / "adapter"
    adapter.mkdir(exist_ok=True)
    return [
        ("eval", ["eval", "--model", hostile, "--suite", "lf2", "--n", "2"]),
        ("train sample", ["train", "sample", "--model", hostile, "--items", "gsm8k", "--n", "2"]),
        ("train merge", ["train", "merge", "--base", hostile, "--adapter", adapter, "--out", out]),
        ("train soup (A)", ["train", "soup", hostile, tiny, "--alpha", "0.5", "--out", out]),
        ("train soup (B)", ["train", "soup", tiny, hostile, "--alpha", "0.5", "--out", out]),
        ("train dpo", ["train", "dpo", "--round", "r1", "--base", hostile, "--out", out]),
        ("judge", ["judge", "--set", "h", "--a", "x", "--b", "y", "--judge", f"j={hostile}"]),
        ("serve", ["serve", "--model", f"m={hostile}", "--port", "0"]),
        ("audit lengths", ["audit", "lengths", "--tokenizer", hostile]),
        ("audit report", ["audit", "report", "--model", "r1", "--out", out, "--tokenizer", hostile]),
    ]


@pytest.mark.parametrize("with_auto_map", [True, False], ids=["auto_map and code", "code alone"])
def test_every_command_that_loads_a_bundle_refuses_remote_code(
    round_r1, tiny, tmp_path, run_cli, with_auto_map
):
    hostile = hostile_bundle(tiny, tmp_path / "hostile", auto_map=with_auto_map)
    db = round_r1.path
    round_r1.close()
    assert run_cli("export", "--round", "r1", "--out", tmp_path / "mix").exit_code == 0  # what dpo trains on
    before = _sha(db)
    named = "config.json" if with_auto_map else "modeling_evil.py"
    commands = _commands(hostile, tiny, tmp_path)
    for what, args in commands:
        r = run_cli(*args)
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2, (what, r.output)
        assert len(lines) == 1 and named in lines[0] and str(hostile) in lines[0], (what, r.output)
        assert "trust_remote_code" in lines[0], (what, r.output)
        assert not (hostile / MARKER).exists(), what  # nothing imported the bundle's code
        assert not (tmp_path / "out").exists(), what  # nothing written
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")], what
        assert _sha(db) == before, what  # the store unchanged
    assert len(commands) == 10


def test_trust_remote_code_is_what_lets_such_a_bundle_through_the_check(hostile):
    from train.bundle import check_bundle

    check_bundle(hostile, trust_remote_code=True)  # the user asked: the check passes it on
    assert not (hostile / MARKER).exists()  # checking reads files, it never imports them


def test_soup_and_merge_report_progress_on_stderr_only(tiny, tmp_path, run_cli, monkeypatch):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from train.tiny import make_tiny_bundle

    b = make_tiny_bundle(tmp_path / "b", seed=1, max_new_tokens=12)
    open_store(tmp_path / "store.duckdb").close()
    monkeypatch.delenv("PAIRSTORE_QUIET")
    r = run_cli("train", "soup", tiny, b, "--alpha", "0.5", "--out", tmp_path / "s", "--json")
    assert r.exit_code == 0, r.output
    total = json.loads(r.stdout)["evidence"]["output"]["total_size"]
    assert f"soup: {total:,} bytes in" in r.stderr, r.stderr
    quiet = run_cli("-q", "train", "soup", tiny, b, "--alpha", "0.25", "--out", tmp_path / "s2")
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr

    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny), LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"])
    )
    torch.manual_seed(0)
    model.save_pretrained(tmp_path / "adapter")
    r = run_cli(
        "train", "merge", "--base", tiny, "--adapter", tmp_path / "adapter", "--out", tmp_path / "m", "--json"
    )
    assert r.exit_code == 0, r.output
    from train.bundle import bundle_tensors

    line = next(x for x in r.stderr.splitlines() if x.startswith("merge: "))
    assert line.startswith(f"merge: {len(bundle_tensors(tiny)):,} tensors in "), r.stderr
    assert json.loads(r.stdout)["evidence"]["merged_modules"] > 0  # stdout is the JSON alone
