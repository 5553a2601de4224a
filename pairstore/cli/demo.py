"""`pairstore demo`: the main job, end to end, on bundled invented data and a tiny model that learns.

    pairstore demo               # into ./demo-run/   (make demo does this)
    pairstore demo /tmp/run      # anywhere else

What it does, in order (each step prints one line; the data are invented, see
pairstore/sample_data/README.md):

 1. ingest 120 sample battles, GSM8K- and MATH-format sample problems (train
    splits), an UltraFeedback-format sample and handcrafted compliance pairs;
 2. sample the 34-battle blind-judge holdout (judge34), stratified by vote;
 3. generate the held-out suites, arith (240 two-digit sums and differences) and
    lf2 (loop-fix tasks of the other families), then 120 training tasks that
    share no task key with them;
 4. the incumbent so7a is a real model: a 3-layer, 128-wide character-level Llama
    trained from its seed on two-digit arithmetic (train/tiny_chat.py,
    scripts/train_demo_model.py; shipped in pairstore/sample_data/so7a, 2.7 MB).
    It answers every training task 4 times at temperature 0.8; the verifier and
    the loop scanner judge each answer. (It cannot read word problems, so the
    GSM8K/MATH self-repair mining is fed simulated outputs, labelled as such.)
 5. attach an invented past-round pair file (s2_pairs_lf1.parquet) that holds
    13 of the held-out battles in disguised forms, as the model card's m11a file did;
 6. mine every kind of pair: battle, self-repair (GSM8K, MATH), loop-fix (the
    incumbent's wrong answers against the computed gold), style, UltraFeedback,
    compliance;
 7. load the shipped round recipes; show the export gate refusing a recipe that
    replays the leaking file; export m11a (loop-fix + battle pairs) through the gate;
 8. audits: leaks, decontamination (registering the test sets with the gate),
    mixture hashes, lengths, loops;
 9. train m11a's DPO+NLL LoRA on the export (demo-sized settings, DPO_OVERRIDES),
    merge it, soup it at alpha 0.5 (sm11a), 0.625 (sm11d) and 0.75 (sm11c);
10. evaluate all five on the held-out suites (greedy), test sm11a against so7a
    item by item (exact McNemar), and blind-judge sm11a against so7a on the
    held-out battles with a rule-based judge (loops and empty answers are heavy flaws);
11. write the provenance report to report/report.html and report/report.md:
    accuracies with Wilson intervals, the paired test, the dose curve, loop rates.

Every random step is seeded and torch runs on THREADS threads, so a rerun on the
same machine gives the same numbers. `make readme-demo`
(scripts/readme_demo.py) writes a run's numbers into the README (readme_block).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

import pairstore
from audits.compare import PairedFlips, paired_flips
from audits.decontam import decontam, load_benchmark
from audits.leaks import audit_leaks
from audits.lengths import audit_lengths
from audits.loop_table import loop_table
from audits.loops import scan
from audits.mixtures import check_mixtures
from audits.report import write_report
from generators.registry import DEFAULT_FAMILIES
from generators.tasks import generate_loopfix
from miners.registry import run_miner
from pairstore.cli.base import as_plain, echo_json, json_option
from pairstore.errors import GateRefused, PairstoreError
from pairstore.export.attach import attach_round
from pairstore.export.run import export_round
from pairstore.holdout.ngrams import register_benchmark
from pairstore.holdout.sets import sample_holdout
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.compliance import import_compliance
from pairstore.ingest.generations import ingest_generations
from pairstore.ingest.judgments import ingest_judgments
from pairstore.ingest.problems import ingest_problems
from pairstore.ingest.ultrafeedback import import_ultrafeedback
from pairstore.keys import seeded_rank
from pairstore.rounds.checkpoints import register_checkpoint
from pairstore.rounds.recipes import add_round, load_shipped_recipes
from pairstore.store.store import open_store
from train.bundle import EVIDENCE_FILE
from train.dpo import train_dpo
from train.dpo_job import DpoOptions
from train.eval import EvalOptions, run_eval
from train.merge import merge_adapter
from train.sample import SampleOptions, sample
from train.simulated_outputs import simulate_outputs
from train.soup import soup
from train.tiny_chat import CONFIG_FILE, DEMO_DIFFICULTY, DEMO_FAMILIES, DEMO_SEED, DEMO_SUITE_N, DEMO_TRAIN_N

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.store.store import Store

# How a demo step reports itself: step(name, text).
Step = Callable[[str, str], None]

HOLDOUT = "judge34"
SUITE = "arith"  # the held-out suite the round is measured on (two-digit sums and differences)
LOOP_SUITE = "lf2"  # the held-out loop-fix suite (the other families: the incumbent never learned them)
LOOP_SUITE_N = 35
LOOP_FAMILIES = list(DEFAULT_FAMILIES)
INCUMBENT = "so7a"
LEAKED = 13  # held-out battles the invented past file leaks (the card's 13 of 34)
# The incumbent: a tiny character-level Llama trained from its seed by scripts/train_demo_model.py.
INCUMBENT_BUNDLE = "so7a"  # folder under pairstore/sample_data
SAMPLES, TEMPERATURE = 4, 0.8  # K answers per training task, as self-repair mining draws them
# The round's real batch (32 x 2,048 tokens at lr 1e-6) is for GPUs and a 7B model; on the tiny model
# these settings make a round of about a minute on 2 cores that moves it (bench/RESULTS.md, demo section).
DPO_OVERRIDES = {
    "max_steps": 80,
    "global_batch": 16,
    "per_device_batch": 16,
    "learning_rate": 3e-3,
    "lora_rank": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.0,
    "max_length": 256,
}
SOUPS = (("sm11a", 0.5), ("sm11d", 0.625), ("sm11c", 0.75))  # the card's dose test
THREADS = 2  # CPU results repeat bit for bit only at a fixed thread count


@dataclass
class DemoResult:
    out_dir: Path
    store_path: Path
    report_html: Path | None = None
    steps: list[tuple[str, str]] = field(default_factory=list)  # (step, what it did)
    seconds: float = 0.0


# What the demo suggests trying on its store once it is done (each run by tests/cli/test_demo.py).
TRY_QUERIES = (
    ("pairs per source and family in the store", "SELECT * FROM pairs_by_source ORDER BY pairs DESC"),
    (
        "which held-out battles the attached past file leaked",
        "SELECT DISTINCT h.item_id AS battle_id FROM exports e JOIN export_rows r USING (export_id) "
        "JOIN pairs p USING (pair_id) JOIN holdout h ON h.match_key = p.match_key "
        "WHERE e.kind = 'attached' AND h.item_kind = 'battle' ORDER BY 1",
    ),
    ("battle win rate by category", "SELECT * FROM battle_votes_by_category"),
)


def closing_lines(result: DemoResult) -> list[str]:
    """The files to open and three SQL queries to try, printed when the demo ends."""
    out = result.out_dir
    lines = [
        "",
        f"done in {result.seconds:.0f} s. Open:",
        f"  {result.report_html}   the provenance report (report.md beside it)",
        f"  {out / 'mixtures' / 'm11a.parquet'}   the m11a export (TRL DPO format)",
        f"  {out / 'mixtures' / 'm11a.training_evidence.json'}   its evidence: hashes, gate, rows by source",
        f"  {out / 'data' / 's2_pairs_lf1.parquet'}   the invented leaky past-round file the audit caught",
        "",
        "Try (after `make demo`, pairstore is .venv/bin/pairstore; `. .venv/bin/activate` puts it on PATH):",
    ]
    for question, sql in TRY_QUERIES:
        lines += [f"  # {question}", f'  pairstore --db {result.store_path} sql "{sql}"']
    return lines


def sample_file(name: str) -> Path:

    return Path(pairstore.__file__).parent / "sample_data" / name


def _counts(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items()) if v) or "none"


def write_leaky_past_file(store: Store, path: Path, *, holdout: str, leaked: int, seed: int) -> list[str]:
    """An invented past round's pair file: battle pairs mined without a holdout filter.

    It holds `leaked` held-out battles in disguised forms (CRLF, trailing spaces, fullwidth
    Unicode, a system prompt in front, upper case) among ordinary battle pairs. Returns the
    held-out battle ids it leaks."""
    held = [
        r[0]
        for r in store.con.execute(
            "SELECT item_id FROM holdout WHERE set_name = ? AND removed_at IS NULL AND item_kind = 'battle'",
            [holdout],
        ).fetchall()
    ]
    decisive = store.rows("""
        SELECT battle_id, prompt, own_answers, opponent_answers, vote,
               (SELECT count(*) FROM battles o WHERE o.match_key = b.match_key) AS same_prompt FROM battles b
        WHERE vote IN ('win', 'loss') AND n_turns = 1 ORDER BY battle_id""")
    # A prompt asked in two battles leaks both: leak prompts of one battle each, so `leaked` is the count.
    held_decisive = [b for b in decisive if b["battle_id"] in set(held) and b["same_prompt"] == 1]
    held_decisive.sort(key=lambda b: seeded_rank(seed, b["battle_id"]))
    leaks = held_decisive[:leaked]
    disguises = [
        lambda t: t.replace("\n", "\r\n") + "\r\n",
        lambda t: t + "   ",
        lambda t: t.translate({ord(c): ord(c) + 0xFEE0 for c in "0123456789"}),  # fullwidth digits
        lambda t: t.upper(),
        lambda t: "  " + t.replace(" ", "\t", 2),
    ]
    rows = []
    for i, b in enumerate(leaks + [b for b in decisive if b["battle_id"] not in set(held)][:40]):
        user = [m["content"] for m in b["prompt"] if m["role"] == "user"][0]
        own, opp = b["own_answers"][0], b["opponent_answers"][0]
        chosen, rejected = (own, opp) if b["vote"] == "win" else (opp, own)
        if i < len(leaks):
            user = disguises[i % len(disguises)](user)
        prompt = [{"role": "user", "content": user}]
        if i % 4 == 1:
            prompt.insert(0, {"role": "system", "content": "You are a helpful assistant."})
        rows.append({"prompt": prompt, "chosen": chosen, "rejected": rejected})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return sorted(b["battle_id"] for b in leaks)


def rule_judge(answer_a: str, answer_b: str) -> tuple[str, bool, bool]:
    """A rule-based stand-in for the blind LLM judge: heavy flaws are loops and empty answers.

    A flawed answer loses to a clean one; otherwise it is a tie (the tiny model's answers carry
    no meaning to prefer)."""

    flaw_a = not answer_a.strip() or scan(answer_a).flagged
    flaw_b = not answer_b.strip() or scan(answer_b).flagged
    winner = "tie" if flaw_a == flaw_b else ("b" if flaw_a else "a")
    return winner, flaw_a, flaw_b


def run_demo(
    out_dir: StrPath = "demo-run", *, echo: Callable[[str], object] = print, progress: bool | None = None
) -> DemoResult:

    import torch

    torch.set_num_threads(THREADS)
    # Every step seeds itself; this makes what is left independent of what ran before in the process (a
    # test session, an interactive one). torch.use_deterministic_algorithms is not set: on CPU it changed
    # no output here and made generation three times slower (1.2 s vs 4.4 s for 16 x 40 tokens).
    torch.manual_seed(DEMO_SEED)
    return _run_demo_steps(out_dir, echo, progress)


def _run_demo_steps(out_dir: StrPath, echo: Callable[[str], object], progress: bool | None) -> DemoResult:
    import datasets
    from transformers.utils import logging as transformers_logging

    # One line per step, not a bar per model load and dataset map.
    transformers_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "data").mkdir(parents=True)
    result = DemoResult(out_dir, out_dir / "pairstore.duckdb")
    started = time.perf_counter()
    show_bar = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(total=11, desc="demo", unit="step", disable=not show_bar, leave=False)

    def step(name: str, text: str) -> None:
        result.steps.append((name, text))
        msg = f"[{time.perf_counter() - started:6.1f}s] {name}: {text}"
        if show_bar:
            bar.write(msg)
        else:
            echo(msg)

    with open_store(result.store_path) as store:
        _ingest(store, step)
        bar.update()
        _holdout_and_tasks(store, step)
        bar.update(2)
        _simulated_generations(store, out_dir, step)
        _incumbent_samples(store, out_dir, step)
        bar.update()
        _attach_history(store, out_dir, step)
        bar.update()
        _mine(store, step)
        bar.update()
        _rounds_and_export(store, out_dir, step)
        bar.update()
        _audits(store, step)
        bar.update()
        bundles = _train(store, out_dir, step)
        bar.update()
        _evaluate(store, out_dir, bundles, step)
        bar.update()

        rep = write_report(store, "sm11a", out_dir / "report")
        result.report_html = Path(rep["html"])
        step("report", f"{result.report_html} and report.md ({len(rep['sections'])} sections)")
        bar.update()
    bar.close()
    result.seconds = time.perf_counter() - started
    return result


# -- the steps --------------------------------------------------------------------------------------


def _ingest(store: Store, step: Step) -> None:

    r = ingest_battles(store, sample_file("battles.jsonl"))
    votes = dict(store.con.execute("SELECT vote, count(*) FROM battles GROUP BY vote").fetchall())
    step("ingest battles", f"{r.added} invented battles ({_counts(votes)})")
    g = ingest_problems(store, "gsm8k", path=sample_file("gsm8k-train.jsonl"))
    m = ingest_problems(store, "math", path=sample_file("math-train.jsonl"))
    step("ingest problems", f"{g.added} GSM8K-format and {m.added} MATH-format train problems")
    uf = import_ultrafeedback(store, path=str(sample_file("ultrafeedback-train_prefs.jsonl")), seed=DEMO_SEED)
    comp = import_compliance(store, path=str(sample_file("compliance-pairs.jsonl")))
    sft = import_compliance(store, path=str(sample_file("compliance-sft.jsonl")))
    step(
        "import pairs",
        f"UltraFeedback-format {uf.kept}, compliance pairs {comp.kept}, compliance NLL rows {sft.kept}",
    )


def _holdout_and_tasks(store: Store, step: Step) -> None:

    ids = sample_holdout(store, HOLDOUT, n=34, seed=DEMO_SEED)
    votes = dict(
        store.con.execute(
            "SELECT b.vote, count(*) FROM holdout h JOIN battles b ON b.battle_id = h.item_id "
            "WHERE h.set_name = ? GROUP BY 1",
            [HOLDOUT],
        ).fetchall()
    )
    step("holdout", f"{HOLDOUT}: {len(ids)} battles held out for blind judging ({_counts(votes)})")
    # The suite first, then training tasks that avoid its keys: the incumbent's own training (scripts/
    # train_demo_model.py) made these same calls and never drew a key of either.
    suite = generate_loopfix(
        store, DEMO_SUITE_N, DEMO_SEED, DEMO_FAMILIES, suite=SUITE, difficulty=DEMO_DIFFICULTY
    )
    loops = generate_loopfix(store, LOOP_SUITE_N, DEMO_SEED, LOOP_FAMILIES, suite=LOOP_SUITE)
    train = generate_loopfix(store, DEMO_TRAIN_N, DEMO_SEED + 1, DEMO_FAMILIES, difficulty=DEMO_DIFFICULTY)
    step(
        "generate tasks",
        f"held-out suites {SUITE} ({suite.tasks_inserted} two-digit sums and differences) and "
        f"{LOOP_SUITE} ({loops.tasks_inserted} loop-fix tasks over {len(loops.families)} families); "
        f"{train.tasks_inserted} training tasks, none with a held-out key",
    )


def _simulated_generations(store: Store, out_dir: Path, step: Step) -> None:

    path = out_dir / "data" / f"{INCUMBENT}-simulated-generations.jsonl"
    records = simulate_outputs(store, model=INCUMBENT, samples=4, seed=DEMO_SEED)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    ingested = ingest_generations(store, path, model=INCUMBENT)
    step(
        "ingest generations",
        f"{ingested.added} simulated outputs on the GSM8K- and MATH-format problems "
        f"(4 per problem: the tiny incumbent cannot read word problems)",
    )


def _incumbent_samples(store: Store, out_dir: Path, step: Step) -> None:
    """The incumbent answers every training task K times at a temperature; verifier and scanner judge each."""
    base = _base_bundle(store, out_dir)
    options = SampleOptions(
        model=str(base),
        items="tasks",
        samples=SAMPLES,
        temperature=TEMPERATURE,
        seed=DEMO_SEED,
        name=INCUMBENT,
    )
    r = sample(store, options)
    step(
        "sample so7a",
        f"{r.generations} answers ({SAMPLES} per training task at temperature {TEMPERATURE}): "
        f"{_counts(r.verdicts)}; {r.loop_flagged} flagged as loops",
    )


def _attach_history(store: Store, out_dir: Path, step: Step) -> None:

    loaded = load_shipped_recipes(store)
    step(
        "round recipes",
        f"{len(loaded.get('added', loaded)) if isinstance(loaded, dict) else loaded} shipped "
        f"recipes loaded (base → ... → sm11a, and the rejected candidates)",
    )
    path = out_dir / "data" / "s2_pairs_lf1.parquet"
    leaked = write_leaky_past_file(store, path, holdout=HOLDOUT, leaked=LEAKED, seed=DEMO_SEED)
    a = attach_round(store, "m11a", path)
    step(
        "attach history",
        f"{path.name} (an invented past m11a pair file, {a.rows} rows) registered; "
        f"it secretly holds {len(leaked)} held-out battles",
    )


def _mine(store: Store, step: Step) -> None:

    runs: list[tuple[str, dict[str, Any]]] = [
        ("battle", {}),
        ("self_repair", {"model": INCUMBENT, "dataset": "gsm8k", "pairs_per_problem": 2, "seed": DEMO_SEED}),
        ("self_repair", {"model": INCUMBENT, "dataset": "math", "pairs_per_problem": 2, "seed": DEMO_SEED}),
        ("loopfix", {"model": INCUMBENT, "seed": DEMO_SEED}),
        ("style", {"model": INCUMBENT}),
    ]
    for name, opts in runs:
        r = run_miner(store, name, **opts)
        label = name + (f" ({opts['dataset']})" if "dataset" in opts else "")
        step(f"mine {label}", f"kept {r.kept}; dropped: {_counts(dict(r.dropped))}")


def _rounds_and_export(store: Store, out_dir: Path, step: Step) -> None:

    replay = out_dir / "data" / "m11a-replay.toml"
    replay.write_text(
        "# Demo: a round that replays the past m11a pair file as it was. The gate must refuse it.\n"
        'name = "m11a-replay"\nkind = "dpo"\nparent = "so7a"\nseed = 12076\nsystem_prompt = "bundle"\n'
        '[[mix]]\nsource = "attached"\n'
        "[train]\nbeta = 0.1\nsft_weight = 0.7\nlora_rank = 8\nlora_alpha = 16\nlora_dropout = 0.0\n"
        'target_modules = "all-linear"\nlearning_rate = 1e-6\nlr_scheduler = "cosine"\nwarmup_ratio = 0.1\n'
        "max_steps = 10\nglobal_batch = 4\nper_device_batch = 1\nmax_length = 512\n",
        encoding="utf-8",
    )
    add_round(store, replay)
    _base_bundle(store, out_dir)
    mix = out_dir / "mixtures"
    try:
        export_round(store, "m11a-replay", mix)
        raise PairstoreError("the gate let a leaking mixture through")  # the demo must never get here
    except GateRefused as e:
        ids = sorted({h.item_id for h in e.hits})
        step(
            "export gate",
            f"m11a-replay REFUSED (exit 3): {len(ids)} held-out battles in the past file, nothing written",
        )
    exp = export_round(store, "m11a", mix)
    rows = sum(f.rows for f in exp.files.values())
    step(
        "export m11a",
        f"{rows} rows through the gate ({_counts(exp.rows_by_source)}) -> "
        f"{Path(exp.files['dpo'].path).name}, sha256 {exp.files['dpo'].sha256[:12]}…",
    )


def _base_bundle(store: Store, out_dir: Path) -> Path:
    """The shipped incumbent (a tiny chat model trained from its seed), copied and registered as so7a."""
    path = out_dir / "bundles" / INCUMBENT
    if not path.exists():
        shutil.copytree(sample_file(INCUMBENT_BUNDLE), path)
        last = json.loads((path / EVIDENCE_FILE).read_text(encoding="utf-8"))["history"][-1]
        register_checkpoint(
            store,
            INCUMBENT,
            "base",
            [],
            path=str(path),
            evidence={
                "note": "demo incumbent: a tiny character-level Llama trained from its seed on two-digit "
                "sums and differences (scripts/train_demo_model.py)",
                "config": json.loads((path / CONFIG_FILE).read_text(encoding="utf-8")),
                "steps_trained": last["step"],
                "probe_accuracy": last["probe_accuracy"],
            },
        )
    return path


def _audits(store: Store, step: Step) -> None:

    d = audit_leaks(store, HOLDOUT).as_dict()
    files = [f for f in d["files"] if f["leaked_ids"] or f["near_ids"]]
    step(
        "audit leaks",
        f"{d['holdout']['name']}: {d['holdout']['clean']} clean, {d['holdout']['leaked']} leaked, "
        f"all in {', '.join(Path(f['path']).name for f in files) or 'no file'}",
    )
    for bench, fname in (("gsm8k-test", "gsm8k-test.jsonl"), ("math-test", "math-test.jsonl")):
        items = load_benchmark(sample_file(fname))
        register_benchmark(store, bench, [(it.item_id, it.text) for it in items])
        r = decontam(store, bench, items, registered=True)
        step(
            f"audit decontam {bench}",
            f"{r.contaminated_rows} of {r.training_rows} training rows share a "
            f"13-gram with its {r.items} items; registered with the gate",
        )
    checks = check_mixtures(store)
    bad = [c for c in checks if c.status != "ok"]
    step("audit mixtures", f"{len(checks)} files re-hashed, {len(bad)} changed or missing")
    lengths = audit_lengths(store)
    step("audit lengths", f"{len(lengths.rounds)} mixtures measured ({lengths.counter})")
    table = loop_table(store)
    flagged = sum(r["flagged"] for r in table)
    outputs = sum(r["outputs"] for r in table)
    step("audit loops", f"{flagged} of {outputs} outputs flagged as loops")


def _train(store: Store, out_dir: Path, step: Step) -> dict[str, Path]:

    base = _base_bundle(store, out_dir)
    options = DpoOptions(round="m11a", base=str(base), out=str(out_dir / "runs" / "m11a"))
    r = train_dpo(store, options, overrides=DPO_OVERRIDES)
    o = DPO_OVERRIDES
    step(
        "train dpo m11a",
        f"{o['max_steps']} steps of DPO+NLL LoRA (rank {o['lora_rank']}, batch "
        f"{o['global_batch']}, lr {o['learning_rate']:g}) on the export: final loss "
        f"{r.metrics.get('train_loss', float('nan')):.3f}, reward accuracy "
        f"{r.metrics.get('rewards/accuracies', float('nan')):.2f}",
    )
    m11a = out_dir / "bundles" / "m11a"
    merge_adapter(base, r.out_dir, m11a, store=store, name="m11a")
    step("merge", f"m11a adapter merged into full weights -> {m11a}")
    bundles = {INCUMBENT: base, "m11a": m11a}
    for name, alpha in SOUPS:
        path = out_dir / "bundles" / name
        soup(base, m11a, alpha, path, store=store, name=name, parents=[INCUMBENT, "m11a"])
        bundles[name] = path
    step("soup", ", ".join(f"{name} = so7a + {alpha:g}*(m11a - so7a)" for name, alpha in SOUPS))
    return bundles


def _evaluate(store: Store, out_dir: Path, bundles: dict[str, Path], step: Step) -> None:

    for name, path in bundles.items():
        for suite in (SUITE, LOOP_SUITE):
            run_eval(store, EvalOptions(model=str(path), suite=suite, name=name))
    acc = {
        m: (k, n)
        for m, k, n in store.con.execute(
            "SELECT model, count(*) FILTER (correct), count(*) FROM evals WHERE suite = ? GROUP BY ALL",
            [SUITE],
        ).fetchall()
    }
    step(
        "eval",
        f"{SUITE} (held out, greedy): "
        + ", ".join(f"{m} {acc[m][0]}/{acc[m][1]}" for m in bundles)
        + f"; {LOOP_SUITE} loop-flagged: "
        + ", ".join(
            f"{m} {k}"
            for m, k in store.con.execute(
                "SELECT model, count(*) FILTER (loop_flagged) FROM evals WHERE suite = ? "
                "GROUP BY ALL ORDER BY model",
                [LOOP_SUITE],
            ).fetchall()
        ),
    )
    c = paired_flips(store, "sm11a", INCUMBENT, SUITE)
    step(
        "paired test",
        f"sm11a vs so7a on {c.items} {SUITE} items: right only by sm11a {c.a_only}, only by so7a "
        f"{c.b_only}; exact McNemar p = {c.mcnemar_p:.2g}",
    )
    # Blind judging on the held-out battles: both models answer each held-out prompt.
    held = store.rows(
        "SELECT b.battle_id, b.prompt FROM holdout h JOIN battles b ON b.battle_id = h.item_id "
        "WHERE h.set_name = ? AND h.removed_at IS NULL ORDER BY b.battle_id",
        [HOLDOUT],
    )
    prompts = out_dir / "data" / "judge34-prompts.jsonl"
    with open(prompts, "w", encoding="utf-8") as f:
        for b in held:
            turns = [m for m in b["prompt"] if m["role"] == "user"]
            f.write(json.dumps({"id": b["battle_id"], "prompt": [dict(turns[-1])]}) + "\n")
    answers = {}
    for name in ("sm11a", INCUMBENT):
        sample(store, SampleOptions(model=str(bundles[name]), items=str(prompts), name=name))
        answers[name] = dict(
            store.con.execute(
                "SELECT item_id, output FROM generations WHERE model = ? AND item_kind = 'prompt' "
                "AND item_id IS NOT NULL",
                [name],
            ).fetchall()
        )
    verdicts = out_dir / "data" / "judgments.jsonl"
    with open(verdicts, "w", encoding="utf-8") as f:
        for b in held:
            a, bb = answers["sm11a"].get(b["battle_id"], ""), answers[INCUMBENT].get(b["battle_id"], "")
            winner, fa, fb = rule_judge(a, bb)
            f.write(
                json.dumps(
                    {
                        "battle_id": b["battle_id"],
                        "model_a": "sm11a",
                        "model_b": INCUMBENT,
                        "winner": winner,
                        "heavy_flaw_a": fa,
                        "heavy_flaw_b": fb,
                        "judge": "demo rule judge (loops and empty answers are heavy flaws)",
                    }
                )
                + "\n"
            )
    ingest_judgments(store, verdicts)
    t = dict(store.con.execute("SELECT winner, count(*) FROM judgments GROUP BY 1").fetchall())
    step(
        "blind judge",
        f"sm11a vs so7a on {len(held)} held-out battles: "
        f"{t.get('a', 0)}-{t.get('b', 0)} ({t.get('tie', 0)} ties)",
    )


# -- the README's demo section, generated from a demo store (scripts/readme_demo.py, make readme-demo) ----

README_START = (
    "<!-- demo-results:start (written by `make readme-demo` from the demo's store; do not edit) -->"
)
README_END = "<!-- demo-results:end -->"
SOUP_LABELS = {
    INCUMBENT: f"{INCUMBENT} (incumbent)",
    "sm11a": f"sm11a = {INCUMBENT} + 0.5 (m11a - {INCUMBENT})",
    "sm11d": "sm11d (α 0.625)",
    "sm11c": "sm11c (α 0.75)",
    "m11a": "m11a (α 1, the merged round)",
}


@dataclass(frozen=True)
class DemoNumbers:
    """What the README says about a demo run, read from its store."""

    accuracy: dict[str, tuple[int, int]]  # model -> (right, items) on SUITE, in SOUP_LABELS order
    flips: PairedFlips  # sm11a against the incumbent on SUITE
    rows_by_source: dict[str, int]  # the m11a export
    steps: int  # what the adapter's training evidence says ran
    empty: dict[str, int]  # model -> empty answers on LOOP_SUITE
    loop_flagged: int  # outputs flagged as loops over every model and suite
    judge: dict[str, int]  # winner -> battles
    run_sha256: str | None  # SHA-256 over every per-item eval result: equal only for the same outcome


def demo_numbers(store: Store) -> DemoNumbers:
    from audits.compare import paired_flips
    from train.bundle_identity import canonical_sha256

    acc = {
        m: (int(k), int(n))
        for m, k, n in store.con.execute(
            "SELECT model, count(*) FILTER (correct), count(*) FROM evals WHERE suite = ? GROUP BY ALL",
            [SUITE],
        ).fetchall()
    }
    rows = dict(
        store.con.execute(
            "SELECT p.source, count(*) FROM exports e JOIN export_rows r USING (export_id) "
            "JOIN pairs p USING (pair_id) WHERE e.round = 'm11a' AND e.kind = 'export' GROUP BY 1 ORDER BY 1"
        ).fetchall()
    )
    run = store.rows(
        "SELECT evidence::VARCHAR AS e FROM checkpoints WHERE kind = 'adapter' AND round = 'm11a' "
        "ORDER BY created_at DESC LIMIT 1"
    )
    steps = json.loads(run[0]["e"])["final_metrics"]["global_step"] if run else 0
    empty = dict(
        store.con.execute(
            "SELECT model, count(*) FILTER (empty) FROM evals WHERE suite = ? GROUP BY 1", [LOOP_SUITE]
        ).fetchall()
    )
    flagged = store.scalar("SELECT count(*) FILTER (loop_flagged) FROM evals") or 0
    judge = dict(store.con.execute("SELECT winner, count(*) FROM judgments GROUP BY 1").fetchall())
    outcome = store.con.execute(
        "SELECT model, suite, item_id, correct, empty, loop_flagged FROM evals ORDER BY ALL"
    ).fetchall()
    return DemoNumbers(
        {m: acc[m] for m in SOUP_LABELS if m in acc},
        paired_flips(store, "sm11a", INCUMBENT, SUITE),
        rows,
        int(steps),
        {m: int(v) for m, v in empty.items()},
        int(flagged),
        {k: int(v) for k, v in judge.items()},
        canonical_sha256([list(map(str, r)) for r in outcome]),
    )


def readme_block(numbers: DemoNumbers) -> str:
    """The README's demo results, between README_START and README_END: every number from the store."""
    from audits.compare import wilson_interval

    n = numbers
    items = next(iter(n.accuracy.values()))[1]
    lines = [
        README_START,
        (
            f"<!-- run {n.run_sha256[:16]}: the SHA-256 of every per-item result "
            "this text was written from -->"
            if n.run_sha256
            else "<!-- run not recorded: figures of an earlier run; `make readme-demo` rewrites them -->"
        ),
        "",
        f"In the demo run these figures come from, {n.rows_by_source.get('loopfix', 0)} loop-fix pairs "
        f"(the computed gold answer chosen, "
        f"the model's own wrong answer rejected) and {n.rows_by_source.get('battle', 0)} battle pairs went "
        f"through the holdout gate into round `m11a`; {n.steps} steps of DPO+NLL LoRA trained on them.",
        "",
        f"| model | {SUITE} accuracy (n={items}) | 95% Wilson interval |",
        "| --- | --- | --- |",
    ]
    for model, (k, total) in n.accuracy.items():
        lo, hi = wilson_interval(k, total)
        lines.append(f"| {SOUP_LABELS[model]} | {k / total:.4f} | {lo:.2f}-{hi:.2f} |")
    f = n.flips
    t = n.judge
    lines += [
        "",
        f"sm11a against {INCUMBENT} item by item: {f.both} right by both, {f.a_only} only by sm11a, "
        f"{f.b_only} only by {INCUMBENT}; exact McNemar",
        f"p = {f.mcnemar_p:.3g}. {_dose_sentence(n.accuracy)}",
        "",
        f"Loop rates from the scanner: {n.loop_flagged} outputs flagged as loops over every model and suite; "
        f"on the loop-fix suite `{LOOP_SUITE}` "
        f"({LOOP_SUITE_N} tasks of families the incumbent never learned) "
        f"{INCUMBENT} answers nothing {n.empty.get(INCUMBENT, 0)} times, sm11a {n.empty.get('sm11a', 0)}. "
        f"The blind judge on the 34 held-out battles is a rule-based stand-in (loops and empty answers are "
        f"heavy flaws): sm11a against {INCUMBENT} {t.get('a', 0)}-{t.get('b', 0)} "
        f"with {t.get('tie', 0)} ties.",
        README_END,
    ]
    return "\n".join(lines)


