"""Every command of the Click tree under the faults of the machine: a full disk (a small tmpfs, root only),
a store and output folder that cannot be written (a read-only mount). A command that must write fails in
one line on stderr with exit 1, leaves the store's bytes and every final path as they were, and succeeds
once there is room; a command that only reads still works. No traceback, ever. The table of commands and
the workspace they run in: tests/command_table.py. Damaged and foreign stores:
tests/store/test_store_faults.py.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from pairstore.cli import cli
from tests.command_table import CASES, NOT_RUN, build_workspace, command_of, leaf_commands

WRITERS = [name for name, case in CASES.items() if case.writes]
READERS = [name for name, case in CASES.items() if not case.writes and case.opens_store]


def test_the_table_runs_every_command_of_the_cli():
    commands = leaf_commands()
    assert len(commands) >= 40
    covered = {command_of(name) for name in CASES} | set(NOT_RUN)
    assert not set(commands) - covered, f"commands no fault test runs: {sorted(set(commands) - covered)}"
    assert not covered - set(commands), (
        f"the table names commands the CLI lacks: {sorted(covered - set(commands))}"
    )


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _invoke(db: Path, args: list[str]):
    return CliRunner().invoke(cli, ["--db", str(db), "-q", *args], catch_exceptions=False)


def _one_line(r, code: int) -> str:
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.output, r.output
    assert r.exit_code == code and len(lines) == 1, (r.exit_code, r.output)
    return lines[0]


def _files(folder: Path) -> dict[str, int]:
    """Every file and folder under `folder` (hidden ones too) and its size (folders: -1)."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size if p.is_file() else -1)
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return build_workspace(tmp_path_factory.mktemp("commands") / "ws", model_inputs=True)


# ---------------------------------------------------------------------------- a full disk


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MiB tmpfs at tmp_path/disk (root only; skipped with the reason elsewhere)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a small tmpfs here ({r.stderr.decode().strip() or 'not root'})")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path) -> None:
    """Write filler files until the file system takes not one more byte."""
    for name, chunk in (("filler", 1 << 20), ("filler2", 1 << 12), ("filler3", 1)):
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * chunk):
                    pass
        finally:
            os.close(fd)
    assert shutil.disk_usage(folder).free < (1 << 12)


FILLERS = ("filler", "filler2", "filler3")


def _no_wal_or_an_empty_one(db: Path) -> None:
    # DuckDB creates the WAL file when a write transaction begins and leaves it empty when the commit's
    # write fails: empty, it holds nothing to replay (the next open removes it).
    wal = db.with_name(db.name + ".wal")
    assert not wal.exists() or wal.stat().st_size == 0, wal.stat().st_size


@pytest.mark.slow
@pytest.mark.timeout(900)  # train dpo trains twice (a step each): minutes on a loaded machine
@pytest.mark.parametrize("name", WRITERS)
def test_a_full_disk_under_every_writing_command(workspace, small_disk, name):
    case = CASES[name]
    db = small_disk / "store.duckdb"
    shutil.copy(workspace / "store.duckdb", db)
    out = small_disk / "out"
    args = case.argv(workspace, out)
    before_sha = _sha(db)
    fill(small_disk)
    before = _files(small_disk)
    r = _invoke(db, args)
    line = _one_line(r, 1)
    assert str(small_disk) in line and ("space" in line or "quota" in line), line
    assert _sha(db) == before_sha
    _no_wal_or_an_empty_one(db)
    after = {k: v for k, v in _files(small_disk).items() if k != "store.duckdb.wal"}
    assert after == before, f"{name} left {sorted(set(after) - set(before))}"
    for filler in FILLERS:
        (small_disk / filler).unlink()
    r = _invoke(db, args)
    assert r.exit_code == 0, r.output
    if "files" in case.writes:
        assert out.is_dir() and any(out.iterdir())
    assert not [p for p in small_disk.rglob(".*") if p.name != "store.duckdb.wal"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_every_reading_command_works_on_a_full_disk(workspace, small_disk):
    db = small_disk / "store.duckdb"
    shutil.copy(workspace / "store.duckdb", db)
    before = _sha(db)
    fill(small_disk)
    for name in READERS:
        r = _invoke(db, CASES[name].argv(workspace, small_disk / "out"))
        assert r.exit_code == 0 and "Traceback" not in r.output, (name, r.output)
        assert _sha(db) == before, name


# ---------------------------------------------------------------------------- a read-only folder


@pytest.fixture
def read_only_folder(tmp_path, workspace):
    """tmp_path/ro holding a copy of the store, mounted read-only (root only: chmod is no barrier to root)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.copy(workspace / "store.duckdb", folder / "store.duckdb")
    r = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot bind-mount a folder here ({r.stderr.decode().strip() or 'not root'})")
    r = subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True)
    if r.returncode:
        subprocess.run(["umount", str(folder)], capture_output=True)
        pytest.skip(f"cannot make a mount read-only here ({r.stderr.decode().strip()})")
    try:
        (folder / "probe").write_text("x")
    except OSError as e:
        assert e.errno == errno.EROFS
    else:
        pytest.fail("the read-only mount took a write")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_command_with_its_store_and_output_in_a_read_only_folder(workspace, read_only_folder):
    db = read_only_folder / "store.duckdb"
    before_sha, before = _sha(db), _files(read_only_folder)
    for name, case in CASES.items():
        r = _invoke(db, case.argv(workspace, read_only_folder / "out"))
        if case.writes:
            line = _one_line(r, 1)
            assert str(read_only_folder) in line and "read-only" in line.lower(), (name, line)
        else:
            assert r.exit_code == 0 and "Traceback" not in r.output, (name, r.output)
        assert _sha(db) == before_sha and _files(read_only_folder) == before, name
