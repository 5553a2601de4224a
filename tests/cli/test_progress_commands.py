"""Progress on every long command family: stage lines with their counts on stderr when stderr is not a
terminal, nothing under --quiet, and stdout in --json mode is the JSON alone."""

from __future__ import annotations

import io
import json
import re
import shutil
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from pairstore.cli import cli
from pairstore.progress import NO_PROGRESS, BarProgress, LineProgress, as_progress, current, reporting

SAMPLE = resources.files("pairstore") / "sample_data"
# A stage line: "NAME: COUNT [of TOTAL] UNIT in SECONDS s[, RATE UNIT/s]"
STAGE_LINE = re.compile(r"^(?P<name>[^\n]+): (?P<count>[\d,]+)(?: of [\d,]+)? \S+ in \d+\.\d s", re.M)


def run(*args):
    return CliRunner().invoke(
        cli, [str(a) for a in args], catch_exceptions=False, env={"PAIRSTORE_QUIET": None}
    )


def stages(result) -> dict[str, int]:
    """Stage name -> count, from the stage lines on stderr (nothing else may be there)."""
    found = {m["name"]: int(m["count"].replace(",", "")) for m in STAGE_LINE.finditer(result.stderr)}
    return found


def check_family(*args, expect: dict[str, int | None]):
    """The command with --json: exit 0, stdout one JSON document, each expected stage on stderr (with its
    count where given); again with --quiet: the same stdout, nothing on stderr."""
    args = list(args)
    db = args[args.index("--db") + 1]
    quiet_args = list(args)
    quiet_args[args.index("--db") + 1] = copy = db.with_name("quiet-" + db.name)
    if db.exists():
        shutil.copyfile(db, copy)  # the same command on the same store, run once each way
    if "--out" in args:
        quiet_args[args.index("--out") + 1] = Path(str(args[args.index("--out") + 1]) + "-quiet")
    loud = run(*args, "--json")
    assert loud.exit_code == 0, loud.output
    doc = json.loads(loud.stdout)
    got = stages(loud)
    for name, count in expect.items():
        assert name in got, (name, loud.stderr)
        if count is not None:
            assert got[name] == count, (name, loud.stderr)
    quiet = run(*quiet_args, "--json", "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    json.loads(quiet.stdout)
    return doc


@pytest.fixture
def mined_store(tmp_path, dpo_recipe):
    db = tmp_path / "s.duckdb"
    assert run("--db", db, "ingest", "battles", SAMPLE / "battles.jsonl", "-q").exit_code == 0
    return db


@pytest.mark.slow
def test_holdout_sample_mine_export_and_audits_report_their_stages(tmp_path, mined_store, dpo_recipe):
    db = mined_store
    check_family(
        "--db", db, "holdout", "sample", "h8", "--n", 8, "--seed", 7, expect={"holdout sample h8": 120}
    )
    doc = check_family(
        "--db", db, "mine", "battle", expect={"mine battle: battles": 120, "mine battle": None}
    )
    assert stages(run("--db", db, "mine", "battle"))["mine battle"] == 0  # a rerun adds no pair
    assert doc["kept"] > 0
    (tmp_path / "b1.toml").write_text(dpo_recipe("b1", blocks=['source = "battle"']))
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    added = run("--db", db, "round", "add", tmp_path / "base.toml", tmp_path / "b1.toml", "-q")
    assert added.exit_code == 0, added.output
    check_family(
        "--db", db, "export", "--round", "b1", "--out", tmp_path / "mix",
        expect={"export b1: plan": None, "export b1: holdout gate": None},
    )  # fmt: skip
    check_family("--db", db, "audit", "leaks", "--holdout", "h8", expect={"audit leaks h8: mixtures": 1})
    check_family("--db", db, "audit", "mixtures", expect={"audit mixtures: exports": None})
    check_family("--db", db, "audit", "gate", "--seed", 1, expect={"audit gate: disguise members": 8})
    check_family(
        "--db", db, "audit", "decontam", "--benchmark", "gsm8k-test", "--path", SAMPLE / "gsm8k-test.jsonl",
        expect={"decontam gsm8k-test: read": None, "decontam gsm8k-test: 13-gram overlap": None},
    )  # fmt: skip


def test_loopfix_mining_and_the_loop_audit_report_verification_with_a_total(tmp_path):
    db = tmp_path / "s.duckdb"
    assert run("--db", db, "generate", "loopfix", "--n", 6, "--seed", 2).exit_code == 0
    task_ids = json.loads(run("--db", db, "sql", "SELECT task_id FROM tasks ORDER BY 1", "--json").stdout)
    outs = tmp_path / "outs.jsonl"
    with open(outs, "w") as f:
        for row in task_ids:
            for k, text in enumerate(("The answer is 3.", "the the the the the the the the the the")):
                f.write(json.dumps({"item_kind": "task", "item_id": row["task_id"], "sample_index": k,
                                    "output": text, "temperature": 0.8}) + "\n")  # fmt: skip
    n = 2 * len(task_ids)
    check_family(
        "--db", db, "ingest", "generations", outs, "--model", "m",
        expect={"ingest generations: read": n},
    )  # fmt: skip
    check_family(
        "--db", db, "mine", "loopfix", "--model", "m",
        expect={"mine loopfix: generations": n, "mine: verify and scan": n, "mine loopfix": None},
    )  # fmt: skip
    check_family("--db", db, "audit", "loops", expect={"audit loops: outputs": n})


def test_the_helper_counts_totals_and_is_silent_unless_installed():
    line = io.StringIO()
    with reporting(LineProgress(line)):
        assert as_progress(None) is current()
        with current().stage("read", total=10, unit="rows") as stage:
            stage.advance(4)
    assert re.fullmatch(r"read: 4 of 10 rows in \d+\.\d s(, [\d,]+ rows/s)?\n", line.getvalue())
    assert current() is NO_PROGRESS and as_progress(None) is NO_PROGRESS and as_progress(False) is NO_PROGRESS
    assert list(NO_PROGRESS.track([1, 2], "x")) == [1, 2]


def test_the_bar_shows_the_total_and_the_rate(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with BarProgress().stage("verify", total=50, unit="outputs") as stage:
        for _ in range(50):
            stage.advance()
    shown = err.getvalue()
    assert "verify" in shown and "/50" in shown and "outputs/s" in shown  # the total, the rate


@pytest.mark.slow
def test_eval_reports_generation_with_the_prompt_count(tmp_path, tiny):
    suite = tmp_path / "gsm8k_test.jsonl"
    suite.write_text(
        "".join(
            json.dumps({"question": f"What is {i} + 1?", "answer": f"{i} + 1 = {i + 1}\n#### {i + 1}"}) + "\n"
            for i in range(3)
        )
    )
    db = tmp_path / "s.duckdb"
    check_family(
        "--db", db, "eval", "--model", tiny, "--suite", "gsm8k", "--path", suite, "--name", "tiny",
        expect={"generate (greedy)": 3},
    )  # fmt: skip


def test_ingest_problems_and_evals_report_their_stages_with_counts(tmp_path):
    db = tmp_path / "s.duckdb"
    problems = tmp_path / "train.jsonl"
    problems.write_text(
        "".join(
            json.dumps({"question": f"What is {i} + 1?", "answer": f"#### {i + 1}"}) + "\n" for i in range(7)
        )
    )
    check_family(
        "--db", db, "ingest", "problems", "--dataset", "gsm8k", "--path", problems,
        expect={"ingest problems: read": 7, "ingest problems: insert": 7},
    )  # fmt: skip
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"item_id": f"q{i}", "correct": i % 2 == 0, "output": "x " * i}) + "\n"
            for i in range(5)
        )
    )
    check_family(
        "--db", db, "ingest", "evals", results, "--model", "m", "--suite", "s",
        expect={"ingest evals: read": 5, "ingest evals: insert": 5},
    )  # fmt: skip


