"""Match keys kept in step with the normalization that reads them.

    stale = stale_tables(con)          # {table: the normalization its keys were made by, or None}
    rekey(con)                         # every stale table's keys recomputed (in the caller's transaction)
    ensure_current_keys(con, path, read_only=False)   # what open_store runs: re-key, or refuse read-only

Every table that holds match keys (KEYED_TABLES) has a row in `key_versions`: the normalization its
keys were made by (pairstore.normalize.normalization_version, which names every step's version). The
gate computes keys from text with today's normalization; a stored key made by another one would
silently stop matching. So opening a store for writing re-keys every stale table in one transaction
(keys, holdout members' match texts, benchmark n-grams), logged in audit_log as `store.rekey`; a
read-only open refuses, naming the command that re-keys.

A holdout member is re-keyed from the item it names (battle, task, problem, eval item), else from the
text it was added as (`holdout.source_text`), else from its stored match text: normalized again, the
only text left.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import duckdb
import pyarrow as pa

from pairstore.errors import PairstoreError
from pairstore.keys import xxh128
from pairstore.normalize import TURN_SEP, compact_text, normalization_version, word_texts

BATCH_ROWS = 50_000
REKEY_COMMAND = "pairstore holdout rekey"

# The user turns of a stored prompt (messages, or a plain string: one user turn) as a VARCHAR[].
_TURNS_OF_MESSAGES = (
    "coalesce(list_transform(list_filter({col}, lambda m: m.role = 'user'), lambda m: m.content), "
    "[]::VARCHAR[])"
)
_TURNS_OF_STRING = "[coalesce({col}, '')]"


def match_texts_of_turns(turns: Sequence[Sequence[str]]) -> list[str]:
    """The match text of each prompt given as its user turns: each turn's word text, turns joined by
    TURN_SEP (pairstore.keys.match_text), every turn of every prompt normalized in one batch."""
    words = word_texts([t or "" for ts in turns for t in ts])
    out, at = [], 0
    for ts in turns:
        out.append(TURN_SEP.join(words[at : at + len(ts)]))
        at += len(ts)
    return out


def _update_keys(con: duckdb.DuckDBPyConnection, table: str, id_cols: tuple[str, ...], turns_sql: str) -> int:
    """Recompute `table.match_key` from its prompts' user turns: the rows stream through once in batches,
    then one UPDATE (the connection runs one statement at a time)."""
    ids: dict[str, list] = {c: [] for c in id_cols}
    keys: list[str] = []
    reader = con.sql(f"SELECT {', '.join(id_cols)}, {turns_sql} AS turns FROM {table}").to_arrow_reader(
        BATCH_ROWS
    )
    for batch in reader:
        for c in id_cols:
            ids[c] += batch.column(c).to_pylist()
        keys += [xxh128(compact_text(t)) for t in match_texts_of_turns(batch.column("turns").to_pylist())]
    if not keys:
        return 0
    new = pa.table(
        {**{c: pa.array(v, pa.string()) for c, v in ids.items()}, "k": pa.array(keys, pa.string())}
    )
    con.register("_rekeyed_keys", new)
    try:
        on = " AND ".join(f"{table}.{c} = k.{c}" for c in id_cols)
        con.execute(f"UPDATE {table} SET match_key = k.k FROM _rekeyed_keys k WHERE {on}")
    finally:
        con.unregister("_rekeyed_keys")
    return len(keys)


Rekeyer = Callable[[duckdb.DuckDBPyConnection], int]  # re-keys one table; returns the rows it read


def _table_rekeyer(table: str, id_cols: tuple[str, ...], turns: str) -> Rekeyer:
    def run(con: duckdb.DuckDBPyConnection) -> int:
        return _update_keys(con, table, id_cols, turns)

    return run


# A member's user turns from the item it names, else the text it was added as; NULL when neither is
# stored (then its old match text is all there is).
_BATTLE_TURNS = _TURNS_OF_MESSAGES.format(col="b.prompt")
_EVAL_TURNS = _TURNS_OF_MESSAGES.format(col="any_value(e.prompt)")
_MEMBER_TURNS_SQL = f"""
    SELECT h.set_name, h.item_id, h.match_text,
           coalesce(
               CASE WHEN h.item_kind = 'battle' THEN (SELECT {_BATTLE_TURNS}
                    FROM battles b WHERE b.battle_id = h.item_id) END,
               CASE WHEN h.item_kind = 'task' THEN (SELECT [t.prompt] FROM tasks t
                    WHERE t.task_id = h.item_id) END,
               CASE WHEN h.item_kind = 'problem' THEN (SELECT [p.question] FROM problems p
                    WHERE p.problem_id = h.item_id) END,
               CASE WHEN h.item_kind = 'eval_item' THEN (SELECT {_EVAL_TURNS}
                    FROM eval_items e WHERE e.item_id = h.item_id) END,
               CASE WHEN h.source_text IS NOT NULL THEN [h.source_text] END) AS turns
    FROM holdout h"""


def _rekey_holdout(con: duckdb.DuckDBPyConnection) -> int:
    """Every member's match text and key, from the text it stands for (see the module docstring)."""
    rows = con.execute(_MEMBER_TURNS_SQL).fetchall()
    if not rows:
        return 0
    turns = [list(t) if t is not None else (old or "").split(TURN_SEP) for _, _, old, t in rows]
    texts = match_texts_of_turns(turns)
    new = pa.table(
        {
            "set_name": pa.array([r[0] for r in rows], pa.string()),
            "item_id": pa.array([r[1] for r in rows], pa.string()),
            "match_text": pa.array(texts, pa.string()),
            "match_key": pa.array([xxh128(compact_text(t)) for t in texts], pa.string()),
        }
    )
    con.register("_rekeyed_members", new)
    try:
        con.execute(
            "UPDATE holdout SET match_text = k.match_text, match_key = k.match_key FROM _rekeyed_members k "
            "WHERE holdout.set_name = k.set_name AND holdout.item_id = k.item_id"
        )
    finally:
        con.unregister("_rekeyed_members")
    return len(rows)


