"""`train sample` on a Ray cluster: the items cut into shards, answered by workers, stored in one commit.

    pairstore train sample --model runs/sm11a --items tasks --samples 4 --temperature 0.8 \\
        --ray-address local --workers 2                       # a Ray cluster started here
    pairstore train sample ... --ray-address ray://head:10001 --workers 16 --work-dir /shared/sample-r3

The items, in their order, are cut into ranges of --shard-items. Each worker is a Ray actor holding one
transformers engine; it answers one range at a time and writes its generation rows to a parquet shard named
by the range (items-00000000-00000032.parquet), whole, under a temp name renamed at the end. When every
shard is there, the driver reads them all (the generations columns plus gold, or it refuses the file) and
inserts them with the audit entry in one transaction. A rerun into the same work folder skips the ranges
whose shard exists. run.json in the folder records what decides the outputs; another run's folder is
refused.

Seeds are per item (train.sample.item_seed) and the ranges do not depend on the number of workers, so greedy
batches are the same too: N workers give what one gives, sample for sample. Every worker must see the bundle
and the work folder at the same paths (one machine, or a shared filesystem). Ray is imported only here
(the `scale` extra).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pairstore.errors import BadInput, PairstoreError
from pairstore.files import atomic_path, atomic_write_json
from pairstore.options import options_json
from pairstore.progress import current as current_progress
from pairstore.store.store import Store
from pairstore.tables.audit_log import log_action
from pairstore.tables.generations import GEN_SCHEMA, insert_generations
from train.sample import (
    Item,
    SampleOptions,
    SampleResult,
    generate,
    generation_rows,
    load_items,
    sample_result,
)
from train.serving import bundle_name, load_model, load_serving

RUN_FILE = "run.json"
SHARD_SCHEMA = GEN_SCHEMA.append(pa.field("gold", pa.string()))
# Options that say where and how wide a run goes, not what it answers: a rerun may change them.
PLACEMENT = ("ray_address", "workers", "work_dir")


# ---------------------------------------------------------------------------- shards


def shard_ranges(n_items: int, shard_items: int) -> list[tuple[int, int]]:
    """[start, end) ranges of at most `shard_items` items covering 0..n_items, in order."""
    return [(start, min(start + shard_items, n_items)) for start in range(0, n_items, shard_items)]


def shard_name(start: int, end: int) -> str:
    return f"items-{start:08d}-{end:08d}.parquet"


def write_shard(path: Path, rows: list[dict]) -> None:
    """One range's generation rows as a parquet file, written whole (temp name, renamed)."""
    table = pa.Table.from_pylist(
        [{c: r.get(c) for c in SHARD_SCHEMA.names} for r in rows], schema=SHARD_SCHEMA
    )
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_shard(path: Path, items: list[Item]) -> list[dict]:
    """The rows of one shard, every column as SHARD_SCHEMA says, every row of one of `items` (the range
    the name says); otherwise BadInput naming the file, and the row or column."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise BadInput(f"not a readable parquet shard ({e})", path=str(path)) from None
    schema = table.schema.remove_metadata()
    for want in SHARD_SCHEMA:
        if want.name not in schema.names:
            raise BadInput("missing column", path=str(path), field=want.name)
        got = schema.field(want.name)
        if not got.type.equals(want.type):
            raise BadInput(f"expected {want.type}, found {got.type}", path=str(path), field=want.name)
    if len(schema) != len(SHARD_SCHEMA):
        extra = sorted(set(schema.names) - set(SHARD_SCHEMA.names))
        raise BadInput(f"unexpected columns {extra}", path=str(path))
    ids = {it.item_id for it in items}
    rows = table.select(SHARD_SCHEMA.names).to_pylist()
    for number, row in enumerate(rows, 1):
        if row["item_id"] not in ids:
            raise BadInput(
                f"item {row['item_id']!r} is not in this shard's range",
                path=str(path),
                line=number,
                field="item_id",
            )
        if not row["gen_id"]:
            raise BadInput("empty gen_id", path=str(path), line=number, field="gen_id")
    return rows


def run_key(options: SampleOptions, name: str, items: list[Item]) -> dict[str, Any]:
    """What decides a run's outputs: the options but where they run, the model name, the items, the bundle."""
    decided = {k: v for k, v in options_json(options).items() if k not in PLACEMENT}
    ids = hashlib.sha256("\x1f".join(it.item_id for it in items).encode()).hexdigest()
    return {
        "options": decided,
        "model_name": name,
        "bundle": str(Path(options.model).resolve()),
        "items": len(items),
        "item_ids_sha256": ids,
    }


