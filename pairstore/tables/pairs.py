"""Pairs and their origins: the one record that flows from miners and importers into the store.

    from pairstore.tables.pairs import Pair, Origin, add_pairs
    result = add_pairs(store, [Pair(prompt=[...], chosen="...", rejected="...", source="battle",
                                    origins=[Origin("battle", "b17", "vote=win → own chosen")])],
                       miner="battle", miner_version="1")
    result.added, result.dropped   # Counter by reason

A pair's id is the content id of its prompt messages, chosen and rejected
(NFC, exact). Adding a pair that exists adds its new origins (a second origin
of the same pair is recorded, never dropped silently). Pairs with an empty
side or identical sides are dropped and counted by reason, so an audit can
explain every row that is not there. `rejected=None` makes an NLL-only `sft` row.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import duckdb
import pyarrow as pa
import xxhash

from pairstore.keys import canonical_messages, match_keys, messages_content_id

if TYPE_CHECKING:
    from pairstore.store.store import Store


@dataclass(frozen=True)
class Origin:
    kind: str  # battle, generation, task, problem, import, attached, ...
    id: str  # the origin's id in its own table or file
    rule: str  # the rule applied, e.g. "vote=loss → opponent chosen"


@dataclass
class Pair:
    prompt: list[dict] | str
    chosen: str
    rejected: str | None
    source: str
    family: str | None = None
    task_key: str | None = None
    origins: list[Origin] = field(default_factory=list)
    # (the prompt they were read from, its messages); read again when the prompt is replaced
    _messages: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def kind(self) -> str:
        return "sft" if self.rejected is None else "dpo"

    def messages(self) -> list[dict]:
        """The prompt as checked messages, read once: checks, ids and keys all ask for them."""
        if self._messages is None or self._messages[0] is not self.prompt:
            self._messages = (self.prompt, canonical_messages(self.prompt))
        return self._messages[1]

    @property
    def pair_id(self) -> str:
        return pair_id_of(self.messages(), self.chosen, self.rejected)


# -- sources -------------------------------------------------------------------------
# Every `pairs.source` value is declared once, by what produces it: a miner on its registration
# (miners.registry.register(..., sources=...)), an ingest or an attach beside its code. A recipe's mix may
# name a declared source or one already in the store (pairstore.rounds.recipes.known_sources).
_DECLARED_SOURCES: dict[str, str] = {}
# Functions that import the modules that declare sources, run before the declared sources are read: the
# miner registry adds the one that imports every miner (the core cannot import the domain itself).
_SOURCE_LOADERS: list[Callable[[], None]] = []


def add_source_loader(load: Callable[[], None]) -> None:
    """Run `load` (once it has run, it should do nothing) before declared_sources answers."""
    if load not in _SOURCE_LOADERS:
        _SOURCE_LOADERS.append(load)


def declare_sources(names: tuple[str, ...], *, by: str) -> tuple[str, ...]:
    """Declare the pair sources `by` (a module or miner name) writes; returns `names`."""
    for name in names:
        if _DECLARED_SOURCES.setdefault(name, by) != by:
            raise ValueError(f"source {name!r} is declared by {_DECLARED_SOURCES[name]} and {by}")
    return names


def declared_sources() -> dict[str, str]:
    """source -> what declared it, for every source declared (the loaders run first)."""
    for load in list(_SOURCE_LOADERS):
        load()
    return dict(sorted(_DECLARED_SOURCES.items()))


def battle_pair_prompt(user_turns: list[str], chosen_answers: list[str]) -> list[dict]:
    """User turns interleaved with the chosen side's earlier answers, ending on the last user turn."""
    messages = []
    for i, user in enumerate(user_turns):
        messages.append({"role": "user", "content": user})
        if i < len(user_turns) - 1:
            messages.append({"role": "assistant", "content": chosen_answers[i]})
    return messages


def pair_id_of(messages: list[dict], chosen: str, rejected: str | None) -> str:
    return messages_content_id(messages, chosen, rejected)


def check_pair(pair: Pair) -> tuple[bool, str | None]:
    """Keep, or (False, reason): the drops every miner shares."""
    if not pair.chosen or not pair.chosen.strip():
        return False, "empty side"
    if pair.rejected is not None:
        if not pair.rejected.strip():
            return False, "empty side"
        if pair.chosen.strip() == pair.rejected.strip():
            return False, "identical sides"
    if not any(m["role"] == "user" and m["content"].strip() for m in pair.messages()):
        return False, "empty prompt"
    return True, None


