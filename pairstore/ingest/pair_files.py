"""Reading pair files in every common layout: the one reader behind `ingest pairs`, `round attach` and
`audit leaks`.

    for row in read_pair_file("s2_pairs_lf1.parquet"):
        row.prompt, row.chosen, row.rejected, row.origin_ids

A pair file is parquet or JSONL (anything pairstore.ingest.records reads), made by this project or not:

- the prompt as a string or chat messages under one of PROMPT_FIELDS, with an optional `system` /
  `system_prompt` field put in front; or only inside a conversation (CONVERSATION_FIELDS: every
  message before the last assistant one is the prompt, that one the chosen answer);
- the instruction formats, every field in the prompt: Alpaca (`instruction` + `input`, `output` the
  answer, `history` the earlier [instruction, answer] turns), Dolly (`instruction` + `context`,
  `response`);
- chosen and rejected as strings or message lists (UltraFeedback-binarized rows carry the user turn
  inside them: the last assistant message is the answer); HH-RLHF's chosen / rejected dialogue strings
  ("\n\nHuman: ... \n\nAssistant: ..."), the shared turns the prompt; `completion` (or `output`,
  `response`) for an NLL-only row;
- ShareGPT turns ({"from": "human", "value": ...}) anywhere a message list goes; OpenAI content-part
  lists ([{"type": "text", "text": ...}]) as a message's content, their texts joined;
- ids: `pair_id`, `origin_ids` and every usual id column (ID_FIELDS), which the holdout matcher compares
  with held-out item ids and `ingest pairs` keeps as origins; `source`, `family` and `task_key`.

Read whole or refused: a field that carries prompt text the reader would not put in the prompt
(`input` or `context` beside a `prompt`, a content part that is not text) is a BadInput naming it.
Every problem raises BadInput naming the file, the line (or row) and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.bulk import (
    FlaggedRecord,
    NotVectorized,
    count_lines,
    first_flagged,
    first_record_error,
    flag_text,
    iter_jsonl_batches,
)
from pairstore.ingest.records import Fields, read_records
from pairstore.keys import canonical_messages

if TYPE_CHECKING:
    from pairstore.store.store import Store

PROMPT_FIELDS = ("prompt", "question", "instruction", "input", "query")
CONVERSATION_FIELDS = ("chosen", "messages", "conversations")
ID_FIELDS = (
    "battle_id",
    "origin_id",
    "item_id",
    "source_id",
    "task_id",
    "question_id",
    "prompt_id",
    "problem_id",
    "conversation_id",
    "unique_id",
    "doc_id",
    "sample_id",
    "example_id",
    "uid",
    "id",
)
# Extra prompt text of the instruction formats, joined after the instruction (Alpaca input, Dolly context).
INSTRUCTION_EXTRAS = ("input", "context")
ANSWER_FIELDS = ("completion", "output", "response")
_HH_TURN = re.compile(r"(?:^|\n\n)(Human|Assistant):[ ]?")
_ROLE_ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"}


@dataclass
class PairRow:
    """One row of a pair file."""

    row_index: int  # 0-based position in the file
    line: int  # 1-based line (JSONL) or row (parquet), for messages
    prompt: list[dict]  # canonical messages (a system prompt kept; matching drops it)
    chosen: str | None  # None only where the file was read without require_chosen
    rejected: str | None  # None: an NLL-only row, or a file with no rejected side
    pair_id: str | None = None
    origin_ids: list[str] = field(default_factory=list)
    source: str | None = None
    family: str | None = None
    task_key: str | None = None

    @property
    def required_chosen(self) -> str:
        """The chosen answer of a row read with require_chosen (which refused rows without one)."""
        assert self.chosen is not None, "read the file with require_chosen"
        return self.chosen


def _sharegpt(value):
    """ShareGPT-style turns as role/content messages; anything else unchanged."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and "from" in m and "value" in m for m in value)
    ):
        return [{"role": _ROLE_ALIASES.get(m["from"], m["from"]), "content": m["value"]} for m in value]
    return value


