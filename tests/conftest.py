"""Shared fixtures: stores in tmp_path and a CLI runner."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from pairstore.cli import cli
from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, add_pairs


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Under pytest-xdist (`make test`, `make test-fast`) every worker is a process with its own BLAS and OpenMP
# pools, each sized to every core by default: two workers on two cores would run four compute threads that
# preempt each other mid-operation. A worker gets its share of the cores instead, set before anything
# imports torch or numpy, and the test subprocesses it starts inherit it. A variable already set wins.
if "PYTEST_XDIST_WORKER" in os.environ:
    _threads = str(max(1, _cores() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)

# The `datasets` library's cache is a per-process temporary folder: no test reads what another session (or
# the user's own work in $HOME) left there, and none leaves anything behind. Set before `datasets` is
# imported, which reads it once.
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="pairstore-tests-datasets-")
atexit.register(shutil.rmtree, os.environ["HF_DATASETS_CACHE"], ignore_errors=True)

# Property tests (hypothesis) draw from a fixed seed, so a run repeats on every machine and a failure in CI
# is the failure a developer reproduces; no example database is written into the repository, and no limit
# on an example's time (a deadline depends on the CPU and its load, which no test may assert on).
# `HYPOTHESIS_PROFILE=explore` draws fresh examples, many more of them, for a long run by hand.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("explore", parent=settings.get_profile("ci"), derandomize=False, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Fixtures of the slow tier: the demo (the whole chain, training included, minutes) and the tiny random
# Llama (a model: what needs one loads, samples or trains it). Every test that uses one, directly or
# through another fixture, is slow, and its limit covers building the fixture (the first test to ask for a
# session fixture pays for it).
SLOW_FIXTURES = {"demo_run": 900, "tiny": 300}

# Fixtures that take seconds to minutes to build and that several tests share (session- or module-scoped).
# Under `pytest -n N --dist loadgroup` the tests of each one go to one worker, which builds it once; spread
# over two workers, the demo alone would run twice. The module name is part of the group where the fixture
# is module-scoped (two modules' `workspace` fixtures are two builds anyway).
SHARED_BUILDS = {
    "demo_run": "session",  # the whole demo, minutes
    "trained": "session",  # tests/train/test_train.py: a DPO+NLL run
    "merged_and_souped": "module",  # tests/train/test_bundle_compat.py: a merge and a soup of the tiny model
    "small_bundle": "module",  # tests/train/test_tiny_chat.py: a short tiny-chat training run
    "workspace": "module",  # tests/command_table.py's workspace: every input of every command
    "stores": "module",  # tests/store/test_store_faults.py: damaged and foreign stores
    "browser": "module",  # tests/serve/test_serve_browser.py: one headless Chromium
    "ray_cluster": "module",  # tests/train/test_ray_shards.py: one local Ray cluster
    "tables": "module",  # tests/verify/test_verify_regression.py: the verdict of every corpus row
    "corpus_reading": "module",  # tests/verify/test_verify_speed.py: math-verify's reading of every output
}


# tryfirst: pytest-xdist reads the xdist_group marks in its own pytest_collection_modifyitems, which would
# otherwise run before this one.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        limits = [s for name, s in SLOW_FIXTURES.items() if name in item.fixturenames]
        if limits:
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(max(limits)))
        shared = [name for name in SHARED_BUILDS if name in item.fixturenames]
        if shared and item.get_closest_marker("xdist_group") is None:
            # One group per test: the first shared build it uses (the demo, where it uses the demo).
            name = shared[0]
            where = "" if SHARED_BUILDS[name] == "session" else f"{item.module.__name__}::"
            item.add_marker(pytest.mark.xdist_group(f"{where}{name}"))
    if getattr(config.option, "loadgroup", False):
        _name_groups_in_node_ids(items)
        _longest_first(items)


def _longest_first(items) -> None:
    """The slow tier first, the demo's tests before all: pytest-xdist hands the workers their tests in
    collection order, and a long test (or a shared build's group) handed out last keeps one worker busy
    while the other has finished. The order within each tier is the collection order."""

    def tier(item) -> int:
        if "demo_run" in item.fixturenames:
            return 0
        return 1 if item.get_closest_marker("slow") is not None else 2

    items.sort(key=tier)


def _name_groups_in_node_ids(items) -> None:
    """What pytest-xdist's worker does for --dist loadgroup, for pytest versions where it has no effect.

    The scheduler sees only node ids: xdist 3.8 appends "@GROUP" to a grouped test's id by assigning
    `item._nodeid`, but pytest 9.2 keeps the id in `item._id` (a NodeId), so that assignment is ignored and
    every group is spread over the workers (the demo ran once per worker). Here the id is set where pytest
    now keeps it; under a pytest without `_id` xdist's own renaming works and this does nothing."""
    from _pytest.nodeid import NodeId

    for item in items:
        marks = item.iter_markers("xdist_group")
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks})
        if (
            groups
            and "@" not in item.nodeid.rpartition("]")[2]
            and isinstance(getattr(item, "_id", None), NodeId)
        ):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