@dataclass
class AddResult:
    added: int = 0  # new pairs written
    new_origins: int = 0  # origins written (for new and existing pairs)
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    pair_ids: list[str] = field(default_factory=list)  # id of every kept input pair, in input order

    def as_dict(self) -> dict:
        return {"added": self.added, "new_origins": self.new_origins, "dropped": dict(self.dropped)}


_PAIR_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("kind", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("chosen", pa.string()),
        ("rejected", pa.string()),
        ("source", pa.string()),
        ("family", pa.string()),
        ("miner", pa.string()),
        ("miner_version", pa.string()),
        ("match_key", pa.string()),
        ("task_key", pa.string()),
    ]
)
_ORIGIN_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("origin_kind", pa.string()),
        ("origin_id", pa.string()),
        ("rule", pa.string()),
        ("miner", pa.string()),
    ]
)


def add_pairs(store: Store, pairs: Iterable[Pair], *, miner: str, miner_version: str) -> AddResult:
    """Insert pairs and origins in one transaction (joins an open one). Idempotent."""
    result, pair_tbl, origin_tbl = pair_rows(pairs, miner=miner, miner_version=miner_version)
    if pair_tbl.num_rows == 0 and origin_tbl.num_rows == 0:
        return result
    with (
        store.transaction(),
        store.registered("_new_pairs", pair_tbl),
        store.registered("_new_origins", origin_tbl),
    ):
        _insert_new(store, "_new_pairs", "_new_origins", pair_tbl.num_rows, result)
    if result.dropped.get("duplicate") == 0:
        del result.dropped["duplicate"]
    return result


def pair_rows(
    pairs: Iterable[Pair], *, miner: str, miner_version: str
) -> tuple[AddResult, pa.Table, pa.Table]:
    """The checked pairs as rows (_PAIR_SCHEMA, one per pair_id, the first kept) and their origins
    (_ORIGIN_SCHEMA, one per key), with what add_pairs counts before it writes: the drops by reason (a
    repeated pair_id as 'duplicate') and the id of every kept pair in input order. Writes nothing."""
    result = AddResult()
    new_rows: dict[str, dict] = {}
    origin_rows: dict[tuple, dict] = {}
    for p in pairs:
        ok, reason = check_pair(p)
        if not ok:
            result.dropped[reason] += 1
            continue
        msgs = p.messages()
        pid = pair_id_of(msgs, p.chosen, p.rejected)
        result.pair_ids.append(pid)
        if pid in new_rows:
            result.dropped["duplicate"] += 1
        else:
            new_rows[pid] = {
                "pair_id": pid,
                "kind": p.kind,
                "prompt": msgs,
                "chosen": p.chosen,
                "rejected": p.rejected,
                "source": p.source,
                "family": p.family,
                "miner": miner,
                "miner_version": miner_version,
                "match_key": None,  # below, all prompts at once
                "task_key": p.task_key,
            }
        for o in p.origins:
            origin_rows.setdefault(
                (pid, o.kind, o.id),
                {"pair_id": pid, "origin_kind": o.kind, "origin_id": o.id, "rule": o.rule, "miner": miner},
            )
    rows = list(new_rows.values())
    for row, key in zip(rows, match_keys([r["prompt"] for r in rows])):
        row["match_key"] = key
    pair_tbl = pa.Table.from_pylist(rows, schema=_PAIR_SCHEMA)
    origin_tbl = pa.Table.from_pylist(list(origin_rows.values()), schema=_ORIGIN_SCHEMA)
    return result, pair_tbl, origin_tbl