def rekey_benchmarks(con: duckdb.DuckDBPyConnection) -> int:
    """Every registered benchmark's keys and n-grams rebuilt by today's normalization."""
    total = 0
    for bench, n in con.execute("SELECT DISTINCT benchmark, n FROM benchmark_refs ORDER BY 1").fetchall():
        # (imported only where there is a benchmark to re-key: every open of a store runs the migrations
        # once on an empty scratch store, pairstore.store.recognize, and needs no n-grams there)
        from pairstore.ngram_hash import benchmark_tables

        items = con.execute(
            "SELECT item_id, text FROM benchmark_refs WHERE benchmark = ? ORDER BY item_id", [bench]
        ).fetchall()
        refs, ngrams = benchmark_tables([i for i, _ in items], [t for _, t in items], n)
        con.register("_rekeyed_refs", refs)
        con.register("_rekeyed_ngrams", ngrams)
        try:
            con.execute(
                "UPDATE benchmark_refs SET match_key = r.match_key FROM _rekeyed_refs r "
                "WHERE benchmark_refs.benchmark = ? AND benchmark_refs.item_id = r.item_id",
                [bench],
            )
            con.execute("DELETE FROM benchmark_ngrams WHERE benchmark = ?", [bench])
            con.execute(
                "INSERT INTO benchmark_ngrams SELECT DISTINCT ?, item_id, ngram FROM _rekeyed_ngrams", [bench]
            )
        finally:
            con.unregister("_rekeyed_refs")
            con.unregister("_rekeyed_ngrams")
        total += len(items)
    return total


