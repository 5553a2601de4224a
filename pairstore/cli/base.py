"""What every `pairstore` command shares: the error handling, opening the store, printing.

The library's own exceptions (pairstore.errors) become one line on stderr and the exit status of
docs/design.md: 0 success, 2 bad usage or input, 3 refused by a gate, 1 anything else. This is also the
one place a failure of the machine or the store becomes one line (`machine_failure`): a full disk, a
permission, a read-only folder, a damaged store file, DuckDB's own errors, and, last, anything a library
did not expect, so no command prints a traceback. Click's usage errors are one line too.
"""

from __future__ import annotations

import csv
import dataclasses
import errno
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click
import duckdb

from pairstore.cli.interrupts import INTERRUPTED, INTERRUPTED_LINE, INTERRUPTED_STATUS
from pairstore.errors import BadInput, PairstoreError
from pairstore.progress import Progress, for_terminal
from pairstore.store.lock import open_in_turn
from pairstore.store.recognize import damaged_store
from pairstore.store.store import Store, default_path, open_store

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from pairstore.ingest.base import IngestResult

# A command function, as an option decorator takes and returns it.
F = TypeVar("F", bound=Callable[..., Any])

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
        what = _WHAT_TO_DO.get(e.errno or 0, e.strerror or str(e))
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
    return (
        f"unexpected {type(e).__name__}: {text}; this is a bug in pairstore, "
        "please report it with the command"
    )


class _CliError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]  # click reads it per instance; the class value is 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class PairstoreGroup(click.Group):
    """Turns PairstoreError (and a broken pipe) into one line and an exit status."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = hoist_global_options(list(args))
        return super().parse_args(ctx, args)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as e:
            raise _usage_error(e) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PairstoreError as e:
            raise _CliError(str(e), e.exit_code) from None
        except KeyboardInterrupt:
            raise _CliError(INTERRUPTED_LINE, INTERRUPTED_STATUS) from None
        except duckdb.InterruptException:
            raise _CliError(INTERRUPTED_LINE, INTERRUPTED_STATUS) from None
        except click.UsageError as e:
            raise _usage_error(e) from None
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            raise
        except ImportError as e:
            raise missing_extra(e) from None
        except Exception as e:  # the machine, the store file, or a bug: one line, never a traceback
            if INTERRUPTED.is_set():  # what a library made of the Ctrl-C (a thread's error, a closed pool)
                raise _CliError(INTERRUPTED_LINE, INTERRUPTED_STATUS) from None
            raise _CliError(machine_failure(e, (ctx.obj or {}).get("db")), 1) from None


# The optional imports and the extra that installs each (pyproject.toml's optional-dependencies).
EXTRAS = {
    **dict.fromkeys(
        ("torch", "transformers", "peft", "trl", "accelerate", "safetensors", "tokenizers"), "train"
    ),
    **dict.fromkeys(("scipy", "statsmodels"), "dev"),
    # `pairstore serve`: the whole web stack at once, not one missing package per try
    **dict.fromkeys(("starlette", "uvicorn", "jinja2", "multipart", "python_multipart"), "serve"),
}


def missing_extra(e: ImportError) -> _CliError:
    """A missing optional package as one line naming what installs it (exit 2: the store is unchanged)."""
    name = (getattr(e, "name", None) or str(e).split("'")[1 if "'" in str(e) else 0]).split(".")[0]
    extra = EXTRAS.get(name)
    if extra is None:
        return _CliError(f"the Python package {name!r} is not installed: pip install {name}", 2)
    return _CliError(
        f"this command needs the {extra!r} extra ({name} is not installed): pip install 'pairstore[{extra}]'",
        2,
    )


def _usage_error(e: click.UsageError) -> _CliError:
    command = e.ctx.command_path if e.ctx is not None else "pairstore"
    message = " ".join(e.format_message().split())
    return _CliError(f"{message} (see {command} --help)", e.exit_code)


def check_seed(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """Click callback for every --seed: it goes to BIGINT columns and 64-bit hashes, so a larger integer is
    bad input (one line, exit 2), not a crash halfway through a command."""
    if value is not None and not -(2**63) <= value < 2**63:
        raise BadInput(f"seed {value} does not fit in 64 bits", field="seed")
    return value


def busy_wait_s() -> float:
    """PAIRSTORE_BUSY_WAIT: how many seconds a command waits for a store another process holds."""
    try:
        wait_s = float(os.environ.get("PAIRSTORE_BUSY_WAIT", "10"))
    except ValueError:
        wait_s = -1.0
    if not wait_s >= 0:
        raise BadInput(
            "PAIRSTORE_BUSY_WAIT must be a number of seconds", field="PAIRSTORE_BUSY_WAIT"
        ) from None
    return wait_s


def open_db(ctx: click.Context, *, read_only: bool = False) -> Store:
    """The store named by --db / PAIRSTORE_DB, for one command, opened in turn (pairstore.store.lock): a
    store another process holds (`pairstore serve`, another command) is waited for, in line, up to
    PAIRSTORE_BUSY_WAIT seconds (default 10); the holder is named on stderr while it waits. The web app
    lets the file go as soon as it sees a command waiting."""
    db = ctx.find_root().obj["db"]

    def tell(holder: str) -> None:
        click.echo(f"note: waiting for the store {db}: held by {holder}", err=True)

    return open_in_turn(db, read_only=read_only, wait_s=busy_wait_s(), what=ctx.command_path, on_wait=tell)


def echo_json(obj: Any, *, sort_keys: bool = True) -> None:
    """JSON on stdout. Rows of a table keep their column order (sort_keys=False); objects whose shape
    docs/cli.md gives are printed with sorted keys."""
    click.echo(json.dumps(obj, indent=2, sort_keys=sort_keys, default=str, ensure_ascii=False))


# --json, --csv and --table on every command that lists rows: one `output` parameter.
OUTPUTS = ("table", "json", "csv")


def listing_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--table (the default), --json and --csv on a listing command, as the parameter `output`."""
    fn = click.option(
        "--csv", "output", flag_value="csv", help="Print the rows as CSV (lists and objects as JSON cells)."
    )(fn)
    fn = click.option(
        "--json",
        "output",
        flag_value="json",
        help="Print the rows as a JSON list of objects, columns in order.",
    )(fn)
    return click.option(
        "--table", "output", flag_value="table", default=True, help="Print the rows as a table (the default)."
    )(fn)


