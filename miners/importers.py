"""Importers: UltraFeedback binarized and handcrafted compliance pairs, as miners.

    pairstore mine ultrafeedback [--path DIR_OR_FILE] [--limit N --seed S]
    pairstore mine compliance compliance.jsonl
    from miners.importers import import_ultrafeedback, import_compliance

UltraFeedback (`HuggingFaceH4/ultrafeedback_binarized`, split `train_prefs`)
is read with the real `datasets.load_dataset`: from the Hub, or offline from
`path` — a parquet or JSONL file, or a folder holding the dataset's own files
(`data/train_prefs-*.parquet`) — in the dataset's own columns: prompt,
prompt_id, chosen and rejected (message lists holding the user turn and the
assistant answer), score_chosen, score_rejected. Only the last assistant
message of chosen / rejected is kept as the answer; the turns before it are
the prompt. Source 'ultrafeedback'; origin ('import', 'ultrafeedback:<prompt_id>',
"score_chosen=8.5 > score_rejected=3"). Dropped: 'tie' (equal scores: no
preference), 'over limit' (with `limit`: the rows outside the seeded
selection, xxh3 of seed and prompt_id), plus add_pairs' reasons.

Compliance JSONL/parquet (handcrafted): one record per line, either
{prompt, chosen, rejected} -> a pair, source 'compliance', or {prompt, target}
-> an NLL-only `sft` row (rejected None), source 'compliance_sft'. prompt is a
string or a message list (kept as given, system message included); optional
`id` (the origin id; default "<file name>:<line>") and `family`.

Bad records raise BadInput naming the file, the line (the row for parquet or a folder) and
the field; nothing is written. Both importers also drop rows whose prompt is
held out ('holdout'), like every miner.
"""

from __future__ import annotations

import sys
from pathlib import Path

from miners.registry import MineResult, new_result, register, write_pairs
from pairstore.errors import BadInput
from pairstore.holdout import HoldoutFilter
from pairstore.keys import content_id, seeded_rank
from pairstore.pairs import Origin, Pair
from pairstore.records import Fields, file_format, read_records

ULTRAFEEDBACK = "HuggingFaceH4/ultrafeedback_binarized"
ULTRAFEEDBACK_SPLIT = "train_prefs"


# -- UltraFeedback -----------------------------------------------------------------

def _local_files(path: Path, split: str) -> tuple[str, list[str]]:
    """(datasets builder, data files) for a local file or a folder with the dataset's files."""
    if path.is_dir():
        files = sorted(str(p) for p in path.rglob(f"{split}-*.parquet")) or \
            sorted(str(p) for p in path.rglob(f"{split}*.parquet"))
        if files:
            return "parquet", files
        files = sorted(str(p) for p in path.rglob(f"{split}*.jsonl")) or \
            sorted(str(p) for p in path.rglob(f"{split}*.json"))
        if files:
            return "json", files
        raise BadInput(f"no {split} parquet or JSONL files in this folder", path=str(path))
    if not path.exists():
        raise BadInput("no such file or folder", path=str(path))
    return ("parquet" if file_format(path) == "parquet" else "json"), [str(path)]


def load_ultrafeedback(path=None, *, split: str = ULTRAFEEDBACK_SPLIT):
    """The split as a `datasets.Dataset`: from the Hub, or from local files when `path` is given."""
    import datasets

    # Progress bars only on a terminal (quiet in pipes, logs and tests).
    quiet = not sys.stderr.isatty() and not datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        if path is None:
            return datasets.load_dataset(ULTRAFEEDBACK, split=split)
        builder, files = _local_files(Path(path), split)
        return datasets.load_dataset(builder, data_files={"train": files}, split="train")
    except BadInput:
        raise
    except Exception as e:  # datasets raises many types (connection, schema cast, JSON parse)
        where = str(path) if path is not None else f"{ULTRAFEEDBACK} ({split})"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        hint = "; give --path with a local copy to work offline" if path is None else ""
        raise BadInput(f"cannot load the dataset: {first}{hint}", path=where) from None
    finally:
        if quiet:
            datasets.enable_progress_bars()


def _jsonl_line(path: str, index: int) -> int:
    """The 1-based file line of the index-th (0-based) non-blank line of a JSONL file."""
    seen = -1
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if raw.strip():
                seen += 1
                if seen == index:
                    return lineno
    return index + 1


def _where(path, split: str, index: int) -> tuple[str, int, str]:
    """(file, line or row, unit) of record `index` of the loaded split, for error messages."""
    if path is None:
        return f"{ULTRAFEEDBACK} ({split})", index + 1, "row"
    path = Path(path)
    if path.is_file() and file_format(path) == "jsonl":
        return str(path), _jsonl_line(str(path), index), "line"
    return str(path), index + 1, "row"


