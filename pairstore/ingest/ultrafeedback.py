"""UltraFeedback binarized preference pairs into `pairs` (written by pairstore.tables.pairs).

    pairstore ingest ultrafeedback [--path DIR_OR_FILE] [--limit N --seed S]
    from pairstore.ingest.ultrafeedback import import_ultrafeedback

UltraFeedback (`HuggingFaceH4/ultrafeedback_binarized`, split `train_prefs`)
is read from the Hub with the real `datasets.load_dataset`, or offline from
`path` — a parquet, JSONL or CSV file, a Hub folder layout
(`data/train_prefs-*.parquet`) or a `save_to_disk` folder, read by the loader
every dataset shares (pairstore.ingest.dataset_files) — in the dataset's own columns: prompt,
prompt_id, chosen and rejected (message lists holding the user turn and the
assistant answer), score_chosen, score_rejected. Only the last assistant
message of chosen / rejected is kept as the answer; the turns before it are
the prompt. Source 'ultrafeedback'; origin ('import', 'ultrafeedback:<prompt_id>',
"score_chosen=8.5 > score_rejected=3"). Dropped: 'tie' (equal scores: no
preference), 'over limit' (with `limit`: the rows outside the seeded
selection, xxh3 of seed and prompt_id), 'holdout' (the prompt is held out),
plus add_pairs' reasons.

Bad records raise BadInput naming the file, the line (the row for parquet and Arrow) and
the field; nothing is written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.ingest.dataset_files import DatasetRecord, read_dataset
from pairstore.ingest.declare import Unread
from pairstore.ingest.formats import get_format
from pairstore.ingest.records import Fields, unit_of
from pairstore.keys import content_id, seeded_rank
from pairstore.store.store import Store
from pairstore.tables.pairs import Origin, Pair, PairsResult, declare_sources, write_pairs

ULTRAFEEDBACK = "HuggingFaceH4/ultrafeedback_binarized"
ULTRAFEEDBACK_SPLIT = "train_prefs"
# Recorded on every pair as pairs.miner / miner_version (the names these pairs carried when an importer
# was registered as a miner, so stores and exports stay the same).
PRODUCER, VERSION = "ultrafeedback", "1"
SOURCES = declare_sources(("ultrafeedback",), by=__name__)


# -- UltraFeedback -----------------------------------------------------------------


def _hub_records(split: str) -> list[DatasetRecord]:
    """The split from the Hub (or its cache) through the real `datasets` loader."""
    import datasets

    # Progress bars only on a terminal (quiet in pipes, logs and tests).
    quiet = not sys.stderr.isatty() and not datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        ds = datasets.load_dataset(ULTRAFEEDBACK, split=split)
    except Exception as e:  # datasets raises many types (connection, schema cast, JSON parse)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(
            f"cannot load the dataset: {first}; give --path with a local copy to work offline",
            path=f"{ULTRAFEEDBACK} ({split})",
        ) from None
    finally:
        if quiet:
            datasets.enable_progress_bars()
    where = Path(f"{ULTRAFEEDBACK} ({split})")
    # A Dataset with no format set gives each row as a dict; its __iter__ is not annotated, so pyright infers
    # the rows of every format it could be set to.
    return [
        DatasetRecord(where, row, rec, ULTRAFEEDBACK)  # pyright: ignore[reportArgumentType]
        for row, rec in enumerate(ds, start=1)
    ]


def ultrafeedback_records(
    path: str | Path | None = None, *, split: str = ULTRAFEEDBACK_SPLIT
) -> Iterable[DatasetRecord]:
    """The split's records: from the Hub, or from `path` (a file, a Hub folder or a save_to_disk folder:
    pairstore.ingest.dataset_files), each with its own file and line."""
    return _hub_records(split) if path is None else read_dataset(path, split=split)


def import_ultrafeedback(
    store: Store,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    split: str = ULTRAFEEDBACK_SPLIT,
) -> PairsResult:
    """UltraFeedback binarized preference pairs (assistant answers only), source 'ultrafeedback'."""
    if limit is not None and limit < 1:
        raise BadInput("limit must be at least 1", field="limit")
    if split.startswith("test"):
        raise BadInput(f"split {split!r} is a test split: never trained on", field="split")
    result = PairsResult(PRODUCER, VERSION)
    fmt = get_format("pairs", "ultrafeedback")
    unread = Unread(fmt)
    rows = []
    for r in ultrafeedback_records(path, split=split):
        f = Fields(r.record, r.path, r.line)
        unread.check(r.record, r.path, r.line, unit_of(r.path))
        row = fmt.parse(f)  # type: ignore[misc]  # a records format
        if row["rejected"] is None:
            raise f.error("rejected", "missing field")
        asked = f.rec.get("prompt") if isinstance(f.rec.get("prompt"), str) else row["prompt"][-1]["content"]
        prompt_id = row.get("prompt_id") or content_id(asked)
        scores = (f.float("score_chosen"), f.float("score_rejected"))
        rows.append((prompt_id, row["prompt"], row["chosen"], row["rejected"], *scores))
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
        rule = (
            f"score_chosen={sc:g} > score_rejected={sr:g}"
            if sc is not None and sr is not None
            else "binarized: chosen preferred"
        )
        pairs.append(
            Pair(
                prompt=prompt,
                chosen=chosen,
                rejected=rejected,
                source="ultrafeedback",
                origins=[Origin("import", f"ultrafeedback:{prompt_id}", rule)],
            )
        )
    with store.transaction():
        write_pairs(store, result, pairs, holdout)
    return result
