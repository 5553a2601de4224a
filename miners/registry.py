"""The miner registry, shared by the library and `pairstore mine`, and what every miner has in common.

    from miners.registry import run_miner, miner_names
    result = run_miner(store, "battle")            # -> MineResult
    result.kept, result.dropped, result.pair_ids

    pairstore mine list                           # the registered miners
    pairstore mine battle

A miner is a function `fn(store, **options) -> MineResult` registered under a
name with a version (`@register("battle", version="1")`). The name and
version are recorded on every pair it writes (pairs.miner, pairs.miner_version,
pair_origins.miner). Every miner writes through pairstore.tables.pairs.add_pairs, so
a rerun adds nothing (pairs dedup by content id; a new origin of a known pair
is added to pair_origins) and empty or identical sides are dropped by reason.

Miners drop what is held out at the source with pairstore.holdout.sets.HoldoutFilter
(write_pairs checks every pair against it too); the export gate checks again.
Outputs are judged by miners.judge (the verifier and the loop scanner).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pairstore.errors import NotFound, PairstoreError
from pairstore.holdout.sets import HoldoutFilter
from pairstore.tables.pairs import Pair, add_pairs

# Modules that register the built-in miners; imported on first use of the registry.
BUILTIN_MODULES = (
    "miners.battle",
    "miners.self_repair",
    "miners.loopfix",
    "miners.style",
    "miners.importers",
)


@dataclass
class MineResult:
    """What one miner run did: new pairs, drops by reason, and tallies of what it looked at."""

    miner: str
    version: str
    kept: int = 0  # new pairs written
    new_origins: int = 0  # origins written (new and known pairs)
    dropped: Counter = field(default_factory=Counter)  # reason -> count (see each miner's docstring)
    stats: Counter = field(default_factory=Counter)  # what was looked at: battles, generations, wrong, ...
    pair_ids: list[str] = field(default_factory=list)  # ids of every pair the miner produced, in order
    by_source: Counter = field(default_factory=Counter)  # produced pairs per source (self_repair/gold_repair)
    # seconds: verify_s / scan_s inside the verifier / scanner (summed over worker processes),
    # judge_wall_s judging on the clock, write_s writing verdicts, pairs and origins
    timings: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "miner": self.miner,
            "version": self.version,
            "kept": self.kept,
            "new_origins": self.new_origins,
            "dropped": dict(sorted(self.dropped.items())),
            "stats": dict(sorted(self.stats.items())),
            "by_source": dict(sorted(self.by_source.items())),
            "pairs": len(self.pair_ids),
        }


@dataclass(frozen=True)
class MinerSpec:
    name: str
    version: str
    fn: Callable[..., MineResult]
    summary: str


_REGISTRY: dict[str, MinerSpec] = {}
_loaded = False


def register(name: str, *, version: str):
    """Decorator: register `fn(store, **options) -> MineResult` as miner `name`."""

    def wrap(fn):
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise PairstoreError(f"miner {name!r} registered twice")
        summary = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        _REGISTRY[name] = MinerSpec(name, version, fn, summary)
        fn.miner_name, fn.miner_version = name, version
        return fn

    return wrap


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True


def miners() -> dict[str, MinerSpec]:
    """name -> MinerSpec of every registered miner, sorted by name."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def miner_names() -> list[str]:
    return list(miners())


def get_miner(name: str) -> MinerSpec:
    specs = miners()
    key = name.replace("-", "_")
    if key not in specs:
        raise NotFound(f"no miner {name!r} (registered: {', '.join(specs)})")
    return specs[key]


def run_miner(store, name: str, **options) -> MineResult:
    """Run the registered miner `name` on `store` with its options."""
    return get_miner(name).fn(store, **options)


def new_result(fn) -> MineResult:
    """An empty result stamped with the registered name and version of miner function `fn`."""
    return MineResult(miner=fn.miner_name, version=fn.miner_version)


def write_pairs(
    store, result: MineResult, pairs: Iterable[Pair], holdout: HoldoutFilter | None = None
) -> MineResult:
    """Write `pairs` through add_pairs and fold its counts into `result`.

    With a holdout filter, a pair whose prompt's match key (or task key) is
    held out is dropped as 'holdout' here too: a last check for prompts
    that reach a miner by another road than their item id.
    """
    kept = []
    for p in pairs:
        if holdout is not None and holdout.holds_pair(p):
            result.dropped["holdout"] += 1
            continue
        kept.append(p)
    added = add_pairs(store, kept, miner=result.miner, miner_version=result.version)
    result.kept += added.added
    result.new_origins += added.new_origins
    result.dropped.update(added.dropped)
    result.pair_ids.extend(added.pair_ids)
    ids = set(added.pair_ids)
    for p in kept:
        if p.pair_id in ids:
            result.by_source[p.source] += 1
    return result


def without_system(messages: list[dict]) -> list[dict]:
    """A pair prompt carries no system message: the round's recipe supplies it at export."""
    return [m for m in messages if m["role"] != "system"]
