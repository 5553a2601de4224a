"""Every ```sh / ```bash block of docs/*.md runs in a test: a table names the test that runs each one.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/test_docs_shell.py -q

Decisions:

- A block is known by its doc file and its first command (continuation lines joined, a trailing `# comment`
  and extra spaces dropped), not by its position: a block moved within its page keeps its runner.
- `DOC_BLOCKS` maps every block to the test that runs it. The meta-test fails when a doc has a block that
  no entry claims (a new block comes with its runner), when an entry names a block that is gone, or when
  an entry names a test that does not exist. Blocks run elsewhere (tests/test_docs.py,
  tests/train/test_recipes_doc_train.py, tests/ingest/test_generations.py) are claimed by those tests.
- Every code block of docs/*.md names its language, and a ```sh block starts at the line's start, so no
  shell block escapes the collector. docs/cli.md's completion block was untagged: it is ```sh now (and
  design.md's diagram and scale.md's formula ```text).
- Each runner here works in a fresh folder (`tmp_path`, `monkeypatch.chdir`). It first makes what the
  block's text assumes (a store with Arena battles, with loop-fix pairs, a registered export, the parent
  bundle as the tiny random Llama). Then it runs the block's commands in order, exactly as written: a
  `pairstore` line through click's CliRunner with the block's own words, any other line through bash.
  Without `--db`, the commands use the default store, `./pairstore.duckdb` in that folder.
- What a CI machine (2 cores, no GPU, no Slurm, no Ray cluster) cannot do is run as far as it can and said
  so in the table's `not_here`; the meta-test prints every such entry and warns, so none is silently
  skipped:
  - `train dpo --launcher accelerate --num-processes 4` needs 4 GPUs. It runs as written on a machine
    told it has a GPU, up to the `accelerate launch` it would start; that launch is recorded, not run.
    The recorded command line and the prepared job (world size 4, accumulation 8) are checked.
  - `sbatch m11a.sbatch` needs Slurm and is never submitted from a test. The script `--emit-sbatch`
    wrote is what `sbatch` would be given: `bash -n` parses it, and its job lines are checked.
  - `train sample ... --ray-address ray://head:10001` needs a Ray cluster at that address (and its `...`
    stands for the line above). The `--ray-address local` line runs with the tiny model where `ray` is
    importable (the `scale` extra) and is skipped, with the reason, where it is not.
- docs/cli.md's completion block: its bash line runs in bash as written (with the installed `pairstore` on
  PATH), and bash then completes `pairstore expo` to `export`. zsh and fish are not on a CI machine: the
  script each of their lines loads is made by pairstore, checked for what it registers, and parsed by
  `zsh -n` / `fish -n` where that shell is installed.
- `train merge` and `train soup` of docs/scale.md run for real on tiny bundles. The adapter they merge
  comes from a one-step `train dpo` of round m11a, made by the test as the Slurm job would (learning rate
  1e-2 and no warmup, so the merge moves weights); the soup is checked tensor by tensor.
- docs/recipes.md's train block is run by tests/train/test_recipes_doc_train.py up to a prepared job
  (`--emit-sbatch` appended): m13a is 250 steps of global batch 32 on the demo's model, and its `train
  merge` line needs that adapter. Its table entry says so.
- docs/bring-your-data.md's "From the store to training" block could not run as written: m11a takes its
  parent bundle's system prompt (`system_prompt = "bundle"`), and no so7a bundle is registered in such a
  store. The doc now passes `--bundle bundles/so7a` and says why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pairstore.cli import cli
from pairstore.store.store import open_store
from pairstore.tables.pairs import Pair, add_pairs
from tests.paths import ROOT
from tests.test_docs import code_blocks, shell_commands, words

DOCS = ROOT / "docs"
THIS = "tests/test_docs_shell.py"
SAMPLE = ROOT / "pairstore" / "sample_data"


@dataclass(frozen=True)
class Runner:
    """The test that runs a block ("path::name"), how it runs it, and what of it cannot run here and why."""

    test: str
    how: str
    not_here: str = ""


# (doc file, the block's first command) -> the test that runs the block.
DOC_BLOCKS: dict[tuple[str, str], Runner] = {
    ("cli.md", 'eval "$(_PAIRSTORE_COMPLETE=bash_source pairstore)"'): Runner(
        f"{THIS}::test_the_completion_lines_register_pairstores_completion",
        "the bash line run in bash as written, then a completion asked of it",
        not_here="zsh and fish lines run only where those shells are installed; elsewhere the script each "
        "line loads is made by pairstore and checked for the completion it registers",
    ),
    (
        "bring-your-data.md",
        """pairstore mine battle --where "NOT coalesce(flagged, false) AND language = 'English'\"""",
    ): Runner(
        f"{THIS}::test_mine_battle_where_leaves_flagged_and_other_languages_out",
        "as written, on Arena battles ingested with their language and moderation flag",
    ),
    ("bring-your-data.md", "pairstore ingest problems --dataset gsm8k --path gsm8k/train.jsonl"): Runner(
        "tests/ingest/test_generations.py::test_the_documented_commands_take_vllm_and_lm_eval_outputs_as_written",
        "every line with --db in front, on vLLM and lm-eval files shaped as those tools write them",
    ),
    ("bring-your-data.md", "pairstore holdout sample judge34 --n 34 --seed 12076"): Runner(
        f"{THIS}::test_from_the_store_to_training_exports_m11a",
        "as written, on a store of battles and loop-fix pairs, so7a's bundle at bundles/so7a",
    ),
    ("recipes.md", "pairstore --db demo-run/pairstore.duckdb round add m13a.toml"): Runner(
        "tests/test_docs.py::test_recipes_doc_walkthrough_runs_against_the_demo_store",
        "as written, against a copy of the demo store",
    ),
    (
        "recipes.md",
        "pairstore --db demo-run/pairstore.duckdb train dpo --round m13a --base demo-run/bundles/sm11a "
        "--out runs/m13a",
    ): Runner(
        "tests/train/test_recipes_doc_train.py::test_the_train_dpo_line_of_recipes_md_prepares_its_job",
        "the train dpo line with --emit-sbatch appended: every check made, the job prepared",
        not_here="training m13a is 250 steps of global batch 32 (hours; a GPU job), so the train merge line "
        "that needs its adapter is checked for its command and options only (tests/test_docs.py)",
    ),
    (
        "scale.md",
        "pairstore train dpo --round m11a --base bundles/so7a --out runs/m11a --launcher accelerate "
        "--num-processes 4",
    ): Runner(
        f"{THIS}::test_the_accelerate_line_prepares_a_four_process_launch",
        "as written, told a GPU is there, up to the `accelerate launch` it starts (recorded, not run)",
        not_here="needs 4 GPUs: the 4 training processes are not started",
    ),
    (
        "scale.md",
        "pairstore train dpo --round m11a --base bundles/so7a --out runs/m11a --emit-sbatch m11a.sbatch",
    ): (
        Runner(
            f"{THIS}::test_the_slurm_lines_write_a_script_sbatch_would_take",
            "train dpo --emit-sbatch as written; the script `bash -n`-parsed and its job lines checked",
            not_here="needs Slurm: `sbatch m11a.sbatch` is not submitted; the script it would take is "
            "checked instead",
        )
    ),
    ("scale.md", "pairstore train merge --base bundles/so7a --adapter runs/m11a --out bundles/m11a"): Runner(
        f"{THIS}::test_merge_and_soup_run_on_tiny_bundles",
        "as written, on the tiny bundle and an adapter from a one-step train dpo of m11a",
    ),
    (
        "scale.md",
        "pairstore train sample --model bundles/so7a --items tasks --samples 4 --temperature 0.8 --seed 1 "
        "--ray-address local --workers 2",
    ): Runner(
        f"{THIS}::test_the_local_ray_line_samples_with_two_workers",
        "the --ray-address local line as written, with the tiny model, where ray is importable",
        not_here="the ray://head:10001 line needs a Ray cluster at that address (its `...` stands for the "
        "line above)",
    ),
}


