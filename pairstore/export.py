"""Export a round's mixture through the holdout gate; attach mixtures made elsewhere.

    pairstore export --round m11a --out mixtures/
    pairstore round attach m11a s2_pairs_lf1.parquet
    pairstore holdout exempt judge34 b0042 3f2a... --reason "answer rewritten from scratch"

Export, in order:

1. The mixture is planned in SQL: each `[[mix]]` block selects pairs by source
   and its `where` (run as a condition inside a SELECT over `pairs`), then a
   seeded `limit` (pairs ordered by xxh3-64 of "<seed>:<pair_id>", the first
   `limit` kept; more than there is = all, noted in the evidence), then
   `upsample` (integer copies; a fraction adds a partial copy of the pairs first
   in xxh3-64 of "<seed>:copy:<pair_id>" order).
2. The holdout gate (pairstore.matching) checks every distinct pair of the
   mixture against every active holdout member, eval item and benchmark
   reference. Any hit not exempted (holdout_exemptions) raises GateRefused
   (exit 3) listing the hits; nothing is written.
3. Rows are streamed to parquet in a fixed order (the trainer shuffles):
   blocks in recipe order; in a block, pairs in the store's order (pairs.rowid),
   copies of a pair adjacent (they compress to almost nothing). Files are
   written under a temporary name in the output folder and renamed; the writer
   options are fixed (zstd, row groups of ROW_GROUP_ROWS rows, no timestamps),
   so the same store and recipe give byte-identical files. The pair of every
   written row goes to `export_rows`.
4. NAME.training_evidence.json, then the rows of `exports` and `export_rows`.

The content hash (evidence "content_hash", exports.content_hash) is
keys.content_hash_rows over the rows' digests in file order, a row's digest
being the xxh3-128 (keys.xxh128) of its canonical JSON {"chosen": text,
"prompt": messages, "rejected": text or null} (row_json, rows_content_hash). It
is independent of the parquet writer and of the column layout, so an attached
file with the same rows hashes the same (content_hash_of_file).
"""

from __future__ import annotations

import json
import os
import queue
import re
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

import pairstore
from pairstore.errors import BadInput, GateRefused, NotFound
from pairstore.keys import canonical_messages, content_hash_rows, match_key, sha256_file, sha256_text, xxh128
from pairstore.matching import FUZZY_MIN_CHARS, FUZZY_THRESHOLD, GateResult, check_table, split_exempt
from pairstore.recipes import NAME_RE, Recipe, get_round

ROW_GROUP_ROWS = 32_768
# Rows (pairs x copies) fetched per query: bounds memory whatever the size of the store.
FETCH_ROWS = 16_384
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 1
HITS_SHOWN = 50
# DuckDB's buffer memory while exporting (it spills to disk beyond this): with the arrow chunks on the
# Python side the export stays well under 1.5 GB whatever the size of the store.
EXPORT_MEMORY_LIMIT = "512MB"

_MSG = pa.struct([("role", pa.string()), ("content", pa.string())])
DPO_SCHEMA = pa.schema([("prompt", pa.list_(_MSG)), ("chosen", pa.list_(_MSG)), ("rejected", pa.list_(_MSG)),
                        ("pair_id", pa.string()), ("source", pa.string()), ("family", pa.string())])
SFT_SCHEMA = pa.schema([("prompt", pa.list_(_MSG)), ("completion", pa.list_(_MSG)),
                        ("pair_id", pa.string()), ("source", pa.string()), ("family", pa.string())])
# Writer-dependent but fixed: these decide the bytes of the file.
_DICT_COLUMNS = ["source", "family", "prompt.list.element.role", "chosen.list.element.role",
                 "rejected.list.element.role", "completion.list.element.role"]
# Python's str.isspace() characters in the ASCII range: what normalize_for_match collapses.
_ASCII_WS_CODES = (9, 10, 11, 12, 13, 28, 29, 30, 31)


def ascii_match_text_sql(col: str) -> str:
    """SQL equal to keys.normalize_for_match for ASCII text (NFKC is the identity there and casefold is
    lower): whitespace runs collapsed to one space, trimmed. Most texts need only lower(); the split and
    join runs only where a quick scan finds a control whitespace, a double space or an edge space."""
    ws = " || ".join(f"chr({c})" for c in _ASCII_WS_CODES)
    collapse = (f"array_to_string(list_filter(string_split(translate(lower({col}), {ws}, "
                f"'{' ' * len(_ASCII_WS_CODES)}'), ' '), lambda w: w <> ''), ' ')")
    return (f"CASE WHEN regexp_matches({col}, '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f]|  |^ | $') "
            f"THEN {collapse} ELSE lower({col}) END")


# Nothing random or state-changing in a mixture condition: the same store must give the same rows.
_WHERE_FORBIDDEN = re.compile(
    r"\b(nextval|currval|setseed|random|uuid|gen_random_uuid|now|current_timestamp|current_date|"
    r"current_time|get_current_time|get_current_timestamp|today|transaction_timestamp)\b", re.I)


