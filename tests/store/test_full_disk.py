"""A full disk under the writing commands: a small tmpfs (root only; skipped with the reason elsewhere).
Each command exits 1 with one line naming the folder, leaves nothing at a final path, and succeeds once
there is room."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairstore.store.store import open_store
from tests.paths import ROOT

CLI = [sys.executable, "-c", "from pairstore.cli import main; main()"]
BATTLES = ROOT / "pairstore" / "sample_data" / "battles.jsonl"


@pytest.fixture
def small_disk(tmp_path):
    """mount(size) -> a tmpfs folder of that many bytes; resize with mount(size) again."""
    folder = tmp_path / "disk"
    folder.mkdir()
    state = {"mounted": False}

    def mount(size: int) -> Path:
        opts = f"{'remount,' if state['mounted'] else ''}size={size}"
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(folder)], capture_output=True)
        if r.returncode:
            pytest.skip(f"cannot mount a small tmpfs here ({r.stderr.decode().strip() or 'not root'})")
        state["mounted"] = True
        return folder

    yield mount
    if state["mounted"]:
        subprocess.run(["umount", str(folder)], capture_output=True)


def run(db, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [*CLI, "--db", str(db), *map(str, args)], capture_output=True, text=True, env=env, timeout=300
    )


def one_line_exit_1(r, where: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert where in lines[0], lines


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_export_on_a_full_disk(round_r1, tmp_path, small_disk):
    db = round_r1.path
    round_r1.close()
    disk = small_disk(8192)
    out = disk / "out"
    r = run(db, "export", "--round", "r1", "--out", out)
    one_line_exit_1(r, str(disk))
    assert not (out / "r1.parquet").exists() and not (out / "r1.training_evidence.json").exists()
    assert not hidden(disk)
    with open_store(db, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM exports") == 0
    small_disk(4 << 20)
    r = run(db, "export", "--round", "r1", "--out", out)
    assert r.returncode == 0, r.stderr
    assert (out / "r1.parquet").is_file()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_soup_and_tiny_base_on_a_full_disk(tiny, tmp_path, small_disk):
    from train.tiny import make_tiny_bundle

    b = make_tiny_bundle(tmp_path / "b", seed=1, max_new_tokens=12)
    db = tmp_path / "store.duckdb"
    open_store(db).close()
    disk = small_disk(64 << 10)
    out = disk / "soup"
    r = run(db, "train", "soup", tiny, b, "--alpha", "0.5", "--out", out, "--name", "s")
    one_line_exit_1(r, str(disk))
    assert "bytes" in r.stderr  # the bytes it needs
    assert not out.exists() and not hidden(disk)
    with open_store(db, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM checkpoints") == 0
    # Room by the free-space check but not for the whole write: the write itself fails, one line.
    with pytest.raises(Exception) as e:
        make_tiny_bundle(disk / "tiny", seed=0)
    assert "no space" in str(e.value).lower() and not (disk / "tiny").exists() and not hidden(disk)
    small_disk(8 << 20)
    r = run(db, "train", "soup", tiny, b, "--alpha", "0.5", "--out", out, "--name", "s")
    assert r.returncode == 0, r.stderr
    assert (out / "model.safetensors").is_file()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ingest_with_the_store_on_a_full_disk(tmp_path, small_disk):
    disk = small_disk(8 << 20)
    db = disk / "store.duckdb"
    assert run(db, "round", "list").returncode in (0, 2)
    open_store(db).close()
    used = sum(p.stat().st_size for p in disk.iterdir())
    small_disk(used + (64 << 10))
    big = tmp_path / "big.jsonl"
    line = BATTLES.read_text().splitlines()[0]
    import json

    rec = json.loads(line)
    with open(big, "w") as f:
        for i in range(20000):
            rec["battle_id"] = f"big{i}"
            rec["prompt"] = [{"role": "user", "content": f"question {i} " + "words " * 40}]
            f.write(json.dumps(rec) + "\n")
    r = run(db, "ingest", "battles", big)
    one_line_exit_1(r, "store.duckdb")
    small_disk(256 << 20)
    with open_store(db, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM battles") == 0
    r = run(db, "ingest", "battles", big)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(tmp_path / "b", ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_disk_that_fills_while_the_parquet_is_written(round_r1, tmp_path, small_disk, monkeypatch, run_cli):
    # the free-space check passes (its estimate made too small here), then the disk fills in the middle
    # of the parquet file: the same one line, nothing at a final path, no temp file left behind
    from pairstore.export import run as export_run

    monkeypatch.setattr(export_run, "_size_estimate", lambda con, table: 0)
    failures = []
    write_file = export_run.write_mixture_file

    def recording_write_file(*args):
        try:
            return write_file(*args)
        except BaseException as e:
            failures.append(e)
            raise

    monkeypatch.setattr(export_run, "write_mixture_file", recording_write_file)
    disk = small_disk(12 << 10)
    out = disk / "out"
    out.mkdir()
    (disk / "filler").write_bytes(b"x" * (8 << 10))
    r = run_cli("export", "--round", "r1", "--out", out, db=round_r1.path)
    assert r.exit_code == 1, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and str(disk) in lines[0] and "Traceback" not in r.output, r.output
    # it was the parquet file that filled it
    assert len(failures) == 1 and getattr(failures[0], "errno", None) == errno.ENOSPC, failures
    assert not any(out.iterdir()) and not hidden(disk)
    assert round_r1.scalar("SELECT count(*) FROM exports") == 0
