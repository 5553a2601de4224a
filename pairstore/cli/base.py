"""What every `pairstore` command shares: the error handling, opening the store, printing.

The library's own exceptions (pairstore.errors) become one line on stderr and the exit status of
docs/design.md: 0 success, 2 bad usage or input, 3 refused by a gate, 1 anything else. This is also the
one place a failure of the machine or the store becomes one line (`machine_failure`): a full disk, a
permission, a read-only folder, a damaged store file, DuckDB's own errors, and, last, anything a library
did not expect, so no command prints a traceback. Click's usage errors are one line too.
"""

from __future__ import annotations

import errno
import json
import sys

import click
import duckdb

from pairstore.errors import BadInput, PairstoreError
from pairstore.store.recognize import damaged_store
from pairstore.store.store import open_store

_WHAT_TO_DO = {
    errno.ENOSPC: "no space left on the device; free space there and run again",
    errno.EDQUOT: "the disk quota is exceeded; free space there and run again",
    errno.EACCES: "permission denied; check the permissions of that path and its folder",
    errno.EPERM: "operation not permitted; check the permissions of that path and its folder",
    errno.EROFS: "the file system is read-only; choose a writable folder",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a path component is not a folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.EEXIST: "it already exists",
    errno.EIO: "an input/output error from the device; check the disk",
    errno.EMFILE: "too many open files; raise the limit (ulimit -n) and run again",
}


def machine_failure(e: BaseException, db: str | None = None) -> str:
    """One line for an exception that is not pairstore's own: the path and what to do."""
    if isinstance(e, OSError):
        path = " -> ".join(str(p) for p in (e.filename, e.filename2) if p is not None)
        what = _WHAT_TO_DO.get(e.errno, e.strerror or str(e))
        return f"{path}: {what}" if path else what
    if isinstance(e, duckdb.Error):
        first = (str(e).splitlines() or [type(e).__name__])[0]
        low = first.lower()
        if isinstance(e, (duckdb.IOException, duckdb.FatalException, duckdb.InternalException)) or any(
            w in low for w in ("corrupt", "checksum", "no space", "permission denied", "read-only file")
        ):
            return str(damaged_store(db or "(the store)", e))
        return f"the store {db or ''} refused the operation ({first})".replace("  ", " ")
    text = (str(e).splitlines() or [""])[0]
    return f"unexpected {type(e).__name__}: {text}; this is a bug in pairstore, please report it with the command"


class _CliError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.exit_code = code

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


class PairstoreGroup(click.Group):
    """Turns PairstoreError (and a broken pipe) into one line and an exit status."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as e:
            raise _usage_error(e) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except PairstoreError as e:
            raise _CliError(str(e), e.exit_code) from None
        except KeyboardInterrupt:
            raise _CliError("interrupted; nothing was committed", 1) from None
        except click.UsageError as e:
            raise _usage_error(e) from None
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            raise
        except Exception as e:  # the machine, the store file, or a bug: one line, never a traceback
            raise _CliError(machine_failure(e, (ctx.obj or {}).get("db")), 1) from None


def _usage_error(e: click.UsageError) -> _CliError:
    command = e.ctx.command_path if e.ctx is not None else "pairstore"
    message = " ".join(e.format_message().split())
    return _CliError(f"{message} (see {command} --help)", e.exit_code)


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