def work_folder(store: Store, options: SampleOptions, key: dict[str, Any]) -> Path:
    """The run's work folder (given, or beside the store named by the run), with run.json recording `key`;
    a folder holding another run's run.json is BadInput."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    if options.work_dir is not None:
        folder = Path(options.work_dir)
    elif store.path and str(store.path) != ":memory:":
        folder = Path(store.path).resolve().parent / "sample-work" / f"{key['model_name']}-{digest}"
    else:
        raise BadInput("give --work-dir: the store has no folder to put shards beside", field="work_dir")
    recorded = folder / RUN_FILE
    if recorded.exists():
        try:
            known = json.loads(recorded.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise BadInput(f"not a JSON file ({e})", path=str(recorded)) from None
        if known != key:
            changed = sorted(k for k in set(key) | set(known) if key.get(k) != known.get(k))
            raise BadInput(
                f"the work folder holds another run's shards ({', '.join(changed)} differ); give another "
                "--work-dir or remove it",
                path=str(recorded),
            )
    else:
        atomic_write_json(recorded, key)
    return folder


# ---------------------------------------------------------------------------- workers


class ShardWorker:
    """One Ray actor's engine: the bundle loaded once (transformers), answering one range at a time."""

    def __init__(self, options: SampleOptions) -> None:
        import torch

        torch.set_num_threads(1)  # one CPU per actor, as it is declared to Ray
        self.options = options
        self.serving = load_serving(options.model, trust_remote_code=options.trust_remote_code)
        self.model = load_model(
            self.serving.path,
            trust_remote_code=options.trust_remote_code,
            device="cuda" if torch.cuda.is_available() else None,
        )

    def answer(self, name: str, items: list[Item], path: str) -> int:
        """Answer `items` and write their rows to the shard at `path`; returns the rows written."""
        outputs, settings = generate(
            self.serving, items, self.options, self.options.sampling, model=self.model
        )
        rows = generation_rows(name, items, outputs, settings, self.serving)
        write_shard(Path(path), rows)
        return len(rows)


def _import_ray() -> Any:
    """The ray module (by name, so the type checker reads no Ray sources where Ray is installed)."""
    try:
        ray = importlib.import_module("ray")
    except ImportError:
        raise BadInput(
            "--ray-address needs Ray: pip install 'pairstore[scale]'", field="ray_address"
        ) from None
    return ray


def _run_workers(
    options: SampleOptions, name: str, items: list[Item], pending: list[tuple[int, int]], work: Path
) -> None:
    """Answer every pending range on the Ray cluster, each into its shard; the cluster joined (or, for
    'local', started) here and left as found."""
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        try:
            if options.ray_address == "local":
                ray.init(num_cpus=options.workers, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=options.ray_address, log_to_driver=False)
        except ConnectionError as e:
            raise PairstoreError(f"cannot reach the Ray cluster at {options.ray_address}: {e}") from None
        started = True
    actors: list[Any] = []
    try:
        remote = ray.remote(num_cpus=1)(ShardWorker)
        actors = [remote.remote(options) for _ in range(min(options.workers, len(pending)))]
        queue = list(pending)
        running: dict[Any, tuple[Any, tuple[int, int]]] = {}

        def submit(actor: Any) -> None:
            start, end = queue.pop(0)
            ref = actor.answer.remote(name, items[start:end], str(work / shard_name(start, end)))
            running[ref] = (actor, (start, end))

        for actor in actors:
            if queue:
                submit(actor)
        total = sum(end - start for start, end in pending)
        with current_progress().stage("sample (ray)", total=total, unit="prompts") as stage:
            while running:
                (ref,), _ = ray.wait(list(running), num_returns=1)
                actor, (start, end) = running.pop(ref)
                ray.get(ref)  # a worker's error is raised here
                stage.advance(end - start)
                if queue:
                    submit(actor)
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()


# ---------------------------------------------------------------------------- the run


def sample_on_ray(store: Store, options: SampleOptions, *, items: list[Item] | None = None) -> SampleResult:
    """train.sample.sample with `options.ray_address`: see the module docstring."""
    load_serving(options.model, trust_remote_code=options.trust_remote_code)  # a bad bundle stops here
    todo = load_items(store, options.items, options.n) if items is None else list(items)
    name = options.name or bundle_name(store, options.model)
    ranges = shard_ranges(len(todo), options.shard_items)
    work = work_folder(store, options, run_key(options, name, todo))
    pending = [(s, e) for s, e in ranges if not (work / shard_name(s, e)).exists()]
    if pending:
        _run_workers(options, name, todo, pending, work)
    rows: list[dict] = []
    answered: set[str] = set()
    for start, end in ranges:
        shard = read_shard(work / shard_name(start, end), todo[start:end])
        answered.update(r["item_id"] for r in shard)
        rows.extend(shard)
    with store.transaction():
        added = insert_generations(store, rows)
        log_action(
            store,
            "sample",
            name,
            {
                "generations": len(rows),
                "added": added,
                "options": options_json(options),
                "work_dir": str(work.resolve()),
                "shards": len(ranges),
                "shards_reused": len(ranges) - len(pending),
            },
        )
    return sample_result(name, todo, len(todo) - len(answered), rows, added)
