"""Ingest of `battles` (this module writes it): battle records in every declared battle format.

    pairstore ingest battles battles.jsonl
    pairstore ingest battles chatbot_arena_conversations/ --format arena --own-model vicuna-13b

The formats are declared in pairstore.ingest.formats (`native`, `arena`, `arena55k`, `fastchat-log`, ...).
A columns format (native records) is read into checked Arrow batches (pairstore.ingest.batches) and its
rows built a batch at a time; a records format (the Arena's public forms) reads each record into an
ArenaBattle (pairstore.ingest.arena), mapped here from the side of the own model. Either way the rows
are keyed here (match key, record hash: pairstore.ingest.keyed), staged in DuckDB and inserted in one
transaction with the ingests log; a battle_id twice with other content, or known with other content,
names its file and line.

A battle has one identity whatever format brought it (`BATTLE_IDENTITY`: its prompt and the two models
with their answers, sides in either order), so a battle ingested from two forms counts once.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.arena import ArenaBattle, BattleRow, battle_fields, check_options, other_pair, own_side
from pairstore.ingest.base import PLACE, IngestResult, StagedRows, place_columns, records_in
from pairstore.ingest.batches import Batch, read_columns, record_batch
from pairstore.ingest.dataset_files import dataset_files, files_sha256, read_files
from pairstore.ingest.declare import Format, Unread, counted, did_you_mean
from pairstore.ingest.formats import formats_of, get_format
from pairstore.ingest.keyed import prompt_match_keys, record_jsons
from pairstore.ingest.kinds import MSG_TYPE
from pairstore.ingest.records import Fields, read_records
from pairstore.keys import content_ids
from pairstore.progress import as_progress
from pairstore.store.store import bounded_memory
from pairstore.tables.ingests import log_ingest
from pairstore.tables.pairs import Pair, add_pairs

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.progress import Progress
    from pairstore.store.store import Store

VOTES = ("win", "loss", "tie", "both_bad")

# What a battle format's reading gives: the native fields, checked, in the stored columns' shape.
NATIVE = pa.schema(
    [
        ("battle_id", pa.string()),
        ("vote", pa.string()),
        ("prompt", MSG_TYPE),
        ("own_answers", pa.list_(pa.string())),
        ("opponent_answers", pa.list_(pa.string())),
        ("category", pa.string()),
        ("own_model", pa.string()),
        ("opponent_model", pa.string()),
        ("voted_at", pa.timestamp("us")),
        ("annotator", pa.string()),
        ("origin", pa.string()),
        ("own_position", pa.string()),
        ("decoding", pa.string()),
        ("shown_at", pa.timestamp("us")),
        ("_row", pa.int64()),
    ]
)
_ROW = pa.schema(
    [
        ("battle_id", pa.string()),
        ("prompt", MSG_TYPE),
        ("own_answers", pa.list_(pa.string())),
        ("opponent_answers", pa.list_(pa.string())),
        ("n_turns", pa.int32()),
        ("vote", pa.string()),
        ("category", pa.string()),
        ("own_model", pa.string()),
        ("opponent_model", pa.string()),
        ("voted_at", pa.timestamp("us")),
        ("language", pa.string()),
        ("flagged", pa.bool_()),
        ("anonymous", pa.bool_()),
        ("annotator", pa.string()),
        ("own_position", pa.string()),
        ("decoding", pa.string()),
        ("origin", pa.string()),
        ("shown_at", pa.timestamp("us")),
    ]
)
_STAGED = pa.schema(
    list(_ROW)
    + [("match_key", pa.string()), ("record_hash", pa.string()), ("source_file", pa.string())]
    + PLACE
)
# The record hash is the content id of the row's JSON: these keys always (a native row's, and the Arena
# columns for a battle from an Arena form), the extras only where given, so a row keeps the hash it had
# before a column was added.
_NATIVE_KEYS = (
    "battle_id",
    "category",
    "match_key",
    "n_turns",
    "opponent_answers",
    "opponent_model",
    "own_answers",
    "own_model",
    "prompt",
    "vote",
    "voted_at",
)
_ARENA_KEYS = (*_NATIVE_KEYS, "anonymous", "flagged", "language")
_EXTRAS = ("annotator", "decoding", "origin", "own_position", "shown_at")

# One battle, whatever brought it (the Arena's two public forms give one battle two ids): its user turns
# and its two sides, each a model with its answers, in either order. audits.ratings counts a battle once
# by it.
_SIDE = "to_json({{'m': {0}_model, 'a': {0}_answers}})::VARCHAR"
BATTLE_IDENTITY = (
    "md5(to_json([list_transform(list_filter(prompt, lambda m: m.role = 'user'), lambda m: m.content)"
    f"::VARCHAR, least({_SIDE.format('own')}, {_SIDE.format('opponent')}), "
    f"greatest({_SIDE.format('own')}, {_SIDE.format('opponent')})])::VARCHAR)"
)
# The clause that keeps one row of each battle (the one whose position is known first).
ONE_ROW_PER_BATTLE = (
    f"QUALIFY row_number() OVER (PARTITION BY {BATTLE_IDENTITY} "
    "ORDER BY own_position NULLS LAST, battle_id) = 1"
)


def _keyed(rows: pa.Table, keys: tuple[str, ...], batch: Batch, source: str, seq: int) -> pa.Table:
    """The staged rows of `rows` (_ROW's columns, one for each of `batch`'s rows): match key, record hash
    and where each came from."""
    n = rows.num_rows
    rows = rows.append_column("match_key", pa.array(prompt_match_keys(rows.column("prompt")), pa.string()))
    hashes = content_ids(record_jsons(rows, always=keys, optional=_EXTRAS))
    place = place_columns(n, batch.path, batch.table.column("_row").combine_chunks(), batch.lines, seq)
    given = {
        **{name: rows.column(name) for name in rows.column_names},
        "record_hash": pa.array(hashes, pa.string()),
        "source_file": pa.array([source] * n, pa.string()),
        **place,
    }
    return pa.table([given[f.name] for f in _STAGED], schema=_STAGED)


def native_rows(batch: Batch) -> pa.Table:
    """_ROW's columns of a batch of native battles."""
    t, n = batch.table, batch.table.num_rows
    given = {name: t.column(name) for name in NATIVE.names if name != "_row"}
    given["n_turns"] = pc.cast(pc.list_value_length(t.column("own_answers")), pa.int32())
    return pa.table([given.get(f.name, pa.nulls(n, f.type)) for f in _ROW], schema=_ROW)