@dataclass
class BlockPlan:
    index: int
    source: str
    where: str | None
    limit: int | None
    upsample: float
    matched: int = 0        # pairs the source and condition select
    selected: int = 0       # after the seeded limit
    rows: int = 0           # after upsampling
    note: str | None = None

    def as_dict(self) -> dict:
        return {"source": self.source, "where": self.where, "limit": self.limit, "upsample": self.upsample,
                "matched": self.matched, "selected": self.selected, "rows": self.rows, "note": self.note}


@dataclass
class ExportResult:
    round: str
    out_dir: str
    files: dict = field(default_factory=dict)      # "dpo"/"sft" -> {"path", "sha256", "rows", "content_hash"}
    evidence_path: str = ""
    blocks: list = field(default_factory=list)
    rows_by_source: dict = field(default_factory=dict)
    gate: dict = field(default_factory=dict)
    export_ids: list = field(default_factory=list)


@dataclass
class AttachResult:
    round: str
    path: str
    sha256: str
    rows: int
    matched: int = 0            # rows that are pairs already in the store
    added: int = 0              # rows stored as new pairs
    dropped: dict = field(default_factory=dict)   # rows not stored, by reason (empty side, ...)
    export_id: str = ""
    content_hash: str = ""
    already: bool = False       # the same file was attached to this round before


# -- the system prompt ---------------------------------------------------------------

def resolve_system_prompt(store, recipe: Recipe, *, bundle=None, system_prompt_file=None) -> tuple[str | None, str]:
    """(system prompt or None, where it came from)."""
    sp = recipe.system_prompt
    if sp != "bundle":
        if system_prompt_file is not None or bundle is not None:
            raise BadInput(f"round {recipe.name!r} has {'no' if sp is None else 'its own literal'} system prompt; "
                           "--bundle and --system-prompt-file apply only to system_prompt = \"bundle\"",
                           field="system_prompt")
        return sp, ("none" if sp is None else "recipe")
    if system_prompt_file is not None:
        path = Path(system_prompt_file)
    elif bundle is not None:
        path = Path(bundle) / "system_prompt.txt"
    else:
        row = store.one("SELECT path FROM checkpoints WHERE name = ?", [recipe.parent])
        if row is None or not row[0]:
            raise BadInput(
                f"round {recipe.name!r} takes the system prompt of its parent bundle (system_prompt = \"bundle\") "
                f"but checkpoint {recipe.parent!r} has no registered path; pass --bundle DIR or "
                "--system-prompt-file FILE", field="system_prompt")
        path = Path(row[0]) / "system_prompt.txt"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"cannot read the system prompt: {getattr(e, 'strerror', None) or e}", path=str(path),
                       field="system_prompt") from None
    if not text:
        raise BadInput("the system prompt file is empty", path=str(path), field="system_prompt")
    return text, str(path)


# -- planning the mixture -----------------------------------------------------------

def check_where(where: str, *, block: int) -> None:
    """A mixture condition: one deterministic, read-only SQL condition over `pairs`."""
    import duckdb

    fld = f"mix[{block}].where"
    if ";" in where:
        raise BadInput("a where condition cannot hold ';'", field=fld)
    bad = _WHERE_FORBIDDEN.search(where)
    if bad:
        raise BadInput(f"a where condition must be deterministic and read-only: {bad.group(1)}() is not allowed",
                       field=fld)
    try:
        statements = duckdb.connect().extract_statements(f"SELECT pair_id FROM pairs WHERE ({where})")
    except duckdb.Error as e:
        raise BadInput(f"where is not valid SQL: {str(e).splitlines()[0]}", field=fld) from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise BadInput("where must be one condition inside a SELECT over pairs", field=fld)


def _seeded_order(seed: int, tag: str, pair_ids: list[str]) -> np.ndarray:
    """Positions of pair_ids (given in pair_id order) sorted by xxh3-64 of '<seed>:<tag><pair_id>';
    a stable sort, so equal keys keep pair_id order."""
    keys = np.fromiter((xxhash.xxh3_64_intdigest(f"{seed}:{tag}{p}".encode()) for p in pair_ids),
                       dtype=np.uint64, count=len(pair_ids))
    return np.argsort(keys, kind="stable")


