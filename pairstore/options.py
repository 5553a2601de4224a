"""Options declared once: a frozen dataclass whose fields carry their default, help and command-line form.

    @dataclass(frozen=True, kw_only=True)
    class SoupOptions:
        a: str = option(help="The first bundle.", argument=True, path=True)
        alpha: float = option(help="Weight of B: out = A + alpha*(B - A).")
        slice_mb: int = option(16, help="Streaming slice size in MiB.", min=1)

    options = make_options(SoupOptions, {"a": "runs/x", "alpha": 0.5}, what="train soup")
    options_json(options)    # {"a": "runs/x", "alpha": 0.5, "slice_mb": 16}: what the evidence saves

Every extension point (a miner, a merge method) and every long command (`train dpo`, `train sample`,
`eval`) declares its options this way. pairstore.cli.options builds the command's parameters from the
fields, the library takes the object whole, and the evidence saves it. Adding an option is one field.

A field is a str, int, float or bool, optionally None, or a tuple of one of them (given several times on
the command line). `make_options` checks what a caller gives (the command line's values, a saved spec, a
library call's keywords) against the declaration, with one plain message per mistake.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from pairstore.errors import BadInput, PairstoreError

__all__ = ["OptionSpec", "check_options", "make_options", "option", "option_specs", "options_json"]

_SCALARS = (bool, int, float, str)
_KIND_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class OptionSpec:
    """One option, as the command line shows it (read from the options dataclass's field)."""

    name: str  # the field name (the keyword of the library call)
    kind: type  # str, int, float or bool (None and the tuple stripped from the type)
    default: Any  # dataclasses.MISSING: required
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    flag: str | None = None  # a bool's command-line flag ("--no-gold-repair" sets it False)
    argument: bool = False  # a positional argument (FILE) instead of --name
    seed: bool = False  # a seed: the command line checks it fits 64 bits
    path: bool = False  # a file or folder
    multiple: bool = False  # a tuple: the option given several times (an argument: one or more values)
    optional: bool = False  # None is a value (`int | None`)
    metavar: str | None = None
    complete: str | None = (
        None  # what the shell completes it from: "round", "model", ... (pairstore.cli.base.complete)
    )

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def cli_name(self) -> str:
        """`--max-steps` for the field max_steps."""
        return f"--{self.name.replace('_', '-')}"


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    min: float | None = None,
    max: float | None = None,
    choices: tuple[str, ...] | None = None,
    flag: str | None = None,
    argument: bool = False,
    seed: bool = False,
    path: bool = False,
    metavar: str | None = None,
    complete: str | None = None,
) -> Any:
    """A field of an options dataclass: its default (none: required), its help and how the command line
    takes it."""
    meta = {
        "help": help,
        "min": min,
        "max": max,
        "choices": choices,
        "flag": flag,
        "argument": argument,
        "seed": seed,
        "path": path,
        "metavar": metavar,
        "complete": complete,
    }
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _field_type(hint: Any, where: str) -> tuple[type, bool, bool]:
    """(scalar type, whether a tuple of it, whether None is allowed) from a field's type."""
    optional = False
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) == 1:
            hint = args[0]
    multiple = False
    if typing.get_origin(hint) is tuple:
        items = typing.get_args(hint)
        if len(items) == 2 and items[1] is Ellipsis:
            hint, multiple = items[0], True
    if hint in _SCALARS:
        return hint, multiple, optional
    raise PairstoreError(
        f"{where}: an option is a str, int, float or bool (optionally None), or a tuple of one, not {hint!r}"
    )


def option_specs(options: type) -> tuple[OptionSpec, ...]:
    """The options of a declaration, in field order, from its dataclass (every field must come from
    option())."""
    hints = typing.get_type_hints(options)
    specs = []
    for f in dataclasses.fields(options):
        where = f"{options.__name__}.{f.name}"
        if "help" not in f.metadata:
            raise PairstoreError(f"{where}: declare it with pairstore.options.option(default, help=...)")
        kind, multiple, optional = _field_type(hints[f.name], where)
        specs.append(
            OptionSpec(f.name, kind, f.default, multiple=multiple, optional=optional, **dict(f.metadata))
        )
    return tuple(specs)


def _check_scalar(spec: OptionSpec, value: Any, what: str) -> Any:
    """`value` as the option's kind, or BadInput in one plain sentence."""
    field = spec.name
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise BadInput(f"{what}: option {field} is true or false, not {value!r}", field=field)
        return value
    if spec.kind in (int, float):
        ok = isinstance(value, int) if spec.kind is int else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok:
            raise BadInput(f"{what}: option {field} is {_KIND_WORDS[spec.kind]}, not {value!r}", field=field)
        value = spec.kind(value)
        if spec.kind is float and not math.isfinite(value):
            raise BadInput(f"{what}: option {field} must be a finite number, got {value}", field=field)
        if spec.min is not None and value < spec.min:
            raise BadInput(f"{what}: option {field} must be at least {spec.min:g}, got {value}", field=field)
        if spec.max is not None and value > spec.max:
            raise BadInput(f"{what}: option {field} must be at most {spec.max:g}, got {value}", field=field)
        return value
    if spec.path and isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise BadInput(f"{what}: option {field} is a string, not {value!r}", field=field)
    if spec.choices is not None and value not in spec.choices:
        raise BadInput(
            f"{what}: option {field} is one of {', '.join(spec.choices)}, not {value!r}", field=field
        )
    return value


def _check_value(spec: OptionSpec, value: Any, what: str) -> Any:
    if value is None and (spec.optional or spec.default is None):
        return None
    if spec.multiple:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise BadInput(f"{what}: option {spec.name} is a list, not {value!r}", field=spec.name)
        return tuple(_check_scalar(spec, v, what) for v in value)
    return _check_scalar(spec, value, what)


def make_options(options: type, values: dict[str, Any], *, what: str) -> Any:
    """The options object of declaration `options` from `values` (keywords, the command line's values,
    a saved spec), each value checked against its field: an unknown name, a missing required option, a
    value of the wrong type, outside its range or not among its choices is BadInput naming `what` and
    the option."""
    specs = {s.name: s for s in option_specs(options)}
    unknown = sorted(set(values) - set(specs))
    if unknown:
        raise BadInput(f"{what} has no option {unknown[0]!r} (options: {', '.join(specs)})", field=unknown[0])
    missing = [name for name, s in specs.items() if s.required and name not in values]
    if missing:
        raise BadInput(f"{what}: option {missing[0]} is required", field=missing[0])
    checked = {name: _check_value(specs[name], value, what) for name, value in values.items()}
    return options(**checked)


def check_options(obj: Any, *, what: str) -> Any:
    """An options object built directly (a library call) checked the way make_options checks values."""
    return make_options(type(obj), options_json(obj), what=what)


def options_json(obj: Any) -> dict[str, Any]:
    """The options as JSON holds them (tuples as lists), in field order: what evidence saves."""
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out
