"""Reading pair files in every common layout: the one reader behind `ingest pairs`, `round attach` and
`audit leaks`.

    for row in read_pair_file("s2_pairs_lf1.parquet"):
        row.prompt, row.chosen, row.rejected, row.origin_ids

A pair file is parquet or JSONL (anything pairstore.ingest.records reads), made by this project or not:

- the prompt as a string or chat messages under one of PROMPT_FIELDS, with an optional `system` /
  `system_prompt` field put in front; or only inside a conversation (CONVERSATION_FIELDS: every
  message before the last assistant one is the prompt, that one the chosen answer);
- chosen and rejected as strings or message lists (UltraFeedback-binarized rows carry the user turn
  inside them: the last assistant message is the answer); `completion` for an NLL-only row;
- ShareGPT turns ({"from": "human", "value": ...}) anywhere a message list goes;
- ids: `pair_id`, `origin_ids` and the usual id columns (ID_FIELDS), which the holdout matcher compares
  with held-out item ids; `source`, `family` and `task_key` when present.

Every problem raises BadInput naming the file, the line (or row) and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.records import Fields, read_records
from pairstore.keys import canonical_messages

PROMPT_FIELDS = ("prompt", "question", "instruction", "input", "query")
CONVERSATION_FIELDS = ("chosen", "messages", "conversations")
ID_FIELDS = ("battle_id", "origin_id", "item_id", "source_id", "task_id", "id")
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


def _messages(value, f: Fields, name: str) -> list[dict]:
    return canonical_messages(value, where=name, path=f.path, line=f.line)


def _answer(value, f: Fields, name: str) -> str | None:
    """An answer given as a string, or as messages (the last assistant message; None when there is none)."""
    if value is None or isinstance(value, str):
        return value
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
    for name in PROMPT_FIELDS:
        if rec.get(name) is not None:
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
    chosen = _answer(rec.get("chosen"), f, "chosen")
    if chosen is None and isinstance(rec.get("completion"), (str, list)):
        chosen = _answer(rec.get("completion"), f, "completion")
    if chosen is None:
        chosen = conversation_answer
    return PairRow(
        row_index=row_index,
        line=line,
        prompt=prompt,
        chosen=chosen,
        rejected=_answer(rec.get("rejected"), f, "rejected"),
        pair_id=_optional_str(rec, "pair_id"),
        origin_ids=origin_ids,
        source=f.str("source", required=False),
        family=f.str("family", required=False),
        task_key=_optional_str(rec, "task_key"),
    )


def read_pair_file(path, *, require_chosen: bool = False) -> list[PairRow]:
    """Every row of a pair file. With `require_chosen` (a file that becomes pairs) a row without a
    chosen answer is an error naming its line."""
    rows = []
    for i, (line, rec) in enumerate(read_records(path)):
        row = pair_row_from_record(rec, path, line, i)
        if require_chosen and row.chosen is None:
            raise BadInput(
                "missing field (chosen, or completion for an NLL row)",
                path=str(path),
                line=line,
                field="chosen",
            )
        rows.append(row)
    return rows


def add_store_origins(store, rows: list[PairRow]) -> None:
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
