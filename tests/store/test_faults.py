"""Faults from outside: kill -9 at every publish point, a full disk, damaged and foreign store files.

Each writer calls pairstore.files.publish_point before every rename and commit that publishes something;
PAIRSTORE_FAULT_TRACE lists the points of a clean run and PAIRSTORE_FAULT_KILL_AT=N kills the process
(SIGKILL) at the Nth. After each kill the next run's recovery (what `export`, `train soup` and `train merge`
do first) must leave exactly the old state or the new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pairstore.export.overwrites import recover_interrupted
from pairstore.files import recover_folder
from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, add_pairs
from tests.preloaded_cli import PreloadedCli

# Each run of a command is a process forked from one that has imported what the command needs
# (tests/preloaded_cli.py), so dozens of killed runs do not each import it again. `pairstore.cli` itself
# loads nothing: its main() imports the command tree (pairstore.cli.app, every command group and what they
# import, over a second per process), so that is preloaded too, with what each command imports when it
# runs. Soup runs without torch (it reads safetensors with numpy, and a process holding torch takes
# longer to end); merge needs torch, transformers and peft.
PRELOAD = {
    ("train", "merge"): [
        "pairstore.cli",
        "pairstore.cli.app",
        "torch",
        "transformers",
        "peft",
        "train.merge",
    ],
    ("train", "soup"): ["pairstore.cli", "pairstore.cli.app", "train.soup", "train.publish"],
    ("export",): [
        "pairstore.cli",
        "pairstore.cli.app",
        "pairstore.export.run",
        "pairstore.export.overwrites",
    ],
}
PRELOAD_DEFAULT = ["pairstore.cli", "pairstore.cli.app"]
_CLIS: dict[tuple, PreloadedCli] = {}


@pytest.fixture(scope="module", autouse=True)
def preloaded_clis(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("cli-runs")
    for i, modules in enumerate([PRELOAD_DEFAULT, *PRELOAD.values()]):
        _CLIS[tuple(modules)] = PreloadedCli(modules, scratch / f"preload{i}")
    yield
    for cli in _CLIS.values():
        cli.close()
    _CLIS.clear()


def pairstore(db, *args, env=None, check=False):
    """`pairstore --db DB ARGS` in its own process (forked: see PRELOAD); a CompletedProcess."""
    words = tuple(map(str, args[:2]))
    cli = _CLIS[tuple(PRELOAD.get(words, PRELOAD.get(words[:1], PRELOAD_DEFAULT)))]
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    r = cli.run(["--db", str(db), *map(str, args)], env=full_env, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def points(db, args, tmp_path) -> list[str]:
    """The publish points of a clean run of `args` (the run itself happens)."""
    trace = tmp_path / "trace.txt"
    trace.unlink(missing_ok=True)
    pairstore(db, *args, env={"PAIRSTORE_FAULT_TRACE": str(trace)}, check=True)
    return [line.split("\t", 1)[1] for line in trace.read_text().splitlines()]


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def snapshot(paths: list[Path]) -> dict:
    """Every file under the given paths (hidden ones too) and its SHA-256."""
    out = {}
    for root in paths:
        if root.is_file():
            out[str(root)] = sha(root)
        elif root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    out[str(p)] = sha(p)
    return out


def restore(pristine: Path, work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work, symlinks=True)


# ---------------------------------------------------------------------------- export


def _export_state(db: Path, out: Path) -> tuple:
    """(the parquet files' bytes, the active registrations), and whether the folder is consistent: every
    file in it registered with its bytes, nothing hidden left."""
    with open_store(db, read_only=True) as s:
        regs = s.rows(
            "SELECT path, sha256, evidence_path, evidence_sha256 FROM exports WHERE superseded_at IS NULL "
            "AND kind = 'export' ORDER BY path"
        )
    # README.md is the folder's dataset card, rebuilt from the registry after every export (derived, not
    # registered); every other file must be registered with its bytes.
    files = {p.name: sha(p) for p in sorted(out.iterdir()) if p.name != "README.md"} if out.is_dir() else {}
    named = {Path(r["path"]).name: r["sha256"] for r in regs} | {
        Path(r["evidence_path"]).name: r["evidence_sha256"] for r in regs
    }
    consistent = files == named
    parquets = tuple(sorted((n, h) for n, h in files.items() if n.endswith(".parquet")))
    return parquets, tuple(sorted((Path(r["path"]).name, r["sha256"]) for r in regs)), consistent


def _more_pairs(store, n=5):
    add_pairs(
        store,
        [
            Pair(
                prompt=f"Extra question number {i} about rivers and lakes?",
                chosen=f"A careful answer {i}.",
                rejected=f"A careless answer {i}.",
                source="battle",
                family="science",
                origins=[Origin("battle", f"extra{i}", "vote=win → own chosen")],
            )
            for i in range(n)
        ],
        miner="test",
        miner_version="1",
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("replace", [False, True], ids=["export", "export --replace"])
def test_kill_at_every_publish_point_of_an_export_leaves_old_or_new(round_r1, tmp_path, replace):
    store = round_r1
    db = Path(store.path)
    work = tmp_path / "work"
    work.mkdir()
    store.close()
    shutil.move(db, work / "store.duckdb")
    db = work / "store.duckdb"
    out = work / "out"
    args = ["export", "--round", "r1", "--out", out]
    if replace:
        pairstore(db, *args, check=True)
        with open_store(db) as s:
            _more_pairs(s)
        args.append("--replace")
    pristine = tmp_path / "pristine"
    shutil.copytree(work, pristine)
    old = _export_state(db, out)
    labels = points(db, args, tmp_path)
    new = _export_state(db, out)
    assert old[0] != new[0] and new[2] and old[2]
    assert any(lab.startswith("commit") for lab in labels) and len(labels) >= 3
    outcomes = []
    rerun: set[str] = set()
    for n in range(1, len(labels) + 1):
        restore(pristine, work)
        r = pairstore(db, *args, env={"PAIRSTORE_FAULT_KILL_AT": str(n)})
        assert r.returncode == -signal.SIGKILL, (n, labels[n - 1], r.stderr)
        with open_store(db) as s:  # what the next export does first
            recover_interrupted(
                s,
                out.resolve(),
                [out.resolve() / f"r1{x}" for x in (".parquet", ".sft.parquet", ".training_evidence.json")],
            )
        state = _export_state(db, out)
        outcome = "old" if state == old else "new" if state == new else f"MIXED {state}"
        outcomes.append((labels[n - 1], outcome))
        # and the next run succeeds, ending in the new state; once per outcome: a rerun from a state equal
        # to one already rerun is the same run
        if outcome not in rerun:
            rerun.add(outcome)
            r = pairstore(db, *args)
            assert r.returncode == 0, r.stderr
            assert _export_state(db, out) == new
    print(f"\nkill points of {' '.join(map(str, args[:1] + args[-1:]))}: {outcomes}")
    mixed = [o for o in outcomes if o[1] not in ("old", "new")]
    assert not mixed, outcomes
    assert "old" in {o for _, o in outcomes}, outcomes  # a first export has no point after its commit


# ---------------------------------------------------------------------------- soup and merge


def _bundle_state(db: Path, out: Path) -> tuple:
    """(the weights and serving files at `out`, whether a checkpoint registers `out` with the evidence it
    carries, hidden leftovers beside it)."""
    files = (
        {p.name: sha(p) for p in sorted(out.iterdir()) if p.name != "training_evidence.json"}
        if out.is_dir()
        else {}
    )
    with open_store(db, read_only=True) as s:
        rows = s.rows("SELECT evidence FROM checkpoints WHERE path = ?", [str(out.resolve())])
    registered = (
        bool(rows)
        and (out / "training_evidence.json").is_file()
        and json.loads(rows[0]["evidence"]) == json.loads((out / "training_evidence.json").read_text())
    )
    leftovers = sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))
    return files, registered, leftovers


def _kill_every_point(db: Path, args: list, out: Path, work: Path, tmp_path: Path) -> list:
    from train.publish import recover_bundle

    pristine = tmp_path / "pristine"
    shutil.rmtree(pristine, ignore_errors=True)
    shutil.copytree(work, pristine, symlinks=True)
    old = _bundle_state(db, out)
    labels = points(db, args, tmp_path)
    new = _bundle_state(db, out)
    assert new[1] and new[0] and not new[2] and old != new
    outcomes = []
    rerun: set[str] = set()
    for n in range(1, len(labels) + 1):
        restore(pristine, work)
        r = pairstore(db, *args, env={"PAIRSTORE_FAULT_KILL_AT": str(n)})
        assert r.returncode == -signal.SIGKILL, (n, labels[n - 1], r.stderr)
        left = _bundle_state(db, out)[2]
        with open_store(db) as s:  # what the next soup or merge into `out` does first
            notes = recover_bundle(s, out)
        assert len(notes) == len(left), (left, notes)  # one line naming each thing it cleaned
        state = _bundle_state(db, out)
        outcome = "old" if state == old else "new" if state == new else f"MIXED {state}"
        outcomes.append((labels[n - 1], outcome))
        if outcome not in rerun:  # once per outcome, as for the export above
            rerun.add(outcome)
            r = pairstore(db, *args)
            assert r.returncode == 0, r.stderr
            assert _bundle_state(db, out) == new
    # The command itself names what a crash left: kill at the first point, then run it again.
    restore(pristine, work)
    pairstore(db, *args, env={"PAIRSTORE_FAULT_KILL_AT": "1"})
    left = _bundle_state(db, out)[2]
    r = pairstore(db, *args)
    assert r.returncode == 0 and _bundle_state(db, out) == new, r.stderr
    assert left and all(f"{out.name}" in line for line in r.stderr.strip().splitlines()), r.stderr
    assert len(r.stderr.strip().splitlines()) == len(left), r.stderr
    print(f"\nkill points of {args[0]} {args[1]}: {outcomes}")
    assert not [o for o in outcomes if o[1] not in ("old", "new")], outcomes
    assert {o for _, o in outcomes} == {"old", "new"}, outcomes
    return outcomes


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("replace", [False, True], ids=["new folder", "over an existing soup"])
def test_kill_at_every_publish_point_of_a_soup_leaves_old_or_new(tiny, tmp_path, replace):
    from train.tiny import make_tiny_bundle

    work = tmp_path / "work"
    work.mkdir()
    b = make_tiny_bundle(work / "b", seed=1, max_new_tokens=12)
    a = work / "a"
    shutil.copytree(tiny, a)
    db = work / "store.duckdb"
    open_store(db).close()
    out = work / "soup"
    args = ["train", "soup", a, b, "--alpha", "0.5", "--out", out, "--name", "s1"]
    if replace:  # the old state: a registered soup of other weights in the same folder, same name
        pairstore(db, *args[:5], "0.25", *args[6:], check=True)
    outcomes = _kill_every_point(db, args, out, work, tmp_path)
    assert len(outcomes) >= (4 if replace else 3)
    if replace:
        assert any("aside" in label for label, _ in outcomes), outcomes


def _adapter(base: Path, folder: Path, seed: int) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base), LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"])
    )
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_()
    model.save_pretrained(folder)
    return folder


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("replace", [False, True], ids=["new folder", "over an existing merge"])
def test_kill_at_every_publish_point_of_a_merge_leaves_old_or_new(tiny, tmp_path, replace):
    work = tmp_path / "work"
    work.mkdir()
    base = work / "base"
    shutil.copytree(tiny, base)
    adapter = _adapter(base, work / "adapter", seed=0)
    db = work / "store.duckdb"
    open_store(db).close()
    out = work / "merged"
    args = ["train", "merge", "--base", base, "--adapter", adapter, "--out", out, "--name", "m1"]
    if replace:  # the old state: a registered merge of another adapter in the same folder, same name
        other = _adapter(base, work / "other-adapter", seed=1)
        pairstore(
            db, "train", "merge", "--base", base, "--adapter", other, "--out", out, "--name", "m1", check=True
        )
    outcomes = _kill_every_point(db, args, out, work, tmp_path)
    assert len(outcomes) >= (4 if replace else 3)
    if replace:
        assert any("aside" in label for label, _ in outcomes), outcomes


def test_audit_mixtures_rehashes_registered_bundles(tiny, tmp_path, store, run_cli):
    from train.soup import soup
    from train.tiny import make_tiny_bundle

    b = make_tiny_bundle(tmp_path / "b", seed=1, max_new_tokens=12)
    out = tmp_path / "s"
    soup(tiny, b, 0.4, out, store=store, name="s", parents=["base", "b"])
    store.close()
    assert run_cli("audit", "mixtures").exit_code == 0
    evidence = out / "training_evidence.json"
    original = evidence.read_text()
    evidence.write_text(original.replace('"alpha": 0.4', '"alpha": 0.9'))
    r = run_cli("audit", "mixtures")
    assert r.exit_code == 3 and "training_evidence.json" in r.output, r.output
    evidence.write_text(original)
    weights = out / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    r = run_cli("audit", "mixtures")
    assert r.exit_code == 3 and "model.safetensors" in r.output, r.output


# ---------------------------------------------------------------------------- a folder replaced whole

# What `audit report --out` and the tiny base do (audits/report.py, train/tiny.py): clean what a killed run
# left, write the whole folder staged beside it, publish it over the old one.
_REPLACE_FOLDER = """
import sys
from pathlib import Path
from pairstore.files import publish_folder, recover_folder, staged_folder
out, tag = Path(sys.argv[1]), sys.argv[2]
for note in recover_folder(out):
    print(note, file=sys.stderr)
with staged_folder(out) as stage:
    for name in ("report.md", "report.html", "chart.png"):
        (stage / name).write_text(f"{name} of run {tag}\\n")
    publish_folder(stage, out, replace=True)
"""


def _folder_state(out: Path) -> tuple:
    files = {p.name: p.read_text() for p in sorted(out.iterdir())} if out.is_dir() else {}
    return files, sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


@pytest.mark.slow
def test_kill_at_every_point_of_a_folder_replaced_whole_leaves_old_or_new(tmp_path):
    out = tmp_path / "report"

    def replace_it(tag, env=None):
        return subprocess.run(
            [sys.executable, "-c", _REPLACE_FOLDER, str(out), tag],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=60,
        )

    assert replace_it("old").returncode == 0
    old = _folder_state(out)
    trace = tmp_path / "trace.txt"
    shutil.copytree(out, tmp_path / "pristine")
    assert replace_it("new", {"PAIRSTORE_FAULT_TRACE": str(trace)}).returncode == 0
    new = _folder_state(out)
    labels = [line.split("\t", 1)[1] for line in trace.read_text().splitlines()]
    assert old != new and any("aside" in label for label in labels), labels
    outcomes = []
    for n in range(1, len(labels) + 1):
        shutil.rmtree(out)
        for p in tmp_path.glob(".report.*"):
            shutil.rmtree(p)
        shutil.copytree(tmp_path / "pristine", out)
        r = replace_it("new", {"PAIRSTORE_FAULT_KILL_AT": str(n)})
        assert r.returncode == -signal.SIGKILL, (n, r.stderr)
        left = _folder_state(out)[1]
        notes = recover_folder(out)
        assert len(notes) == len(left), (left, notes)  # one line naming each thing cleaned
        state = _folder_state(out)
        outcomes.append(
            (labels[n - 1], "old" if state == old else "new" if state == new else f"MIXED {state}")
        )
        r = replace_it("new")
        assert r.returncode == 0 and _folder_state(out) == new, r.stderr
    print(f"\nkill points of a folder replaced whole: {outcomes}")
    assert {o for _, o in outcomes} == {"old", "new"}, outcomes