def plan_mixture(store, recipe: Recipe) -> list[BlockPlan]:
    """Fill the temp table _mix (block, prow, pair_id, kind, copies) for the recipe."""
    con = store.con
    con.execute("CREATE OR REPLACE TEMP TABLE _mix_sel (block INTEGER, prow BIGINT, pair_id VARCHAR, "
                "kind VARCHAR, copies INTEGER)")
    plans = []
    for i, blk in enumerate(recipe.mix):
        plan = BlockPlan(i, blk.source, blk.where, blk.limit, blk.upsample)
        cond = "source = ?"
        if blk.where:
            check_where(blk.where, block=i)
            cond += f" AND ({blk.where})"
        whole = int(blk.upsample)
        frac = blk.upsample - whole
        try:
            if blk.limit is None and frac == 0:
                con.execute(f"INSERT INTO _mix_sel SELECT {i}, rowid, pair_id, kind, {whole} FROM pairs "
                            f"WHERE {cond}", [blk.source])
                plan.matched = plan.selected = con.execute(
                    f"SELECT count(*) FROM _mix_sel WHERE block = {i}").fetchall()[0][0]
            else:
                tbl = con.sql(f"SELECT rowid AS prow, pair_id, kind FROM pairs WHERE {cond} ORDER BY pair_id",
                              params=[blk.source]).to_arrow_table()
                plan.matched = tbl.num_rows
                ids = tbl.column("pair_id").to_pylist()
                keep = np.arange(len(ids))
                if blk.limit is not None and len(ids) > blk.limit:
                    keep = np.sort(_seeded_order(recipe.seed, "", ids)[:blk.limit])
                elif blk.limit is not None and len(ids) < blk.limit:
                    plan.note = f"limit {blk.limit} > {len(ids)} pairs available: all taken"
                tbl = tbl.take(pa.array(keep))
                copies = np.full(tbl.num_rows, whole, dtype=np.int32)
                if frac:
                    extra = int(np.floor(frac * tbl.num_rows + 0.5))
                    part = _seeded_order(recipe.seed, "copy:", tbl.column("pair_id").to_pylist())[:extra]
                    copies[part] += 1
                sel = pa.table({"block": pa.array(np.full(tbl.num_rows, i, dtype=np.int32)),
                                "prow": tbl.column("prow"), "pair_id": tbl.column("pair_id"),
                                "kind": tbl.column("kind"), "copies": pa.array(copies)})
                con.register("_mix_block", sel)
                try:
                    con.execute("INSERT INTO _mix_sel SELECT * FROM _mix_block")
                finally:
                    con.unregister("_mix_block")
                plan.selected = tbl.num_rows
        except Exception as e:
            import duckdb

            if isinstance(e, duckdb.Error):
                raise BadInput(f"round {recipe.name!r}, [[mix]] block {i + 1}: {str(e).splitlines()[0]}",
                               field=f"mix[{i}].where") from None
            raise
        if plan.matched == 0:
            plan.note = "no pairs match this block"
        plans.append(plan)
    con.execute("CREATE OR REPLACE TEMP TABLE _mix AS SELECT * FROM _mix_sel WHERE copies > 0")
    con.execute("DROP TABLE _mix_sel")
    for plan in plans:
        plan.rows = int(con.execute("SELECT coalesce(sum(copies), 0) FROM _mix WHERE block = ?",
                                    [plan.index]).fetchall()[0][0])
    return plans


# -- the gate ------------------------------------------------------------------------

def _build_candidates(store) -> None:
    """_gate_cand: one row per distinct pair of the mixture, in the matching module's columns.

    The match text (normalized user turns) feeds the fuzzy check, which skips rows with a task key, and
    the benchmark check: with no benchmark registered, rows with a task key go without it."""
    con = store.con
    everyone = bool(con.execute("SELECT count(*) FROM benchmark_refs").fetchall()[0][0])
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _gate_cand AS
        WITH d AS (SELECT pair_id, (row_number() OVER (ORDER BY kind, block, prow) - 1)::BIGINT AS row_index
                   FROM (SELECT pair_id, min(kind) AS kind, min(block) AS block, min(prow) AS prow
                         FROM _mix GROUP BY pair_id)),
        o AS (SELECT pair_id, list(origin_id ORDER BY origin_id) AS origin_ids
              FROM pair_origins WHERE pair_id IN (SELECT pair_id FROM d) GROUP BY pair_id),
        u AS (SELECT d.row_index, p.pair_id, p.match_key, p.task_key, o.origin_ids,
                     list_filter(p.prompt, lambda m: m.role = 'user') AS users
              FROM d JOIN pairs p USING (pair_id) LEFT JOIN o USING (pair_id))
        SELECT row_index, pair_id,
               coalesce(origin_ids, []::VARCHAR[]) AS origin_ids, match_key,
               CASE WHEN NOT ({everyone} OR task_key IS NULL) THEN NULL
                    WHEN list_bool_and(list_transform(users, lambda m: strlen(m.content) = length(m.content)))
                         IS NOT FALSE
                    THEN array_to_string(list_transform(users, lambda m: {ascii_match_text_sql('m.content')}),
                                         chr(30))
               END AS match_text,
               task_key
        FROM u""")
    # Non-ASCII user turns: NFKC and case folding in Python (keys.match_text), few rows in practice.
    todo = con.execute(f"""
        SELECT c.row_index, p.prompt FROM _gate_cand c JOIN pairs p USING (pair_id)
        WHERE c.match_text IS NULL AND ({everyone} OR c.task_key IS NULL)""").fetchall()
    if todo:
        from pairstore.keys import match_text

        fix = pa.table({"row_index": pa.array([r for r, _ in todo], pa.int64()),
                        "match_text": pa.array([match_text(p) for _, p in todo], pa.string())})
        con.register("_gate_fix", fix)
        try:
            con.execute("UPDATE _gate_cand SET match_text = f.match_text FROM _gate_fix f "
                        "WHERE _gate_cand.row_index = f.row_index")
        finally:
            con.unregister("_gate_fix")


def run_gate(store, round_name: str) -> tuple[GateResult, list[dict]]:
    """Check the planned mixture (_mix). Raises GateRefused on a hit that is not exempted."""
    _build_candidates(store)
    try:
        result = check_table(store, "_gate_cand")
    finally:
        store.con.execute("DROP TABLE IF EXISTS _gate_cand")
    standing, exempted = split_exempt(store, result.hits)
    if standing:
        lines = [f"  {h.set_name} {h.item_id} pair {h.pair_id} ({h.how}"
                 + (f" {h.score:g}" if h.how == "fuzzy" else "") + ")" for h in standing[:HITS_SHOWN]]
        if len(standing) > HITS_SHOWN:
            lines.append(f"  ... and {len(standing) - HITS_SHOWN} more")
        members = sorted({(h.set_name, h.item_id) for h in standing})
        with store.transaction():
            store.audit("export.refused", round_name, {
                "hits": [h.as_dict() for h in standing], "members": [f"{s}/{i}" for s, i in members]})
        err = GateRefused(
            f"export of round {round_name!r} refused by the holdout gate: {len(standing)} hit(s) on "
            f"{len(members)} held-out item(s); nothing written. Remove the pairs from the mixture, remove the "
            "member from its set, or exempt the (member, pair) with `pairstore holdout exempt`:\n"
            + "\n".join(lines))
        err.hits = standing
        raise err
    return result, exempted


# -- writing -------------------------------------------------------------------------

def _atomic_temp(out_dir: Path, final_name: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{final_name}.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    return Path(tmp)


def row_json(prompt: list[dict], chosen: str, rejected: str | None) -> str:
    """The canonical JSON of one mixture row (what its digest is taken of)."""
    return json.dumps({"prompt": [{"role": m["role"], "content": m["content"]} for m in prompt], "chosen": chosen,
                       "rejected": rejected}, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def row_digest(prompt: list[dict], chosen: str, rejected: str | None) -> str:
    """xxh3-128 of the row's canonical JSON."""
    return xxh128(row_json(prompt, chosen, rejected))