# Every table whose rows hold a key made by the normalization, and how its keys are remade. Holdout comes
# after the items its members name (their prompts are read, not their keys).
KEYED_TABLES: dict[str, Rekeyer] = {
    "battles": _table_rekeyer("battles", ("battle_id",), _TURNS_OF_MESSAGES.format(col="prompt")),
    "problems": _table_rekeyer("problems", ("problem_id",), _TURNS_OF_STRING.format(col="question")),
    "tasks": _table_rekeyer("tasks", ("task_id",), _TURNS_OF_STRING.format(col="prompt")),
    "pairs": _table_rekeyer("pairs", ("pair_id",), _TURNS_OF_MESSAGES.format(col="prompt")),
    "eval_items": _table_rekeyer("eval_items", ("suite", "item_id"), _TURNS_OF_MESSAGES.format(col="prompt")),
    "holdout": _rekey_holdout,
    "benchmark_refs": rekey_benchmarks,  # and benchmark_ngrams
}


def rekey_stored_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Every stored row's match key recomputed by today's normalization (what the key-changing migrations
    of old stores run; holdout members and benchmarks are their own step there)."""
    for table in ("battles", "problems", "tasks", "pairs", "eval_items"):
        KEYED_TABLES[table](con)


def stale_tables(con: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    """{table: the normalization its keys were made by (None: not recorded)} of every keyed table whose keys
    were not made by today's normalization."""
    current = normalization_version()
    stored = dict(con.execute("SELECT table_name, normalization FROM key_versions").fetchall())
    return {t: stored.get(t) for t in KEYED_TABLES if stored.get(t) != current}


def rekey(con: duckdb.DuckDBPyConnection, tables: Sequence[str] | None = None) -> dict[str, int]:
    """Recompute the keys of `tables` (default: the stale ones) and record today's normalization for them;
    logged in audit_log as `store.rekey`. Runs inside the caller's transaction. Returns rows re-keyed per
    table."""
    stale = stale_tables(con)
    todo = [t for t in KEYED_TABLES if t in (stale if tables is None else tables)]
    if not todo:
        return {}
    current = normalization_version()
    counts = {t: KEYED_TABLES[t](con) for t in todo}
    for t in todo:
        con.execute(
            "INSERT OR REPLACE INTO key_versions (table_name, normalization) VALUES (?, ?)", [t, current]
        )
    if any(counts.values()):
        detail = {"to": current, "from": {t: stale.get(t) for t in todo}, "rows": counts}
        con.execute(
            "INSERT INTO audit_log (action, subject, detail) VALUES ('store.rekey', 'store', ?)",
            [json.dumps(detail, sort_keys=True)],
        )
    return counts


def _what_changed(stale: dict[str, str | None]) -> str:
    """The steps whose version differs, in words (or what the stored version is missing)."""
    current = set(normalization_version().split())
    olds = {v for v in stale.values() if v}
    if not olds:
        return "keys made before the normalization was recorded"
    changed = sorted({part.split("/")[0] for old in olds for part in set(old.split()) ^ current})
    return "changed: " + ", ".join(changed)


def ensure_current_keys(con: duckdb.DuckDBPyConnection, path: str, *, read_only: bool) -> None:
    """What opening a store does about keys another normalization made: for writing, re-key them in one
    transaction; read-only, refuse naming the command that re-keys (nothing stale: nothing happens)."""
    stale = stale_tables(con)
    if not stale:
        return
    if read_only:
        raise PairstoreError(
            f"store {path} holds match keys made by another normalization ({', '.join(sorted(stale))}; "
            f"{_what_changed(stale)}); re-key it once with `{REKEY_COMMAND}` (any write command does it)"
        )
    con.execute("BEGIN TRANSACTION")
    try:
        rekey(con)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def rekey_every_table(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Every keyed table re-keyed, stale or not, in one transaction (`pairstore holdout rekey --all`)."""
    con.execute("BEGIN TRANSACTION")
    try:
        counts = rekey(con, list(KEYED_TABLES))
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return counts


def key_versions(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Each keyed table with the normalization its keys were made by and when, and whether that is today's."""
    current = normalization_version()
    stored = {
        t: (v, at)
        for t, v, at in con.execute("SELECT table_name, normalization, keyed_at FROM key_versions").fetchall()
    }
    return [
        {
            "table": t,
            "normalization": stored.get(t, (None, None))[0],
            "keyed_at": stored.get(t, (None, None))[1],
            "current": stored.get(t, (None, None))[0] == current,
        }
        for t in KEYED_TABLES
    ]