def format_hint(record: dict) -> str | None:
    """'; its columns ... are those of --format X' when a record given as native battles has the columns
    of another battle format (a wrong --format guess), else None."""
    keys = set(record)
    for fmt in formats_of("battles"):
        if fmt.name != "native" and fmt.signature and set(fmt.signature) <= keys:
            return (
                f"; its columns ({', '.join(sorted(fmt.signature))}) are those of --format {fmt.name}: "
                f"pairstore ingest battles FILE --format {fmt.name} --own-model NAME"
            )
    return None


def _hinted(e: BadInput, path: StrPath, number: int | None) -> BadInput:
    """`e` with the wrong-format hint, when the record at `number` has another format's columns."""
    if number is None:
        return e
    try:
        record = next((rec for line, rec in read_records(path) if line == number), None)
    except BadInput:
        return e
    hint = format_hint(record) if isinstance(record, dict) else None
    if not hint:
        return e
    return BadInput(e.reason + hint, path=e.path, line=e.line, field=e.field)


class _Staging:
    """The battles of one ingest, staged file by file, then inserted."""

    def __init__(self, store: Store, path: StrPath) -> None:
        self.store, self.path = store, path
        self.staged = StagedRows(store, "battles", ["battle_id"], _STAGED, "record_hash", "battle_id", path)
        self.seq = 0

    def add(self, rows: pa.Table, keys: tuple[str, ...], batch: Batch, source: str) -> None:
        self.staged.add_table(_keyed(rows, keys, batch, source, self.seq))
        self.seq += rows.num_rows

    def insert(self, result: IngestResult) -> None:
        added, repeated = self.staged.insert("i.record_hash <> t.record_hash")
        result.added = added
        if repeated:
            result.skipped["already present"] = repeated


def _native(
    store: Store, fmt: Format, path: StrPath, files: list[Path], result: IngestResult, progress: Progress
) -> None:
    staging = _Staging(store, path)
    with progress.stage("ingest battles", total=records_in(path), unit="records") as stage:
        for file in files:
            source = file.name if Path(file) == Path(path) else Path(file).relative_to(path).as_posix()
            try:
                for batch in read_columns(fmt, NATIVE, file):
                    staging.add(native_rows(batch), _NATIVE_KEYS, batch, source)
                    result.read += batch.table.num_rows
                    stage.advance(batch.table.num_rows)
            except BadInput as e:
                raise _hinted(e, file, e.line) from None
    with progress.stage("ingest battles: insert", total=result.read, unit="records"):
        staging.insert(result)


