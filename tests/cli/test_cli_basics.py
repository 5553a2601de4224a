"""The CLI starts fast: no heavy imports for --help or store commands (help texts: tests/test_docs.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pairstore.store.store import open_store

# pandas: pyarrow imports it at its first pa.array (a module-level pa.array cost every command 0.25 s);
# numba and scipy (numba imports it): modules that compile are imported inside the functions that run them
HEAVY = ("torch", "transformers", "trl", "peft", "datasets", "matplotlib", "pandas", "numba", "scipy")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    last = out.rstrip("\n").rsplit("HEAVY:", 1)[1]
    return {m for m in last.split(",") if m}


@pytest.mark.slow
def test_help_and_store_commands_import_nothing_heavy(tmp_path):
    assert (
        _loaded_after(
            "from pairstore.cli import cli\n"
            "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass"
        )
        == set()
    )
    db = tmp_path / "s.duckdb"
    open_store(db).close()
    code = (
        f"from pairstore.cli import cli\n"
        f"cli.main(['--db', {str(db)!r}, 'holdout', 'list'], standalone_mode=False)\n"
        f"cli.main(['--db', {str(db)!r}, 'sql', 'SELECT count(*) FROM pairs'], standalone_mode=False)"
    )
    assert _loaded_after(code) == set()