def _insert_new(store: Store, pairs: str, origins: str, n_pairs: int, result: AddResult) -> None:
    """The pairs of `pairs` (one row per pair_id, _PAIR_SCHEMA's columns) not stored yet, and the origins
    of `origins` (one per key, _ORIGIN_SCHEMA's) not stored yet; counts into `result`.

    The new ids are found first, between the two key columns alone, and the rows then picked by them: an
    anti-join of the whole rows would build its hash table of them (DuckDB builds on the smaller side, the
    new rows of a large store), prompts and answers included, and under a tight memory limit it ran out
    where this does not."""
    con = store.con
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _new_pair_ids AS
        SELECT n.pair_id FROM (SELECT pair_id FROM {pairs}) n ANTI JOIN (SELECT pair_id FROM pairs) p
        USING (pair_id)""")
    try:
        new = con.execute("SELECT count(*) FROM _new_pair_ids").fetchall()[0][0]
        result.dropped["duplicate"] += n_pairs - new
        result.added = new
        con.execute(f"""
            INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, family, miner,
                               miner_version, match_key, task_key)
            SELECT n.pair_id, n.kind, n.prompt, n.chosen, n.rejected, n.source, n.family, n.miner,
                   n.miner_version, n.match_key, n.task_key
            FROM {pairs} n SEMI JOIN _new_pair_ids USING (pair_id)""")
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction: its owner rolls it back
            con.execute("DROP TABLE IF EXISTS _new_pair_ids")
    result.new_origins = con.execute(f"""
        INSERT INTO pair_origins (pair_id, origin_kind, origin_id, rule, miner)
        SELECT o.pair_id, o.origin_kind, o.origin_id, o.rule, o.miner
        FROM {origins} o ANTI JOIN pair_origins x USING (pair_id, origin_kind, origin_id)
        """).fetchall()[0][0]


# add_pair_tables' inputs: _PAIR_SCHEMA's columns and the row's position, and the origins with the
# position of the row that gave them.
PAIR_TABLE_SCHEMA = pa.schema([*_PAIR_SCHEMA, ("_order", pa.int64())])
ORIGIN_TABLE_SCHEMA = pa.schema([*_ORIGIN_SCHEMA, ("_order", pa.int64())])


def add_pair_tables(store: Store, pairs: pa.Table, origins: pa.Table) -> AddResult:
    """add_pairs for pairs already built as Arrow columns (PAIR_TABLE_SCHEMA, ORIGIN_TABLE_SCHEMA), checked
    as check_pair checks them, with their ids and keys: the first row of each pair_id (by `_order`) is
    kept and the later ones counted as duplicates, the first origin of each key kept, as add_pairs does
    with a list. One transaction (joins an open one). `pair_ids` is left empty."""
    with store.transaction(), store.registered("_in_pairs", pairs), store.registered("_in_origins", origins):
        return _add_first_of_each(store, "_in_pairs", "_in_origins", pairs.num_rows)


# Rows of `_order` _add_first_of_each inserts at a time. What one insert builds in memory (the new ids'
# hash table, the origins' anti-join) is sized by its chunk, not by the rows added: one insert of a
# mine's 1,000,000 staged pairs ran out of memory under a 64 MB DuckDB limit (its semi-join's table of
# new ids cannot spill inside an INSERT), in chunks of this size it does not (bench/bench_mining.py).
COMMIT_CHUNK_ROWS = 50_000


def _add_first_of_each(store: Store, pairs: str, origins: str, n_rows: int) -> AddResult:
    """add_pair_tables' insert, of the relations named `pairs` and `origins` (n_rows rows in `pairs`),
    inside the caller's transaction, COMMIT_CHUNK_ROWS values of `_order` at a time, in order. Each
    chunk keeps the first row of each key within it; a key an earlier chunk wrote is stored by then (the
    transaction sees its own rows), so the anti-join against the table drops it: the first row of each
    key in the whole input is the one kept, as in one insert."""
    result = AddResult()
    con = store.con
    chunk_rows = COMMIT_CHUNK_ROWS
    orders = f"SELECT _order FROM {pairs} UNION ALL SELECT _order FROM {origins}"
    lo, hi = con.execute(f"SELECT min(_order), max(_order) FROM ({orders})").fetchall()[0]
    for first in range(lo, hi + 1, chunk_rows) if lo is not None else ():
        chunk = _insert_chunk(store, pairs, origins, f"_order BETWEEN {first} AND {first + chunk_rows - 1}")
        result.added += chunk.added
        result.new_origins += chunk.new_origins
    if n_rows - result.added:
        result.dropped["duplicate"] = n_rows - result.added
    return result


def _insert_chunk(store: Store, pairs: str, origins: str, where: str) -> AddResult:
    """The rows of `pairs` and `origins` that match `where`: the first of each key among them (by
    `_order`), those not stored yet inserted (_insert_new)."""
    result = AddResult()
    con = store.con
    try:
        firsts = []
        for name, source, key in (
            ("pairs", pairs, "pair_id"),
            ("origins", origins, "pair_id, origin_kind, origin_id"),
        ):
            rows = f"(SELECT * FROM {source} WHERE {where})"
            repeats = con.execute(f"SELECT count(*) - count(DISTINCT ({key})) FROM {rows}").fetchall()
            if repeats[0][0] == 0:  # the common case: read as it is, nothing copied
                firsts.append(f"(SELECT * EXCLUDE (_order) FROM {rows})")
                continue
            # in `_order`: the window's partitions would otherwise set the order rows are stored in,
            # which an export keeps (pairs.rowid)
            con.execute(f"""CREATE OR REPLACE TEMP TABLE _first_{name} AS
                SELECT * EXCLUDE (_order) FROM (
                    SELECT * FROM {rows} QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY _order) = 1)
                ORDER BY _order""")
            firsts.append(f"_first_{name}")
        distinct = con.execute(f"SELECT count(*) FROM {firsts[0]}").fetchall()[0][0]
        _insert_new(store, firsts[0], firsts[1], distinct, result)
    finally:
        for table in ("_first_pairs", "_first_origins"):
            with contextlib.suppress(duckdb.Error):  # an aborted transaction: its owner rolls it back
                con.execute(f"DROP TABLE IF EXISTS {table}")
    return result


_stage_numbers = itertools.count()


class PairStage:
    """Pairs written batch by batch into two TEMP tables of the store's connection (`add`, in the
    caller's transaction: a streaming miner commits each batch with its verdicts), and into `pairs` and
    `pair_origins` by `commit`, in one transaction: a run's pairs land whole or not at all. None of it
    has to stay in memory: DuckDB spills a temp table under its memory limit, the two tables have no
    index (migration m010), and the commit inserts a chunk of the stage at a time (COMMIT_CHUNK_ROWS).
    `close` drops the stage's tables (a connection's temp tables also go when it closes).

        with PairStage(store, miner="self_repair", miner_version="1") as stage:
            for batch in ...:
                with store.transaction():
                    counts = stage.add(pairs)      # drops and ids of this batch's pairs (AddResult)
            added = stage.commit()                 # new pairs and origins, duplicates across batches
    """

    def __init__(self, store: Store, *, miner: str, miner_version: str) -> None:
        self.store, self.miner, self.miner_version = store, miner, miner_version
        number = next(_stage_numbers)
        self.pairs, self.origins = f"_staged_pairs_{number}", f"_staged_origins_{number}"
        self.rows = 0  # pair rows staged: the next batch's `_order` starts here
        con = store.con
        with store.transaction():
            for table, schema in ((self.pairs, PAIR_TABLE_SCHEMA), (self.origins, ORIGIN_TABLE_SCHEMA)):
                with store.registered("_stage_columns", schema.empty_table()):
                    con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM _stage_columns")

    def __enter__(self) -> PairStage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, pairs: Iterable[Pair]) -> AddResult:
        """Stage the pairs (checked and keyed as add_pairs does); returns their drops and ids."""
        result, pair_tbl, origin_tbl = pair_rows(pairs, miner=self.miner, miner_version=self.miner_version)
        if pair_tbl.num_rows == 0 and origin_tbl.num_rows == 0:
            return result
        first = self.rows
        order = {pid: first + i for i, pid in enumerate(pair_tbl.column("pair_id").to_pylist())}
        pair_tbl = pair_tbl.append_column(
            "_order", pa.array(range(first, first + pair_tbl.num_rows), pa.int64())
        )
        origin_order = pa.array(
            [order.get(pid, first) for pid in origin_tbl.column("pair_id").to_pylist()], pa.int64()
        )
        origin_tbl = origin_tbl.append_column("_order", origin_order)
        with (
            self.store.registered("_stage_pairs", pair_tbl),
            self.store.registered("_stage_origins", origin_tbl),
        ):
            self.store.con.execute(f"INSERT INTO {self.pairs} SELECT * FROM _stage_pairs")
            self.store.con.execute(f"INSERT INTO {self.origins} SELECT * FROM _stage_origins")
        self.rows += pair_tbl.num_rows
        return result

    def commit(self) -> AddResult:
        """Every staged pair and origin not stored yet into `pairs` and `pair_origins` (the first of each
        key by the order staged), in one transaction (joins an open one); a pair_id staged twice or
        already stored counts as a duplicate."""
        with self.store.transaction():
            return _add_first_of_each(self.store, self.pairs, self.origins, self.rows)

    def close(self) -> None:
        con = self.store.con
        for table in (self.pairs, self.origins):
            with contextlib.suppress(duckdb.Error):  # an aborted transaction is rolled back by its owner
                con.execute(f"DROP TABLE IF EXISTS {table}")


class HoldsPairs(Protocol):
    """What write_pairs asks of a holdout filter (pairstore.holdout.sets.HoldoutFilter is one): the
    writer sits below the holdout room and takes the filter as this shape."""

    def holds_pair(self, pair: Pair) -> bool: ...


@dataclass
class PairsResult:
    """What one run that writes pairs (a miner, a dataset import) did: new pairs, drops by reason, and
    tallies of what it looked at. `producer` and `version` are recorded on every pair it writes
    (pairs.miner, pairs.miner_version, pair_origins.miner)."""

    miner: str
    version: str
    kept: int = 0  # new pairs written
    new_origins: int = 0  # origins written (new and known pairs)
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    stats: Counter = field(default_factory=Counter)  # what was looked at: battles, generations, rows, ...
    # ids of every pair produced (kept by the checks, new or stored already), in order; a run that
    # streams its input sets keep_ids False and keeps only their number and digest, so its memory does
    # not grow with the pairs it produces
    pair_ids: list[str] = field(default_factory=list)
    keep_ids: bool = True
    produced: int = 0  # pairs produced
    by_source: Counter = field(default_factory=Counter)  # produced pairs per source
    # seconds: verify_s / scan_s inside the verifier / scanner (summed over worker processes),
    # judge_wall_s judging on the clock, write_s writing verdicts, pairs and origins
    timings: dict[str, float] = field(default_factory=dict)
    _ids: Any = field(default_factory=xxhash.xxh3_128, init=False, repr=False, compare=False)

    @property
    def ids_digest(self) -> str:
        """xxh3-128 of the produced pair ids in order, one line each: equal runs give equal digests."""
        return self._ids.hexdigest()

    def as_dict(self) -> dict:
        return {
            "miner": self.miner,
            "version": self.version,
            "kept": self.kept,
            "new_origins": self.new_origins,
            "dropped": dict(sorted(self.dropped.items())),
            "stats": dict(sorted(self.stats.items())),
            "by_source": dict(sorted(self.by_source.items())),
            "pairs": self.produced,
        }


R = TypeVar("R", bound=PairsResult)


def write_pairs(store: Store, result: R, pairs: Iterable[Pair], holdout: HoldsPairs | None = None) -> R:
    """Write `pairs` through add_pairs and fold its counts into `result`.

    With a holdout filter, a pair whose prompt's match key (or task key) is held out is dropped as
    'holdout' here too: a last check for prompts that reach a producer by another road than their item id.
    """
    kept = _not_held_out(result, pairs, holdout)
    added = add_pairs(store, kept, miner=result.miner, miner_version=result.version)
    _count_produced(result, added, kept)
    result.kept += added.added
    result.new_origins += added.new_origins
    return result


def stage_pairs(stage: PairStage, result: R, pairs: Iterable[Pair], holdout: HoldsPairs | None = None) -> R:
    """write_pairs for a run that writes its pairs at the end: `pairs` staged (stage.add), their drops and
    ids folded into `result`; commit_staged_pairs writes them and counts what was new."""
    kept = _not_held_out(result, pairs, holdout)
    _count_produced(result, stage.add(kept), kept)
    return result


def commit_staged_pairs(stage: PairStage, result: R) -> R:
    """The staged pairs written (stage.commit), the new pairs and origins and the duplicates counted."""
    written = stage.commit()
    result.kept += written.added
    result.new_origins += written.new_origins
    result.dropped.update(written.dropped)  # staged twice, or stored already: 'duplicate'
    return result


def _not_held_out(result: PairsResult, pairs: Iterable[Pair], holdout: HoldsPairs | None) -> list[Pair]:
    kept = []
    for p in pairs:
        if holdout is not None and holdout.holds_pair(p):
            result.dropped["holdout"] += 1
            continue
        kept.append(p)
    return kept


def _count_produced(result: PairsResult, counts: AddResult, kept: list[Pair]) -> None:
    """The drops before writing, the ids of the pairs produced and their sources."""
    result.dropped.update(counts.dropped)
    result.produced += len(counts.pair_ids)
    for pid in counts.pair_ids:
        result._ids.update(f"{pid}\n".encode())
    if result.keep_ids:
        result.pair_ids.extend(counts.pair_ids)
    ids = set(counts.pair_ids)
    for p in kept:
        if p.pair_id in ids:
            result.by_source[p.source] += 1
