"""Ingest: battles, problems, generations, pairs and judgments into the store.

    pairstore ingest battles battles.jsonl
    pairstore ingest problems --dataset gsm8k --path gsm8k/          # a Hub copy, a file or a save_to_disk folder
    pairstore ingest generations outs.jsonl --model so7a
    pairstore ingest pairs past_round.parquet --source attached
    pairstore ingest judgments verdicts.jsonl

Every ingest validates the whole file first and writes in one transaction: a
bad record raises BadInput (file, line, field) and nothing is written. A
re-ingest of the same file adds nothing; a known id with different content is
an error, never a silent overwrite.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from tqdm import tqdm

from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.ingest.arena import battle_fields, check_options, other_pair, own_side, parse_row
from pairstore.ingest.dataset_files import DatasetRecord, dataset_files, files_sha256, read_files
from pairstore.ingest.fastchat import log_files as fastchat_log_files
from pairstore.ingest.math_problems import HUB_DATASETS, TEST_NAME, problem_fields
from pairstore.ingest.pair_files import read_pair_file
from pairstore.ingest.records import Fields, read_records
from pairstore.keys import content_id, match_key, sha256_file
from pairstore.tables.generations import MSG_TYPE, generation_id, insert_generations
from pairstore.tables.pairs import Origin, Pair, add_pairs, check_pair

VOTES = ("win", "loss", "tie", "both_bad")
ITEM_KINDS = ("problem", "task", "eval_item", "prompt")
WINNERS = ("a", "b", "tie")


@dataclass
class IngestResult:
    kind: str
    path: str
    read: int = 0
    added: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> count (same content already there, ...)
    pairs: int = 0  # pairs written beside the rows (Arena battles between other models, --others pairs)

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "read": self.read,
            "added": self.added,
            "pairs": self.pairs,
            "skipped": dict(self.skipped),
        }


def _progress(iterable, enabled: bool, desc: str):
    if not enabled:
        return iterable

    return tqdm(iterable, desc=desc, unit=" rec", leave=False)


def log_ingest(store, path, kind: str, rows_read: int, rows_added: int, *, sha256: str | None = None) -> None:
    """One row in `ingests` per file (or dataset folder: give its `sha256`, pairstore.ingest.dataset_files) read.
    This module writes that table; call inside the ingest's transaction."""
    store.con.execute(
        "INSERT INTO ingests (file_sha256, kind, path, rows_read, rows_added) VALUES (?, ?, ?, ?, ?)",
        [sha256 or sha256_file(path), kind, str(path), rows_read, rows_added],
    )


def _insert_new(
    store, table: str, key_cols: list[str], rows: list[dict], schema: pa.Schema, differs: str, what: str, path
) -> tuple[int, int]:
    """Insert rows whose key is new. A known key whose content differs (`differs`: SQL over i = incoming,
    t = table) is an error naming the line; a known key with the same content is skipped."""
    if not rows:
        return 0, 0
    tbl = pa.Table.from_pylist(rows, schema=schema)
    con = store.con
    con.register("_incoming", tbl)
    try:
        on = " AND ".join(f"i.{k} = t.{k}" for k in key_cols)
        file_col = "i._file" if "_file" in schema.names else "NULL::VARCHAR"
        order = "i._file, i._line" if "_file" in schema.names else "i._line"
        clash = con.execute(
            f"SELECT i.{key_cols[-1]}, i._line, {file_col} FROM _incoming i JOIN {table} t ON {on} "
            f"WHERE {differs} ORDER BY {order} LIMIT 1"
        ).fetchall()
        if clash:
            clash = clash[0]
            raise BadInput(
                f"{what} {clash[0]!r} is already in the store with different content",
                path=str(clash[2] or path),
                line=clash[1],
                field=key_cols[-1],
            )
        cols = [c for c in schema.names if not c.startswith("_")]
        n = con.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join('i.' + c for c in cols)} "
            f"FROM _incoming i ANTI JOIN {table} t ON {on}"
        ).fetchone()[0]
    finally:
        con.unregister("_incoming")
    return n, len(rows) - n