def _content_parts(value, f: Fields, name: str):
    """Messages whose content is an OpenAI content-part list, with the parts' texts joined; a part that is
    not text would be lost: BadInput naming it."""
    if not isinstance(value, list):
        return value
    out = []
    for i, m in enumerate(value):
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            texts = []
            for j, part in enumerate(m["content"]):
                if isinstance(part, str):
                    texts.append(part)
                elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                    if not isinstance(part.get("text"), str):
                        raise f.error(f"{name}[{i}].content[{j}].text", "expected a string")
                    texts.append(part["text"])
                else:
                    kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                    raise f.error(
                        f"{name}[{i}].content[{j}]",
                        f"a {kind!r} content part would be lost: only text parts can be read",
                    )
            m = {**m, "content": "\n".join(texts)}
        out.append(m)
    return out


def _messages(value, f: Fields, name: str) -> list[dict]:
    return canonical_messages(_content_parts(value, f, name), where=name, path=f.path, line=f.line)


def _hh_dialogue(text: str) -> list[dict] | None:
    """An HH-RLHF dialogue string ("\n\nHuman: ...\n\nAssistant: ...") as messages;
    None when it is not one."""
    parts = _HH_TURN.split(text)
    if len(parts) < 3 or parts[0].strip():
        return None
    roles = {"Human": "user", "Assistant": "assistant"}
    return [{"role": roles[r], "content": c.strip()} for r, c in zip(parts[1::2], parts[2::2])]


def _hh_pair(rec: dict, f: Fields):
    """(prompt, chosen, rejected) of an HH-RLHF row (chosen and rejected whole dialogues sharing every turn
    but the last answer), or None when the row is not one."""
    chosen, rejected = rec.get("chosen"), rec.get("rejected")
    if not isinstance(chosen, str) or "\n\nHuman:" not in chosen:
        return None
    c = _hh_dialogue(chosen)
    r = _hh_dialogue(rejected) if isinstance(rejected, str) else None
    if c is None or c[-1]["role"] != "assistant":
        raise f.error("chosen", "an HH-RLHF dialogue must end with an Assistant turn")
    if isinstance(rejected, str) and (r is None or r[-1]["role"] != "assistant"):
        raise f.error("rejected", "an HH-RLHF dialogue must end with an Assistant turn")
    if r is not None and r[:-1] != c[:-1]:
        raise f.error("rejected", "the rejected dialogue's turns before its last answer differ from chosen's")
    return c[:-1], c[-1]["content"], (r[-1]["content"] if r is not None else None)


def _history_turns(value, f: Fields) -> list[dict]:
    """Alpaca `history`: [[instruction, answer], ...] before the current instruction."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(h, (list, tuple)) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in value
    ):
        raise f.error("history", "expected a list of [instruction, answer] string pairs")
    return [
        m for q, a in value for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})
    ]


def _answer(value, f: Fields, name: str) -> str | None:
    """An answer given as a string, or as messages (the last assistant message; None when there is none)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), (str, list)):
        value = [{"role": value.get("role", "assistant"), "content": value["content"]}]
    answers = [m["content"] for m in _messages(value, f, name) if m["role"] == "assistant"]
    return answers[-1] if answers else None


def _optional_str(rec: dict, name: str) -> str | None:
    v = rec.get(name)
    return v if isinstance(v, str) and v else None


