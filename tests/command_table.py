"""Every `pairstore` command with arguments that get it to its work, and a store that gives each one work
to do: what the fault tests (full disk, damaged stores, read-only folders) run the whole CLI through.

    ws = build_workspace(tmp_path)            # a store and the input files every command reads
    for name, case in CASES.items():
        args = case.argv(ws, out=tmp_path / "out")

`tests/cli/test_every_command.py` checks that this table names every command of the Click tree, so a new
command cannot miss the fault tests.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from pairstore.cli import cli
from pairstore.cli.reference import walk_commands
from pairstore.store.store import open_store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pairstore" / "sample_data"
BUNDLE = SAMPLE / "so7a"  # the tiny bundle the sample data ships
NAMES = "names.json"  # what build_workspace found in the store for {member} and {pair}


@dataclass(frozen=True)
class Case:
    """A command's arguments; `{out}` is where it writes files, `{ws}` the workspace, `{s}` the samples,
    `{bundle}` a bundle, `{member}` a held-out battle of judge34 and `{pair}` a pair's id. `writes`: the
    store ("store"), files ("files"), both, or nothing ("")."""

    args: tuple[str, ...]
    writes: str = "store"
    model: bool = False  # loads a model (torch): the slow tier
    opens_store: bool = True

    def argv(self, ws: Path, out: Path, bundle: Path = BUNDLE) -> list[str]:
        names = json.loads((ws / NAMES).read_text())
        return [a.format(ws=ws, s=SAMPLE, out=out, bundle=bundle, **names) for a in self.args]


def _case(line: str, writes: str = "store", model: bool = False, opens_store: bool = True) -> Case:
    return Case(tuple(shlex.split(line)), writes, model, opens_store)


# Keyed by the command's path in the Click tree; a second case of one command adds its option ("sql --write").
CASES: dict[str, Case] = {
    "sql": _case("sql 'SELECT count(*) FROM pairs'", ""),
    "sql --write": _case("sql --write 'CREATE TABLE scratch.t AS SELECT 1 AS a'"),
    "ingest battles": _case("ingest battles {ws}/battles3.jsonl"),
    "ingest problems": _case("ingest problems --dataset math --path {s}/math-train.jsonl"),
    "ingest generations": _case("ingest generations {ws}/gens2.jsonl --model m2"),
    "ingest pairs": _case("ingest pairs {ws}/pairs.jsonl --source outside"),
    "ingest judgments": _case("ingest judgments {ws}/judgments2.jsonl"),
    "ingest evals": _case("ingest evals {ws}/evals.jsonl --model m1 --suite lf2"),
    "ingest ultrafeedback": _case("ingest ultrafeedback --path {s}/ultrafeedback-train_prefs.jsonl"),
    "ingest compliance": _case("ingest compliance {s}/compliance-pairs.jsonl"),
    "holdout add": _case("holdout add extra --ids-file {ws}/ids.txt"),
    "holdout sample": _case("holdout sample h5 --n 5 --seed 3"),
    "holdout remove": _case("holdout remove judge34 {member} --reason x"),
    "holdout exempt": _case("holdout exempt judge34 {member} {pair} --reason rewritten"),
    "holdout list": _case("holdout list", ""),
    "holdout show": _case("holdout show judge34", ""),
    "holdout rekey": _case("holdout rekey --all"),
    "generate loopfix": _case("generate loopfix --n 5 --seed 9"),
    "generate families": _case("generate families", "", opens_store=False),
    "mine battle": _case("mine battle"),
    "mine loopfix": _case("mine loopfix --model m1"),
    "mine self-repair": _case("mine self-repair --model m1 --dataset gsm8k"),
    "mine style": _case("mine style"),
    "mine list": _case("mine list", "", opens_store=False),
    "round add": _case("round add {ws}/new.toml"),
    "round attach": _case("round attach m11a {ws}/attach.jsonl"),
    "round list": _case("round list", ""),
    "round show": _case("round show m11a", ""),
    "export": _case("export --round m11a --out {out} --system-prompt-file {ws}/system.txt", "store files"),
    "lineage": _case("lineage m11a", ""),
    "audit leaks": _case("audit leaks --holdout judge34 {ws}/mix/m11a.parquet", ""),
    "audit gate": _case("audit gate --set judge34 --limit 5", ""),
    "audit decontam": _case(
        "audit decontam --benchmark gsm8k-test --path {s}/gsm8k-test.jsonl --register", "store"
    ),
    "audit mixtures": _case("audit mixtures", ""),
    "audit compare": _case("audit compare ja jb", ""),
    "audit report": _case("audit report --model m1 --out {out}", "files"),
    "audit lengths": _case("audit lengths --round m11a", ""),
    "audit loops": _case("audit loops --model m1", ""),
    "audit verifier": _case("audit verifier --model m1", ""),
    "audit ratings": _case("audit ratings --bootstrap 10", ""),
    "judge": _case("judge --set judge34 --a ja --b jb"),
    "train dpo": _case(
        "train dpo --round m11a --base {bundle} --out {out} --max-steps 1", "store files", True
    ),
    "train sample": _case(
        "train sample --model {bundle} --items gsm8k --n 1 --max-new-tokens 4", "store", True
    ),
    "eval": _case("eval --model {bundle} --suite lf2 --n 1 --max-new-tokens 4", "store", True),
}


def _merge_cases() -> dict[str, Case]:
    """A case per merge method, from the example it declares (train.merges.registry): `{other}` is the
    workspace's second bundle, `{adapter}` its LoRA adapter (merged with torch: the slow tier)."""
    from train.merges.registry import methods

    cases = {}
    for spec in methods().values():
        args = spec.example.replace("{other}", "{ws}/b").replace("{adapter}", "{ws}/adapter")
        line = f"train {spec.command} {args} --out {{out}}"
        cases[f"train {spec.command}"] = _case(line, "store files", "{adapter}" in spec.example)
    return cases