# -- the collector and the meta-test ------------------------------------------------------------------


def block_key(command: str) -> str:
    """A command as the table names it: a trailing `# comment` (outside quotes) and extra spaces dropped."""
    quote, cut = "", len(command)
    for i, ch in enumerate(command):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            cut = i
            break
    return " ".join(command[:cut].split())


def untagged_fences(text: str) -> list[int]:
    """Line numbers of code blocks that name no language, and of indented ```sh blocks: a shell block is
    found only where its fence says sh or bash at the start of a line, so no shell block escapes."""
    found, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^([ \t]*)```(.*)$", line)
        if not fence:
            continue
        lang = fence.group(2).strip()
        if not inside and (not lang or (fence.group(1) and lang in ("sh", "bash"))):
            found.append(number)
        inside = not inside
    return found


def doc_shell_blocks(docs: Path = DOCS) -> dict[tuple[str, str], list[str]]:
    """(doc file, first command) -> the block's commands, for every ```sh / ```bash block of docs/*.md."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(docs.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        untagged = untagged_fences(text)
        assert not untagged, (
            f"{path.name}, lines {untagged}: a code block without a language (```sh, ```text)"
        )
        for block in code_blocks(text, "(?:sh|bash)"):
            commands = [block_key(c) for c in shell_commands(block)]
            assert commands, f"{path.name}: a shell block with no command"
            key = (path.name, commands[0])
            assert key not in found, f"{path.name}: two shell blocks start with `{commands[0]}`"
            found[key] = commands
    return found


def unclaimed_and_stale(found, table) -> tuple[list[str], list[str]]:
    unclaimed = [f"{doc}: `{cmd}`" for doc, cmd in found if (doc, cmd) not in table]
    stale = [f"{doc}: `{cmd}`" for doc, cmd in table if (doc, cmd) not in found]
    return unclaimed, stale


def test_every_doc_shell_block_has_a_runner_and_every_runner_a_block():
    found = doc_shell_blocks()
    assert {doc for doc, _ in found} >= {"bring-your-data.md", "recipes.md", "scale.md"}
    unclaimed, stale = unclaimed_and_stale(found, DOC_BLOCKS)
    assert not unclaimed, (
        "shell blocks no test runs (add a runner and an entry to DOC_BLOCKS):\n" + "\n".join(unclaimed)
    )
    assert not stale, "DOC_BLOCKS names blocks the docs no longer have:\n" + "\n".join(stale)
    for (doc, cmd), runner in DOC_BLOCKS.items():
        path, _, name = runner.test.partition("::")
        source = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).is_file() else ""
        assert re.search(rf"(?m)^def {re.escape(name)}\(", source), f"{doc}: `{cmd}`: no test {runner.test}"
    not_here = [f"{doc}: `{cmd}`: {r.not_here}" for (doc, cmd), r in DOC_BLOCKS.items() if r.not_here]
    print("doc shell blocks not runnable (in whole) on this machine:\n  " + "\n  ".join(not_here))
    for line in not_here:
        warnings.warn(f"not runnable here: {line}", UserWarning, stacklevel=1)


def test_the_meta_test_notices_a_new_block_and_a_stale_entry(tmp_path):
    (tmp_path / "a.md").write_text(
        "```sh\npairstore sql 'SELECT 1'   # one\n```\n\n"
        "```bash\npairstore lineage m11a \\\n    --json\n```\n"
        "```python\nprint('not a shell block')\n```\n",
        encoding="utf-8",
    )
    found = doc_shell_blocks(tmp_path)
    assert found == {
        ("a.md", "pairstore sql 'SELECT 1'"): ["pairstore sql 'SELECT 1'"],
        ("a.md", "pairstore lineage m11a --json"): ["pairstore lineage m11a --json"],
    }
    table = {("a.md", "pairstore sql 'SELECT 1'"): Runner("x::y", "z"), ("a.md", "pairstore gone"): None}
    assert unclaimed_and_stale(found, table) == (
        ["a.md: `pairstore lineage m11a --json`"],
        ["a.md: `pairstore gone`"],
    )
    assert block_key("pairstore sql \"SELECT '#1'\"  # a note") == "pairstore sql \"SELECT '#1'\""
    assert untagged_fences("a\n```\npairstore sql x\n```\n```text\nok\n```\n  ```sh\nls\n  ```\n") == [2, 8]
    (tmp_path / "a.md").write_text("```\npairstore sql 'SELECT 1'\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r"a.md, lines \[1\]: a code block without a language"):
        doc_shell_blocks(tmp_path)


# -- running a block ----------------------------------------------------------------------------------


def block(doc: str, first: str) -> list[str]:
    """The commands of the block of `doc` whose first command is `first` (a DOC_BLOCKS key)."""
    assert (doc, first) in DOC_BLOCKS, f"{doc}: `{first}` is not in DOC_BLOCKS"
    found = doc_shell_blocks()
    assert (doc, first) in found, f"{doc} has no shell block starting with `{first}` (edit DOC_BLOCKS)"
    return found[(doc, first)]


def first_command(runner_name: str) -> tuple[str, str]:
    """The DOC_BLOCKS key whose runner is this module's test `runner_name`."""
    (key,) = [k for k, r in DOC_BLOCKS.items() if r.test == f"{THIS}::{runner_name}"]
    return key


def pairstore(command: str) -> Result:
    """A `pairstore ...` line of a doc run through click's CliRunner with the line's own words."""
    argv = words(command)
    assert argv[0] == "pairstore", command
    return CliRunner().invoke(cli, argv[1:], catch_exceptions=False)


def run_line(command: str) -> Result | None:
    """One line of a block: `pairstore` through CliRunner (exit 0 asserted), anything else through bash."""
    if words(command)[0] != "pairstore":
        subprocess.run(["bash", "-c", command], check=True)
        return None
    result = pairstore(command)
    assert result.exit_code == 0, f"`{command}` exited {result.exit_code}:\n{result.output}"
    return result


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A fresh folder as the working directory; no store named by the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PAIRSTORE_DB", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return tmp_path


def setup(*commands: str) -> None:
    """Commands that make what a block assumes (not the block's own), against ./pairstore.duckdb."""
    for command in commands:
        result = CliRunner().invoke(cli, words(command), catch_exceptions=False)
        assert result.exit_code == 0, f"setup `{command}` exited {result.exit_code}:\n{result.output}"


# -- docs/cli.md -------------------------------------------------------------------------------------


@pytest.mark.slow  # three pairstore processes
def test_the_completion_lines_register_pairstores_completion(fresh):
    bash_line, zsh_line, fish_line = block(
        *first_command("test_the_completion_lines_register_pairstores_completion")
    )
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "pairstore").is_file(), "the pairstore command is not installed beside this Python"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    # the line as written, then what bash does on `pairstore expo<TAB>`
    asked = "COMP_WORDS=(pairstore expo); COMP_CWORD=1; _pairstore_completion pairstore; "
    asked += 'printf "%s\\n" "${COMPREPLY[@]}"'
    done = subprocess.run(
        ["bash", "-c", f"{bash_line}\ncomplete -p pairstore\n{asked}"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == ["complete -o nosort -F _pairstore_completion pairstore", "export"]
    for line, shell, registers in (
        (zsh_line, "zsh", "compdef _pairstore_completion pairstore"),
        (fish_line, "fish", "complete --no-files --command pairstore"),
    ):
        assert f"_PAIRSTORE_COMPLETE={shell}_source pairstore" in line
        made = CliRunner().invoke(
            cli, [], prog_name="pairstore", env={"_PAIRSTORE_COMPLETE": f"{shell}_source"}
        )
        assert made.exit_code == 0 and registers in made.output, made.output
        if shutil.which(shell):  # the script parses in that shell
            script = fresh / f"completion.{shell}"
            script.write_text(made.output, encoding="utf-8")
            subprocess.run([shell, "-n", str(script)], check=True)


# -- docs/bring-your-data.md ------------------------------------------------------------------------------


def arena_row(qid: str, winner: str, language: str, flagged: bool | None) -> dict:
    """One Chatbot Arena conversation as the published file holds it: vicuna-13b against koala-13b."""
    question = f"Question {qid}: name a river in {language}."
    return {
        "question_id": qid, "model_a": "vicuna-13b", "model_b": "koala-13b", "winner": winner,
        "judge": f"arena_user_{qid}", "turn": 1, "anony": True, "language": language, "tstamp": 1682351591.1,
        "conversation_a": [{"role": "user", "content": question},
                           {"role": "assistant", "content": f"The {qid} river, a long answer of vicuna."}],
        "conversation_b": [{"role": "user", "content": question},
                           {"role": "assistant", "content": f"Maybe the {qid} creek, says koala."}],
        "openai_moderation": {"flagged": flagged}, "toxic_chat_tag": {},
    }  # fmt: skip


def test_mine_battle_where_leaves_flagged_and_other_languages_out(fresh, new_store_file):
    rows = [
        arena_row("q1", "model_a", "English", False),  # kept: a win
        arena_row("q2", "model_b", "English", False),  # kept: a loss
        arena_row("q3", "model_a", "English", True),  # flagged by moderation
        arena_row("q4", "model_a", "German", False),  # another language
        arena_row("q5", "model_b", "Spanish", True),  # both
    ]
    (fresh / "arena.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    shutil.copyfile(new_store_file, fresh / "pairstore.duckdb")  # a new store, without running migrations
    setup("ingest battles arena.jsonl --format arena --own-model vicuna-13b")
    (command,) = block(*first_command("test_mine_battle_where_leaves_flagged_and_other_languages_out"))
    run_line(command)
    with open_store(fresh / "pairstore.duckdb", read_only=True) as store:
        mined = store.rows(
            "SELECT b.language, b.flagged, b.vote FROM pairs p JOIN pair_origins o USING (pair_id) "
            "JOIN battles b ON b.battle_id = o.origin_id WHERE p.source = 'battle' ORDER BY b.vote"
        )
        stored = store.scalar("SELECT count(*) FROM battles")
    assert stored == 5
    assert mined == [
        {"language": "English", "flagged": False, "vote": "loss"},
        {"language": "English", "flagged": False, "vote": "win"},
    ]


def battles_and_loopfix(folder: Path, tiny: Path) -> None:
    """The store docs/bring-your-data.md's last block and docs/scale.md assume: the sample battles
    ingested, loop-fix pairs mined, so7a's bundle (the tiny model) at bundles/so7a."""
    shutil.copytree(tiny, folder / "bundles" / "so7a")
    setup(f"ingest battles {SAMPLE / 'battles.jsonl'}")
    loopfix = [
        Pair(
            prompt=f"Count the letter r in the word number {i}: {'r' * (i % 4)}berry.",
            chosen=f"There are {i % 4 + 2} of them.\nFinal answer: {i % 4 + 2}",
            rejected="r r r r r r r r r r r r",
            source="loopfix",
            family="letter_count",
            task_key=f'letter_count:{{"i":{i}}}',
        )
        for i in range(12)
    ]
    with open_store(folder / "pairstore.duckdb") as store:
        add_pairs(store, loopfix, miner="loopfix", miner_version="test")


@pytest.mark.slow
def test_from_the_store_to_training_exports_m11a(fresh, tiny):
    battles_and_loopfix(fresh, tiny)
    for command in block(*first_command("test_from_the_store_to_training_exports_m11a")):
        run_line(command)
    evidence = json.loads((fresh / "mixtures" / "m11a.training_evidence.json").read_text(encoding="utf-8"))
    assert [(b["source"], b["selected"]) for b in evidence["blocks"]][0] == ("loopfix", 12)
    assert evidence["blocks"][1]["source"] == "battle" and evidence["blocks"][1]["selected"] > 0
    assert evidence["system_prompt"]["from"] == str(Path("bundles/so7a/system_prompt.txt"))
    with open_store(fresh / "pairstore.duckdb", read_only=True) as store:
        held = store.scalar("SELECT count(*) FROM holdout WHERE set_name = 'judge34' AND removed_at IS NULL")
        exported = store.scalar("SELECT count(*) FROM exports WHERE round = 'm11a' AND kind = 'export'")
    assert (held, exported) == (34, 1)


# -- docs/scale.md --------------------------------------------------------------------------------------


def m11a_exported(folder: Path, tiny: Path) -> None:
    """docs/scale.md's starting point: round m11a exported from a store of battles and loop-fix pairs."""
    battles_and_loopfix(folder, tiny)
    setup(
        "holdout sample judge34 --n 34 --seed 12076",
        "mine battle",
        "round add --shipped",
        "export --round m11a --out mixtures --bundle bundles/so7a",
    )


class Launched(BaseException):
    """Raised where `accelerate launch` would start: the run got that far, and nothing was started.
    A BaseException, so that neither pairstore's one-line error handler nor the CliRunner takes it."""

    def __init__(self, argv: list[str]):
        super().__init__(argv)
        self.argv = argv


@pytest.mark.slow
def test_the_accelerate_line_prepares_a_four_process_launch(fresh, tiny, monkeypatch):
    import torch

    import train.launch

    m11a_exported(fresh, tiny)

    def launch(argv, **_):
        raise Launched(list(argv))

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the machine the doc is for
    monkeypatch.setattr(train.launch.subprocess, "run", launch)
    (command,) = block(*first_command("test_the_accelerate_line_prepares_a_four_process_launch"))
    with pytest.raises(Launched) as launched:
        pairstore(command)
    argv = launched.value.argv
    assert argv[1:5] == [
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(train.launch.CONFIG_DIR / "zero3.yaml"),
    ]
    assert argv[argv.index("--num_processes") + 1] == "4" and "--cpu" not in argv
    job_path = Path(argv[argv.index("--job") + 1])
    assert job_path == (fresh / "runs" / "m11a" / "pairstore_job.json").resolve()
    hp = json.loads(job_path.read_text(encoding="utf-8"))["hyperparameters"]
    # the doc's arithmetic: 32 / (1 x 4) = 8
    assert (hp["global_batch"], hp["per_device_batch"], hp["world_size"]) == (32, 1, 4)
    assert hp["gradient_accumulation_steps"] == 8


@pytest.mark.slow
def test_the_slurm_lines_write_a_script_sbatch_would_take(fresh, tiny):
    m11a_exported(fresh, tiny)
    emit, submit = block(*first_command("test_the_slurm_lines_write_a_script_sbatch_would_take"))
    run_line(emit)
    assert words(submit) == ["sbatch", "m11a.sbatch"]
    script = fresh / "m11a.sbatch"
    # No Slurm here, and a test never submits a job: what sbatch would be given is checked instead.
    why = "never from a test" if shutil.which("sbatch") else "no Slurm here"
    print(f"`{submit}`: not submitted ({why}); the script it would be given is checked")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/bash\n")
    for line in ("#SBATCH --nodes=1", "#SBATCH --gres=gpu:4", "#SBATCH --requeue", "set -euo pipefail"):
        assert line in text.splitlines(), line
    launch = words(text.splitlines()[-1])
    assert launch[launch.index("--num_processes") + 1] == "4"
    assert Path(launch[launch.index("--db") + 1]) == (fresh / "pairstore.duckdb").resolve()
    assert (
        Path(launch[launch.index("--job") + 1]) == (fresh / "runs" / "m11a" / "pairstore_job.json").resolve()
    )
    assert "x gradient accumulation 8 = global batch 32" in text


def weights(bundle: Path) -> dict:
    """Every tensor of a bundle's safetensors shards, by name."""
    from safetensors.torch import load_file

    return {k: v for shard in sorted(bundle.glob("*.safetensors")) for k, v in load_file(shard).items()}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_merge_and_soup_run_on_tiny_bundles(fresh, tiny, one_torch_thread):
    import torch

    from train.dpo import execute_job, register_adapter
    from train.dpo_job import DpoOptions, prepare_job

    m11a_exported(fresh, tiny)
    # What the Slurm job leaves behind, in one step (at a rate that moves the weights, as the demo's short
    # runs do): the adapter and its training_evidence.json, registered.
    options = DpoOptions(round="m11a", base="bundles/so7a", out="runs/m11a", max_steps=1)
    with open_store(fresh / "pairstore.duckdb", read_only=True) as store:
        job = prepare_job(store, options, overrides={"learning_rate": 1e-2, "warmup_ratio": 0.0})
    evidence = execute_job(job)
    with open_store(fresh / "pairstore.duckdb") as store:
        register_adapter(store, job, evidence)
    outputs = [run_line(c) for c in block(*first_command("test_merge_and_soup_run_on_tiny_bundles"))]
    so7a, m11a, sm11a = (weights(fresh / "bundles" / name) for name in ("so7a", "m11a", "sm11a"))
    assert so7a.keys() == m11a.keys() == sm11a.keys()
    assert any(not torch.equal(so7a[k], m11a[k]) for k in so7a), "the merge changed no weight"
    for k in so7a:  # the soup at alpha 0.5: so7a + 0.5 * (m11a - so7a)
        torch.testing.assert_close(sm11a[k], so7a[k] + 0.5 * (m11a[k] - so7a[k]), rtol=0, atol=1e-6)
    assert "registered checkpoint m11a" in outputs[0].output
    assert "registered checkpoint sm11a" in outputs[1].output
    with open_store(fresh / "pairstore.duckdb", read_only=True) as store:
        kinds = {
            r["name"]: (r["kind"], sorted(r["parents"]))
            for r in store.rows("SELECT name, kind, parents FROM checkpoints")
        }
    assert kinds["m11a"][0] == "merge" and "so7a" in kinds["m11a"][1]
    assert kinds["sm11a"] == ("soup", ["m11a", "so7a"])


@pytest.mark.slow
@pytest.mark.timeout(600)  # a Ray cluster and two engines start on a shared machine
def test_the_local_ray_line_samples_with_two_workers(fresh, tiny, one_torch_thread):
    pytest.importorskip("ray", reason="the scale extra (Ray) is not installed: the --ray-address local line")
    shutil.copytree(tiny, fresh / "bundles" / "so7a")
    setup("generate loopfix --n 6 --seed 1")
    local, remote = block(*first_command("test_the_local_ray_line_samples_with_two_workers"))
    assert "ray://head:10001" in remote  # not runnable here: DOC_BLOCKS says so
    result = run_line(local)
    with open_store(fresh / "pairstore.duckdb", read_only=True) as store:
        tasks = store.scalar("SELECT count(*) FROM tasks")
        generations = store.scalar("SELECT count(*) FROM generations")
    assert tasks > 0 and generations == 4 * tasks, result.output
    assert list((fresh / "sample-work").rglob("items-*.parquet"))