def rows_content_hash(digests) -> str:
    """The content hash of ordered rows: keys.content_hash_rows over the rows' digests."""
    return content_hash_rows([d] for d in digests)


def _json_digests(js: pa.Array) -> list[str]:
    """xxh3-128 of each JSON text of a string array, read straight from the arrow buffers."""
    if js.type not in (pa.string(), pa.large_string()):
        js = js.cast(pa.large_string())
    n = len(js)
    width = np.int64 if js.type == pa.large_string() else np.int32
    offsets = np.frombuffer(js.buffers()[1], dtype=width)[js.offset:js.offset + n + 1]
    data = memoryview(js.buffers()[2]) if n else memoryview(b"")
    digest = xxhash.xxh3_128_hexdigest
    return [digest(data[int(offsets[i]):int(offsets[i + 1])]) for i in range(n)]


class _RowGroupWriter:
    """ParquetWriter that cuts row groups at exactly ROW_GROUP_ROWS rows, whatever the fetch sizes."""

    def __init__(self, path: Path, schema: pa.Schema):
        self.schema = schema
        self.writer = pq.ParquetWriter(
            str(path), schema, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL,
            use_dictionary=[c for c in _DICT_COLUMNS if c.split(".")[0] in schema.names],
            write_statistics=True, version="2.6", data_page_version="1.0", write_page_index=False)
        self.pending: list[pa.Table] = []
        self.pending_rows = 0

    def write(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.pending_rows += table.num_rows
        while self.pending_rows >= ROW_GROUP_ROWS:
            whole = pa.concat_tables(self.pending)
            # one contiguous chunk per row group: page boundaries then depend on the data only, not on
            # how DuckDB's threads happened to chunk the fetched rows
            self.writer.write_table(whole.slice(0, ROW_GROUP_ROWS).combine_chunks(), row_group_size=ROW_GROUP_ROWS)
            rest = whole.slice(ROW_GROUP_ROWS)
            self.pending, self.pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> None:
        if self.pending_rows:
            self.writer.write_table(pa.concat_tables(self.pending).combine_chunks(), row_group_size=ROW_GROUP_ROWS)
        self.writer.close()


def _chunks(store, kind: str, block: int) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """(first prow, last prow, prows, copies) of one block's pieces of about FETCH_ROWS output rows
    (pairs x copies), prows ascending."""
    arr = store.con.execute("SELECT prow, copies FROM _mix WHERE kind = ? AND block = ? ORDER BY prow",
                            [kind, block]).fetchnumpy()
    prow = np.asarray(arr["prow"], dtype=np.int64)
    copies = np.asarray(arr["copies"], dtype=np.int64)
    ends = np.cumsum(copies)
    out, start, base = [], 0, 0
    while start < len(prow):
        stop = int(np.searchsorted(ends, base + FETCH_ROWS, side="left"))
        stop = min(max(stop, start), len(prow) - 1)
        out.append((int(prow[start]), int(prow[stop]), prow[start:stop + 1], copies[start:stop + 1]))
        base = int(ends[stop])
        start = stop + 1
    return out


def _as_messages(texts: pa.Array, role: str) -> pa.ListArray:
    """[{'role': role, 'content': text}] for each text, built on the Arrow buffers (no copy of the text)."""
    n = len(texts)
    msgs = pa.StructArray.from_arrays([pa.repeat(role, n).cast(pa.string()), texts], fields=list(_MSG))
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), msgs)


