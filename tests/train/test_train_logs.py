"""Logs a cluster can read: `train dpo` writes the loss at every logging step to stderr (when it is a file)
and to training_log.jsonl beside the adapter; `train sample` and `eval` write progress lines with counts,
rate and ETA (pairstore.progress).

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_train_logs.py -q
"""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
from click.testing import CliRunner

from pairstore.cli import cli, main
from pairstore.store.store import open_store
from tests.train.test_train import ROUND, add_round
from train.training_log import LOG_FILE, TrainingLog

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_a_logging_step_is_one_json_line_and_one_readable_line():
    clock = iter([0.0, 100.0, 105.0, 110.0])
    history: list[dict] = []
    jsonl, err = io.StringIO(), io.StringIO()
    log = TrainingLog("m11a", 250, history, jsonl, err, clock=lambda: next(clock))
    log.begin(step=0)  # clock 100
    log.log(
        10,
        {"loss": 0.69314, "rewards/accuracies": 0.5, "rewards/margins": 0.0123, "learning_rate": 5e-7},
        main=True,
    )
    assert err.getvalue() == (
        "train dpo m11a: step 10 of 250, loss 0.6931, reward accuracy 0.500, margin 0.0123, lr 5.00e-07, "
        "2 steps/s, 2 min 00 s left\n"
    )
    assert (
        json.loads(jsonl.getvalue())
        == history[0]
        == {
            "loss": 0.69314,
            "rewards/accuracies": 0.5,
            "rewards/margins": 0.0123,
            "learning_rate": 5e-7,
            "step": 10,
        }
    )
    log.log(20, {"loss": 0.5}, main=False)  # another process: its history only
    assert len(history) == 2 and len(jsonl.getvalue().splitlines()) == 1
    quiet = TrainingLog("m11a", 250, [], io.StringIO(), None, clock=lambda: 0.0)
    quiet.log(1, {"loss": 0.7}, main=True)
    assert quiet.jsonl.getvalue()  # the file is written without the stderr line


def test_train_dpo_with_stderr_in_a_file_logs_the_loss_at_every_step(tiny, tmp_path, monkeypatch, capsys):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        add_round(store, tmp_path)
    out = tmp_path / "lora"
    monkeypatch.delenv("PAIRSTORE_QUIET", raising=False)
    args = ["--db", str(db), "train", "dpo", "--round", ROUND, "--base", str(tiny), "--out", str(out)]
    with open(tmp_path / "train.log", "w") as log:  # the command's stderr is a file, as under Slurm or nohup
        monkeypatch.setattr(sys, "stderr", log)
        with pytest.raises(SystemExit) as done:
            main([*args, "--max-steps", "3", "--save-steps", "3"])
    monkeypatch.undo()
    text = (tmp_path / "train.log").read_text()
    assert done.value.code == 0, text
    line = (
        r"train dpo r1: step (\d) of 3, loss [\d.]+, reward accuracy [\d.]+, margin -?[\d.]+, lr [\d.e+-]+.*"
    )
    assert [int(m.group(1)) for m in re.finditer(line, text)] == [1, 2, 3], text
    stdout = capsys.readouterr().out
    assert "trained r1-lora: 3 steps" in stdout and "step 1 of 3" not in stdout
    logged = [json.loads(x) for x in (out / LOG_FILE).read_text().splitlines()]
    assert [e["step"] for e in logged if "loss" in e] == [1, 2, 3]
    assert all("rewards/accuracies" in e and "rewards/margins" in e for e in logged if "loss" in e)
    evidence = json.loads((out / "training_evidence.json").read_text())
    assert evidence["log_history"] == logged and evidence["log_file"] == LOG_FILE
    assert evidence["options"]["max_steps"] == 3 and evidence["options"]["round"] == ROUND


def test_sample_and_eval_write_progress_lines_a_log_can_hold(tiny, tmp_path, write_jsonl, monkeypatch):
    """Their loops report through pairstore.progress with a total, so a log sees count, rate and time left
    while a long generation runs (each answer made slow here: one long item, as with a large model)."""
    import time

    import train.sample as sampling

    monkeypatch.setenv("PAIRSTORE_PROGRESS_EVERY", "0.05")
    monkeypatch.delenv("PAIRSTORE_QUIET", raising=False)
    cut, batch = sampling._cut, sampling._greedy_batch
    monkeypatch.setattr(sampling, "_cut", lambda *a: (time.sleep(0.2), cut(*a))[1])
    monkeypatch.setattr(sampling, "_greedy_batch", lambda *a: (time.sleep(0.3), batch(*a))[1])
    items = write_jsonl(
        tmp_path / "items.jsonl", [{"id": f"q{i}", "prompt": f"What is {i} + 1?"} for i in range(3)]
    )
    db = tmp_path / "s.duckdb"
    args = [
        "--db",
        str(db),
        "train",
        "sample",
        "--model",
        str(tiny),
        "--items",
        items,
        "--max-new-tokens",
        "3",
    ]
    res = CliRunner().invoke(cli, [*args, "--samples", "2", "--temperature", "1", "--name", "t"])
    assert res.exit_code == 0, res.output
    running = r"^generate: \d of 3 prompts, [\d.,e-]+ prompts/s, .* (left|so far)$"
    assert re.search(running, res.stderr, re.M), res.stderr
    res = CliRunner().invoke(
        cli,
        [
            "--db",
            str(db),
            "eval",
            "--model",
            str(tiny),
            "--suite",
            "s3",
            "--path",
            items,
            "--max-new-tokens",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    assert re.search(r"^generate \(greedy\): 0 of 3 prompts, .* so far$", res.stderr, re.M), res.stderr
    with open_store(db, read_only=True) as store:
        audits = {
            r["action"]: json.loads(r["detail"]) for r in store.rows("SELECT action, detail FROM audit_log")
        }
    assert audits["sample"]["options"]["samples"] == 2 and audits["sample"]["options"]["items"] == items
    assert audits["eval"]["options"]["suite"] == "s3"


def test_report_to_names_a_tracker_transformers_knows_and_this_machine_has():
    from pairstore.errors import BadInput
    from train.dpo_job import check_report_to

    check_report_to(())
    with pytest.raises(
        BadInput, match="unknown --report-to 'tensorbored' \\(transformers knows: .*tensorboard"
    ):
        check_report_to(("tensorbored",))
    from transformers.integrations.integration_utils import get_available_reporting_integrations

    missing = [
        n for n in ("tensorboard", "wandb", "mlflow") if n not in get_available_reporting_integrations()
    ]
    if missing:
        with pytest.raises(BadInput, match=f"--report-to {missing[0]} needs its package installed"):
            check_report_to((missing[0],))