def csv_cell(value: Any) -> Any:
    """A value as one CSV cell: lists, structs and maps as JSON (never Python's repr), None empty."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, default=str, ensure_ascii=False, sort_keys=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def echo_rows(
    output: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], json_rows: Any = None
) -> None:
    """A listing in the chosen form. `json_rows` is what --json prints where a command's JSON holds more
    than its table (its shape is documented); by default, the rows as objects with the columns in order."""
    if output == "json":
        echo_json(
            json_rows if json_rows is not None else [dict(zip(columns, r)) for r in rows], sort_keys=False
        )
    elif output == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        w.writerows([csv_cell(v) for v in r] for r in rows)
    else:
        echo_table(list(columns), rows)


def json_option(fn: F) -> F:
    """--json on a command: one JSON object (its shape in docs/cli.md) on stdout and nothing else."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print one JSON object on stdout and nothing else (docs/cli.md).",
    )(fn)


def as_plain(obj: object) -> Any:
    """A dataclass, Counter or Path as what JSON holds (dicts, lists, strings, numbers)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        as_dict = getattr(obj, "as_dict", None)
        if callable(as_dict):
            return as_plain(as_dict())
        return {f.name: as_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): as_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [as_plain(v) for v in (sorted(obj) if isinstance(obj, (set, frozenset)) else obj)]
    return obj


# Options every command takes, before or after the subcommand (`pairstore --db X ingest ...` and
# `pairstore ingest ... --db X`): the root parses them wherever they stand (PairstoreGroup.parse_args).
GLOBAL_VALUE_OPTIONS = ("--db",)
GLOBAL_FLAGS = ("--quiet", "-q")


def hoist_global_options(args: list[str]) -> list[str]:
    """`args` with every global option moved in front of the subcommand, in order; nothing after `--`
    moves (an argument that happens to read `--db` can still be passed there)."""
    front, rest = [], []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i:])
            break
        if a in GLOBAL_VALUE_OPTIONS and i + 1 < len(args):
            front += [a, args[i + 1]]
            i += 2
            continue
        if any(a.startswith(o + "=") for o in GLOBAL_VALUE_OPTIONS) or a in GLOBAL_FLAGS:
            front.append(a)
        else:
            rest.append(a)
        i += 1
    return front + rest


def render_table(columns: list[str], rows: Sequence[Sequence[Any]], *, color: bool = False) -> str:
    """The one table renderer of the CLI (rich): a header, a rule, one line per row, columns as wide
    as their widest cell, never wrapped or cut (a pipe into grep or a file gets whole values)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold" if color else "")
    for c in columns:
        table.add_column(c, no_wrap=True, overflow="ignore")
    for r in rows:
        table.add_row(*("" if v is None else str(v) for v in r))
    console = Console(
        width=1 << 14, color_system="auto" if color else None, force_terminal=color, record=True
    )
    with console.capture() as captured:
        console.print(table)
    return "\n".join(line.rstrip() for line in captured.get().splitlines() if line.strip()) + "\n"


