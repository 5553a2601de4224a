"""Command-line parameters built from an options dataclass (pairstore.options), so each option's default,
help and form are declared once, beside the code that reads it.

    @train_group.command("sample")
    @options_parameters(SampleOptions)
    @json_option
    def train_sample_cmd(options: SampleOptions, as_json: bool) -> None: ...

The command receives the one options object (checked by pairstore.options.make_options) and hands it
whole to the library. `pairstore mine NAME` and every merge method's command are built the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from pairstore.cli.base import check_seed, complete
from pairstore.options import OptionSpec, make_options, option_specs

_TYPES: dict[type, click.ParamType] = {str: click.STRING, int: click.INT, float: click.FLOAT}


def _param_type(spec: OptionSpec) -> click.ParamType:
    if spec.choices is not None:
        return click.Choice(list(spec.choices))
    if spec.path:
        return click.Path(path_type=str)
    if spec.kind is int and (spec.min is not None or spec.max is not None):
        return click.IntRange(
            min=None if spec.min is None else int(spec.min), max=None if spec.max is None else int(spec.max)
        )
    if spec.kind is float and (spec.min is not None or spec.max is not None):
        return click.FloatRange(min=spec.min, max=spec.max)
    return _TYPES[spec.kind]


def parameter(spec: OptionSpec) -> click.Parameter:
    """The click option (or argument) of one declared option."""
    if spec.kind is bool:
        if spec.flag is not None:  # a flag that sets the option to the opposite of its default
            return click.Option(
                [spec.flag, spec.name], is_flag=True, flag_value=not spec.default, default=spec.default,
                help=spec.help,
            )  # fmt: skip
        return click.Option([spec.cli_name, spec.name], is_flag=True, help=spec.help)
    ptype = _param_type(spec)
    callback = check_seed if spec.seed else None
    if spec.argument:
        return click.Argument(
            [spec.name],
            type=ptype,
            callback=callback,
            metavar=spec.metavar or spec.name.upper(),
            nargs=-1 if spec.multiple else 1,
            required=spec.required,
        )
    decls = [spec.cli_name, spec.name]
    shared: dict[str, Any] = {
        "type": ptype,
        "multiple": spec.multiple,
        "callback": callback,
        "help": spec.help,
        "metavar": spec.metavar,
        "shell_complete": None if spec.complete is None else complete(spec.complete),
    }
    if spec.required:  # no default given at all: click counts even default=None as one
        return click.Option(decls, required=True, **shared)
    return click.Option(decls, default=spec.default, show_default=spec.default not in (None, ()), **shared)


def parameters(options: type) -> list[click.Parameter]:
    """The click parameters of every field of `options`, in field order."""
    return [parameter(s) for s in option_specs(options)]


def options_from(options: type, values: dict[str, Any], *, what: str) -> Any:
    """The options object from the command's parsed values: the fields are taken out of `values`."""
    specs = option_specs(options)
    taken = {s.name: values.pop(s.name) for s in specs if s.name in values}
    # A tuple option left empty on the command line is its default; a required one is click's to refuse.
    return make_options(options, taken, what=what)


def options_parameters(options: type, *, into: str = "options") -> Callable[[Callable], Callable]:
    """Decorator (under @command): the command takes `options`' fields as its parameters and receives them
    as one object, keyword `into`."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: Any, **values: Any) -> Any:
            what = click.get_current_context().command_path.removeprefix("pairstore ")
            values[into] = options_from(options, values, what=what)
            return fn(*args, **values)

        # click's decorators collect parameters in __click_params__, bottom-up; @command reverses them.
        collected = list(getattr(fn, "__click_params__", []))
        collected.extend(reversed(parameters(options)))
        run.__click_params__ = collected  # type: ignore[attr-defined]
        return run

    return decorate
