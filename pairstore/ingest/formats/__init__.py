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

from pairstore.errors import BadInput
from pairstore.ingest.declare import Format, did_you_mean, registered


@functools.cache
def _load() -> None:
    """Import every module of this package once: a format registers itself when its module is imported."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


def all_formats() -> list[Format]:
    """Every declared format, by table, then in its listing order."""
    _load()
    return sorted(registered().values(), key=lambda f: (f.table, f.order, f.name))


def formats_of(table: str) -> list[Format]:
    return [f for f in all_formats() if f.table == table]


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
