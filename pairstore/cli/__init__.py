"""The `pairstore` command line: thin wrappers over library functions.

Each command opens the store, calls one library function and prints its result; each command group
has its module here (pairstore/cli/ingest.py for `pairstore ingest ...`, and so on; the demo's
pipeline and its command in pairstore/cli/demo.py), and what they share (errors to one line and an
exit status, see docs/design.md) is in pairstore/cli/base.py.

    pairstore --db store.duckdb ingest battles battles.jsonl
    pairstore sql "SELECT * FROM pairs_by_source"
"""

from __future__ import annotations

import sys
from typing import Any


def main(argv: list[str] | None = None) -> None:
    """The `pairstore` command. Ctrl-C reaches every running DuckDB statement (one line, exit 130), also
    while the commands are still loading."""
    from pairstore.cli.interrupts import INTERRUPTED_LINE, INTERRUPTED_STATUS, watch_interrupts

    try:
        watch_interrupts()
        from pairstore.cli.app import cli
    except KeyboardInterrupt:
        print(f"error: {INTERRUPTED_LINE}", file=sys.stderr)
        sys.exit(INTERRUPTED_STATUS)
    cli.main(args=argv, prog_name="pairstore")


def __getattr__(name: str) -> Any:
    # `from pairstore.cli import cli`: the tree loads on first use, so `main` can catch a Ctrl-C that
    # comes while the command modules import.
    if name == "cli":
        from pairstore.cli.app import cli

        return cli
    raise AttributeError(f"module 'pairstore.cli' has no attribute {name!r}")


if __name__ == "__main__":
    main()