def _dedup_in_file(rows: list[dict], key, hash_col: str, what: str, path) -> tuple[list[dict], int]:
    seen: dict = {}
    out = []
    dup = 0
    for r in rows:
        k = key(r)
        if k in seen:
            if seen[k][hash_col] != r[hash_col]:
                first = seen[k]
                where = f"line {first['_line']}" + (
                    f" of {first['_file']}" if first.get("_file", path) != r.get("_file", path) else ""
                )
                raise BadInput(
                    f"{what} {k!r} appears twice with different content (first at {where})",
                    path=str(r.get("_file") or path),
                    line=r["_line"],
                )
            dup += 1
            continue
        seen[k] = r
        out.append(r)
    return out, dup


# ---------------------------------------------------------------------------
# battles
# ---------------------------------------------------------------------------

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
        users, own, opp = [], [], []
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
    row = {
        "battle_id": battle_id,
        "prompt": prompt,
        "own_answers": own,
        "opponent_answers": opp,
        "n_turns": len(own),
        "vote": vote,
        "category": f.str("category", required=False),
        "own_model": f.str("own_model", required=False),
        "opponent_model": f.str("opponent_model", required=False),
        "voted_at": f.timestamp("voted_at"),
    }
    row.update(_battle_extras(f))
    return _keyed_battle(row, path, line)


def _battle_extras(f: Fields) -> dict:
    """Who voted and how the battle was shown (annotator, own_position, decoding, origin, shown_at): only
    the fields given, so the record hash of a file without them stays what it was."""
    extras = {}
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


def _keyed_battle(row: dict, path, line: int) -> dict:
    """The row with its match key and record hash (of every column given: a native row has no Arena columns,
    so its hash is what it always was)."""
    row["match_key"] = match_key(row["prompt"])
    row["record_hash"] = content_id(json.dumps(row, sort_keys=True, default=str, ensure_ascii=False))
    row["_line"], row["_file"] = line, str(path)
    return row


def _arena_rows(store, records, result: IngestResult, fmt: str, own: set[str], others: str):
    """Battle rows and `arena` pairs from Arena records (pairstore.ingest.arena); every row not kept is counted."""
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
            reason = pair if isinstance(pair, str) else "holdout" if holdout.holds_pair(pair) else None
            if reason:
                result.skipped[f"others: {reason}"] += 1
            else:
                pairs.append(pair)
    return rows, pairs


def ingest_battles(
    store, path, *, fmt: str = "native", own_models=(), others: str = "skip", progress: bool = False
) -> IngestResult:
    """Battles from a file, a Hub folder or a save_to_disk folder (pairstore.ingest.dataset_files): native records
    (parse_battle), or Chatbot Arena rows (`fmt` arena or arena55k, pairstore.ingest.arena) read from the side of
    `own_models`. Arena battles no own model plays are counted ('no own model'), or with others="pairs"
    stored as `arena` pairs, in the same transaction."""
    if fmt == "native":
        if own_models or others != "skip":
            raise BadInput(
                "--own-model and --others go with --format arena, arena55k or fastchat-log", field="own-model"
            )
    else:
        own = check_options(fmt, own_models, others)
    files = fastchat_log_files(path) if fmt == "fastchat-log" else dataset_files(path, split="train")
    records = _progress(read_files(path, files), progress, "battles")
    result = IngestResult("battles" if fmt == "native" else f"battles:{fmt}", str(path))
    rows, pairs = [], []
    if fmt == "native":
        for r in records:
            result.read += 1
            row = parse_battle(r.record, r.path, r.line)
            row["source_file"] = r.source
            rows.append(row)
    else:
        rows, pairs = _arena_rows(store, records, result, fmt, own, others)
    rows, dup = _dedup_in_file(rows, lambda r: r["battle_id"], "record_hash", "battle_id", path)
    with store.transaction():
        added, same = _insert_new(
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
    rows, dup = _dedup_in_file(rows, lambda r: r["battle_id"], "record_hash", "battle_id", source)
    with store.transaction():
        added, same = _insert_new(
            store,
            "battles",
            ["battle_id"],
            rows,
            _BATTLE_SCHEMA,
            "i.record_hash <> t.record_hash",
            "battle_id",
            source,
        )
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
    return result


# ---------------------------------------------------------------------------
# problems (GSM8K / MATH train splits)
# ---------------------------------------------------------------------------

_PROBLEM_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("dataset", pa.string()),
        ("subject", pa.string()),
        ("level", pa.string()),
        ("split", pa.string()),
        ("question", pa.string()),
        ("solution", pa.string()),
        ("gold", pa.string()),
        ("unique_id", pa.string()),
        ("match_key", pa.string()),
        ("source_file", pa.string()),
        ("_line", pa.int64()),
        ("_hash", pa.string()),
        ("_file", pa.string()),
    ]
)


