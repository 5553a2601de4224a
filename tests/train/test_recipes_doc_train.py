"""docs/recipes.md's `train dpo` line runs as written against the demo store: it names the store, the round
exports, and its base is the recipe's parent. `--emit-sbatch` is appended so the job is prepared (every
check made, the job file written) without hours of training."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from pairstore.cli import cli
from tests.test_docs import RECIPES_DOC, code_blocks, section, shell_commands, words


def test_the_train_dpo_line_of_recipes_md_prepares_its_job(demo_run, tmp_path, monkeypatch):
    text = RECIPES_DOC.read_text(encoding="utf-8")
    (tmp_path / "m13a.toml").write_text(code_blocks(text, "toml")[0], encoding="utf-8")
    (tmp_path / "demo-run").mkdir()
    shutil.copy(demo_run.store_path, tmp_path / "demo-run" / "pairstore.duckdb")
    (tmp_path / "demo-run" / "bundles").symlink_to(demo_run.out_dir / "bundles")
    monkeypatch.chdir(tmp_path)
    register, train = (
        shell_commands(b) for b in code_blocks(section(text, "Register, export, train"), "sh")[:2]
    )
    for cmd in (register[0], register[-1]):  # round add, export
        r = CliRunner().invoke(cli, words(cmd)[1:], catch_exceptions=False)
        assert r.exit_code == 0, f"`{cmd}` exited {r.exit_code}:\n{r.output}"
    dpo = next(c for c in train if " train dpo " in c)
    r = CliRunner().invoke(cli, [*words(dpo)[1:], "--emit-sbatch", "m13a.sbatch"], catch_exceptions=False)
    assert r.exit_code == 0, f"`{dpo}` exited {r.exit_code}:\n{r.output}"
    job = json.loads((tmp_path / "runs" / "m13a" / "pairstore_job.json").read_text())
    assert job["base_name"] == "sm11a" and job["base_check"]["check"] == "registered as the parent"
    assert (tmp_path / "m13a.sbatch").is_file()
