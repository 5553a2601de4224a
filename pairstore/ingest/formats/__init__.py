"""The input formats of every ingest: one module each in this package, found by importing them all.

    from pairstore.ingest.formats import get_format, format_names
    fmt = get_format("battles", "arena55k")     # a pairstore.ingest.declare.Format
    format_names("evals")                        # ('jsonl', 'lm-eval')

A format is declared in its own module (`declare(Format(...))`, pairstore.ingest.declare): its fields
and what each is, and how its records are read. Nothing else lists the formats: the CLI's `--format`
choices, the messages naming a format and docs/schema.md's "Input formats" tables come from here, so
adding a format is adding its module (and its test).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable

from pairstore.errors import BadInput
from pairstore.ingest.declare import Format, did_you_mean, registered


@functools.cache
def _load(table: str | None = None) -> None:
    """Import the modules of this package once: a format registers itself when its module is imported. A
    format of table T is declared in a module named `T_<name>` (tests/ingest/test_formats.py holds every
    module to it), so one table's formats need only its modules: an ingest imports no other table's."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if table is None or info.name.startswith(f"{table}_"):
            importlib.import_module(f"{__name__}.{info.name}")


def _listed(formats: Iterable[Format]) -> list[Format]:
    return sorted(formats, key=lambda f: (f.table, f.order, f.name))


def all_formats() -> list[Format]:
    """Every declared format, by table, then in its listing order."""
    _load()
    return _listed(registered().values())


def formats_of(table: str) -> list[Format]:
    _load(table)
    return _listed(f for f in registered().values() if f.table == table)


def format_names(table: str) -> tuple[str, ...]:
    return tuple(f.name for f in formats_of(table))


def get_format(table: str, name: str) -> Format:
    """The format `name` of `table`'s ingest; BadInput naming the known ones (and a close one) otherwise."""
    for fmt in formats_of(table):
        if fmt.name == name:
            return fmt
    names = format_names(table)
    raise BadInput(
        f"unknown format {name!r} (expected one of {', '.join(names)}){did_you_mean(name, names)}",
        field="format",
    )
