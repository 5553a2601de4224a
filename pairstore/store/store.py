"""The store: one DuckDB file, opened read-only or for writing.

    from pairstore.store.store import open_store
    with open_store("pairstore.duckdb") as store:
        with store.transaction():
            store.con.execute("INSERT INTO ...")

DuckDB allows one writing process or several read-only ones at a time; a
conflicting open raises StoreBusy with the holder's process id when DuckDB
reports it. Opening for writing applies pending migrations, each in its own
transaction.
"""

from __future__ import annotations

import contextlib
import os
import re
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

import duckdb

from pairstore.errors import BadInput, NotFound, PairstoreError, StoreBusy
from pairstore.store.comments import apply_comments
from pairstore.store.migrations import MIGRATIONS, SCHEMA_VERSION
from pairstore.store.recognize import damaged_store, recognize
from pairstore.store.rekey import ensure_current_keys

# DuckDB's buffer memory during a bulk write (an ingest, a mine): it spills staged rows to disk beyond
# this, so the write's memory does not grow with its rows.
BULK_MEMORY_LIMIT = 512 << 20
_SIZE_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def _size_bytes(text: str) -> int | None:
    """Bytes of a size as DuckDB shows a setting ('488.2 MiB'); None for anything else."""
    number, _, unit = text.strip().partition(" ")
    try:
        return int(float(number) * _SIZE_UNITS[unit])
    except (KeyError, ValueError):
        return None