def _answer_and_prompt(f: Fields, name: str) -> tuple[list[dict], str]:
    msgs = f.messages(name)
    if msgs[-1]["role"] != "assistant":
        raise f.error(name, "the last message must be the assistant's answer")
    if len(msgs) < 2 or msgs[-2]["role"] != "user":
        raise f.error(name, "expected the user turn before the assistant's answer")
    return msgs[:-1], msgs[-1]["content"]


@register("ultrafeedback", version="1")
def import_ultrafeedback(store, *, path=None, limit: int | None = None, seed: int = 0,
                         split: str = ULTRAFEEDBACK_SPLIT) -> MineResult:
    """UltraFeedback binarized preference pairs (assistant answers only), source 'ultrafeedback'."""
    if limit is not None and limit < 1:
        raise BadInput("limit must be at least 1", field="limit")
    if split.startswith("test"):
        raise BadInput(f"split {split!r} is a test split: never trained on", field="split")
    result = new_result(import_ultrafeedback)
    ds = load_ultrafeedback(path, split=split)
    records = ds.to_list()
    rows = []
    for i, rec in enumerate(records):
        try:
            f = Fields(rec, "", i + 1)
            prompt_text = f.str("prompt")
            prompt_id = f.str("prompt_id", required=False) or content_id(prompt_text)
            prompt, chosen = _answer_and_prompt(f, "chosen")
            rejected_prompt, rejected = _answer_and_prompt(f, "rejected")
            if rejected_prompt != prompt:
                raise f.error("rejected", "its turns before the answer differ from chosen's")
            score_chosen, score_rejected = f.float("score_chosen"), f.float("score_rejected")
        except BadInput as e:
            file, line, unit = _where(path, split, i)
            raise BadInput(e.reason, path=file, line=line, field=e.field, unit=unit) from None
        rows.append((prompt_id, prompt, chosen, rejected, score_chosen, score_rejected))
    result.stats["rows"] = len(rows)
    if limit is not None and len(rows) > limit:
        ranked = sorted(range(len(rows)), key=lambda k: (seeded_rank(seed, rows[k][0]), k))
        keep = set(ranked[:limit])
        result.dropped["over limit"] += len(rows) - limit
        rows = [r for k, r in enumerate(rows) if k in keep]
    holdout = HoldoutFilter.load(store)
    pairs = []
    for prompt_id, prompt, chosen, rejected, sc, sr in rows:
        if sc is not None and sr is not None and sc == sr:
            result.dropped["tie"] += 1
            continue
        rule = (f"score_chosen={sc:g} > score_rejected={sr:g}" if sc is not None and sr is not None
                else "binarized: chosen preferred")
        pairs.append(Pair(prompt=prompt, chosen=chosen, rejected=rejected, source="ultrafeedback",
                          origins=[Origin("import", f"ultrafeedback:{prompt_id}", rule)]))
    with store.transaction():
        write_pairs(store, result, pairs, holdout)
    return result


# -- handcrafted compliance pairs and NLL rows -------------------------------------

@register("compliance", version="1")
def import_compliance(store, *, path) -> MineResult:
    """Handcrafted compliance pairs {prompt, chosen, rejected} and NLL rows {prompt, target}."""
    result = new_result(import_compliance)
    name = Path(path).name
    pairs = []
    for line, rec in read_records(path):
        f = Fields(rec, path, line)
        prompt = f.messages("prompt")
        origin_id = f.str("id", required=False) or f"{name}:{line}"
        family = f.str("family", required=False)
        if f.has("target"):
            if f.has("chosen") or f.has("rejected"):
                raise f.error("target", "give either target (an NLL row) or chosen and rejected, not both")
            target = f.str("target")
            result.stats["sft rows"] += 1
            pairs.append(Pair(prompt=prompt, chosen=target, rejected=None, source="compliance_sft", family=family,
                              origins=[Origin("import", origin_id, "handcrafted compliance NLL row")]))
        else:
            chosen = f.str("chosen")
            rejected = f.str("rejected")
            result.stats["pairs"] += 1
            pairs.append(Pair(prompt=prompt, chosen=chosen, rejected=rejected, source="compliance", family=family,
                              origins=[Origin("import", origin_id,
                                              "handcrafted: compliant chosen, non-compliant rejected")]))
    holdout = HoldoutFilter.load(store)
    with store.transaction():
        write_pairs(store, result, pairs, holdout)
    return result
