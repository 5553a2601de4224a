"""Token lengths of each round's mixture and the share of rows its max_length truncates.

    pairstore audit lengths                              # character estimate (chars / 4)
    pairstore audit lengths --tokenizer bundles/so7a     # a bundle's tokenizer (needs transformers)
    pairstore audit lengths --model so7a --round m11a --json

For every round with a registered mixture (each file of the round's latest
export: the pair file and, when there is one, its NLL-only NAME.sft.parquet),
the prompt, chosen and rejected texts are measured in tokens: with a bundle's
tokenizer (transformers AutoTokenizer, no special tokens, messages joined by
newlines: the chat template adds a few tokens per message on top), or, when no
tokenizer is given, estimated as ceil(characters / 4) — the usual rule of
thumb for English BPE vocabularies; it over-counts digits-heavy text less than
it under-counts code, so treat it as an estimate.

Truncation follows the trainer: a side is cut when prompt + that side exceeds
the recipe's train.max_length. A truncated rejected answer is usually a looped
one that ran long; a truncated chosen answer is worse (the NLL term trains on a
fragment), so it is counted separately.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pairstore.errors import BadInput, NotFound
from pairstore.progress import current as current_progress

CHARS_PER_TOKEN = 4

_TEXT = "array_to_string(list_transform({col}, lambda m: m.content), chr(10))"


@dataclass
class Counter:
    """Counts tokens of many texts at once."""

    name: str
    tokenizer: Any = None

    def count(self, texts: list[str | None]) -> np.ndarray:
        out = np.zeros(len(texts), dtype=np.int64)
        present = [i for i, t in enumerate(texts) if t is not None]
        if not present:
            return out
        if self.tokenizer is None:
            out[present] = [math.ceil(len(texts[i] or "") / CHARS_PER_TOKEN) for i in present]
        else:
            enc = self.tokenizer([texts[i] for i in present], add_special_tokens=False)["input_ids"]
            out[present] = [len(e) for e in enc]
        return out


def make_counter(
    store=None,
    *,
    tokenizer: str | None = None,
    model: str | None = None,
    check_folder: Callable[[str], None] | None = None,
) -> Counter:
    """A bundle's tokenizer (a directory, or a checkpoint's path) or the chars/4 estimate. `check_folder`
    (the CLI passes the bundle check's remote-code refusal) sees the folder before anything loads it."""
    if model is not None and tokenizer is None:
        path = (
            store.scalar("SELECT path FROM checkpoints WHERE name = ?", [model])
            if store is not None
            else None
        )
        if path is None:
            raise NotFound(f"no checkpoint {model!r} with a path (register it, or pass --tokenizer DIR)")
        tokenizer = path
    if tokenizer is None:
        return Counter(f"estimate: ceil(chars/{CHARS_PER_TOKEN})")
    if not Path(tokenizer).is_dir():
        raise BadInput("not a bundle directory", path=str(tokenizer), field="tokenizer")
    if check_folder is not None:
        check_folder(str(tokenizer))
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(tokenizer), trust_remote_code=False)
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot load a tokenizer ({str(e).splitlines()[0]})", path=str(tokenizer)) from None
    return Counter(f"tokenizer: {tokenizer}", tok)


@dataclass
class RoundLengths:
    round: str
    source: str
    rows: int
    max_length: int | None
    stats: dict = field(default_factory=dict)  # field -> {"median", "p95", "max"} in tokens
    truncated_rows: int = 0  # prompt + chosen or prompt + rejected over max_length
    truncated_chosen: int = 0
    truncated_rejected: int = 0

    @property
    def truncated_share(self) -> float:
        return self.truncated_rows / self.rows if self.rows else 0.0

    @property
    def truncated_chosen_share(self) -> float:
        return self.truncated_chosen / self.rows if self.rows else 0.0

    def as_dict(self) -> dict:
        return {
            "round": self.round,
            "source": self.source,
            "rows": self.rows,
            "max_length": self.max_length,
            "stats": self.stats,
            "truncated_rows": self.truncated_rows,
            "truncated_share": round(self.truncated_share, 6),
            "truncated_chosen": self.truncated_chosen,
            "truncated_chosen_share": round(self.truncated_chosen_share, 6),
            "truncated_rejected": self.truncated_rejected,
        }


@dataclass
class LengthReport:
    counter: str
    rounds: list[RoundLengths]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"counter": self.counter, "rounds": [r.as_dict() for r in self.rounds], "notes": self.notes}


def _stats(lengths: np.ndarray) -> dict:
    if len(lengths) == 0:
        return {"median": 0, "p95": 0, "max": 0}
    return {
        "median": float(np.median(lengths)),
        "p95": float(np.percentile(lengths, 95)),
        "max": int(lengths.max()),
    }