def test_a_running_stage_writes_lines_a_log_can_hold_with_rate_and_time_left():
    """A log (stderr not a terminal) sees a stage while it runs, not only when it ends: count, total,
    rate and time left every `every` seconds, even while no work item finishes."""
    import time

    out = io.StringIO()
    progress = LineProgress(out, every=0.05)
    with progress.stage("train sample", total=40, unit="prompts") as stage:
        stage.advance(4)
        # one long item: the lines keep coming (waited for, not timed, so a loaded machine only slows it)
        deadline = time.monotonic() + 60
        while len(out.getvalue().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    lines = out.getvalue().splitlines()
    running, last = lines[:-1], lines[-1]
    assert len(running) >= 2
    assert all(ln.startswith("train sample: 4 of 40 prompts, ") and ln.endswith(" left") for ln in running)
    # a rate, not zero ("73.0 prompts/s" holds "0 prompts/s": the number is read whole)
    assert "prompts/s" in running[0] and not re.search(r"(?<![\d.])0(?:\.0+)? prompts/s", running[0])
    assert last.startswith("train sample: 4 of 40 prompts in ")


@pytest.mark.parametrize(
    "count,seconds,text",
    [
        (1200, 1.0, "1,200 rows/s"),
        (25, 2.0, "12.5 rows/s"),
        (3, 7.0, "0.43 rows/s"),
        (1, 3600, "0.00028 rows/s"),
    ],
)
def test_slow_rates_never_round_to_zero(count, seconds, text):
    from pairstore.progress import rate_text

    assert rate_text(count, seconds, "rows") == text


def test_time_left_reads_in_minutes_and_hours():
    from pairstore.progress import duration_text

    assert [duration_text(s) for s in (5, 723, 7500)] == ["5 s", "12 min 03 s", "2 h 05 min"]