def echo_table(columns: list[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table on stdout (render_table), in colour only on a terminal."""
    click.echo(render_table(columns, rows, color=sys.stdout.isatty()), nl=False)


def echo_notes(notes: Iterable[str]) -> None:
    """Notes on stderr, one line each (what a command cleaned up before its work): stdout stays its result."""
    for note in notes:
        click.echo(f"note: {note}", err=True)


def echo_counts(title: str, counts: dict) -> None:
    """'title: a=1, b=2' — kept/dropped tallies of ingests and miners."""
    body = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"
    click.echo(f"{title}: {body}")


# What shell completion offers for a name, read from the store (read-only; nothing when there is none).
_NAMES_SQL = {
    "round": "SELECT name FROM rounds ORDER BY name",
    "holdout": "SELECT set_name FROM holdout_sets ORDER BY set_name",
    "checkpoint": "SELECT name FROM checkpoints ORDER BY name",
    "model": "SELECT name FROM checkpoints UNION SELECT DISTINCT model FROM generations ORDER BY 1",
}


def store_names(db: str, kind: str) -> list[str]:
    """The round, holdout set, checkpoint or model names in the store at `db` ([] if it cannot be read)."""
    from pathlib import Path

    if not Path(db).is_file():
        return []
    try:
        with open_store(db, read_only=True) as store:
            return [r[0] for r in store.con.execute(_NAMES_SQL[kind]).fetchall()]
    except (PairstoreError, duckdb.Error, OSError):
        return []


def complete(kind: str) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    """A Click shell_complete callback offering the store's names of `kind` that start with what is typed.
    The store is the one --db names on the command line so far, else PAIRSTORE_DB, else the default."""

    def callback(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        root = ctx.find_root()
        db = root.params.get("db") or default_path()
        return [CompletionItem(n) for n in store_names(db, kind) if n.startswith(incomplete)]

    return callback


@contextmanager
def quiet_libraries(quiet: bool) -> Iterator[None]:
    """With --quiet, the progress bars of the libraries a command loads (transformers' "Loading
    weights", the Hub's downloads, datasets' maps) are off too: through the Hub's environment switch for
    a library not yet imported, through their own switches for one that is; and their deprecation notices
    (about their calls into each other, nothing a user can act on), so a failing command's stderr is its
    one line. Restored afterwards."""
    if not quiet:
        yield
        return
    # datasets reads its own switch when it is imported, not the Hub's (TRL's "Tokenizing train dataset").
    switches = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")
    before = {name: os.environ.get(name) for name in switches}
    os.environ.update(dict.fromkeys(switches, "1"))
    undo = []
    hub = sys.modules.get("huggingface_hub.utils")
    if hub is not None and not hub.are_progress_bars_disabled():
        hub.disable_progress_bars()
        undo.append(hub.enable_progress_bars)
    tf_logging = sys.modules.get("transformers.utils.logging")
    if tf_logging is not None and tf_logging.is_progress_bar_enabled():
        tf_logging.disable_progress_bar()
        undo.append(tf_logging.enable_progress_bar)
    ds = sys.modules.get("datasets")
    if ds is not None and not ds.are_progress_bars_disabled():
        ds.disable_progress_bars()
        undo.append(ds.enable_progress_bars)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            yield
    finally:
        for restore in undo:
            restore()
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cli_progress(ctx: click.Context) -> Progress:
    """The progress a command shows (pairstore.progress): a bar on a terminal, stage lines on stderr
    otherwise, nothing with --quiet."""
    return for_terminal(quiet=bool((ctx.find_root().obj or {}).get("quiet")))


def stderr_is_tty() -> bool:
    """Progress bars only where a person watches."""
    return sys.stderr.isatty()


def echo_ingest(result: IngestResult, as_json: bool = False) -> None:
    if as_json:
        echo_json(result.as_dict())
        return
    skipped = ", ".join(f"{k}={v}" for k, v in sorted(result.skipped.items()))
    pairs = f", pairs added {result.pairs}" if result.pairs else ""
    click.echo(
        f"{result.kind}: read {result.read}, added {result.added}{pairs}"
        + (f", skipped {skipped}" if skipped else "")
    )