def measure(
    round_name: str, source: str, prompts, chosen, rejected, max_length: int | None, counter: Counter
) -> RoundLengths:
    """Lengths and truncation of one mixture's rows (texts as lists; rejected None for sft rows)."""
    p = counter.count(list(prompts))
    c = counter.count(list(chosen))
    rejected = list(rejected)
    r = counter.count(rejected)
    has_rej = np.array([x is not None for x in rejected], dtype=bool)
    out = RoundLengths(
        round_name,
        source,
        len(p),
        max_length,
        {"prompt": _stats(p), "chosen": _stats(c), "rejected": _stats(r[has_rej])},
    )
    if max_length:
        cut_c = p + c > max_length
        cut_r = has_rej & (p + r > max_length)
        out.truncated_rows = int((cut_c | cut_r).sum())
        out.truncated_chosen = int(cut_c.sum())
        out.truncated_rejected = int(cut_r.sum())
    return out


def _recipe_max_length(recipe) -> int | None:
    try:
        data = json.loads(recipe) if isinstance(recipe, str) else recipe
        v = data["train"]["max_length"]
    except (KeyError, TypeError, ValueError):
        return None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _file_columns(store, path: str) -> set[str]:
    return {r[0] for r in store.con.execute("SELECT name FROM parquet_schema(?)", [path]).fetchall()}


def _round_texts(store, export_id: str, path: str) -> tuple[str, tuple[list, list, list]]:
    """The mixture's texts: from its parquet when present (system prompt included), else from the store.

    An NLL-only file (NAME.sft.parquet: prompt, completion) has no rejected side."""
    if Path(path).is_file() and path.endswith(".parquet"):
        names = _file_columns(store, path)
        answer = "chosen" if "chosen" in names else "completion"
        rejected = _TEXT.format(col="rejected") if "rejected" in names else "NULL"
        q = (
            f"SELECT {_TEXT.format(col='prompt')}, {_TEXT.format(col=answer)}, {rejected} "
            "FROM read_parquet(?)"
        )
        try:
            rows = store.con.execute(q, [path]).fetchall()
        except Exception as e:  # a parquet that is not a pair file (duckdb raises several types)
            raise BadInput(f"not a pair parquet ({str(e).splitlines()[0]})", path=path) from None
        src = path
    else:
        rows = store.con.execute(
            f"""
            SELECT {_TEXT.format(col="p.prompt")}, p.chosen, p.rejected
            FROM export_rows r JOIN pairs p USING (pair_id) WHERE r.export_id = ? ORDER BY r.row_index""",
            [export_id],
        ).fetchall()
        src = f"export_rows of {export_id} (file missing)"
    prompts, chosen, rejected_texts = (list(c) for c in zip(*rows)) if rows else ([], [], [])
    return src, (prompts, chosen, rejected_texts)


def latest_exports(store) -> list[dict]:
    """Per round, every file of its latest export run (a pair file and its
    NAME.sft.parquet), oldest round first."""
    return store.rows("""
        SELECT r.name, r.recipe, e.export_id, e.path
        FROM rounds r
        JOIN (SELECT *, max(created_at) OVER (PARTITION BY round) AS latest FROM exports) e
          ON e.round = r.name AND e.created_at = e.latest
        ORDER BY r.added_at, r.name, e.path""")


def audit_lengths(
    store,
    *,
    counter: Counter | None = None,
    rounds: list[str] | None = None,
    max_lengths: dict[str, int] | None = None,
) -> LengthReport:
    """Lengths and truncation per round with a registered mixture (one round, some, or all).

    `max_lengths` (round -> tokens) replaces the recipe's train.max_length, e.g. with what a training run
    of the round actually used (its training_evidence.json)."""
    counter = counter or make_counter()
    found = latest_exports(store)
    if rounds:
        missing = sorted(set(rounds) - {f["name"] for f in found})
        if missing:
            raise NotFound(f"no registered mixture for round(s) {', '.join(missing)}")
        found = [f for f in found if f["name"] in rounds]
    report = LengthReport(counter.name, [])
    for f in current_progress().track(found, "audit lengths: rounds", unit="rounds"):
        src, (prompts, chosen, rejected) = _round_texts(store, f["export_id"], f["path"])
        max_length = (max_lengths or {}).get(f["name"]) or _recipe_max_length(f["recipe"])
        if max_length is None:
            report.notes.append(
                f"{f['name']} ({Path(f['path']).name}): recipe has no train.max_length; "
                "truncation not computed"
            )
        report.rounds.append(measure(f["name"], src, prompts, chosen, rejected, max_length, counter))
    return report
