"""Ctrl-C is one line and exit 130: inside a long DuckDB statement, and whatever a library raises after it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pairstore.cli import interrupts
from pairstore.cli.interrupts import INTERRUPTED_LINE, INTERRUPTED_STATUS

LONG_QUERY = "SELECT count(*) FROM range(1000000000000) t(x) WHERE hash(x) % 7 = 3"


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (it is inside the command, past start-up)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc to see the store opened")
# The signal at several moments after the store opens: before the statement starts (the interrupt finds
# nothing running yet and must be asked again) and inside it.
@pytest.mark.parametrize("after_open", [0.0, 0.05, 0.3])
def test_ctrl_c_inside_a_duckdb_statement_stops_it_with_one_line(run_cli, db_path, after_open):
    assert run_cli("sql", "SELECT 1").exit_code == 0  # the store exists
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from pairstore.cli import main; main()",
            "--db",
            str(db_path),
            "sql",
            LONG_QUERY,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a shell: Ctrl-C at its default. A test process may have set SIGINT to be ignored (a
        # library it loaded, a worker of a parallel run), and an ignored signal stays ignored in a child.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not _holds_open(proc.pid, db_path) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)  # inside the statement
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # without the interrupt the query would run for hours
    finally:
        proc.kill()
    assert proc.returncode == INTERRUPTED_STATUS, err
    assert err == f"error: {INTERRUPTED_LINE}\n" and out == ""


def test_an_error_a_library_raises_after_ctrl_c_is_the_interrupt(run_cli, monkeypatch):
    import pairstore.store.sql as sql

    def interrupted_mid_work(*args, **kwargs):
        interrupts.INTERRUPTED.set()  # what the watcher does when SIGINT arrives
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(sql, "run_sql", interrupted_mid_work)
    monkeypatch.setattr("pairstore.cli.sql.run_sql", interrupted_mid_work)
    try:
        r = run_cli("sql", "SELECT 1")
    finally:
        interrupts.INTERRUPTED.clear()
    assert r.exit_code == INTERRUPTED_STATUS
    assert r.stderr == f"error: {INTERRUPTED_LINE}\n"


def test_without_an_interrupt_the_same_error_is_a_bug_report(run_cli, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("pairstore.cli.sql.run_sql", broken)
    r = run_cli("sql", "SELECT 1")
    assert r.exit_code == 1 and "unexpected RuntimeError: boom" in r.stderr
