"""The main job: `pairstore demo` end to end on the bundled invented data (run once per session)."""

from __future__ import annotations

import json
import shlex
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from pairstore.store import open_store


def step_text(demo, name: str) -> str:
    return next(text for step, text in demo.steps if step == name)


def test_demo_walks_every_step(demo_run):
    names = [s for s, _ in demo_run.steps]
    for expected in ["ingest battles", "ingest problems", "import pairs", "holdout", "generate tasks",
                     "ingest generations", "round recipes", "attach history", "mine battle",
                     "mine self_repair (gsm8k)", "mine self_repair (math)", "mine loopfix", "mine style",
                     "export gate", "export m11a", "audit leaks", "audit decontam gsm8k-test", "audit mixtures",
                     "audit lengths", "audit loops", "train dpo m11a", "merge", "soup", "eval", "blind judge",
                     "report"]:
        assert expected in names, expected
    assert len(demo_run.lines) == len(demo_run.steps)


def test_demo_gate_refuses_the_leaking_file_and_exports_m11a(demo_run):
    assert "REFUSED (exit 3): 13 held-out battles" in step_text(demo_run, "export gate")
    assert step_text(demo_run, "audit leaks").startswith("judge34: 21 clean, 13 leaked, all in s2_pairs_lf1.parquet")
    evidence = json.loads((demo_run.out_dir / "mixtures" / "m11a.training_evidence.json").read_text())
    assert evidence["round"] == "m11a"
    with open_store(demo_run.store_path, read_only=True) as s:
        # Nothing of the refused round was written; the m11a export holds no held-out battle.
        assert s.scalar("SELECT count(*) FROM exports WHERE round = 'm11a-replay'") == 0
        leaked = s.scalar("""
            SELECT count(*) FROM exports e JOIN export_rows r USING (export_id) JOIN pairs p USING (pair_id)
            JOIN holdout h ON h.match_key = p.match_key
            WHERE e.round = 'm11a' AND e.kind = 'export' AND h.set_name = 'judge34'""")
        assert leaked == 0
        assert s.scalar("SELECT count(*) FROM holdout WHERE set_name = 'judge34'") == 34
        kinds = {r[0] for r in s.con.execute("SELECT DISTINCT source FROM pairs").fetchall()}
        assert {"battle", "self_repair", "loopfix", "style", "ultrafeedback", "compliance"} <= kinds


def test_demo_trains_merges_soups_and_evaluates(demo_run):
    with open_store(demo_run.store_path, read_only=True) as s:
        ck = {r[0]: (r[1], list(r[2]), r[3]) for r in s.con.execute(
            "SELECT name, kind, parents, alpha FROM checkpoints").fetchall()}
        assert ck["m11a"][0] == "merge" and ck["sm11a"] == ("soup", ["so7a", "m11a"], 0.5)
        assert ck["sm11c"] == ("soup", ["so7a", "m11a"], 0.75)
        models = {r[0] for r in s.con.execute("SELECT DISTINCT model FROM evals").fetchall()}
        assert models == {"so7a", "m11a", "sm11a", "sm11c"}
        assert s.scalar("SELECT count(*) FROM judgments") == 34
    for name in ("m11a", "sm11a", "sm11c"):
        bundle = demo_run.out_dir / "bundles" / name
        assert (bundle / "chat_template.jinja").exists() and (bundle / "training_evidence.json").exists()


class _Sections(HTMLParser):
    def __init__(self):
        super().__init__()
        self.h2, self.images, self._in_h2 = [], 0, False

    def handle_starttag(self, tag, attrs):
        self._in_h2 = tag == "h2"
        if tag == "img" and dict(attrs).get("src", "").startswith("data:image/png;base64,"):
            self.images += 1

    def handle_data(self, data):
        if self._in_h2 and data.strip():
            self.h2.append(data.strip())
            self._in_h2 = False


def test_demo_report_has_every_section_filled(demo_run):
    assert demo_run.report_html == demo_run.out_dir / "report" / "report.html"
    parser = _Sections()
    parser.feed(demo_run.report_html.read_text(encoding="utf-8"))
    for section in ["Lineage", "Mixture composition per round", "Holdout status", "Decontamination",
                    "Mixture hash check", "Lengths", "Loop table", "Evaluation", "Dose curve"]:
        assert section in parser.h2, section
    assert parser.images >= 3  # lineage, composition, dose curve
    md = (demo_run.out_dir / "report" / "report.md").read_text(encoding="utf-8")
    assert "21 never used in training and 13 included" in md
    assert "| 0.75 | sm11c |" in md


def test_demo_ends_naming_files_that_exist_and_queries_that_answer(demo_run):
    from pairstore.cli import cli
    from pairstore.demo import TRY_QUERIES, closing_lines

    lines = closing_lines(demo_run)
    opened = [ln.split()[0] for ln in lines if ln.startswith("  /") or ln.startswith("  demo")]
    assert len(opened) == 4 and all(Path(p).is_file() for p in opened)
    commands = [ln.strip() for ln in lines if ln.strip().startswith("pairstore ")]
    assert len(commands) == len(TRY_QUERIES) == 3
    outputs = []
    for cmd in commands:
        r = CliRunner().invoke(cli, shlex.split(cmd)[1:], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        outputs.append(r.output)
    leaked = [ln for ln in outputs[1].splitlines()[1:] if ln.strip() and not set(ln.strip()) <= set("-+|")]
    assert len(leaked) == 13