def pair_row_from_record(rec: dict, path, line: int, row_index: int) -> PairRow:
    """A pair record in any layout above -> PairRow."""
    rec = {k: _sharegpt(v) for k, v in rec.items()}
    f = Fields(rec, path, line)
    prompt = None
    conversation_answer = None
    hh = None if any(rec.get(n) is not None for n in PROMPT_FIELDS) else _hh_pair(rec, f)
    extras = [n for n in INSTRUCTION_EXTRAS if isinstance(rec.get(n), str) and rec[n].strip()]
    if hh is not None:
        prompt = hh[0]
    elif isinstance(rec.get("instruction"), str):
        # Alpaca / Dolly: the instruction, then its input or context, after any earlier turns
        text = "\n\n".join([rec["instruction"], *(rec[n] for n in extras)])
        prompt = _history_turns(rec.get("history"), f) + [{"role": "user", "content": text}]
    else:
        for name in PROMPT_FIELDS:
            if rec.get(name) is not None:
                lost = [n for n in extras if n != name]
                if lost:
                    raise f.error(
                        lost[0], f"{lost[0]!r} beside {name!r} would be lost: put it in the prompt or drop it"
                    )
                prompt = _messages(rec[name], f, name)
                break
    if prompt is None:
        for name in CONVERSATION_FIELDS:
            if rec.get(name) is not None and not isinstance(rec[name], str):
                msgs = _messages(rec[name], f, name)
                last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=len(msgs))
                prompt = msgs[:last]
                conversation_answer = msgs[last]["content"] if last < len(msgs) else None
                break
    if not prompt or not any(m["role"] == "user" for m in prompt):
        raise f.error(
            "prompt", "no prompt (expected one of " + ", ".join(PROMPT_FIELDS + CONVERSATION_FIELDS) + ")"
        )
    system = rec.get("system") or rec.get("system_prompt")
    if isinstance(system, str) and system and prompt[0]["role"] != "system":
        prompt = [{"role": "system", "content": system}] + prompt
    origin_ids = [
        str(rec[n])
        for n in ID_FIELDS
        if isinstance(rec.get(n), (str, int)) and not isinstance(rec.get(n), bool)
    ]
    extra = rec.get("origin_ids")
    if isinstance(extra, (list, tuple)):
        origin_ids += [str(v) for v in extra if v is not None]
    if hh is not None:
        chosen, rejected = hh[1], hh[2]
    else:
        chosen = _answer(rec.get("chosen"), f, "chosen")
        for name in ANSWER_FIELDS:
            if chosen is None and isinstance(rec.get(name), (str, list)):
                chosen = _answer(rec.get(name), f, name)
        if chosen is None:
            chosen = conversation_answer
        rejected = _answer(rec.get("rejected"), f, "rejected")
    return PairRow(
        row_index=row_index,
        line=line,
        prompt=prompt,
        chosen=chosen,
        rejected=rejected,
        pair_id=_optional_str(rec, "pair_id"),
        origin_ids=origin_ids,
        source=f.str("source", required=False),
        family=f.str("family", required=False),
        task_key=_optional_str(rec, "task_key"),
    )


def read_pair_file(path, *, require_chosen: bool = False) -> list[PairRow]:
    """Every row of a pair file. With `require_chosen` (a file that becomes pairs) a row without a
    chosen answer is an error naming its line. A JSONL file in the plain layout (prompt, chosen and
    rejected as strings) is read in Arrow batches (_vectorized_rows); any other the record-by-record
    way, with the same rows and the same errors."""
    fast = _vectorized_rows(path, require_chosen)
    if fast is not None:
        return fast
    return [
        _checked_row(rec, path, line, i, require_chosen) for i, (line, rec) in enumerate(read_records(path))
    ]


def _checked_row(rec: dict, path, line: int, row_index: int, require_chosen: bool) -> PairRow:
    row = pair_row_from_record(rec, path, line, row_index)
    if require_chosen and row.chosen is None:
        raise BadInput(
            "missing field (chosen, or completion for an NLL row)", path=str(path), line=line, field="chosen"
        )
    return row


# The plain layout the vectorized path reads. A record with a field of _PER_RECORD (another prompt or
# answer form, a system prompt, listed origin ids) sends the file down the per-record path.
PLAIN_SCHEMA = pa.schema(
    [(n, pa.string()) for n in ("prompt", "chosen", "rejected", "pair_id", "source", "family", "task_key")]
    + [(n, pa.string()) for n in ID_FIELDS]
)
_PER_RECORD = tuple(
    dict.fromkeys(
        [*PROMPT_FIELDS[1:], *CONVERSATION_FIELDS[1:], *ANSWER_FIELDS, *INSTRUCTION_EXTRAS, "history"]
        + ["system", "system_prompt", "origin_ids"]
    )
)