CASES.update(_merge_cases())

# Commands the table leaves to their own tests, and why.
NOT_RUN = {
    "demo": "runs the whole chain (minutes): every step is a command of this table",
    "serve": "a server that runs until stopped: tests/serve/test_serve.py drives it over HTTP",
}


def command_of(name: str) -> str:
    """The command a CASES key runs ("sql --write" -> "sql")."""
    return name.split(" --")[0]


def leaf_commands() -> list[str]:
    return [
        " ".join(path[1:])
        for path, cmd in walk_commands(cli, ["pairstore"])
        if not hasattr(cmd, "list_commands") and len(path) > 1
    ]


def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def build_workspace(ws: Path, *, model_inputs: bool = False) -> Path:
    """A store (ws/store.duckdb) with battles, a holdout set, problems, loop-fix tasks, the shipped rounds
    and answers of model m1 (right and wrong ones), and beside it each command's input file. With
    `model_inputs`, also a LoRA adapter of the tiny bundle (for merge) and a copy of it (for soup)."""
    ws.mkdir(parents=True, exist_ok=True)
    db = ws / "store.duckdb"
    (ws / "system.txt").write_text("You are a careful assistant.\n")
    runner = CliRunner()

    def run(*args):
        r = runner.invoke(cli, ["--db", str(db), "-q", *map(str, args)], catch_exceptions=False)
        assert r.exit_code == 0, (args, r.output)

    run("ingest", "battles", SAMPLE / "battles.jsonl")
    run("ingest", "problems", "--dataset", "gsm8k", "--path", SAMPLE / "gsm8k-train.jsonl")
    run("holdout", "sample", "judge34", "--n", "34", "--seed", "12076")
    run("generate", "loopfix", "--n", "20", "--seed", "1", "--suite", "lf2")
    run("generate", "loopfix", "--n", "20", "--seed", "2")
    run("round", "add", "--shipped")
    run("mine", "battle")
    _write_jsonl(
        ws / "pairs0.jsonl",
        [{"prompt": "Why is the sky blue?", "chosen": "Scattering.", "rejected": "Paint."}],
    )
    run("ingest", "pairs", ws / "pairs0.jsonl", "--source", "outside")
    with open_store(db, read_only=True) as s:
        problems = s.rows("SELECT problem_id, gold FROM problems ORDER BY problem_id LIMIT 10")
        tasks = s.rows("SELECT task_id, gold FROM tasks WHERE suite IS NULL ORDER BY task_id LIMIT 10")
        members = s.rows(
            "SELECT h.item_id, b.prompt FROM holdout h JOIN battles b ON b.battle_id = h.item_id "
            "WHERE h.set_name = 'judge34' ORDER BY h.item_id LIMIT 4"
        )
        pair = s.scalar("SELECT min(pair_id) FROM pairs")
        outside = s.scalar(
            "SELECT battle_id FROM battles WHERE battle_id NOT IN (SELECT item_id FROM holdout) "
            "ORDER BY battle_id LIMIT 1"
        )
    gens = []
    for p in problems:
        right = f"So it is {p['gold']}.\n#### {p['gold']}\n\nI hope it is correct."  # a style fault
        wrong = "I think it is\n#### 999983"
        for i, out in enumerate([right, wrong]):
            gens.append(
                {"item_kind": "problem", "item_id": p["problem_id"], "output": out, "sample_index": i}
            )
    for t in tasks:
        for i, out in enumerate([t["gold"], "wrong " * 80]):
            gens.append({"item_kind": "task", "item_id": t["task_id"], "output": out, "sample_index": i})
    _write_jsonl(ws / "gens.jsonl", gens)
    _write_jsonl(ws / "gens2.jsonl", [{**g, "output": g["output"] + " (m2)"} for g in gens])
    run("ingest", "generations", ws / "gens.jsonl", "--model", "m1")
    for k, model in enumerate(("ja", "jb")):
        answers = []
        for i, m in enumerate(members):
            users = [{"role": "user", "content": x["content"]} for x in m["prompt"] if x["role"] == "user"]
            answers.append(
                {"item_kind": "prompt", "item_id": m["item_id"], "prompt": users, "output": f"Answer {i}{k}."}
            )
        _write_jsonl(ws / f"{model}.jsonl", answers)
        run("ingest", "generations", ws / f"{model}.jsonl", "--model", model)
    sample_battles = (SAMPLE / "battles.jsonl").read_text().splitlines()[:5]
    for batch in ("2", "3"):  # battles2 come in now (for `mine battle`), battles3 with `ingest battles`
        battles = [json.loads(line) for line in sample_battles]
        for i, b in enumerate(battles):
            b["battle_id"] = f"new{batch}-{i}"
            b["prompt"] = [{"role": "user", "content": f"A question nobody asked before, {batch}-{i}?"}]
        _write_jsonl(ws / f"battles{batch}.jsonl", battles)
    run("ingest", "battles", ws / "battles2.jsonl")
    run("export", "--round", "m11a", "--out", ws / "mix", "--system-prompt-file", ws / "system.txt")
    _write_jsonl(
        ws / "pairs.jsonl",
        [{"prompt": "A new question about tides?", "chosen": "The moon pulls.", "rejected": "Random."}],
    )
    _write_jsonl(
        ws / "attach.jsonl",
        [{"prompt": "An outside question about rivers?", "chosen": "Rivers flow.", "rejected": "They fly."}],
    )
    for i, name in enumerate(("judgments.jsonl", "judgments2.jsonl")):
        judged = {"battle_id": members[i]["item_id"], "model_a": "ja", "model_b": "jb", "winner": "a"}
        _write_jsonl(ws / name, [judged])
    run("ingest", "judgments", ws / "judgments.jsonl")
    _write_jsonl(
        ws / "evals.jsonl",
        [{"item_id": t["task_id"], "correct": True, "output": t["gold"]} for t in tasks[:3]],
    )
    (ws / "ids.txt").write_text(f"{outside}\n")
    (ws / NAMES).write_text(json.dumps({"member": members[0]["item_id"], "pair": pair}))
    (ws / "new.toml").write_text('name = "extra"\nkind = "base"\n')
    if model_inputs:
        _model_inputs(ws)
    return ws


def _model_inputs(ws: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    shutil.copytree(BUNDLE, ws / "b")
    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(BUNDLE), LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"])
    )
    model.save_pretrained(ws / "adapter")