def _write_file(store, path: Path, kind: str, n_blocks: int, system_prompt: str | None):
    """Stream the `kind` rows of _mix into parquet at `path`.

    Returns (rows, content hash, rows by (source, family)).

    Each distinct pair's row JSON is made once by DuckDB's to_json (the same text as row_json, except that
    DuckDB writes the \\u00XX escapes of control characters in upper case: rows holding such an escape get
    their digest from Python), digested, and the digest repeated for its copies.
    """
    import hashlib

    con = store.con
    schema = DPO_SCHEMA if kind == "dpo" else SFT_SCHEMA
    answer_col = "chosen" if kind == "dpo" else "completion"
    # the stored prompt already is STRUCT(role, content)[]; a recipe system prompt replaces the pair's own
    prompt_sql = ("p.prompt" if system_prompt is None else
                  "list_concat([{'role': 'system', 'content': $sys}], "
                  "list_filter(p.prompt, lambda m: m.role <> 'system'))")
    # A plain scan of a rowid range with a semi-join: no ORDER BY (a sort would hold every text of the
    # chunk in DuckDB's memory) and no nested columns built in SQL; the rows are put in order and the
    # message lists built on the Arrow side.
    sql = f"""
        SELECT p.rowid AS prow, {prompt_sql} AS _prompt, p.chosen, p.rejected, p.pair_id, p.source, p.family,
               to_json({{'chosen': p.chosen,
                         'prompt': list_transform(_prompt, lambda m: {{'content': m.content, 'role': m.role}}),
                         'rejected': p.rejected}}) AS _json,
               contains(_json, '\\u00') AS _odd
        FROM pairs p
        WHERE p.rowid BETWEEN $lo AND $hi
          AND p.rowid IN (SELECT prow FROM _mix WHERE kind = $kind AND block = $block AND prow BETWEEN $lo AND $hi)"""
    h = hashlib.sha256()
    counts: Counter = Counter()
    rows = 0
    jobs = [(block, *piece) for block in range(n_blocks) for piece in _chunks(store, kind, block)]
    # DuckDB fetches the next chunk while this thread digests and writes the last one (both release
    # the GIL for their heavy parts); only the fetch thread touches the connection meanwhile.
    chunks: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def fetch():
        try:
            for block, lo, hi, prows, copies in jobs:
                params = {"kind": kind, "block": block, "lo": lo, "hi": hi}
                if system_prompt is not None:
                    params["sys"] = system_prompt
                tbl = con.sql(sql, params=params).to_arrow_table()
                while not stop.is_set():
                    try:
                        chunks.put((tbl, prows, copies), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            chunks.put(None)
        except BaseException as e:  # handed to the writing thread, which raises it
            chunks.put(e)

    fetcher = threading.Thread(target=fetch, name="pairstore-export-fetch", daemon=True)
    writer = _RowGroupWriter(path, schema)
    fetcher.start()
    try:
        while (item := chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            tbl, prows, copies = item
            got = tbl.column("prow").to_numpy()
            order = np.argsort(got, kind="stable")
            if not np.array_equal(got[order], prows):
                raise RuntimeError(f"export: rows {int(prows[0])}..{int(prows[-1])} of the store changed while "
                                   "exporting")
            tbl = tbl.take(pa.array(order))
            digests = _json_digests(tbl.column("_json").combine_chunks())
            odd = tbl.column("_odd").to_numpy(zero_copy_only=False)
            if odd.any():
                sub = tbl.filter(pa.array(odd)).select(["_prompt", "chosen", "rejected"]).to_pylist()
                for i, r in zip(np.flatnonzero(odd), sub):
                    digests[i] = row_digest(r["_prompt"], r["chosen"], r["rejected"] if kind == "dpo" else None)
            # the bytes content_hash_rows([d] for d in digests) hashes: a one-string JSON list per line
            h.update("".join(f'["{d}"]\n' * c for d, c in zip(digests, copies.tolist())).encode())
            grouped = pa.table({"source": tbl.column("source"), "family": tbl.column("family"),
                                "copies": pa.array(copies)}).group_by(["source", "family"]).aggregate(
                [("copies", "sum")])
            for s, f, n in zip(*(grouped.column(c).to_pylist() for c in ("source", "family", "copies_sum"))):
                counts[(s, f)] += n
            columns = {"prompt": tbl.column("_prompt"),
                       answer_col: _as_messages(tbl.column("chosen").combine_chunks(), "assistant")}
            if kind == "dpo":
                columns["rejected"] = _as_messages(tbl.column("rejected").combine_chunks(), "assistant")
            tbl = pa.table({**columns, "pair_id": tbl.column("pair_id"), "source": tbl.column("source"),
                            "family": tbl.column("family")})
            if (copies != 1).any():
                # copies adjacent: the compressor sees a repeat, not new data, so upsampling is nearly free
                tbl = tbl.take(pa.array(np.repeat(np.arange(tbl.num_rows), copies)))
            out = tbl.cast(schema)
            writer.write(out)
            rows += out.num_rows
    finally:
        stop.set()
        while fetcher.is_alive():      # unblock a fetch thread waiting to hand over a chunk
            try:
                chunks.get(timeout=0.1)
            except queue.Empty:
                pass
        fetcher.join()
        writer.close()
    return rows, h.hexdigest(), counts


def _export_id(kind: str, round_name: str, path: str, sha: str) -> str:
    return xxh128(f"{kind}\0{round_name}\0{path}\0{sha}")[:20]


def _versions(store) -> dict:
    import duckdb
    import rapidfuzz

    return {"pairstore": pairstore.__version__, "duckdb": duckdb.__version__, "pyarrow": pa.__version__,
            "rapidfuzz": rapidfuzz.__version__, "schema_version": store.schema_version()}


def export_round(store, name: str, out_dir=".", *, bundle=None, system_prompt_file=None) -> ExportResult:
    """Export round `name` to OUT_DIR/NAME.parquet (+ NAME.sft.parquet) and NAME.training_evidence.json."""
    recipe = get_round(store, name)
    if not NAME_RE.fullmatch(recipe.name):
        raise BadInput(f"round name {recipe.name!r} is not a safe file name", field="round")
    if recipe.kind != "dpo":
        raise BadInput(f"round {name!r} is a {recipe.kind}: it has no mixture to export", field="round")
    system_prompt, sp_from = resolve_system_prompt(store, recipe, bundle=bundle,
                                                   system_prompt_file=system_prompt_file)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise BadInput("--out must name a folder", path=str(out), field="out")
    con = store.con
    memory_limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    con.execute(f"SET memory_limit = '{EXPORT_MEMORY_LIMIT}'")
    try:
        plans = plan_mixture(store, recipe)
        if not con.execute("SELECT count(*) FROM _mix").fetchall()[0][0]:
            raise BadInput(f"round {name!r}: the mixture selects no pairs "
                           f"({'; '.join(f'block {p.index + 1} {p.source}: {p.matched}' for p in plans)})",
                           field="mix")
        gate, exempted = run_gate(store, name)      # raises before anything is written
        out.mkdir(parents=True, exist_ok=True)
        out_real = out.resolve()
        finals = {"dpo": out_real / f"{name}.parquet", "sft": out_real / f"{name}.sft.parquet"}
        evidence_path = out_real / f"{name}.training_evidence.json"
        for p in [*finals.values(), evidence_path]:
            if p.parent != out_real:
                raise BadInput(f"round {name!r} would write outside {out_real}", field="out")
        kinds_present = {k for (k,) in con.execute("SELECT DISTINCT kind FROM _mix").fetchall()}
        result = ExportResult(round=name, out_dir=str(out_real), blocks=[p.as_dict() for p in plans])
        temps: dict[str, Path] = {}
        by_source: Counter = Counter()
        by_family: Counter = Counter()
        try:
            for kind in ("dpo", "sft"):
                if kind not in kinds_present:
                    continue
                tmp = _atomic_temp(out_real, finals[kind].name)
                temps[kind] = tmp
                rows, chash, counts = _write_file(store, tmp, kind, len(plans), system_prompt)
                for (s, f), n in counts.items():
                    by_source[s] += n
                    by_family[f or "(none)"] += n
                result.files[kind] = {"path": str(finals[kind]), "sha256": sha256_file(tmp), "rows": rows,
                                      "content_hash": chash}
            result.rows_by_source = dict(sorted(by_source.items()))
            result.gate = {
                "passed": True, "members_checked": gate.members, "pairs_checked": gate.candidates,
                "fuzzy_pairs_scored": gate.fuzzy_pairs_scored, "fuzzy_threshold": FUZZY_THRESHOLD,
                "fuzzy_min_chars": FUZZY_MIN_CHARS, "exempted": exempted, "notes": gate.notes}
            dpo = result.files.get("dpo", {})
            sft = result.files.get("sft")
            evidence = {
                "round": name, "kind": recipe.kind, "parents": recipe.parents, "job_id": recipe.job_id,
                "recipe_sha256": recipe.sha256, "recipe": recipe.to_json(),
                "parquet": finals["dpo"].name, "parquet_sha256": dpo.get("sha256"), "rows": dpo.get("rows", 0),
                "content_hash": dpo.get("content_hash"),
                "sft_parquet": finals["sft"].name if sft else None,
                "sft_parquet_sha256": sft["sha256"] if sft else None, "sft_rows": sft["rows"] if sft else 0,
                "sft_content_hash": sft["content_hash"] if sft else None,
                "system_prompt": {"from": sp_from,
                                  "sha256": sha256_text(system_prompt) if system_prompt is not None else None},
                "blocks": result.blocks, "rows_by_source": result.rows_by_source,
                "rows_by_family": dict(sorted(by_family.items())), "gate": result.gate,
                "order": "blocks in recipe order; within a block pairs in store order (pairs.rowid); "
                         "copies of a pair adjacent",
                "writer": {"compression": COMPRESSION, "compression_level": COMPRESSION_LEVEL,
                           "row_group_rows": ROW_GROUP_ROWS},
                "versions": _versions(store),
            }
            ev_tmp = _atomic_temp(out_real, evidence_path.name)
            temps["evidence"] = ev_tmp
            ev_tmp.write_text(json.dumps(evidence, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                              encoding="utf-8")
            for kind in ("dpo", "sft"):
                if kind in temps:
                    os.replace(temps.pop(kind), finals[kind])
                elif finals[kind].exists() and kind == "sft":
                    finals[kind].unlink()    # an older export's sft file would not match this evidence
            os.replace(temps.pop("evidence"), evidence_path)
        finally:
            for tmp in temps.values():
                tmp.unlink(missing_ok=True)
        result.evidence_path = str(evidence_path)
        _record_export(store, name, result, evidence, exempted)
        return result
    finally:
        con.execute("DROP TABLE IF EXISTS _mix")
        con.execute(f"SET memory_limit = '{memory_limit}'")


def _record_export(store, name: str, result: ExportResult, evidence: dict, exempted: list[dict]) -> None:
    con = store.con
    with store.transaction():
        for kind, info in result.files.items():
            eid = _export_id("export", name, info["path"], info["sha256"])
            result.export_ids.append(eid)
            if store.one("SELECT 1 FROM exports WHERE export_id = ?", [eid]):
                continue
            con.execute("INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash, evidence) "
                        "VALUES (?, ?, 'export', ?, ?, ?, ?, ?)",
                        [eid, name, info["path"], info["sha256"], info["rows"], info["content_hash"],
                         json.dumps(evidence, sort_keys=True, ensure_ascii=False)])
            # the file's order (_write_file): block, store order, copies adjacent
            con.execute("""
                INSERT INTO export_rows
                SELECT ?, row_number() OVER (ORDER BY block, prow, k) - 1, pair_id
                FROM (SELECT block, prow, pair_id, unnest(range(copies)) AS k FROM _mix WHERE kind = ?)""",
                        [eid, kind])
        store.audit("export", name, {"files": result.files, "exempted": exempted,
                                     "evidence": result.evidence_path})


# -- exemptions ----------------------------------------------------------------------

def add_exemption(store, set_name: str, item_id: str, pair_id: str, *, reason: str) -> bool:
    """Let one pair through the gate for one member, with a reason (logged). Returns False if it existed."""
    if not reason or not reason.strip():
        raise BadInput("an exemption needs a reason (--reason TEXT)", field="reason")
    if set_name.startswith("eval:"):
        known = store.one("SELECT 1 FROM eval_items WHERE suite = ? AND item_id = ?", [set_name[5:], item_id])
    elif set_name.startswith("benchmark:"):
        known = store.one("SELECT 1 FROM benchmark_refs WHERE benchmark = ? AND item_id = ?",
                          [set_name[10:], item_id])
    else:
        known = store.one("SELECT 1 FROM holdout WHERE set_name = ? AND item_id = ?", [set_name, item_id])
    if not known:
        raise NotFound(f"{item_id!r} is not a member of {set_name!r}")
    if not store.one("SELECT 1 FROM pairs WHERE pair_id = ?", [pair_id]):
        raise NotFound(f"no pair {pair_id!r}")
    with store.transaction():
        row = store.one("SELECT reason FROM holdout_exemptions WHERE set_name = ? AND item_id = ? AND pair_id = ?",
                        [set_name, item_id, pair_id])
        if row is not None:
            return False
        store.con.execute("INSERT INTO holdout_exemptions (set_name, item_id, pair_id, reason) VALUES (?, ?, ?, ?)",
                          [set_name, item_id, pair_id, reason.strip()])
        store.audit("holdout.exempt", set_name, {"item_id": item_id, "pair_id": pair_id, "reason": reason.strip()})
    return True


# -- attaching outside mixtures -------------------------------------------------------

def _attached_rows(path):
    """(row number, messages, chosen, rejected, source, family, task_key, file pair_id) per record."""
    from pairstore.records import Fields, read_records

    for line, rec in read_records(path):
        f = Fields(rec, path, line)
        msgs = f.messages("prompt")
        if f.has("chosen"):
            chosen = f.answer_text("chosen")
        elif f.has("completion"):
            chosen = f.answer_text("completion")
        else:
            raise f.error("chosen", "missing field (chosen, or completion for an NLL row)")
        rejected = f.answer_text("rejected", required=False)
        yield (line, msgs, chosen, rejected, f.str("source", required=False), f.str("family", required=False),
               f.str("task_key", required=False), f.str("pair_id", required=False))


def content_hash_of_file(path) -> str:
    """The writer-independent content hash of a pair file's rows (same definition as export)."""
    return rows_content_hash(row_digest(m, c, r) for _, m, c, r, *_ in _attached_rows(path))


def attach_round(store, name: str, path) -> AttachResult:
    """Register a mixture file made outside pairstore as round `name`'s training data (not gated)."""
    from pairstore.pairs import Origin, Pair, add_pairs, pair_id_of

    get_round(store, name)
    p = Path(path)
    if not p.is_file():
        raise BadInput("no such file", path=str(path))
    sha = sha256_file(p)
    abs_path = str(p.resolve())
    eid = _export_id("attached", name, "", sha)   # one file (by content) attaches to a round once
    row = store.one("SELECT rows, content_hash FROM exports WHERE export_id = ?", [eid])
    if row is not None:
        return AttachResult(round=name, path=abs_path, sha256=sha, rows=row[0], export_id=eid,
                            content_hash=row[1], already=True)
    records = list(_attached_rows(p))
    result = AttachResult(round=name, path=abs_path, sha256=sha, rows=len(records), export_id=eid)
    result.content_hash = rows_content_hash(row_digest(m, c, r) for _, m, c, r, *_ in records)
    con = store.con
    file_ids = sorted({fid for *_, fid in records if fid})
    known_by_file_id = {}
    if file_ids:
        con.register("_att_ids", pa.table({"pair_id": pa.array(file_ids, pa.string())}))
        try:
            known_by_file_id = {pid: (mk, ch) for pid, mk, ch in con.execute(
                "SELECT p.pair_id, p.match_key, p.chosen FROM pairs p JOIN _att_ids USING (pair_id)").fetchall()}
        finally:
            con.unregister("_att_ids")
    row_pairs: list[tuple[int, str | None]] = []   # (row index, pair id) in file order
    new_pairs: list[Pair] = []
    new_rows: list[int] = []
    for idx, (line, msgs, chosen, rejected, source, family, task_key, fid) in enumerate(records):
        known = known_by_file_id.get(fid) if fid else None
        if known is not None and known[0] == match_key(msgs) and known[1] == chosen:
            row_pairs.append((idx, fid))       # one of ours (an export carries the recipe's system prompt)
            result.matched += 1
            continue
        pid = pair_id_of(canonical_messages(msgs), chosen, rejected)
        row_pairs.append((idx, pid))
        new_pairs.append(Pair(prompt=msgs, chosen=chosen, rejected=rejected, source=source or "attached",
                              family=family, task_key=task_key,
                              origins=[Origin("attached", f"{sha}:{line}", f"round attach {name}")]))
        new_rows.append(idx)
    with store.transaction():
        existing = set()
        if new_pairs:
            ids = sorted({row_pairs[i][1] for i in new_rows})
            con.register("_att_new", pa.table({"pair_id": pa.array(ids, pa.string())}))
            try:
                existing = {r[0] for r in con.execute(
                    "SELECT p.pair_id FROM pairs p JOIN _att_new USING (pair_id)").fetchall()}
            finally:
                con.unregister("_att_new")
            # Rows whose pair is already stored count as matched; the rest become pairs with their own origin.
            keep = [(i, pr) for i, pr in zip(new_rows, new_pairs) if row_pairs[i][1] not in existing]
            result.matched += len(new_rows) - len(keep)
            added = add_pairs(store, [pr for _, pr in keep], miner="round-attach", miner_version="1")
            stored = set(added.pair_ids)
            result.added = added.added
            dropped = Counter(added.dropped)
            dropped.pop("duplicate", None)
            result.dropped = dict(dropped)
            for i, _ in keep:
                if row_pairs[i][1] not in stored:
                    row_pairs[i] = (i, None)
        con.execute("INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash, evidence) "
                    "VALUES (?, ?, 'attached', ?, ?, ?, ?, ?)",
                    [eid, name, abs_path, sha, result.rows, result.content_hash,
                     json.dumps({"matched": result.matched, "added": result.added, "dropped": result.dropped},
                                sort_keys=True)])
        er = [(i, pid) for i, pid in row_pairs if pid is not None]
        if er:
            con.register("_att_rows", pa.table({"row_index": pa.array([i for i, _ in er], pa.int64()),
                                                "pair_id": pa.array([p for _, p in er], pa.string())}))
            try:
                con.execute("INSERT INTO export_rows SELECT ?, row_index, pair_id FROM _att_rows", [eid])
            finally:
                con.unregister("_att_rows")
        store.audit("round.attach", name, {"path": abs_path, "sha256": sha, "rows": result.rows,
                                           "matched": result.matched, "added": result.added,
                                           "dropped": result.dropped})
    return result

