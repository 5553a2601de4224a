"""Leak audit: which holdout members a pair file holds, exactly or near.

    pairstore audit leaks --holdout judge34 s2_pairs_lf1.parquet other.jsonl --json
    pairstore audit leaks --holdout judge34            # every registered mixture, attached history too

A file is any parquet or JSONL of pairs, made by this project or not: the
prompt as a string or as chat messages (a system prompt in front or not), or
only inside `chosen` as messages (UltraFeedback style). Each row is checked
with the export gate's matcher (pairstore.matching): exact = an origin id
(a `battle_id`/`origin_id`/... column, or the origins the store records for a
`pair_id`) or the match key of the user turns; near = a fuzzy match of the
normalized user turns. Near counts as leaked.

The command prints a report and exits 0 even when it finds leaks: it is an
audit of what happened. The export gate is what refuses (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pairstore.errors import BadInput, NotFound
from pairstore.keys import canonical_messages, sha256_file

PROMPT_FIELDS = ("prompt", "question", "instruction", "input", "query")
CONVERSATION_FIELDS = ("chosen", "messages", "conversations")
ID_FIELDS = ("battle_id", "origin_id", "item_id", "source_id", "task_id", "id")
EXACT_HOW = ("id", "match_key", "task_key")


@dataclass
class PairRow:
    """One row of a pair file, reduced to what audits need."""

    row_index: int
    pair_id: str | None
    origin_ids: list[str]
    prompt: list[dict]            # canonical messages (system prompt kept; matching drops it)
    chosen: str | None
    rejected: str | None
    task_key: str | None = None


def _answer(value, path, line, name) -> str | None:
    """An answer given as a string, or as messages (the last assistant message)."""
    if value is None or isinstance(value, str):
        return value
    try:
        msgs = canonical_messages(value, where=name)
    except ValueError as e:
        raise BadInput(str(e), path=str(path), line=line, field=name) from None
    answers = [m["content"] for m in msgs if m["role"] == "assistant"]
    return answers[-1] if answers else None


_ROLE_ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"}


def _sharegpt(value):
    """ShareGPT-style turns ({"from": "human", "value": ...}) as role/content messages; others unchanged."""
    if isinstance(value, list) and value and all(isinstance(m, dict) and "from" in m and "value" in m
                                                 for m in value):
        return [{"role": _ROLE_ALIASES.get(m["from"], m["from"]), "content": m["value"]} for m in value]
    return value


def pair_row_from_record(rec: dict, path, line: int, row_index: int) -> PairRow:
    """A pair record in any common layout -> PairRow (BadInput names file, line and field)."""
    rec = {k: _sharegpt(v) for k, v in rec.items()}
    prompt = None
    conversation_answer = None
    for name in PROMPT_FIELDS:
        if rec.get(name) is not None:
            try:
                prompt = canonical_messages(rec[name], where=name)
            except ValueError as e:
                raise BadInput(str(e), path=str(path), line=line, field=name) from None
            break
    if prompt is None:
        # The prompt lives inside a conversation: every message before the last assistant one.
        for name in CONVERSATION_FIELDS:
            if rec.get(name) is not None and not isinstance(rec[name], str):
                try:
                    msgs = canonical_messages(rec[name], where=name)
                except ValueError as e:
                    raise BadInput(str(e), path=str(path), line=line, field=name) from None
                last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=len(msgs))
                prompt = msgs[:last]
                conversation_answer = msgs[last]["content"] if last < len(msgs) else None
                break
    if not prompt or not any(m["role"] == "user" for m in prompt):
        raise BadInput("no prompt (expected one of " + ", ".join(PROMPT_FIELDS + CONVERSATION_FIELDS) + ")",
                       path=str(path), line=line, field="prompt")
    system = rec.get("system") or rec.get("system_prompt")
    if isinstance(system, str) and system and prompt[0]["role"] != "system":
        prompt = [{"role": "system", "content": system}] + prompt
    origin_ids = []
    for name in ID_FIELDS:
        v = rec.get(name)
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            origin_ids.append(str(v))
    extra = rec.get("origin_ids")
    if isinstance(extra, (list, tuple)):
        origin_ids += [str(v) for v in extra if v is not None]
    pair_id = rec.get("pair_id") if isinstance(rec.get("pair_id"), str) else None
    task_key = rec.get("task_key") if isinstance(rec.get("task_key"), str) else None
    chosen = _answer(rec.get("chosen"), path, line, "chosen")
    rejected = _answer(rec.get("rejected"), path, line, "rejected")
    if chosen is None and isinstance(rec.get("completion"), (str, list)):
        chosen = _answer(rec.get("completion"), path, line, "completion")
    if chosen is None:
        chosen = conversation_answer
    return PairRow(row_index, pair_id, origin_ids, prompt, chosen, rejected, task_key)


def read_pair_file(path, store=None) -> list[PairRow]:
    """Every row of a parquet or JSONL pair file. With a store, a row's `pair_id` brings its recorded origins."""
    from pairstore.records import read_records

    rows = [pair_row_from_record(rec, path, line, i) for i, (line, rec) in enumerate(read_records(path))]
    if store is not None:
        _add_store_origins(store, rows)
    return rows


