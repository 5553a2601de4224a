"""Ingest of `battles` (this module writes it): native JSONL/parquet battles and the public Arena forms.

pairstore ingest battles battles.jsonl
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.ingest.arena import battle_fields, check_options, format_hint, other_pair, own_side, parse_row
from pairstore.ingest.base import (
    VOTES,
    IngestResult,
    StagedRows,
    dedup_in_file,
    insert_new,
    log_ingest,
    progress_bar,
    records_in,
)
from pairstore.ingest.bulk import (
    FlaggedRecord,
    NotVectorized,
    bounded_memory,
    first_flagged,
    first_record_error,
    flag_choice,
    flag_text,
    iter_jsonl_batches,
    one_element_lists,
    user_messages,
)
from pairstore.ingest.dataset_files import dataset_files, files_sha256, read_files
from pairstore.ingest.fastchat import log_files as fastchat_log_files
from pairstore.ingest.records import Fields
from pairstore.keys import content_id, content_ids, match_key, match_keys_of_texts
from pairstore.progress import as_progress
from pairstore.tables.generations import MSG_TYPE
from pairstore.tables.pairs import add_pairs

if TYPE_CHECKING:
    from pairstore.store.store import Store

_BATTLE_SCHEMA = pa.schema(
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
        ("match_key", pa.string()),
        ("record_hash", pa.string()),
        ("source_file", pa.string()),
        ("_line", pa.int64()),
        ("_file", pa.string()),
    ]
)


def parse_battle(rec: dict, path, line: int) -> dict:
    """Validate one battle record; return the row for `battles` (without source_file)."""
    f = Fields(rec, path, line)
    battle_id = f.str("battle_id", allow_int=True)
    vote = f.choice("vote", VOTES)
    system = f.str("system", required=False)
    if f.has("turns"):
        if f.has("prompt") or f.has("own_answer") or f.has("opponent_answer"):
            raise f.error("turns", "give either turns or prompt/own_answer/opponent_answer, not both")
        turns = rec["turns"]
        if not isinstance(turns, list) or not turns:
            raise f.error("turns", "expected a non-empty list of {user, own, opponent}")
        users: list[str] = []
        own: list[str] = []
        opp: list[str] = []
        for i, t in enumerate(turns):
            if not isinstance(t, dict):
                raise f.error(f"turns[{i}]", "expected an object with user, own, opponent")
            for name, dest in (("user", users), ("own", own), ("opponent", opp)):
                v = t.get(name)
                if not isinstance(v, str):
                    raise f.error(
                        f"turns[{i}].{name}",
                        "missing field" if v is None else f"expected a string, got {type(v).__name__}",
                    )
                dest.append(v)
        prompt = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": u} for u in users
        ]
    else:
        prompt = f.messages("prompt")
        roles = [m["role"] for m in prompt]
        if "assistant" in roles:
            raise f.error(
                "prompt", "assistant messages in a battle prompt: give a multi-turn battle as turns"
            )
        if roles.count("user") != 1:
            raise f.error("prompt", "a single-turn battle prompt needs exactly one user message")
        if system and "system" not in roles:
            prompt = [{"role": "system", "content": system}] + prompt
        own = [f.str("own_answer", allow_empty=True)]
        opp = [f.str("opponent_answer", allow_empty=True)]
    row = _battle_row(
        battle_id,
        prompt,
        own,
        opp,
        vote,
        f.str("category", required=False),
        f.str("own_model", required=False),
        f.str("opponent_model", required=False),
        f.timestamp("voted_at"),
    )
    row.update(_battle_extras(f))
    return _keyed_battle(row, path, line)


def _battle_row(battle_id, prompt, own, opp, vote, category, own_model, opponent_model, voted_at) -> dict:
    """The columns of a native battle, from checked values (both ingest paths build rows here)."""
    return {
        "battle_id": battle_id,
        "prompt": prompt,
        "own_answers": own,
        "opponent_answers": opp,
        "n_turns": len(own),
        "vote": vote,
        "category": category,
        "own_model": own_model,
        "opponent_model": opponent_model,
        "voted_at": voted_at,
    }


def _battle_extras(f: Fields) -> dict:
    """Who voted and how the battle was shown (annotator, own_position, decoding, origin, shown_at): only
    the fields given, so the record hash of a file without them stays what it was."""
    extras: dict[str, Any] = {}
    for name in ("annotator", "origin"):
        if f.has(name):
            extras[name] = f.str(name)
    if f.has("own_position"):
        extras["own_position"] = f.choice("own_position", ("a", "b"))
    if f.has("decoding"):
        decoding = f.rec["decoding"]
        if not isinstance(decoding, dict):
            raise f.error("decoding", "expected an object of decoding settings per model")
        extras["decoding"] = json.dumps(decoding, sort_keys=True, ensure_ascii=False)
    if f.has("shown_at"):
        extras["shown_at"] = f.timestamp("shown_at")
    return extras


# json.dumps(row, sort_keys=True, default=str, ensure_ascii=False), without building an encoder per row.
_RECORD_JSON = json.JSONEncoder(sort_keys=True, default=str, ensure_ascii=False).encode
# What that encoder writes for one string, and for None.
_json_str = encode_basestring
_NULL = "null"


def _keyed_battle(row: dict, path, line: int, key: str | None = None) -> dict:
    """The row with its match key (`key` where the caller computed it in a batch) and record hash (of every
    column given: a native row has no Arena columns, so its hash is what it always was)."""
    row["match_key"] = match_key(row["prompt"]) if key is None else key
    row["record_hash"] = content_id(_RECORD_JSON(row))
    row["_line"], row["_file"] = line, str(path)
    return row


def _native_rows(records, result: IngestResult) -> list[dict]:
    """Battle rows from native records (parse_battle); a record that fails with the columns of an Arena
    form gets the hint naming that --format."""
    rows = []
    for r in records:
        result.read += 1
        try:
            row = parse_battle(r.record, r.path, r.line)
        except BadInput as e:
            hint = format_hint(r.record) if isinstance(r.record, dict) else None
            if hint:
                raise BadInput(e.reason + hint, path=e.path, line=e.line, field=e.field) from None
            raise
        row["source_file"] = r.source
        rows.append(row)
    return rows


# The columns the vectorized path reads: a single-turn battle with a string prompt, the common form. A
# record with any field of _PER_RECORD (several turns, a system message, who voted and how it was
# shown) sends the file down the per-record path.
_BULK_SCHEMA = pa.schema(
    [
        ("battle_id", pa.string()),
        ("vote", pa.string()),
        ("prompt", pa.string()),
        ("own_answer", pa.string()),
        ("opponent_answer", pa.string()),
        ("category", pa.string()),
        ("own_model", pa.string()),
        ("opponent_model", pa.string()),
        ("voted_at", pa.string()),
    ]
)
_PER_RECORD = ("turns", "system", "annotator", "origin", "own_position", "decoding", "shown_at")


def _flags(table: pa.Table, times: dict) -> list:
    """The vectorized versions of parse_battle's checks (pairstore.ingest.bulk): a flagged row is left
    to parse_battle. `times` gets each distinct voted_at text parsed once, None where it is refused."""
    for text in table.column("voted_at").unique().to_pylist():
        if text is not None and text not in times:
            try:
                times[text] = Fields({"voted_at": text}, "", 0).timestamp("voted_at")
            except BadInput:
                times[text] = None
    bad_times = [t for t, v in times.items() if v is None]
    col = table.column
    return [
        flag_text(col("battle_id")),
        flag_choice(col("vote"), VOTES),
        pc.is_null(col("prompt")),
        flag_text(col("own_answer"), allow_empty=True),
        flag_text(col("opponent_answer"), allow_empty=True),
        *(flag_text(col(n), required=False) for n in ("category", "own_model", "opponent_model")),
        pc.fill_null(pc.is_in(col("voted_at"), pa.array(bad_times, pa.string())), False),
    ]


def _record_jsons(bid, category, key, opponent, opponent_model, own, own_model, prompt, vote, voted_at):
    """json.dumps(row, sort_keys=True, default=str, ensure_ascii=False) of each single-turn row the bulk path
    makes (_battle_row with a one-message prompt, and match_key), written out directly: the JSON of every
    column once (`voted_at` as JSON already), the keys in sorted order.
    tests/ingest/test_ingest_bulk_battles.py compares it with json.dumps of the per-record row."""
    cols = [[_NULL if v is None else _json_str(v) for v in c] for c in (bid, category, key, opponent)]
    cols += [[_NULL if v is None else _json_str(v) for v in c] for c in (opponent_model, own, own_model)]
    cols += [[_json_str(v) for v in prompt], [_json_str(v) for v in vote], voted_at]
    return [
        f'{{"battle_id": {b}, "category": {c}, "match_key": {k}, "n_turns": 1, "opponent_answers": [{o}], '
        f'"opponent_model": {om}, "own_answers": [{w}], "own_model": {wm}, '
        f'"prompt": [{{"content": {p}, "role": "user"}}], "vote": {v}, "voted_at": {t}}}'
        for b, c, k, o, om, w, wm, p, v, t in zip(*cols)
    ]


def _bulk_rows(table: pa.Table, times: dict, file, source: str, before: int) -> pa.Table:
    """The staged rows (_BATTLE_SCHEMA) of one checked batch, built as columns: what _battle_row and
    _keyed_battle make of each record, without a dict per row. `before`: records of the file before it."""
    n = table.num_rows
    col = {name: table.column(name).combine_chunks() for name in _BULK_SCHEMA.names}
    py = {name: col[name].to_pylist() for name in _BULK_SCHEMA.names}
    keys = match_keys_of_texts(py["prompt"])
    voted = [None if v is None else times[v] for v in py["voted_at"]]
    voted_json = {v: _json_str(str(times[v])) for v in set(py["voted_at"]) if v is not None}
    jsons = _record_jsons(
        py["battle_id"],
        py["category"],
        keys,
        py["opponent_answer"],
        py["opponent_model"],
        py["own_answer"],
        py["own_model"],
        py["prompt"],
        py["vote"],
        [_NULL if v is None else voted_json[v] for v in py["voted_at"]],
    )
    given = {
        "battle_id": col["battle_id"],
        "prompt": user_messages(col["prompt"]),
        "own_answers": one_element_lists(col["own_answer"]),
        "opponent_answers": one_element_lists(col["opponent_answer"]),
        "n_turns": pa.array([1] * n, pa.int32()),
        "vote": col["vote"],
        "category": col["category"],
        "own_model": col["own_model"],
        "opponent_model": col["opponent_model"],
        "voted_at": pa.array(voted, pa.timestamp("us")),
        "match_key": pa.array(keys, pa.string()),
        "record_hash": pa.array(content_ids(jsons), pa.string()),
        "source_file": pa.array([source] * n, pa.string()),
        "_line": pa.array(range(before + 1, before + n + 1), pa.int64()),
        "_file": pa.array([str(file)] * n, pa.string()),
    }
    return pa.table([given.get(f.name, pa.nulls(n, f.type)) for f in _BATTLE_SCHEMA], schema=_BATTLE_SCHEMA)


def _ingest_vectorized(store: Store, path, files, result: IngestResult, progress) -> bool:
    """A native JSONL file read in Arrow batches, checked with Arrow compute, each batch's rows keyed and
    staged in DuckDB (pairstore.ingest.base.StagedRows), then deduplicated and inserted in SQL with the
    ingests log, in one transaction. False (nothing written) when the file, or a record the checks
    leave to parse_battle, takes the per-record path; a flagged record that parse_battle refuses
    raises its error here, naming its line and field."""
    if len(files) != 1:
        return False
    progress = as_progress(progress)
    file = files[0]
    staged = StagedRows(store, "battles", ["battle_id"], _BATTLE_SCHEMA, "record_hash", "battle_id", file)
    times: dict = {}
    source = Path(file).name
    read = 0
    try:
        with bounded_memory(store.con), store.transaction():
            lines = records_in(file)  # the file's lines: a JSONL file reaches the loop only
            with progress.stage("ingest battles: read", total=lines, unit="records") as stage:
                for table in iter_jsonl_batches(file, _BULK_SCHEMA, refuse=_PER_RECORD):
                    hit = first_flagged(*_flags(table, times))
                    if hit is not None:
                        raise FlaggedRecord(read + hit)
                    batch = _bulk_rows(table, times, file, source, read)
                    staged.add_table(batch)
                    read += batch.num_rows
                    stage.advance(batch.num_rows)
            if not read or read != lines:
                raise NotVectorized("blank lines: row numbers would not be line numbers")
            with progress.stage("ingest battles: insert", total=read, unit="records") as stage:
                added, repeated = staged.insert("i.record_hash <> t.record_hash")
                stage.advance(read)
            result.read, result.added = read, added
            if repeated:
                result.skipped["already present"] = repeated
            log_ingest(store, path, result.kind, read, added, sha256=files_sha256(path, files))
    except FlaggedRecord as flagged:
        staged.close()
        first_record_error(
            read_files(path, files), flagged.index, lambda r: _native_rows([r], IngestResult("", ""))
        )
        return False
    except NotVectorized:
        staged.close()
        return False
    return True


def _store_battles(store: Store, rows: list[dict], result: IngestResult, path) -> None:
    """The one write of battle rows, whatever read them (a file in any form, the Arena page's votes): a
    battle_id twice in the input with other content, or known with other content, is refused naming its
    line; the same content again is counted 'already present'. Call inside the ingest's transaction."""
    rows, dup = dedup_in_file(rows, lambda r: r["battle_id"], "record_hash", "battle_id", path)
    added, same = insert_new(
        store,
        "battles",
        ["battle_id"],
        rows,
        _BATTLE_SCHEMA,
        "i.record_hash <> t.record_hash",
        "battle_id",
        path,
    )
    result.added = added
    if same + dup:
        result.skipped["already present"] = same + dup


def _arena_rows(store: Store, records, result: IngestResult, fmt: str, own: set[str], others: str):
    """Battle rows and `arena` pairs from Arena records (pairstore.ingest.arena); every
    row not kept is counted."""
    holdout = HoldoutFilter.load(store) if others == "pairs" else None
    rows, pairs = [], []
    for r in records:
        result.read += 1
        battle = parse_row(fmt, r.record, r.path, r.line)
        if isinstance(battle, str):  # a turn the platform could not give: the reason
            result.skipped[battle] += 1
            continue
        side = own_side(battle, own)
        if side == "both":
            result.skipped["own model on both sides"] += 1
        elif side is not None:
            fields = battle_fields(battle, side)
            if fmt == "fastchat-log":  # the log says which side was shown left (A)
                fields.update(own_position=side, origin="fastchat-log")
            row = _keyed_battle(fields, r.path, r.line)
            row["source_file"] = r.source
            rows.append(row)
        elif others == "skip":
            result.skipped["no own model"] += 1
        else:
            pair = other_pair(battle)
            reason = (
                pair
                if isinstance(pair, str)
                else "holdout"
                if holdout is not None and holdout.holds_pair(pair)
                else None
            )
            if reason:
                result.skipped[f"others: {reason}"] += 1
            else:
                pairs.append(pair)
    return rows, pairs


def ingest_battles(
    store: Store, path, *, fmt: str = "native", own_models=(), others: str = "skip", progress: bool = False
) -> IngestResult:
    """Battles from a file, a Hub folder or a save_to_disk folder (pairstore.ingest.dataset_files): native
    records (parse_battle), or Chatbot Arena rows (`fmt` arena or arena55k, pairstore.ingest.arena) read from
    the side of `own_models`. Arena battles no own model plays are counted ('no own model'), or with
    others="pairs" stored as `arena` pairs, in the same transaction."""
    if fmt == "native":
        if own_models or others != "skip":
            raise BadInput(
                "--own-model and --others go with --format arena, arena55k or fastchat-log", field="own-model"
            )
    else:
        own = check_options(fmt, own_models, others)
    files = fastchat_log_files(path) if fmt == "fastchat-log" else dataset_files(path, split="train")
    records = progress_bar(read_files(path, files), progress, "battles", path=path)
    result = IngestResult("battles" if fmt == "native" else f"battles:{fmt}", str(path))
    if fmt == "native":
        if _ingest_vectorized(store, path, files, result, progress):
            return result
        rows, pairs = _native_rows(records, result), []
    else:
        rows, pairs = _arena_rows(store, records, result, fmt, own, others)
    with store.transaction():
        _store_battles(store, rows, result, path)
        if others == "pairs":
            got = add_pairs(store, pairs, miner="ingest-arena", miner_version="1")
            result.pairs = got.added
            result.skipped.update({f"others: {k}": v for k, v in got.dropped.items()})
        log_ingest(store, path, result.kind, result.read, result.added, sha256=files_sha256(path, files))
    return result


def add_battle_records(store, records: list[dict], *, source: str) -> IngestResult:
    """Native battle records made in this process (the Arena page's votes), through the same checks as a
    file's lines (parse_battle) and written in one transaction; `source` names where they came from (the
    line of a record is its index). A known battle_id with the same content is skipped ('already
    present'), with other content refused (BadInput)."""
    result = IngestResult("battles", source)
    rows = []
    for line, rec in enumerate(records, start=1):
        result.read += 1
        row = parse_battle(rec, source, line)
        row["source_file"] = source
        rows.append(row)
    with store.transaction():
        _store_battles(store, rows, result, source)
    return result


# ---------------------------------------------------------------------------
# problems (GSM8K / MATH train splits)
# ---------------------------------------------------------------------------
