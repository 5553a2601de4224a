"""The provenance report renders every section, filled, from a small store with planted facts."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audits.report import SECTIONS, build_section, write_report
from audits.report_facts import ReportFacts
from audits.report_render import Report, Section, render_html, render_markdown
from pairstore.errors import NotFound
from pairstore.holdout.ngrams import register_benchmark
from pairstore.holdout.sets import add_members
from pairstore.keys import match_key, match_text, sha256_file
from pairstore.tables.pairs import Origin, Pair, add_pairs

MSG = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
BENCH_Q = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?"
)


class SectionParser(HTMLParser):
    """Collects, per <section id=...>, its tags and text."""

    def __init__(self):
        super().__init__()
        self.sections: dict[str, dict] = {}
        self.current = None
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.current = attrs.get("id")
            self.sections[self.current] = {"tags": [], "text": "", "imgs": []}
            self.depth = 1
            return
        if self.current:
            self.sections[self.current]["tags"].append(tag)
            if tag == "img":
                self.sections[self.current]["imgs"].append(attrs.get("src", ""))

    def handle_endtag(self, tag):
        if tag == "section":
            self.current = None

    def handle_data(self, data):
        if self.current:
            self.sections[self.current]["text"] += data


def _round(store, name, kind, parents, alpha=None, max_length=None):
    recipe = {"name": name, "kind": kind, "parents": parents}
    if kind == "dpo":
        recipe["train"] = {"max_length": max_length, "max_steps": 10, "learning_rate": 1e-6}
    store.con.execute(
        "INSERT INTO rounds (name, kind, parents, alpha, recipe, recipe_toml, recipe_sha256) "
        "VALUES (?, ?, ?, ?, ?, '', 'x')",
        [name, kind, parents, alpha, json.dumps(recipe)],
    )


def build_store(store, tmp_path):
    members = []
    for i in range(6):
        msgs = [
            {
                "role": "user",
                "content": f"held-out battle {i}: explain topic number {i * 13} in detail please",
            }
        ]
        store.con.execute(
            "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, "
            "match_key, record_hash) VALUES (?, ?, ['o'], ['p'], 1, 'loss', ?, ?)",
            [f"b{i}", msgs, match_key(msgs), f"b{i}"],
        )
        members.append(
            {
                "item_id": f"b{i}",
                "item_kind": "battle",
                "match_key": match_key(msgs),
                "match_text": match_text(msgs),
                "task_key": None,
            }
        )
    add_members(store, "judge6", members)
    register_benchmark(
        store, "gsm8k-test", [("0", BENCH_Q), ("1", "Weng earns $12 an hour for babysitting.")]
    )
    _round(store, "base", "base", [])
    _round(store, "m1", "dpo", ["base"], max_length=60)
    _round(store, "s1", "soup", ["base", "m1"], alpha=0.5)
    _round(store, "s2", "soup", ["base", "m1"], alpha=0.75)
    pairs = [
        Pair(
            prompt="reworded held-out battle",
            chosen="good",
            rejected="bad",
            source="battle",
            origins=[Origin("battle", "b0", "vote=loss → opponent chosen")],
        ),  # a leak by origin id
        Pair(prompt="Solve: " + BENCH_Q, chosen="72", rejected="70", source="self_repair"),  # contaminated
        Pair(
            prompt="Count the r's in strawberry.",
            chosen="There are 3.\n\nFinal answer: 3",
            rejected="r r r r " * 60,
            source="loopfix",
            family="letter_count",
        ),  # rejected truncated
        Pair(prompt="Be polite.", chosen="Sure. " * 70, rejected="No.", source="style"),  # chosen truncated
    ]
    res = add_pairs(store, pairs, miner="t", miner_version="1")
    rows = store.rows("SELECT pair_id, prompt, chosen, rejected, source, family FROM pairs")
    by_id = {r["pair_id"]: r for r in rows}
    table = pa.Table.from_pylist(
        [
            {
                "prompt": [dict(m) for m in by_id[pid]["prompt"]],
                "chosen": [{"role": "assistant", "content": by_id[pid]["chosen"]}],
                "rejected": [{"role": "assistant", "content": by_id[pid]["rejected"]}],
                "pair_id": pid,
                "source": by_id[pid]["source"],
                "family": by_id[pid]["family"],
            }
            for pid in res.pair_ids
        ],
        schema=pa.schema(
            [
                ("prompt", MSG),
                ("chosen", MSG),
                ("rejected", MSG),
                ("pair_id", pa.string()),
                ("source", pa.string()),
                ("family", pa.string()),
            ]
        ),
    )
    path = tmp_path / "m1.parquet"
    pq.write_table(table, path)
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES ('e1', 'm1', 'export', ?, ?, 4, 'c')",
        [str(path), sha256_file(path)],
    )
    for i, pid in enumerate(res.pair_ids):
        store.con.execute("INSERT INTO export_rows VALUES ('e1', ?, ?)", [i, pid])
    # Evals: accuracy rises then falls along the dose; loop flags recorded.
    acc = {"base": 4, "s1": 7, "s2": 6, "m1": 5}
    for model, k in acc.items():
        for i in range(10):
            store.con.execute(
                "INSERT INTO evals (model, suite, item_id, correct, loop_flagged, empty, output_len, "
                "origin) VALUES (?, 'v6', ?, ?, ?, false, 100, 't')",
                [model, f"q{i}", i < k, i == 9],
            )
    for i in range(6):
        store.con.execute(
            "INSERT INTO judgments (judgment_id, battle_id, model_a, model_b, winner) "
            "VALUES (?, ?, 's1', 'base', ?)",
            [f"j{i}", f"b{i}", "a" if i < 3 else "tie"],
        )
    # Outputs for the loop table: one looped generation.
    for i, out in enumerate(["The answer is 3.", "strawberry " * 200]):
        store.con.execute(
            "INSERT INTO generations (gen_id, model, item_kind, suite, prompt, output, loop_flagged, "
            "loop_catastrophic, n_tokens) VALUES (?, 's1', 'prompt', 'lf2', [{'role': 'user', "
            "'content': 'x'}], ?, ?, ?, ?)",
            [f"g{i}", out, i == 1, i == 1, len(out.split())],
        )


@pytest.mark.slow
def test_report_renders_every_section(store, db_path, tmp_path, run_cli):
    build_store(store, tmp_path)
    store.close()
    out = tmp_path / "report"
    res = run_cli("audit", "report", "--model", "s1", "--out", out)
    assert res.exit_code == 0, res.output
    html_text = (out / "report.html").read_text(encoding="utf-8")
    p = SectionParser()
    p.feed(html_text)
    for key, title in [(spec.key, spec.title) for spec in SECTIONS]:
        assert key in p.sections, f"section {key} missing"
        sec = p.sections[key]
        assert title in sec["text"]
        body = sec["text"].replace(title, "").strip()
        assert body, f"section {key} is empty"
    # Planted facts show up where they belong.
    for key in ("lineage", "composition", "dose-curve"):
        imgs = p.sections[key]["imgs"]
        assert imgs and all(src.startswith("data:image/png;base64,") and len(src) > 500 for src in imgs), key
    for key in ("holdout", "decontamination", "mixture-hashes", "lengths", "loops", "evaluation"):
        assert "table" in p.sections[key]["tags"], key
    assert "1 included" in p.sections["holdout"]["text"] and "5 never used" in p.sections["holdout"]["text"]
    assert "gsm8k-test" in p.sections["decontamination"]["text"]
    assert "all match" in p.sections["mixture-hashes"]["text"]
    assert "2 (50.0%)" in p.sections["lengths"]["text"] and "1 (25.0%)" in p.sections["lengths"]["text"]
    assert "s1 vs base" in p.sections["evaluation"]["text"] and "3-0-3" in p.sections["evaluation"]["text"]
    assert "http" not in html_text.replace("http-equiv", "")  # nothing fetched from outside

    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Training data" in md and "## Evaluation" in md
    training = md.split("## Training data", 1)[1].split("## Evaluation", 1)[0]
    assert "m1.parquet" in training and "judge6" in training and "gsm8k-test" in training
    assert (out / "lineage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![Lineage](lineage.png)" in md


@pytest.mark.slow
def test_report_is_deterministic(store, tmp_path):
    build_store(store, tmp_path)
    first = write_report(store, "s1", tmp_path / "one")
    second = write_report(store, "s1", tmp_path / "two")
    assert open(first["html"], "rb").read() == open(second["html"], "rb").read()
    assert first["sections"] == [spec.key for spec in SECTIONS]


def test_sections_are_declared_once_and_the_outputs_are_assembled_from_the_list():
    keys = [spec.key for spec in SECTIONS]
    assert len(set(keys)) == len(keys) and all(spec.title and spec.reads for spec in SECTIONS)
    # The assembly reads whatever sections it is given, in their order: contents line, nav and headings.
    rep = Report("m", [Section("b", "Second"), Section("a", "First", ["text"])], ["## Card", "## More"])
    md, page = render_markdown(rep), render_html(rep)
    assert "Sections: Second, First." in md and md.index("## Second") < md.index("## First")
    assert md.endswith("## Card\n\n## More")
    assert '<li><a href="#b">Second</a></li><li><a href="#a">First</a></li>' in page
    assert page.index('<section id="b">') < page.index('<section id="a">')
    with pytest.raises(NotFound, match="no report section 'nope'"):
        build_section(None, "nope")


def test_report_unknown_model(store, run_cli):
    store.close()
    res = run_cli("audit", "report", "--model", "nope", "--out", "x")
    assert res.exit_code == 2 and "nope" in res.output


def _register_run(store, tmp_path, *, steps=2, max_length=30):
    """An adapter of round m1 whose training evidence says what ran (the recipe says 10 steps, max 60)."""
    from pairstore.rounds.checkpoints import register_checkpoint

    evidence = {
        "kind": "adapter",
        "round": "m1",
        "hyperparameters": {
            "learning_rate": 0.003,
            "lora_rank": 16,
            "global_batch": 4,
            "max_length": max_length,
        },
        "final_metrics": {"global_step": steps},
        "rows": 4,
        "mixture_sha256": "ab" * 32,
        "base": {"name": "base", "path": str(tmp_path / "base")},
    }
    register_checkpoint(store, "base", "base", [], path=str(tmp_path / "base"))
    register_checkpoint(
        store, "m1-lora", "adapter", ["base"], round="m1", path=str(tmp_path / "lora"), evidence=evidence
    )
    register_checkpoint(store, "s1", "soup", ["base", "m1"], alpha=0.5, path=str(tmp_path / "s1"))
    return evidence


def _lineage_rows(md: str) -> dict[str, list[str]]:
    section = md.split("## Lineage", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| stage")]
    return {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in rows if "---" not in r}


@pytest.mark.slow
def test_each_stage_row_says_what_ran_from_the_runs_evidence(store, tmp_path):
    from audits.report_training import run_summary

    build_store(store, tmp_path)
    evidence = _register_run(store, tmp_path, steps=2, max_length=30)
    _round(store, "old", "base", [])  # a recipe stage nothing here ran
    store.con.execute("UPDATE rounds SET parents = ['old'] WHERE name = 'base'")
    out = write_report(store, "s1", tmp_path / "r")
    md = open(out["md"], encoding="utf-8").read()
    rows = _lineage_rows(md)
    assert rows["m1"][1] == "ran: " + run_summary(evidence)
    for part in (
        "2 steps",
        "lr 0.003",
        "LoRA rank 16",
        "global batch 4",
        "max length 30",
        "4 rows",
        "abababababab",
    ):
        assert part in rows["m1"][1], part
    assert "10 steps" in rows["m1"][2]  # the recipe's plan stays beside what ran
    assert rows["old"][1] == "planned (recipe)"
    assert rows["base"][1].startswith("base bundle base")
    assert rows["s1"][1].startswith("souped here")
    # Lengths: truncation measured against the run's 30 tokens, not the recipe's 60.
    lengths = md.split("## Lengths", 1)[1].split("\n## ", 1)[0]
    assert "| m1 | 4 | 30 |" in lengths and "m1 30" in lengths
    _register_run(store, tmp_path, steps=1)
    rows = _lineage_rows(open(write_report(store, "s1", tmp_path / "r1")["md"], encoding="utf-8").read())
    assert "1 step," in rows["m1"][1]


@pytest.mark.slow
def test_the_report_opens_with_the_verdict_and_every_leaked_id(store, tmp_path):
    build_store(store, tmp_path)
    _register_run(store, tmp_path)
    out = write_report(store, "s1", tmp_path / "r")
    html_text = open(out["html"], encoding="utf-8").read()
    p = SectionParser()
    p.feed(html_text)
    assert list(p.sections)[0] == "summary"
    text = p.sections["summary"]["text"]
    # s1 7/10 against base 4/10: 3 items only s1 got right, none only base; exact McNemar p = 0.25.
    # Not significant on 10 items: the verdict says so rather than "better".
    assert (
        "Is s1 better than the incumbent base? v6: no significant difference, +30.0 points (7 vs 4 of 10 "
        "paired items right, exact McNemar p = 0.25)." in text
    )
    assert "7/10 = 0.7000 (0.40-0.89)" in text and "4/10 = 0.4000 (0.17-0.69)" in text
    assert "6 / 3 / 0 / 1" not in text and "4 / 3 / 0 / 3" in text
    assert "3-0-3" in text  # the blind judge
    assert (
        "Did anything leak? Yes: 1 of the 6 members of held-out set judge6 are in training mixtures." in text
    )
    assert "In m1.parquet (round m1): b0." in text
    # The id links to its row in Holdout status, and that row says where it is.
    assert 'href="#leak-judge6-b0-m1_parquet"' in html_text and 'id="leak-judge6-b0-m1_parquet"' in html_text
    # The model card is rendered, not shown as markdown source.
    assert (
        "<h2>Training data</h2>" in html_text and "## Training data" not in p.sections["model-card"]["text"]
    )


@pytest.mark.slow
def test_evaluation_covers_the_chain_unless_asked_for_every_model(store, tmp_path):
    build_store(store, tmp_path)
    for i in range(10):
        store.con.execute(
            "INSERT INTO evals (model, suite, item_id, correct, loop_flagged, empty, output_len, origin) "
            "VALUES ('stranger', 'v6', ?, true, false, false, 10, 't')",
            [f"q{i}"],
        )
    chain = open(write_report(store, "s1", tmp_path / "a")["md"], encoding="utf-8").read()
    every = open(write_report(store, "s1", tmp_path / "b", all_models=True)["md"], encoding="utf-8").read()
    evaluation = chain.split("## Evaluation", 1)[1].split("\n## ", 1)[0]
    # s2 (a soup of the same parents, not in s1's chain) and the stranger are left out, and said to be.
    assert "2 other evaluated model(s)" in evaluation
    assert "stranger" not in evaluation.split("left out")[1] and "| s2 |" not in evaluation
    assert "| stranger |" in every.split("## Evaluation", 1)[1]


@pytest.mark.slow
def test_each_section_reads_only_the_tables_it_declares(store, tmp_path):
    """Each section built alone, with every table and view it does not declare dropped, is the section the
    whole store gives: what a section declares it reads is all it reads (on this store's branches)."""
    build_store(store, tmp_path)
    _register_run(store, tmp_path)
    whole = {spec.key: spec.build(ReportFacts(store, "s1")) for spec in SECTIONS}
    objects = store.con.execute(
        "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal "
        "UNION ALL SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE NOT internal"
    ).fetchall()
    for spec in SECTIONS:
        store.con.execute("BEGIN TRANSACTION")
        try:
            for name, kind in objects:
                if name not in spec.reads:
                    store.con.execute(f"DROP {kind} {name}")
            alone = spec.build(ReportFacts(store, "s1"))
        finally:
            store.con.execute("ROLLBACK")
        assert alone == whole[spec.key], spec.key