def _flags(table: pa.Table, require_chosen: bool) -> list:
    """The vectorized versions of pair_row_from_record's checks for the plain layout (pairstore.ingest.bulk):
    a flagged row is left to it. A chosen answer that is an HH-RLHF dialogue cannot occur (a prompt field
    is there), a missing one is refused only with require_chosen."""
    col = table.column
    return [
        pc.is_null(col("prompt")),
        *([pc.is_null(col("chosen"))] if require_chosen else []),
        flag_text(col("source"), required=False),
        flag_text(col("family"), required=False),
    ]


def plain_batches(path, require_chosen: bool, *more_flags):
    """A plain-layout JSONL pair file as Arrow tables (PLAIN_SCHEMA's columns) whose rows passed the
    vectorized checks (and `more_flags`: functions of a table giving masks). Raises NotVectorized where
    the file takes the per-record path, FlaggedRecord (its index in the file) at the first flagged row.
    The caller compares the rows with count_lines (blank lines)."""
    seen = 0
    for table in iter_jsonl_batches(path, PLAIN_SCHEMA, refuse=_PER_RECORD):
        hit = first_flagged(*_flags(table, require_chosen), *(f(table) for f in more_flags))
        if hit is not None:
            raise FlaggedRecord(seen + hit)
        seen += table.num_rows
        yield table


def _vectorized_rows(path, require_chosen: bool) -> list[PairRow] | None:
    """The rows of a plain-layout JSONL pair file, read in Arrow batches and checked with Arrow compute;
    None when the file takes the per-record path. A flagged record that the per-record reader refuses
    raises its error here (file, line, field)."""
    rows: list[PairRow] = []
    try:
        for table in plain_batches(path, require_chosen):
            ids = [table.column(n).to_pylist() for n in ID_FIELDS]
            columns = [table.column(n).to_pylist() for n in PLAIN_SCHEMA.names[:7]]
            for k, (prompt, chosen, rejected, pair_id, source, family, task_key) in enumerate(zip(*columns)):
                i = len(rows)
                rows.append(
                    PairRow(
                        row_index=i,
                        line=i + 1,
                        prompt=[{"role": "user", "content": prompt}],
                        chosen=chosen,
                        rejected=rejected,
                        pair_id=pair_id or None,
                        origin_ids=[col[k] for col in ids if col[k] is not None],
                        source=source,
                        family=family,
                        task_key=task_key or None,
                    )
                )
        if not rows or len(rows) != count_lines(Path(path)):
            return None  # blank lines: row numbers would not be line numbers
    except FlaggedRecord as flagged:
        records = ((line, rec) for line, rec in read_records(path))
        first_record_error(
            enumerate(records),
            flagged.index,
            lambda r: _checked_row(r[1][1], path, r[1][0], r[0], require_chosen),
        )
        return None
    except NotVectorized:
        return None
    return rows


def add_store_origins(store: Store, rows: list[PairRow]) -> None:
    """Rows whose `pair_id` is a stored pair gain the origin ids the store records for it."""
    ids = sorted({r.pair_id for r in rows if r.pair_id})
    if not ids:
        return
    with store.registered("_pf_ids", pa.table({"pair_id": pa.array(ids, type=pa.string())})):
        found = store.con.execute("""
            SELECT o.pair_id, list(DISTINCT o.origin_id ORDER BY o.origin_id)
            FROM pair_origins o SEMI JOIN _pf_ids USING (pair_id) GROUP BY o.pair_id""").fetchall()
    origins = dict(found)
    for r in rows:
        if r.pair_id in origins:
            r.origin_ids = sorted(set(r.origin_ids) | set(origins[r.pair_id]))
