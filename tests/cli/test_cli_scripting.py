"""Every command is scriptable: --json everywhere (stdout is the JSON alone), global options before or
after the subcommand, progress on stderr only, a missing extra in one line."""

from __future__ import annotations

import json
import sys
from importlib import resources

import click
import pytest
from click.testing import CliRunner

from pairstore.cli import cli
from pairstore.cli.base import hoist_global_options

SAMPLE = resources.files("pairstore") / "sample_data"


def commands(group=cli, path=()):
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


# Commands that report nothing to script against: `serve` runs a web server until it is stopped.
REPORTS_NOTHING = {"serve"}


def test_every_command_has_json():
    missing = [
        " ".join(p)
        for p, c in commands()
        if " ".join(p) not in REPORTS_NOTHING
        and not any("--json" in getattr(o, "opts", ()) for o in c.params)
    ]
    assert len(list(commands())) >= 40
    assert not missing, f"commands without --json: {missing}"


def run(*args, env=None):
    runner = CliRunner()
    env = {"PAIRSTORE_QUIET": None, **(env or {})}  # progress on, as a user gets it
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


def json_of(result) -> object:
    """stdout alone must be one JSON document (progress and notes go to stderr)."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_output_of_a_scripted_round(tmp_path, dpo_recipe):
    db = tmp_path / "s.duckdb"
    battles = json_of(run("ingest", "battles", SAMPLE / "battles.jsonl", "--db", db, "--json"))
    assert battles["kind"] == "battles" and battles["added"] == battles["read"] > 0
    sampled = json_of(run("--db", db, "holdout", "sample", "h8", "--n", 8, "--seed", 7, "--json"))
    assert len(sampled["sampled"]) == 8
    assert json_of(run("holdout", "list", "--json", "--db", db))[0]["set_name"] == "h8"
    mined = json_of(run("mine", "battle", "--json", "--db", db))
    assert mined["kept"] > 0
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    (tmp_path / "b1.toml").write_text(dpo_recipe("b1", blocks=['source = "battle"']))
    added = json_of(run("round", "add", tmp_path / "base.toml", tmp_path / "b1.toml", "--json", "--db", db))
    assert [r["name"] for r in added["rounds"]] == ["base", "b1"]
    assert {r["name"] for r in json_of(run("round", "list", "--json", "--db", db))} == {"base", "b1"}
    exported = json_of(run("export", "--round", "b1", "--out", tmp_path / "mix", "--json", "--db", db))
    assert exported["round"] == "b1" and exported["files"]["dpo"]["rows"] > 0
    assert exported["gate"]["passed"] is True and exported["card_path"].endswith("README.md")
    assert json_of(run("--db", db, "audit", "mixtures", "--json"))
    assert {m["miner"] for m in json_of(run("mine", "list", "--json"))} >= {"battle", "loopfix"}
    assert json_of(run("generate", "families", "--json"))


def test_progress_is_stage_lines_on_stderr_and_quiet_silences_it(tmp_path):
    db = tmp_path / "s.duckdb"
    loud = run("ingest", "battles", SAMPLE / "battles.jsonl", "--db", db, "--json")
    assert (
        "ingest battles: 120 records in" in loud.stderr
    )  # not a terminal: one line per stage, with the total
    json_of(loud)
    quiet = run("--quiet", "ingest", "judgments", SAMPLE / "battles.jsonl", "--db", db)
    assert "ingest judgments" not in quiet.stderr
    again = run("ingest", "battles", SAMPLE / "battles.jsonl", "--db", db, "-q")
    assert again.exit_code == 0 and again.stderr == "" and "added 0" in again.stdout


def test_global_options_are_hoisted_but_not_past_double_dash():
    assert hoist_global_options(["sql", "SELECT 1", "--db", "x.duckdb", "-q"]) == [
        "--db",
        "x.duckdb",
        "-q",
        "sql",
        "SELECT 1",
    ]
    assert hoist_global_options(["ingest", "battles", "--db=y", "f"]) == ["--db=y", "ingest", "battles", "f"]
    assert hoist_global_options(["sql", "--", "--db"]) == ["sql", "--", "--db"]


def test_a_missing_extra_is_one_line_naming_the_install_command(tmp_path, monkeypatch):
    import pairstore.cli.train as train_cli

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ModuleNotFoundError

    def merge_needing_torch(*args, **kwargs):
        import torch  # noqa: F401

    monkeypatch.setattr(train_cli, "merge", merge_needing_torch)
    (tmp_path / "a").mkdir()
    res = run(
        "--db",
        tmp_path / "s.duckdb",
        "train",
        "merge",
        "--base",
        tmp_path,
        "--adapter",
        tmp_path / "a",
        "--out",
        tmp_path / "m",
    )
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert lines == [
        "error: this command needs the 'train' extra (torch is not installed): pip install 'pairstore[train]'"
    ]


@pytest.mark.slow
def test_shell_completion_offers_the_stores_round_and_holdout_names(tmp_path):
    import os
    import subprocess
    from pathlib import Path

    db = tmp_path / "s.duckdb"
    assert run("--db", db, "round", "add", "--shipped", "-q").exit_code == 0
    assert run("ingest", "battles", SAMPLE / "battles.jsonl", "--db", db, "-q").exit_code == 0
    assert run("holdout", "sample", "judge34", "--n", 34, "--seed", 7, "--db", db).exit_code == 0
    exe = Path(sys.executable).parent / "pairstore"

    def offered(words: str) -> list[str]:
        env = {**os.environ, "_PAIRSTORE_COMPLETE": "bash_complete", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - (0 if words.endswith(" ") else 1))
        out = subprocess.run([str(exe)], env=env, capture_output=True, text=True, check=True).stdout
        return [line.split(",", 1)[1] for line in out.splitlines() if line.startswith("plain,")]

    assert offered(f"pairstore --db {db} export --round m1") == ["m1", "m10a", "m10b", "m11a", "m12a"]
    assert offered(f"pairstore --db {db} holdout show j") == ["judge34"]
    assert offered(f"pairstore --db {db} audit leaks --holdout ") == ["judge34"]
    assert (
        offered(f"pairstore --db {tmp_path / 'none.duckdb'} lineage s") == []
    )  # no store: nothing, no error


def test_a_wrong_format_guess_names_the_format_that_fits(tmp_path):
    import csv

    path = tmp_path / "train.csv"  # the Arena 55k layout, read as native battles
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "id",
                "model_a",
                "model_b",
                "prompt",
                "response_a",
                "response_b",
                "winner_model_a",
                "winner_model_b",
                "winner_tie",
            ]
        )
        w.writerow([1, "a", "b", '["hi"]', '["x"]', '["y"]', 1, 0, 0])
    res = run("--db", tmp_path / "s.duckdb", "ingest", "battles", path)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "line 2, field 'battle_id'" in lines[0], res.stderr
    assert "--format arena55k" in lines[0]