def _problem_rows(dataset: str, records) -> list[dict]:
    rows = []
    for r in records:
        f = Fields(r.record, r.path, r.line)
        p = problem_fields(dataset, f)
        if p.unique_id and p.unique_id.lower().startswith("test/"):
            raise f.error(
                "unique_id",
                f"{p.unique_id!r} is a test-split problem: only train splits become "
                "training problems (test items enter through eval suites and benchmarks)",
            )
        rows.append(
            {
                "problem_id": f"{dataset}:{content_id(p.question)}",
                "dataset": dataset,
                "subject": p.subject,
                "level": p.level,
                "split": "train",
                "question": p.question,
                "solution": p.solution,
                "gold": p.gold,
                "unique_id": p.unique_id,
                "match_key": match_key(p.question),
                "source_file": r.source,
                "_line": r.line,
                "_hash": content_id(p.question, p.solution),
                "_file": str(r.path),
            }
        )
    return rows


def _load_hub_records(dataset: str):
    """The real `datasets` loaders, train split only (offline, this needs the hub cache)."""
    import datasets

    repo, configs = HUB_DATASETS[dataset]
    for config in configs:
        ds = datasets.load_dataset(repo, config, split="train")
        for row, rec in enumerate(ds, start=1):
            yield DatasetRecord(Path(repo), row, rec, repo)


def ingest_problems(
    store, dataset: str, *, path=None, split: str = "train", progress: bool = False
) -> IngestResult:
    """GSM8K (openai/gsm8k, main) or MATH (EleutherAI/hendrycks_math, every subject; or MATH-500-shaped rows)
    train problems, from the Hub or from `path`: a file, a Hub folder or a save_to_disk folder
    (pairstore.ingest.dataset_files)."""
    if dataset not in HUB_DATASETS:
        raise BadInput(f"unknown dataset {dataset!r} (expected gsm8k or math)", field="dataset")
    if split != "train":
        raise BadInput(
            f"split {split!r} refused: only train splits become training problems "
            "(test items enter through eval suites)",
            field="split",
        )
    if path is not None:
        path = Path(path)
        if path.is_file() and TEST_NAME.search(path.name):
            raise BadInput(
                "this looks like a test/validation split (by its file name); only train splits "
                "become training problems (test items enter through eval suites)",
                path=str(path),
            )
        files = dataset_files(path, split="train", configs=HUB_DATASETS[dataset][1])
        records = read_files(path, files)
    else:
        records = _load_hub_records(dataset)
    result = IngestResult(f"problems:{dataset}", str(path or HUB_DATASETS[dataset][0]))
    rows = _problem_rows(dataset, _progress(records, progress, dataset))
    result.read = len(rows)
    where = str(path or HUB_DATASETS[dataset][0])
    rows, dup = _dedup_in_file(rows, lambda r: r["problem_id"], "_hash", "problem", where)
    with store.transaction():
        # Problems are keyed by their question: the same question with another solution is a clash.
        added, same = _insert_new(
            store,
            "problems",
            ["problem_id"],
            rows,
            _PROBLEM_SCHEMA,
            "i.solution <> t.solution",
            "problem",
            where,
        )
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        if path is not None:
            log_ingest(
                store,
                path,
                f"problems:{dataset}",
                result.read,
                result.added,
                sha256=files_sha256(path, files),
            )
    return result


