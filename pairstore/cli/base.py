"""What every `pairstore` command shares: the error handling, opening the store, printing.

The library's own exceptions (pairstore.errors) become one line on stderr and the exit status of
docs/design.md: 0 success, 2 bad usage or input, 3 refused by a gate, 1 anything else.
"""

from __future__ import annotations

import json
import sys

import click

from pairstore.errors import BadInput, PairstoreError
from pairstore.store.store import open_store


class _CliError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.exit_code = code

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


class PairstoreGroup(click.Group):
    """Turns PairstoreError (and a broken pipe) into one line and an exit status."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except PairstoreError as e:
            raise _CliError(str(e), e.exit_code) from None
        except KeyboardInterrupt:
            raise _CliError("interrupted; nothing was committed", 1) from None


def check_seed(ctx, param, value):
    """Click callback for every --seed: it goes to BIGINT columns and 64-bit hashes, so a larger integer is bad
    input (one line, exit 2), not a crash halfway through a command."""
    if value is not None and not -(2**63) <= value < 2**63:
        raise BadInput(f"seed {value} does not fit in 64 bits", field="seed")
    return value


def open_db(ctx: click.Context, *, read_only: bool = False):
    """The store named by --db / PAIRSTORE_DB, for one command."""
    return open_store(ctx.find_root().obj["db"], read_only=read_only)


def echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False))


def echo_table(columns: list[str], rows: list[tuple]) -> None:
    """A plain aligned text table."""
    cells = [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def echo_counts(title: str, counts: dict) -> None:
    """'title: a=1, b=2' — kept/dropped tallies of ingests and miners."""
    body = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"
    click.echo(f"{title}: {body}")


def stderr_is_tty() -> bool:
    """Progress bars only where a person watches."""
    return sys.stderr.isatty()


def echo_ingest(result) -> None:
    skipped = ", ".join(f"{k}={v}" for k, v in sorted(result.skipped.items()))
    pairs = f", pairs added {result.pairs}" if result.pairs else ""
    click.echo(
        f"{result.kind}: read {result.read}, added {result.added}{pairs}"
        + (f", skipped {skipped}" if skipped else "")
    )


def generation_options(fn):
    """--max-new-tokens and --engine: how a bundle generates (sample and eval)."""
    fn = click.option(
        "--engine",
        type=click.Choice(["auto", "transformers", "vllm"]),
        default="auto",
        show_default=True,
        help="auto: vLLM when installed with a GPU, else transformers.",
    )(fn)
    return click.option(
        "--max-new-tokens", type=int, default=None, help="Override the bundle's max_new_tokens."
    )(fn)