@pytest.fixture(autouse=True)
def quiet_cli(monkeypatch):
    """CLI tests read the commands' own output: no progress lines on stderr (tests/cli/test_cli_scripting.py
    turns them back on to test them)."""
    monkeypatch.setenv("PAIRSTORE_QUIET", "1")


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "store.duckdb"


@pytest.fixture(scope="session")
def new_store_file(tmp_path_factory):
    """A store open_store just made (every migration run), closed: copied, it is a new store for the
    price of a file copy."""
    path = tmp_path_factory.mktemp("new-store") / "store.duckdb"
    open_store(path).close()
    return path


@pytest.fixture
def new_store(new_store_file):
    """new_store(path): an open new store at `path` (not there yet), a copy of new_store_file."""

    def make(path):
        shutil.copyfile(new_store_file, path)
        return open_store(path)

    return make


@pytest.fixture
def store(db_path, new_store_file):
    shutil.copyfile(new_store_file, db_path)
    s = open_store(db_path)
    yield s
    s.close()


@pytest.fixture
def run_cli(db_path, new_store_file):
    """run_cli(*args) -> click Result, against the test store (a new store the first time, copied: the
    same file migrations would make)."""
    runner = CliRunner()

    def run(*args, db=None):
        if db is None and not db_path.exists():
            shutil.copyfile(new_store_file, db_path)
        return runner.invoke(cli, ["--db", str(db or db_path), *map(str, args)], catch_exceptions=False)

    return run