# ---------------------------------------------------------------------------
# generations
# ---------------------------------------------------------------------------

_ITEM_PROMPT_SQL = {
    "problem": "SELECT question FROM problems WHERE problem_id = ?",
    "task": "SELECT prompt FROM tasks WHERE task_id = ?",
}


def _item_prompt(store, kind: str, item_id: str, suite: str | None):
    if kind == "eval_item":
        row = store.one(
            "SELECT prompt FROM eval_items WHERE item_id = ? AND (? IS NULL OR suite = ?) LIMIT 1",
            [item_id, suite, suite],
        )
        return None if row is None else [dict(m) for m in row[0]]
    row = store.one(_ITEM_PROMPT_SQL[kind], [item_id])
    return None if row is None else [{"role": "user", "content": row[0]}]


def parse_generation(store, rec: dict, path, line: int, model: str) -> dict:
    f = Fields(rec, path, line)
    kind = f.choice("item_kind", ITEM_KINDS, required=False) or ("prompt" if not f.has("item_id") else None)
    if kind is None:
        raise f.error("item_kind", "missing field (needed with item_id: problem, task, eval_item or prompt)")
    item_id = f.str("item_id", required=kind != "prompt", allow_int=True)
    suite = f.str("suite", required=False)
    output = f.str("output", allow_empty=True)
    if f.has("prompt"):
        prompt = f.messages("prompt")
    elif kind == "prompt":
        raise f.error("prompt", "missing field")
    else:
        prompt = _item_prompt(store, kind, item_id, suite)
        if prompt is None:
            raise f.error(
                "item_id", f"no {kind} with id {item_id!r} in the store (ingest it first or give prompt)"
            )
    sample_index = f.int("sample_index", default=0, bits=32)
    temperature = f.float("temperature")
    decoding = rec.get("decoding")
    if decoding is not None and not isinstance(decoding, dict):
        raise f.error("decoding", "expected an object of decoding settings")
    ref = item_id if item_id is not None else json.dumps(prompt, ensure_ascii=False)
    return {
        "gen_id": generation_id(model, kind, ref, sample_index, temperature, output),
        "model": model,
        "item_kind": kind,
        "item_id": item_id,
        "suite": suite,
        "prompt": prompt,
        "output": output,
        "sample_index": sample_index,
        "temperature": temperature,
        "top_p": f.float("top_p"),
        "max_new_tokens": f.int("max_new_tokens", bits=32),
        "seed": f.int("seed"),
        "decoding": None if decoding is None else json.dumps(decoding, sort_keys=True),
        "_line": line,
    }


def ingest_generations(store, path, *, model: str, progress: bool = False) -> IngestResult:
    """Outputs of `model` on problems, tasks, eval items or free prompts, with sampling settings.

    Verdicts and loop flags are left NULL here: the miners and `train sample` compute them with the
    verifier and the scanner (which live outside the store package)."""
    if not model or not model.strip():
        raise BadInput("--model is required and must not be empty", field="model")
    result = IngestResult("generations", str(path))
    rows = []
    for line, rec in _progress(read_records(path), progress, "generations"):
        result.read += 1
        row = parse_generation(store, rec, path, line, model)
        row["source_file"] = Path(path).name
        rows.append(row)
    rows, dup = _dedup_in_file(rows, lambda r: r["gen_id"], "gen_id", "generation", path)
    with store.transaction():
        added = insert_generations(store, rows)
        same = len(rows) - added
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        log_ingest(store, path, "generations", result.read, result.added)
    return result


# ---------------------------------------------------------------------------
# pairs from any file
# ---------------------------------------------------------------------------


