"""Local copies of Hub datasets: the one reader behind every loader that takes a dataset.

    for rec in read_dataset("gsm8k/", split="train", configs=["main"]):
        rec.path, rec.line, rec.record      # the data file, its line (or row) and the record

A dataset is given as any of:

- one file: JSONL (.jsonl, .ndjson), JSON (an array, or JSONL), parquet, CSV or Arrow (text files also
  .gz or .zst), read whole whatever its split;
- a Hub folder layout, a snapshot of the dataset's repository (`huggingface-cli download --repo-type
  dataset`, `git clone`): the split's data files are found by name, as the Hub names them:
  `train-00000-of-00001.parquet`, `data/train-00000-of-00001-<hash>.parquet`, `train.jsonl`,
  `train.csv`, `train_prefs-*.parquet`, or any file under a folder named after the split. When the
  dataset has configs in folders (`main/`, `socratic/`; `algebra/`, `geometry/`, ...), `configs` names
  the ones to read;
- a `save_to_disk` folder: one split (`state.json`, `dataset_info.json`, `data-*.arrow`) or a
  DatasetDict (`dataset_dict.json` and a folder per split).

Every record keeps its own file and line, so a bad record is named exactly (pairstore.ingest.records), and
nothing here needs the `datasets` package.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pairstore.errors import BadInput
from pairstore.ingest.records import is_data_file, read_records
from pairstore.keys import sha256_file

if TYPE_CHECKING:
    from pairstore.files import StrPath


@dataclass(frozen=True)
class DatasetRecord:
    path: Path  # the data file the record is in
    line: int  # 1-based line (JSONL, CSV) or row (parquet, Arrow)
    record: dict
    source: str  # the file's name relative to the dataset folder (its name for a single file)


def _split_of(path: Path, root: Path) -> str:
    """The split a Hub data file belongs to, by its name (`train-00000-of-00001.parquet`, `train.jsonl`,
    `train_prefs-....parquet`) or, for numbered parts, by its folder (`train/0000.parquet`)."""
    stem = path.name.split(".", 1)[0]
    folders = [part for part in path.relative_to(root).parts[:-1] if part != "data"]
    if folders and (stem[:1].isdigit() or stem.startswith(("part", "shard"))):
        return folders[-1]
    return stem.split("-", 1)[0]


def _data_files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and is_data_file(p)
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _hub_files(root: Path, split: str, configs: Collection[str] | None) -> list[Path]:
    files = _data_files(root)
    if configs:
        in_configs = [p for p in files if p.relative_to(root).parts[0] in set(configs)]
        files = in_configs or files  # a flat copy without config folders is read whole
    chosen = [p for p in files if _split_of(p, root) == split]
    if not chosen:
        found = sorted({_split_of(p, root) for p in files})
        raise BadInput(
            f"no {split!r} split in this folder (found: {', '.join(found) or 'no data files'})",
            path=str(root),
        )
    return chosen


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"not a readable JSON file ({e})", path=str(path)) from None
    if not isinstance(data, dict):
        raise BadInput("expected a JSON object", path=str(path))
    return data


def _saved_files(root: Path, split: str) -> list[Path]:
    """The Arrow files of a `save_to_disk` folder, for `split`."""
    in_dict = (root / "dataset_dict.json").is_file()
    if in_dict:
        splits = _json(root / "dataset_dict.json").get("splits") or []
        if split not in splits:
            raise BadInput(
                f"no {split!r} split in this save_to_disk folder (found: {', '.join(splits)})", path=str(root)
            )
        root = root / split
    state = _json(root / "state.json")
    # A DatasetDict names its splits itself; a lone Dataset remembers the split it was loaded as, if any.
    saved_split = state.get("_split")
    if not in_dict and isinstance(saved_split, str) and saved_split and saved_split != split:
        raise BadInput(
            f"this save_to_disk folder holds the {saved_split!r} split, not {split!r}", path=str(root)
        )
    names = [f.get("filename") for f in state.get("_data_files") or [] if isinstance(f, dict)]
    if any(not isinstance(name, str) for name in names):
        raise BadInput("a data file in state.json has no filename", path=str(root / "state.json"))
    if not names:
        raise BadInput("state.json lists no data files", path=str(root / "state.json"))
    files = [root / str(name) for name in names]
    for f in files:
        if not f.is_file():
            raise BadInput("data file named by state.json is missing", path=str(f))
    return files


def dataset_files(
    path: StrPath, *, split: str = "train", configs: Collection[str] | None = None
) -> list[Path]:
    """The data files that hold `split` of the dataset at `path` (a file, a Hub folder or a save_to_disk
    folder). A single file is the whole dataset, whatever `split` says."""
    root = Path(path)
    if not root.exists():
        raise BadInput("no such file or folder", path=str(root))
    if root.is_file():
        return [root]
    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        return _saved_files(root, split)
    return _hub_files(root, split, configs)


def read_files(root: StrPath, files: list[Path]) -> Iterator[DatasetRecord]:
    """Every record of `files` (from dataset_files(root, ...)), file by file."""
    top = Path(root)
    for file in files:
        source = file.name if file == top else file.relative_to(top).as_posix()
        for line, rec in read_records(file):
            yield DatasetRecord(file, line, rec, source)


def read_dataset(
    path: StrPath, *, split: str = "train", configs: Collection[str] | None = None
) -> Iterator[DatasetRecord]:
    """Every record of `split` of the dataset at `path`, file by file (see the module docstring)."""
    yield from read_files(path, dataset_files(path, split=split, configs=configs))


def files_sha256(root: StrPath, files: list[Path]) -> str:
    """SHA-256 of one file; for several, of their names (relative to `root`) and SHA-256s in order."""
    top = Path(root)
    if len(files) == 1 and files[0] == top:
        return sha256_file(top)
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.relative_to(top).as_posix()}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()