def _write_jsonl(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return str(path)


@pytest.fixture
def write_jsonl():
    """write_jsonl(path, records) -> str: one JSON object per line (a string record is written as it is)."""
    return _write_jsonl


TRAIN_TABLE = """[train]
beta = 0.1
sft_weight = 0.7
lora_rank = 8
lora_alpha = 16
lora_dropout = 0.0
target_modules = "all-linear"
learning_rate = 1e-6
lr_scheduler = "cosine"
warmup_ratio = 0.1
max_steps = 10
global_batch = 8
per_device_batch = 1
max_length = 512
"""


def _dpo_recipe(name="r1", *, system='system_prompt = "You are Brook."', blocks=None, seed=7):
    blocks = blocks or [
        'source = "battle"\nupsample = 2.5',
        'source = "loopfix"\nlimit = 5',
        'source = "self_repair"\nwhere = "family = \'math\'"',
        'source = "compliance_sft"',
    ]
    mix = "".join(f"[[mix]]\n{b}\n" for b in blocks)
    return f'name = "{name}"\nkind = "dpo"\nparent = "base"\nseed = {seed}\n{system}\n{mix}{TRAIN_TABLE}'


@pytest.fixture
def dpo_recipe():
    """dpo_recipe(name="r1", *, system=..., blocks=[...], seed=7) -> the TOML text of a small dpo round
    (by default one block each of battle x2.5, loopfix limit 5, self_repair where family = 'math',
    compliance_sft)."""
    return _dpo_recipe


def _fill_pairs(store):
    pairs = []
    for i in range(12):
        pairs.append(
            Pair(
                prompt=f"Battle question {i}: how do tides work near estuary number {i}?",
                chosen=f"Tides near estuary {i} follow the moon.\nFinal answer: {i}",
                rejected=f"I hope it is correct: {i}",
                source="battle",
                family="science",
                origins=[Origin("battle", f"b{i:02d}", "vote=win → own chosen")],
            )
        )
    for i in range(10):
        pairs.append(
            Pair(
                prompt=f"Count the letter r in the word number {i}.",
                chosen=f"Final answer: {i}",
                rejected="r r r r r r",
                source="loopfix",
                family="letter_count",
                task_key=f'letter_count:{{"i":{i}}}',
            )
        )
    for i in range(6):
        pairs.append(
            Pair(
                prompt=[
                    {"role": "system", "content": "old system"},
                    {"role": "user", "content": f"Solve problem {i}: x + {i} = 10. Café ☕ ﬁne"},
                ],
                chosen=f"x = {10 - i}\nFinal answer: {10 - i}",
                rejected="x = 3",
                source="self_repair",
                family="math" if i % 2 else "gsm8k",
            )
        )
    pairs.append(
        Pair(
            prompt="Tabs\x0b and a literal \\u00e9 escape, math",
            chosen="Fine.\x1a",
            rejected="No.",
            source="self_repair",
            family="math",
        )
    )
    pairs.append(
        Pair(
            prompt="Please comply \x1f with the rule.",
            chosen="Complying.",
            rejected=None,
            source="compliance_sft",
            family="compliance",
        )
    )
    add_pairs(store, pairs, miner="test", miner_version="1")


@pytest.fixture
def fill_pairs():
    """fill_pairs(store): 30 pairs of every source the default dpo_recipe selects, with odd characters."""
    return _fill_pairs


@pytest.fixture
def round_r1(store, tmp_path, dpo_recipe, fill_pairs):
    """The store with fill_pairs' pairs and two registered rounds: `base` and `r1`
    (the default dpo_recipe)."""
    from pairstore.rounds.recipes import add_round

    fill_pairs(store)
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    (tmp_path / "r1.toml").write_text(dpo_recipe())
    add_round(store, tmp_path / "base.toml")
    add_round(store, tmp_path / "r1.toml")
    return store


@pytest.fixture(scope="module")
def one_torch_thread():
    """The test machine is shared: one torch thread per process avoids oversubscription stalls."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A tiny random Llama bundle (train.tiny), made once per test session."""
    from train.tiny import make_tiny_bundle

    return make_tiny_bundle(tmp_path_factory.mktemp("tiny") / "base", seed=0, max_new_tokens=12)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The full demo (`pairstore demo`), run once per test session; tests read its store and files.

    Under pytest-xdist the demo's torch runs on at most its worker's share of the cores (OMP_NUM_THREADS,
    set at the top of this file), not on all of the demo's THREADS: on 2 cores its two threads and the other
    worker's one preempt each other mid-operation, and the demo took 404 s in the suite against 155 s
    alone (its training step 600 s against 350 s at one thread on a loaded machine). Where the share is
    THREADS or more it runs as `make demo` does. At one thread and at two the demo's per-item results are
    the same (equal run SHA-256 on the AVX2 machine where this was measured); where they are not, the tests
    check this run against the README as they do any run that is not the recorded one."""
    import pairstore.cli.demo as demo

    threads = demo.THREADS
    if "PYTEST_XDIST_WORKER" in os.environ and (os.environ.get("OMP_NUM_THREADS") or "").isdigit():
        threads = max(1, min(threads, int(os.environ["OMP_NUM_THREADS"])))
    out = tmp_path_factory.mktemp("demo") / "demo-run"
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(demo, "THREADS", threads)
        result = demo.run_demo(out, echo=lines.append, progress=False)
    result.lines = lines
    return result