def _refuse_unusable_pair(pair: Pair, path, line: int) -> None:
    """A user's pair file is refused, not thinned: an empty side, identical sides or an empty prompt name
    their line and field (miners drop such pairs by reason instead)."""
    ok, reason = check_pair(pair)
    if ok:
        return
    if reason == "empty side":
        field = "chosen" if not pair.chosen.strip() else "rejected"
        message = "empty or whitespace-only answer"
    elif reason == "identical sides":
        field, message = "rejected", "the same answer as chosen (a pair needs two different answers)"
    else:
        field, message = "prompt", "no user message with text"
    raise BadInput(message, path=str(path), line=line, field=field)


def ingest_pairs(
    store, path, *, source: str, miner: str = "ingest-pairs", miner_version: str = "1", progress: bool = False
) -> IngestResult:
    """Pairs from a pair file in any layout pairstore.ingest.pair_files reads; each row's origin is (file SHA-256
    prefix, line). A missing or null `rejected` makes an NLL-only `sft` row. A row with an empty side,
    identical sides or an empty prompt is refused (BadInput naming its line and field)."""
    if not source or not re.fullmatch(r"[A-Za-z0-9_.\-]+", source):
        raise BadInput("--source must be letters, digits, '.', '_' or '-'", field="source")
    result = IngestResult("pairs", str(path))
    rows = read_pair_file(path, require_chosen=True)
    prefix = sha256_file(path)[:16]
    result.read = len(rows)
    pairs = []
    for r in rows:
        pair = Pair(
            prompt=r.prompt,
            chosen=r.chosen,
            rejected=r.rejected,
            source=source,
            family=r.family,
            task_key=r.task_key,
            origins=[Origin("import", f"{prefix}:{r.line}", f"ingest pairs --source {source}")],
        )
        _refuse_unusable_pair(pair, path, r.line)
        pairs.append(pair)
    with store.transaction():
        added = add_pairs(store, pairs, miner=miner, miner_version=miner_version)
        result.added = added.added
        result.skipped.update(added.dropped)
        log_ingest(store, path, "pairs", result.read, result.added)
    return result


# ---------------------------------------------------------------------------
# judgments
# ---------------------------------------------------------------------------

HEAVY_FLAWS = ("fabrication", "hallucinated_output", "degenerate_repetition", "broken_placeholder")
JUDGED_KINDS = ("battle", "eval_item")

_JUDGMENT_SCHEMA = pa.schema(
    [
        ("judgment_id", pa.string()),
        ("battle_id", pa.string()),
        ("model_a", pa.string()),
        ("model_b", pa.string()),
        ("winner", pa.string()),
        ("heavy_flaw_a", pa.bool_()),
        ("heavy_flaw_b", pa.bool_()),
        ("judge", pa.string()),
        ("notes", pa.string()),
        ("annotator", pa.string()),
        ("prompt_hash", pa.string()),
        ("item_kind", pa.string()),
        ("flaws_a", pa.list_(pa.string())),
        ("flaws_b", pa.list_(pa.string())),
        ("origin", pa.string()),
        ("source_file", pa.string()),
        ("_line", pa.int64()),
    ]
)


def _flaw_list(f: Fields, name: str) -> list[str] | None:
    v = f.rec.get(name)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise f.error(name, "expected a list of heavy flaw names")
    for x in v:
        if x not in HEAVY_FLAWS:
            raise f.error(name, f"unknown heavy flaw {x!r} (expected one of {', '.join(HEAVY_FLAWS)})")
    return sorted(set(v))