def _add_store_origins(store, rows: list[PairRow]) -> None:
    ids = sorted({r.pair_id for r in rows if r.pair_id})
    if not ids:
        return
    import pyarrow as pa

    store.con.register("_leak_ids", pa.table({"pair_id": pa.array(ids, type=pa.string())}))
    try:
        found = store.con.execute("""
            SELECT o.pair_id, list(DISTINCT o.origin_id ORDER BY o.origin_id)
            FROM pair_origins o SEMI JOIN _leak_ids USING (pair_id) GROUP BY o.pair_id""").fetchall()
    finally:
        store.con.unregister("_leak_ids")
    origins = dict(found)
    for r in rows:
        if r.pair_id in origins:
            r.origin_ids = sorted(set(r.origin_ids) | set(origins[r.pair_id]))


def export_rows_from_store(store, export_id: str) -> list[PairRow]:
    """The rows of a registered export as the store records them (when its file is gone)."""
    found = store.con.execute("""
        SELECT r.row_index, p.pair_id, p.prompt, p.chosen, p.rejected, p.task_key,
               (SELECT list(DISTINCT o.origin_id ORDER BY o.origin_id) FROM pair_origins o
                 WHERE o.pair_id = p.pair_id) AS origins
        FROM export_rows r JOIN pairs p USING (pair_id)
        WHERE r.export_id = ? ORDER BY r.row_index""", [export_id]).fetchall()
    return [PairRow(int(i), pid, list(o or []), [dict(m) for m in prompt], c, rj, tk)
            for i, pid, prompt, c, rj, tk, o in found]


@dataclass
class FileLeaks:
    path: str
    sha256: str | None              # None: the registered file is missing (rows read from export_rows)
    rows: int
    leaked_ids: list[str]           # members found exactly (origin id, match key, task key)
    near_ids: list[str]             # members found only by fuzzy match
    hits: list = field(default_factory=list)   # pairstore.matching.Hit, for the detailed view
    round: str | None = None
    note: str | None = None

    def as_dict(self) -> dict:
        return {"path": self.path, "sha256": self.sha256, "rows": self.rows,
                "leaked_ids": self.leaked_ids, "near_ids": self.near_ids}


@dataclass
class LeakReport:
    name: str
    size: int
    clean: int
    leaked: int
    files: list[FileLeaks]
    leaked_members: list[str]

    def as_dict(self) -> dict:
        """The DESIGN.md contract of `audit leaks --json`."""
        return {"holdout": {"name": self.name, "size": self.size, "clean": self.clean, "leaked": self.leaked},
                "files": [f.as_dict() for f in self.files]}


def registered_mixtures(store) -> list[dict]:
    """Every registered mixture (exports, attached history included), oldest first."""
    return store.rows("SELECT export_id, round, kind, path, sha256, rows FROM exports "
                      "ORDER BY created_at, export_id")


def _scan_rows(store, holdout: str, rows: list[PairRow]) -> list:
    from pairstore.matching import candidate_table, find_holdout_hits

    if not rows:
        return []
    cands = candidate_table((r.row_index, r.pair_id, r.origin_ids, r.prompt, r.task_key) for r in rows)
    return find_holdout_hits(store, cands, set_name=holdout)


def _file_leaks(path: str, sha: str | None, rows: list[PairRow], hits: list, **extra) -> FileLeaks:
    exact = sorted({h.item_id for h in hits if h.how in EXACT_HOW})
    near = sorted({h.item_id for h in hits if h.how == "fuzzy"} - set(exact))
    return FileLeaks(path, sha, len(rows), exact, near, hits, **extra)


def audit_leaks(store, holdout: str, paths: list[str] | None = None) -> LeakReport:
    """Which members of holdout set `holdout` each file holds; no paths = every registered mixture."""
    if not store.scalar("SELECT count(*) FROM holdout_sets WHERE set_name = ?", [holdout]):
        raise NotFound(f"no holdout set {holdout!r}")
    size = store.scalar("SELECT count(*) FROM holdout WHERE set_name = ? AND removed_at IS NULL", [holdout])
    files: list[FileLeaks] = []
    if paths:
        for p in paths:
            if not Path(p).exists():
                raise BadInput("no such file", path=str(p))
            rows = read_pair_file(p, store)
            files.append(_file_leaks(str(p), sha256_file(p), rows, _scan_rows(store, holdout, rows)))
    else:
        for ex in registered_mixtures(store):
            p = ex["path"]
            if Path(p).exists():
                rows = read_pair_file(p, store)
                files.append(_file_leaks(p, sha256_file(p), rows, _scan_rows(store, holdout, rows),
                                         round=ex["round"]))
            else:
                rows = export_rows_from_store(store, ex["export_id"])
                files.append(_file_leaks(p, None, rows, _scan_rows(store, holdout, rows), round=ex["round"],
                                         note="file missing: rows read from export_rows"))
    leaked = sorted(set().union(*[set(f.leaked_ids) | set(f.near_ids) for f in files]) if files else set())
    return LeakReport(holdout, size, size - len(leaked), len(leaked), files, leaked)
