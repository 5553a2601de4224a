"""The miner registry, shared by the library and `pairstore mine`, and what every miner has in common.

    from miners.registry import run_miner, miners
    result = run_miner(store, "battle")            # -> MineResult
    result.kept, result.dropped, result.produced, result.ids_digest
    result.pair_ids                                # empty from a miner that streams its generations

    pairstore mine list                           # the registered miners
    pairstore mine battle

A miner is declared once, in its own module of this package: a frozen dataclass of its options (each
field's default, help and command-line form from `option(...)`, pairstore.options), and a function
`fn(store, options) -> MineResult` registered with its name, version, options class and the pair
sources it writes:

    @dataclass(frozen=True, kw_only=True)
    class BattleOptions:
        where: str | None = option(None, help="Only battles matching this SQL condition over `battles`.")

    @register("battle", version="1", options=BattleOptions, sources=("battle",))
    def mine_battles(store, options: BattleOptions) -> MineResult: ...

Everything else follows from that: the registry finds every module of the package (no list to edit),
`pairstore mine NAME` is built from the options (pairstore.cli.mine), a recipe may name the declared
sources (pairstore.rounds.recipes.known_sources), and the registered function is called either with an
options object or with the options as keywords (`mine_battles(store, where="...")`).

The name and version are recorded on every pair the miner writes (pairs.miner, pairs.miner_version,
pair_origins.miner). Every miner writes through `write_pairs` (pairstore.tables.pairs.add_pairs), so
a rerun adds nothing (pairs dedup by content id; a new origin of a known pair is added to
pair_origins) and empty or identical sides are dropped by reason.

Miners drop what is held out at the source with pairstore.holdout.sets.HoldoutFilter
(write_pairs checks every pair against it too); the export gate checks again.
Outputs are judged by miners.judge (the verifier and the loop scanner).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pairstore.errors import BadInput, NotFound, PairstoreError
from pairstore.options import OptionSpec, option, option_specs
from pairstore.progress import current as current_progress
from pairstore.store.store import Store
from pairstore.tables.pairs import PairsResult, add_source_loader, declare_sources, write_pairs

__all__ = [
    "WORKERS_HELP",
    "MineResult",
    "MinerSpec",
    "OptionSpec",
    "get_miner",
    "miner_names",
    "miners",
    "new_result",
    "option",
    "register",
    "run_miner",
    "without_system",
    "write_pairs",
]


# The help of every miner's `workers` option (the processes that verify and scan).
WORKERS_HELP = (
    "Processes that verify and scan; more helps on idle cores only. The result does not depend on it."
)


class MineResult(PairsResult):
    """What one miner run did (pairstore.ingest.pairs.PairsResult, stamped with the
    miner's name and version)."""


# -- options ----------------------------------------------------------------------------
# Declared with pairstore.options.option (shared by every declaration: miners, merge methods, commands).


# -- the registry ----------------------------------------------------------------------


@dataclass(frozen=True)
class MinerSpec:
    name: str
    version: str
    fn: Callable[..., MineResult]  # fn(store, options=None, **options): the registered wrapper
    summary: str  # the first line of the miner's docstring
    help: str  # its whole docstring
    options: type  # the options dataclass
    sources: tuple[str, ...]  # the pair sources it writes

    @property
    def option_specs(self) -> tuple[OptionSpec, ...]:
        return option_specs(self.options)

    def make_options(self, values: dict[str, Any]) -> Any:
        """The options object from keywords; an unknown one is bad input naming it."""
        known = {f.name for f in dataclasses.fields(self.options)}
        for key in values:
            if key not in known:
                raise BadInput(
                    f"miner {self.name} has no option {key!r} (options: {', '.join(sorted(known))})"
                )
        try:
            return self.options(**values)
        except TypeError as e:  # a required option left out
            raise BadInput(f"miner {self.name}: {e}") from None


_REGISTRY: dict[str, MinerSpec] = {}
_loaded = False
F = TypeVar("F", bound=Callable[..., MineResult])


def register(name: str, *, version: str, options: type, sources: tuple[str, ...]) -> Callable[[F], F]:
    """Decorator: register `fn(store, options) -> MineResult` as miner `name`, writing pairs of `sources`.

    The registered function takes an options object or the options as keywords, so
    `fn(store, model="m")` and `fn(store, Options(model="m"))` are the same run."""
    if not dataclasses.is_dataclass(options):
        raise PairstoreError(f"miner {name!r}: options must be a dataclass")
    option_specs(options)  # every field declared with option(), of a type the command line can take

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(store: Store, options_obj: Any = None, /, **values: Any) -> MineResult:
            spec = _REGISTRY[name]
            if options_obj is None:
                options_obj = spec.make_options(values)
            elif values:
                raise BadInput(f"miner {name}: give an options object or keywords, not both")
            # The miner's own stages (reading, verifying) report inside this one; its line is the total.
            with current_progress().stage(f"mine {name}", unit="pairs") as stage:
                result = fn(store, options_obj)
                stage.advance(result.kept)
            return result

        if name in _REGISTRY and _REGISTRY[name].fn.__wrapped__ is not fn:  # type: ignore[attr-defined]
            raise PairstoreError(f"miner {name!r} registered twice")
        declare_sources(tuple(sources), by=f"miner {name}")
        doc = (fn.__doc__ or "").strip()
        summary = doc.splitlines()[0] if doc else ""
        _REGISTRY[name] = MinerSpec(name, version, run, summary, doc, options, tuple(sources))
        run.miner_name, run.miner_version = name, version  # type: ignore[attr-defined]
        fn.miner_name, fn.miner_version = name, version  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap


def _load_miner_modules() -> None:
    """Import every module of this package once: a miner registers itself when its module is imported."""
    global _loaded
    if _loaded:
        return
    package = importlib.import_module(__package__ or "miners")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _loaded = True


# A recipe may name any miner's source: whoever reads the declared sources gets every miner loaded.
add_source_loader(_load_miner_modules)


def miners() -> dict[str, MinerSpec]:
    """name -> MinerSpec of every registered miner, sorted by name."""
    _load_miner_modules()
    return dict(sorted(_REGISTRY.items()))


def miner_names() -> list[str]:
    return list(miners())


def get_miner(name: str) -> MinerSpec:
    specs = miners()
    key = name.replace("-", "_")
    if key not in specs:
        raise NotFound(f"no miner {name!r} (registered: {', '.join(specs)})")
    return specs[key]


def run_miner(store: Store, name: str, **options: Any) -> MineResult:
    """Run the registered miner `name` on `store` with its options (keywords of its options dataclass)."""
    return get_miner(name).fn(store, **options)


def new_result(fn: Callable[..., Any]) -> MineResult:
    """An empty result stamped with the registered name and version of miner function `fn`."""
    return MineResult(miner=fn.miner_name, version=fn.miner_version)  # type: ignore[attr-defined]


def without_system(messages: list[dict]) -> list[dict]:
    """A pair prompt carries no system message: the round's recipe supplies it at export."""
    return [m for m in messages if m["role"] != "system"]