def parse_judgment(rec: dict, path, line: int) -> dict:
    """Validate one verdict; return its `judgments` row. The optional fields (annotator, prompt_hash,
    item_kind, flaws_a/b, origin, submission_id) enter the judgment id only when given, so a file's verdicts
    keep their ids; a submission_id (the Queue page's form) makes a second submit of one form the same id."""
    f = Fields(rec, path, line)
    row = {
        "battle_id": f.str("battle_id", allow_int=True),
        "model_a": f.str("model_a"),
        "model_b": f.str("model_b"),
        "winner": f.choice("winner", WINNERS),
        "heavy_flaw_a": f.bool("heavy_flaw_a"),
        "heavy_flaw_b": f.bool("heavy_flaw_b"),
        "judge": f.str("judge", required=False),
        "notes": f.str("notes", required=False, allow_empty=True),
    }
    if row["model_a"] == row["model_b"]:
        raise f.error("model_b", "model_a and model_b are the same model")
    extras = {}
    for name in ("annotator", "prompt_hash", "origin", "submission_id"):
        if f.has(name):
            extras[name] = f.str(name)
    if f.has("item_kind"):
        extras["item_kind"] = f.choice("item_kind", JUDGED_KINDS)
    for side in ("a", "b"):
        flaws = _flaw_list(f, f"flaws_{side}")
        if flaws is not None:
            extras[f"flaws_{side}"] = flaws
            if flaws and not row[f"heavy_flaw_{side}"]:
                raise f.error(f"heavy_flaw_{side}", f"false, but flaws_{side} names {', '.join(flaws)}")
    identity = {**row, **extras}
    if "submission_id" in extras:
        identity = {"submission_id": extras["submission_id"]}
    row["judgment_id"] = content_id(json.dumps(identity, sort_keys=True))
    extras.pop("submission_id", None)
    row.update(extras)
    row["_line"] = line
    return row


def _check_judged_items(store, rows: list[dict], path) -> None:
    """Every verdict names a stored battle, or for eval items `<suite>/<item id>` of a stored item."""
    battles = {r[0] for r in store.con.execute("SELECT battle_id FROM battles").fetchall()}
    items = None
    for r in rows:
        if r.get("item_kind") == "eval_item":
            if items is None:
                items = {
                    f"{s}/{i}"
                    for s, i in store.con.execute("SELECT suite, item_id FROM eval_items").fetchall()
                }
            if r["battle_id"] not in items:
                raise BadInput(
                    f"unknown eval item {r['battle_id']!r} (expected <suite>/<item id> of a stored item)",
                    path=str(path),
                    line=r["_line"],
                    field="battle_id",
                )
        elif r["battle_id"] not in battles:
            raise BadInput(
                f"unknown battle {r['battle_id']!r} (ingest the battles first)",
                path=str(path),
                line=r["_line"],
                field="battle_id",
            )


def _write_judgments(store, rows: list[dict], path, result: IngestResult, *, log: bool) -> IngestResult:
    _check_judged_items(store, rows, path)
    rows, dup = _dedup_in_file(rows, lambda r: r["judgment_id"], "judgment_id", "judgment", path)
    with store.transaction():
        added, same = _insert_new(
            store, "judgments", ["judgment_id"], rows, _JUDGMENT_SCHEMA, "false", "judgment", path
        )
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        if log:
            log_ingest(store, path, "judgments", result.read, result.added)
    return result


def ingest_judgments(store, path, *, progress: bool = False) -> IngestResult:
    """Blind judge verdicts per battle: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b (and
    optionally annotator, prompt_hash, item_kind, flaws_a/b, origin)."""
    result = IngestResult("judgments", str(path))
    rows = []
    for line, rec in _progress(read_records(path), progress, "judgments"):
        result.read += 1
        row = parse_judgment(rec, path, line)
        row["source_file"] = Path(path).name
        rows.append(row)
    return _write_judgments(store, rows, path, result, log=True)


def add_judgment_records(store, records: list[dict], *, source: str) -> IngestResult:
    """Verdicts made in this process (the Queue page, `pairstore judge`), through the same checks as a
    file's lines, in one transaction."""
    result = IngestResult("judgments", source)
    rows = []
    for line, rec in enumerate(records, start=1):
        result.read += 1
        row = parse_judgment(rec, source, line)
        row["source_file"] = source
        rows.append(row)
    return _write_judgments(store, rows, source, result, log=False)
