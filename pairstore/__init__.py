"""pairstore: the data system behind rounds of DPO from human feedback.

One DuckDB file holds battles, problems, tasks, generations, pairs and their
origins, holdout sets, round recipes, exports and checkpoints. Nothing reaches
a training mixture without passing the holdout gate.

From a shell:

    pairstore ingest battles battles.jsonl
    pairstore holdout sample judge34 --n 34 --seed 7
    pairstore export --round m11a --out mixtures/

From Python (docs/python.md):

    import pairstore
    with pairstore.open("pairstore.duckdb") as store:      # read-only unless read_only=False
        store.sql("SELECT source, count(*) AS n FROM pairs GROUP BY ALL").df()
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pairstore.errors import BadInput, GateRefused, NotFound, PairstoreError, StoreBusy
from pairstore.version import __version__

if TYPE_CHECKING:
    from pairstore.store.store import Store

__all__ = [
    "BadInput",
    "GateRefused",
    "NotFound",
    "PairstoreError",
    "Store",
    "StoreBusy",
    "__version__",
    "open",
]


# The store (DuckDB, pyarrow, numpy) loads on first use, not with the package: `pairstore` starts by
# importing this package, and a Ctrl-C while it starts must meet the CLI's handler (one line, exit 130),
# not a traceback from inside numpy's import.
def __getattr__(name: str) -> Any:
    if name == "Store":
        from pairstore.store.store import Store

        return Store
    raise AttributeError(f"module 'pairstore' has no attribute {name!r}")


def open(path: str | os.PathLike | None = None, read_only: bool = True) -> Store:  # noqa: A001
    """The store at `path` (default: $PAIRSTORE_DB, else ./pairstore.duckdb).

    Read-only by default, so a notebook never holds the write lock a running `pairstore` command
    needs (DuckDB allows several read-only processes or one writer). `read_only=False` creates and
    migrates the store like any write command. Use it as a context manager, or call `.close()`.
    """
    from pairstore.store.store import open_store

    return open_store(path, read_only=read_only, create=not read_only)