def _dose_sentence(accuracy: dict[str, tuple[int, int]]) -> str:
    share = {m: k / total for m, (k, total) in accuracy.items()}
    best = max((m for m in share if m != INCUMBENT), key=lambda m: (share[m], m))
    full = "worse than" if share["m11a"] < share[INCUMBENT] else "at least as good as"
    return f"The best dose is {best}; the full dose (m11a alone) is {full} the incumbent" + (
        ", which is the documented model's story too (there raw m11a looped; here it overshoots)."
        if full == "worse than"
        else "."
    )


def readme_with_demo_block(readme: str, block: str) -> str:
    """README text with its demo results block replaced (PairstoreError when the markers are missing)."""
    if README_START not in readme or README_END not in readme:
        raise PairstoreError(f"README.md has no {README_START!r} ... {README_END!r} block")
    head, rest = readme.split(README_START, 1)
    return head + block + rest.split(README_END, 1)[1]


def readme_block_from_text(readme: str) -> str:
    """The demo results block as the README holds it."""
    return README_START + readme.split(README_START, 1)[1].split(README_END, 1)[0] + README_END


@click.command("demo")
@click.argument("out_dir", default="demo-run", type=click.Path(file_okay=False))
@json_option
def demo_cmd(out_dir: str, as_json: bool) -> None:
    """Run the end-to-end demo on bundled invented sample data into OUT_DIR.

    The incumbent so7a is a tiny character-level model shipped with pairstore
    (scripts/train_demo_model.py trains it from its seed); the demo samples it,
    mines pairs, exports m11a through the gate, trains DPO+NLL LoRA, merges,
    soups at alpha 0.5/0.625/0.75, evaluates on the held-out suite arith and
    writes the report. About two minutes on 2 cores."""
    # In --json mode the steps go to stderr, so stdout holds the JSON alone.
    result = run_demo(out_dir, echo=(lambda line: click.echo(line, err=True)) if as_json else click.echo)
    if as_json:
        echo_json(as_plain(result))
        return
    for line in closing_lines(result):
        click.echo(line)