@contextmanager
def bounded_memory(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's memory limit at most BULK_MEMORY_LIMIT for the block (a lower limit already set is kept),
    the connection's own restored after."""
    before = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    current = _size_bytes(before)
    if current is None or current > BULK_MEMORY_LIMIT:
        con.execute(f"SET memory_limit = '{BULK_MEMORY_LIMIT}B'")
    try:
        yield
    finally:
        con.execute(f"SET memory_limit = '{before}'")


DEFAULT_DB = "pairstore.duckdb"
_PID = re.compile(r"PID (\d+)")


def default_path() -> str:
    return os.environ.get("PAIRSTORE_DB") or DEFAULT_DB


# Every store this process has open, so a Ctrl-C can stop the statement each one is running.
_OPEN_STORES: weakref.WeakSet[Store] = weakref.WeakSet()


def interrupt_open_stores() -> int:
    """Ask the running statement of every open store to stop (DuckDB's interrupt, safe from any thread);
    the statement then raises duckdb.InterruptException and its transaction rolls back. Returns how many
    stores were asked."""
    asked = 0
    for store in list(_OPEN_STORES):
        try:
            store.con.interrupt()
            asked += 1
        except duckdb.Error:  # closed meanwhile
            pass
    return asked


# Query parameters as DuckDB takes them: positional (?) or named ($name).
Params: TypeAlias = "Sequence[object] | Mapping[str, object] | None"


class Store:
    """A connection to the store plus the few helpers every module uses."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, read_only: bool):
        self.con = con
        self.path = path
        self.read_only = read_only
        self._depth = 0
        _OPEN_STORES.add(self)

    # -- transactions -------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """BEGIN/COMMIT around the block, ROLLBACK on any exception. Nests (inner blocks join)."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield self
        except BaseException:
            self._depth = 0
            self.con.execute("ROLLBACK")
            raise
        self._depth = 0
        self.con.execute("COMMIT")

    # -- queries --------------------------------------------------------------
    def sql(self, query: str, params: Params = None) -> duckdb.DuckDBPyRelation:
        """A DuckDB relation over `query`: `.df()`, `.arrow()`, `.pl()`, `.fetchall()`, `.show()`, or
        more SQL on it (`.filter`, `.aggregate`). Any result an earlier `con.execute` left half-read is
        run to its end first, so a relation never meets "unfinished result from execute()"."""
        self.con.complete()
        return self.con.sql(query, params=params)

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"<pairstore.Store {self.path} ({mode}, schema version {self.schema_version()})>"

    # -- small helpers ------------------------------------------------------
    def rows(self, sql: str, params: Params = None) -> list[dict]:
        """Run a query and return a list of dicts."""
        cur = self.con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def scalar(self, sql: str, params: Params = None) -> Any:
        # fetchall, not fetchone: DuckDB 2 keeps a half-read result open and refuses the next statement.
        rows = self.con.execute(sql, params or []).fetchall()
        return rows[0][0] if rows else None

    def one(self, sql: str, params: Params = None) -> tuple | None:
        """The first row, or None (the result is read to the end, see scalar)."""
        rows = self.con.execute(sql, params or []).fetchall()
        return rows[0] if rows else None

    @contextmanager
    def registered(self, name: str, table: object) -> Iterator[str]:
        """`table` (an Arrow table, or anything else DuckDB can scan) visible to SQL as `name` inside the
        block; unregistered on the way out, whatever happens.

        An Arrow table is registered behind a holder that lets go of it on the way out. DuckDB keeps a
        view dropped inside a transaction until the transaction ends, and with it whatever the view
        reads: a miner or an ingest that registers each batch inside its one transaction would hold
        every batch it ever read until the commit (memory growing with the input). The dropped view
        keeps only the empty holder."""
        import pyarrow as pa

        held = _ArrowHolder(table) if isinstance(table, pa.Table) else None
        self.con.register(name, table if held is None else held)
        try:
            yield name
        except BaseException:
            if held is not None:
                held.table = None
            # A failed statement aborts the transaction, and DuckDB then refuses the unregister too: its
            # error would hide the one that matters. The rollback drops a view made inside it.
            with contextlib.suppress(duckdb.Error):
                self.con.unregister(name)
            raise
        if held is not None:
            held.table = None
        self.con.unregister(name)

    def schema_version(self) -> int:
        return self.scalar("SELECT coalesce(max(version), 0) FROM schema_version")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ArrowHolder:
    """An Arrow table as DuckDB scans it (the Arrow C stream interface), until `table` is set to None."""

    def __init__(self, table: Any) -> None:
        self.table: Any = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        if self.table is None:
            raise RuntimeError("an Arrow table was read after its registration ended")
        return self.table.__arrow_c_stream__(requested_schema)


# The on-disk format a new store is written in. The duckdb 2.x package writes format 69 by default,
# which no 1.x client (the DuckDB CLI, DBeaver's JDBC driver, R and Node bindings of 1.x) opens;
# v1.4.0 is the newest format both current 1.x lines read (1.4 LTS and 1.5; checked with the
# duckdb-cli 1.4.4 and 1.5.6 binaries, tests/store/test_clients.py). A file keeps the format it was created
# in: this setting decides new stores only.
STORAGE_COMPATIBILITY_VERSION = "v1.4.0"


# DuckDB draws its own progress bar on long statements; pairstore reports progress itself
# (pairstore.progress, on stderr), and stdout must hold nothing but a command's output (--json).
def quiet_connection(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute("SET enable_progress_bar = false")
    return con


def storage_config() -> dict[str, str | bool | int | float | list[str]]:
    """The connection settings that make DuckDB write a store 1.x clients read."""
    return {"storage_compatibility_version": STORAGE_COMPATIBILITY_VERSION}


def storage_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The storage format of the open database as DuckDB names it (e.g. 'v1.4.0+'), or None."""
    rows = con.execute(
        "SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return rows[0][0] if rows else None


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The one value a query returns (a query with no row is a bug here: these always return one).
    fetchall, not fetchone: a half-read result would make the caller's next con.sql() fail."""
    rows = con.execute(sql).fetchall()
    assert rows
    return rows[0][0]


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    # The storage setting decides the format of a new file only, so an existing store is opened with
    # DuckDB's default configuration: DuckDB refuses a second connection to one file in one process under
    # another configuration, and a notebook's own duckdb.connect(path, read_only=True) beside
    # pairstore.open(path) must work.
    new_file = not Path(path).exists() or Path(path).stat().st_size == 0
    config = storage_config() if new_file else {}
    try:
        return quiet_connection(duckdb.connect(path, read_only=read_only, config=config))
    except duckdb.IOException as e:
        msg = str(e)
        if "lock" in msg.lower():
            m = _PID.search(msg)
            holder = f" (held by process {m.group(1)})" if m else ""
            raise StoreBusy(
                f"store {path} is in use by another process{holder}; try again when it finishes"
            ) from None
        raise damaged_store(path, e) from None
    except duckdb.Error as e:
        raise damaged_store(path, e) from None


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations, each in its own transaction (a new store: all in one). Returns the schema
    version."""
    con.execute("""CREATE TABLE IF NOT EXISTS schema_version (
        version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,
        applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)""")
    current = _scalar(con, "SELECT coalesce(max(version), 0) FROM schema_version")
    if current > SCHEMA_VERSION:
        raise PairstoreError(
            f"store schema version {current} is newer than this pairstore ({SCHEMA_VERSION}); "
            "upgrade pairstore"
        )
    pending = [(version, fn) for version, fn in enumerate(MIGRATIONS, start=1) if version > current]
    # Each migration is its own transaction, except on a new store: there all of them are one (one commit
    # instead of one each; a crash leaves an empty store, which the next open treats as new again).
    batches = [pending] if current == 0 else [[step] for step in pending]
    for batch in batches:
        con.execute("BEGIN TRANSACTION")
        try:
            for version, fn in batch:
                fn(con)
                con.execute(
                    "INSERT INTO schema_version (version, name) VALUES (?, ?)", [version, fn.__name__]
                )
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    apply_comments(con)
    return SCHEMA_VERSION


def open_store(
    path: str | os.PathLike | None = None, *, read_only: bool = False, create: bool = True
) -> Store:
    """Open (and for writing, create and migrate) the store at `path`.

    A missing file is created (for writing); an existing file is recognised first
    (pairstore.store.recognize): a DuckDB file that is not a pairstore store, a damaged one, one from a newer
    pairstore, one whose tables do not match its schema_version, or one holding a function that shadows a
    built-in is refused before anything is written to it. Match keys another normalization made are
    re-keyed in one transaction (pairstore.store.rekey); a read-only open of such a store is refused."""
    path = str(path or default_path())
    exists = Path(path).exists()
    if read_only and not exists:
        raise NotFound(f"no store at {path} (create one with an ingest, or pass --db PATH)")
    if not read_only and not exists and not create:
        raise NotFound(f"no store at {path}")
    if exists and Path(path).is_dir():
        raise BadInput(f"{path} is a folder, not a store file; pass --db FILE", field="db")
    con = _connect(path, read_only)
    try:
        version = recognize(con, path, new=not exists)
        if read_only:
            if version != SCHEMA_VERSION:
                raise PairstoreError(
                    f"store {path} is at schema version {version}, this pairstore expects "
                    f"{SCHEMA_VERSION}; run any write command once to migrate it"
                )
        else:
            migrate(con)
        # Keys made by another normalization are re-keyed (writing) or refused (read-only): rekey.py.
        ensure_current_keys(con, path, read_only=read_only)
    except BaseException:
        con.close()
        raise
    return Store(con, path, read_only)