def _arena(
    store: Store,
    fmt: Format,
    path: StrPath,
    files: list[Path],
    result: IngestResult,
    own: set[str],
    others: str,
) -> list[Pair]:
    """Battles of a records format read from the side of `own` (staged), and `arena` pairs of the battles
    no own model plays (returned); every record not kept is counted."""
    # (imported here: the gate's matcher is a few milliseconds of imports that native battles never use)
    from pairstore.holdout.sets import HoldoutFilter

    holdout = HoldoutFilter.load(store) if others == "pairs" else None
    unread = Unread(fmt)
    staging = _Staging(store, path)
    pairs: list[Pair] = []
    seen: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    pending: list[tuple[BattleRow, int, int]] = []
    current: tuple[Path, str] = (Path(path), "")

    def flush() -> None:
        nonlocal pending
        if pending:
            rows = pa.Table.from_pylist([r for r, _, _ in pending], schema=_ROW)
            where = pa.table({"_row": pa.array([i for _, i, _ in pending], pa.int64())})
            staging.add(
                rows, _ARENA_KEYS, Batch(where, current[0], [line for _, _, line in pending]), current[1]
            )
            pending = []

    index = 0
    last_file = None
    for r in read_files(path, files):
        if r.path != last_file:
            flush()
            last_file, index = r.path, 0
            current = (r.path, r.source)
        result.read += 1
        battle = fmt.parse(Fields(r.record, r.path, r.line))  # type: ignore[misc]  # a records format
        index += 1
        if isinstance(battle, str):  # a turn the platform could not give, a line that is not a vote
            result.skipped[battle] += 1
            continue
        unread.check(r.record, r.path, r.line)
        assert isinstance(battle, ArenaBattle)
        seen.update(battle.models.values())
        side = own_side(battle, own)
        matched.update(m for m in battle.models.values() if m in own)
        if side == "both":
            result.skipped["own model on both sides"] += 1
        elif side is not None:
            pending.append((battle_fields(battle, side), index - 1, r.line))
            if len(pending) >= 8192:
                flush()
        elif others == "skip":
            result.skipped["no own model"] += 1
        else:
            pair = other_pair(battle)
            if isinstance(pair, str):  # a tie or both-bad: no chosen answer
                result.skipped[f"others: {pair}"] += 1
            elif holdout is not None and holdout.holds_pair(pair):
                result.skipped["others: holdout"] += 1
            else:
                pairs.append(pair)
    flush()
    _check_own_models(own, seen, matched, others, path)
    staging.insert(result)
    return pairs


def _check_own_models(
    own: set[str], seen: Counter[str], matched: Counter[str], others: str, path: StrPath
) -> None:
    """A name of --own-model that is in no battle: a typo (it is close to a name seen), or a filter that
    keeps nothing (no name matched and the battles of others are skipped) exits 2 naming what was seen."""
    if not seen:
        return
    for name in sorted(own - set(matched)):
        close = did_you_mean(name, seen)
        if close or (not matched and others == "skip"):
            raise BadInput(
                f"--own-model {name!r} plays in no battle (models seen: {counted(dict(seen))}){close}",
                path=str(path),
                field="own-model",
            )


def ingest_battles(
    store: Store,
    path: StrPath,
    *,
    fmt: str = "native",
    own_models: Iterable[str] = (),
    others: str = "skip",
    progress: Progress | bool = False,
) -> IngestResult:
    """Battles from a file, a Hub folder or a save_to_disk folder (pairstore.ingest.dataset_files) in any
    battle format (pairstore.ingest.formats). A records format (the Arena's forms) is read from the side
    of `own_models`: battles no own model plays are counted ('no own model'), or with others="pairs"
    stored as `arena` pairs, in the same transaction."""
    form = get_format("battles", fmt)
    if form.reads_columns:
        if own_models or others != "skip":
            names = [f.name for f in formats_of("battles") if not f.reads_columns]
            records = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
            raise BadInput(f"--own-model and --others go with --format {records}", field="own-model")
        own: set[str] = set()
    else:
        own = check_options(fmt, own_models, others)
    files = form.files(path) if form.files is not None else dataset_files(path, split="train")
    result = IngestResult("battles" if fmt == "native" else f"battles:{fmt}", str(path))
    stages = as_progress(progress)
    with bounded_memory(store.con), store.transaction():
        if form.reads_columns:
            _native(store, form, path, files, result, stages)
            pairs: list[Pair] = []
        else:
            with stages.stage(f"ingest battles:{fmt}", total=records_in(path), unit="records"):
                pairs = _arena(store, form, path, files, result, own, others)
        if others == "pairs":
            got = add_pairs(store, pairs, miner="ingest-arena", miner_version="1")
            result.pairs = got.added
            result.skipped.update({f"others: {k}": v for k, v in got.dropped.items()})
        log_ingest(store, path, result.kind, result.read, result.added, sha256=files_sha256(path, files))
    return result


def add_battle_records(store: Store, records: list[dict], *, source: str) -> IngestResult:
    """Native battle records made in this process (the Arena page's votes), through the same reading as a
    file's lines and written in one transaction; `source` names where they came from (the line of a
    record is its index). A known battle_id with the same content is skipped ('already present'), with
    other content refused (BadInput)."""
    result = IngestResult("battles", source)
    batch = record_batch(get_format("battles", "native"), NATIVE, records, source)
    result.read = len(records)
    with store.transaction():
        staging = _Staging(store, source)
        staging.add(native_rows(batch), _NATIVE_KEYS, batch, source)
        staging.insert(result)
    return result
