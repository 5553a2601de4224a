"""The family registry, shared by the library and `pairstore generate`, and how a family is declared.

    from generators.registry import families, get_family, resolve_families
    families()["digit_sum"].make(seed=1, draw=0)       # -> Task
    resolve_families("word_count,digit_sum")           # -> ["word_count", "digit_sum"] (dealing order)

    pairstore generate families                        # the declarations, as a table

A family is declared once, in its own module of this package: a subclass of generators.base.Family
(its hooks draw_params, solve and explain) registered with its name, version, place in the dealing
order, phrasings per mode, difficulty levels and the form of its gold answers:

    @register(
        "digit_sum",
        version="1",
        order=40,
        summary="sum of the digits of a large number; or iterated to a single digit",
        phrasings={"sum": (...), "digital_root": (...)},     # mode -> at least five templates
        levels={1: "6-12 digits", 2: "13-30 digits", 3: "31-80 digits"},
        gold="an integer",
    )
    class DigitSum(Family): ...

Everything else follows from that: the registry imports every module of the package (no list to edit),
`pairstore generate families`, the validation of `generate loopfix --families` and the family table in
the package's docstring (`help(generators)`) are built from the declarations.

`order` is the order tasks are dealt out in (generators.tasks.generate_tasks deals round-robin over
the selected families in this order), so it is explicit and never changes for a family that exists.
`default=False` leaves a family out of the selection made when none is named: a store's
`generate loopfix --seed S --n N` then keeps giving the tasks it gave before that family existed.
A family that joins the default selection changes what every seed gives.

The version names the family's output: bump it when a change alters its tasks for the same seed.
`write_tasks` records it in the store's audit log beside the counts per family.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from generators.base import DIFFICULTIES, Family
from pairstore.errors import BadInput, NotFound, PairstoreError

__all__ = [
    "MIN_PHRASINGS",
    "FamilySpec",
    "default_families",
    "families",
    "family_listing",
    "family_specs",
    "family_table",
    "get_family",
    "register",
    "resolve_families",
]

# Every mode has at least this many phrasings: a model must not learn one wording of a problem.
MIN_PHRASINGS = 5
_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class FamilySpec:
    """One family's declaration, as `register` recorded it, and its generator."""

    name: str  # the task key's prefix and every task's `family`
    version: str
    order: int  # where its tasks are dealt, lowest first
    summary: str
    phrasings: Mapping[str, tuple[str, ...]]  # mode -> prompt templates
    levels: Mapping[int, str]  # difficulty level -> what it draws
    gold: str  # the form of its gold answers
    default: bool  # in the selection made when no family is named
    family: Family  # the generator

    @property
    def difficulty(self) -> str:
        """'1: one word; 2: ...; 3: ...': the levels on one line."""
        return "; ".join(f"{level}: {text}" for level, text in self.levels.items())

    @property
    def modes(self) -> str:
        """'occurrences (6), total (5)': each mode with its number of phrasings."""
        return ", ".join(f"{mode} ({len(templates)})" for mode, templates in self.phrasings.items())


_REGISTRY: dict[str, FamilySpec] = {}
_loaded = False
C = TypeVar("C", bound=type[Family])


def _check_declaration(
    name: str, version: str, phrasings: Mapping[str, tuple[str, ...]], levels: Mapping[int, str]
) -> None:
    where = f"family {name!r}"
    if not _NAME.fullmatch(name):
        raise PairstoreError(f"{where}: a family name is lower-case letters, digits and _")
    if not version.strip():
        raise PairstoreError(f"{where}: declare a version")
    if not phrasings:
        raise PairstoreError(f"{where}: declare its phrasings (mode -> templates)")
    for mode, templates in phrasings.items():
        if not isinstance(templates, tuple) or len(templates) < MIN_PHRASINGS:
            raise PairstoreError(
                f"{where}: mode {mode!r} needs a tuple of at least {MIN_PHRASINGS} phrasings"
            )
    if tuple(levels) != DIFFICULTIES:
        raise PairstoreError(f"{where}: declare levels {DIFFICULTIES}, in that order, not {tuple(levels)}")


def register(
    name: str,
    *,
    version: str,
    order: int,
    summary: str,
    phrasings: Mapping[str, tuple[str, ...]],
    levels: Mapping[int, str],
    gold: str,
    default: bool = False,
) -> Callable[[C], C]:
    """Class decorator: register a Family subclass as family `name` with its declaration.

    The declaration becomes the class's `name`, `version`, `phrasings`, `description` and
    `difficulty_help`, which its hooks read. A name or an order taken by another family is refused."""
    _check_declaration(name, version, phrasings, levels)

    def wrap(cls: C) -> C:
        if not (isinstance(cls, type) and issubclass(cls, Family)):
            raise PairstoreError(f"family {name!r}: register a subclass of generators.base.Family")
        cls.name, cls.version, cls.description = name, version, summary
        cls.phrasings = dict(phrasings)
        cls.difficulty_help = "; ".join(f"{level}: {text}" for level, text in levels.items())
        known = _REGISTRY.get(name)
        if known is not None and type(known.family).__qualname__ != cls.__qualname__:
            raise PairstoreError(f"family {name!r} registered twice")
        taken = [s.name for s in _REGISTRY.values() if s.order == order and s.name != name]
        if taken:
            raise PairstoreError(f"family {name!r}: order {order} is taken by {taken[0]}")
        _REGISTRY[name] = FamilySpec(
            name, version, order, summary, dict(phrasings), dict(levels), gold, default, cls()
        )
        return cls

    return wrap


def _load_family_modules() -> None:
    """Import every module of this package once: a family registers itself when its module is imported."""
    global _loaded
    if _loaded:
        return
    package = importlib.import_module(__package__ or "generators")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _loaded = True


def family_specs() -> dict[str, FamilySpec]:
    """name -> FamilySpec of every registered family, in dealing order."""
    _load_family_modules()
    return {s.name: s for s in sorted(_REGISTRY.values(), key=lambda s: s.order)}


def families() -> dict[str, Family]:
    """name -> generator of every registered family, in dealing order."""
    return {name: spec.family for name, spec in family_specs().items()}


def default_families() -> tuple[str, ...]:
    """What "all families" means when none are named: the declared defaults, in dealing order."""
    return tuple(name for name, spec in family_specs().items() if spec.default)


def get_family(name: str) -> Family:
    specs = family_specs()
    if name not in specs:
        raise NotFound(f"no task family {name!r} (registered: {', '.join(specs)})")
    return specs[name].family


def resolve_families(names: Iterable[str] | str | None) -> list[str]:
    """The selected family names in dealing order; None = default_families().

    Accepts a list or a comma-separated string. An unknown name raises BadInput naming it.
    """
    if names is None:
        return list(default_families())
    known = family_specs()
    if isinstance(names, str):
        names = names.split(",")
    wanted = {n.strip() for n in names if n and n.strip()}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise BadInput(
            f"unknown task family {', '.join(map(repr, unknown))} (known: {', '.join(known)})",
            field="families",
        )
    if not wanted:
        raise BadInput("no task family selected", field="families")
    return [name for name in known if name in wanted]


# -- the declarations as a listing and a table --------------------------------------------------------

LISTING_COLUMNS = ("family", "version", "modes (phrasings)", "difficulty", "gold", "default")


def family_listing() -> tuple[list[str], list[list[Any]], list[dict[str, Any]]]:
    """(columns, rows, JSON objects) of every family's declaration, in dealing order: what
    `pairstore generate families` prints and the package docstring's table holds."""
    specs = family_specs().values()
    rows: list[list[Any]] = [
        [s.name, s.version, s.modes, s.difficulty, s.gold, "yes" if s.default else "by name"] for s in specs
    ]
    objects = [
        {
            "family": s.name,
            "version": s.version,
            "phrasings": {mode: len(t) for mode, t in s.phrasings.items()},
            "difficulty": s.difficulty,
            "gold": s.gold,
            "default": s.default,
        }
        for s in specs
    ]
    return list(LISTING_COLUMNS), rows, objects


def family_table() -> str:
    """The declarations as a markdown table (family, version, modes, difficulty levels, gold, default)."""
    columns, rows, _ = family_listing()

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# The constants of earlier releases, computed on first use (every module of the package loaded then).
if TYPE_CHECKING:
    FAMILIES: dict[str, Family]
    FAMILY_NAMES: tuple[str, ...]
    DEFAULT_FAMILIES: tuple[str, ...]


def __getattr__(name: str) -> Any:
    if name == "FAMILIES":
        return families()
    if name == "FAMILY_NAMES":
        return tuple(family_specs())
    if name == "DEFAULT_FAMILIES":
        return default_families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
