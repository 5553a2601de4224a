"""The `pairstore` command line: thin wrappers over library functions.

Each command opens the store, calls one library function and prints its result; each command group
has its module here (pairstore/cli/ingest.py for `pairstore ingest ...`, and so on; the demo's
pipeline and its command in pairstore/cli/demo.py), and what they share (errors to one line and an
exit status, see docs/design.md) is in pairstore/cli/base.py.

    pairstore --db store.duckdb ingest battles battles.jsonl
    pairstore sql "SELECT * FROM pairs_by_source"
"""

from __future__ import annotations

import importlib
from collections.abc import ItemsView, Iterator, KeysView, ValuesView

import click

from pairstore.cli.base import PairstoreGroup, quiet_libraries
from pairstore.progress import for_terminal, reporting

# Each command's module, imported when the command is asked for (`pairstore ingest` does not import the
# trainer, the report or the web app): name -> (module, attribute). `audit ratings` lives in votes.py.
COMMANDS = {
    "sql": ("pairstore.cli.sql", "sql_cmd"),
    "ingest": ("pairstore.cli.ingest", "ingest_group"),
    "holdout": ("pairstore.cli.holdout", "holdout_group"),
    "generate": ("pairstore.cli.generate", "generate_group"),
    "mine": ("pairstore.cli.mine", "mine_group"),
    "round": ("pairstore.cli.round", "round_group"),
    "export": ("pairstore.cli.export", "export_cmd"),
    "lineage": ("pairstore.cli.lineage", "lineage_cmd"),
    "audit": ("pairstore.cli.audit", "audit_group"),
    "train": ("pairstore.cli.train", "train_group"),
    "eval": ("pairstore.cli.eval", "eval_cmd"),
    "demo": ("pairstore.cli.demo", "demo_cmd"),
    "serve": ("pairstore.cli.votes", "serve_cmd"),
    "judge": ("pairstore.cli.votes", "judge_cmd"),
}


class _Commands(dict[str, click.Command]):
    """The root group's commands: each module imported when its command is asked for by name (the whole
    set when listed, for help)."""

    def _load(self, name: str) -> None:
        if name in COMMANDS and not dict.__contains__(self, name):
            module, attr = COMMANDS[name]
            command = getattr(importlib.import_module(module), attr)
            if name == "audit" and "ratings" not in command.commands:
                command.add_command(importlib.import_module("pairstore.cli.votes").ratings_cmd)
            dict.__setitem__(self, name, command)

    def _load_all(self) -> None:
        for name in COMMANDS:
            self._load(name)

    def get(self, name: str, default: click.Command | None = None) -> click.Command | None:  # type: ignore[override]
        self._load(name)
        return dict.get(self, name, default)

    def __getitem__(self, name: str) -> click.Command:
        self._load(name)
        return dict.__getitem__(self, name)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._load_all()
        return dict.__len__(self)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        self._load_all()
        return dict.keys(self)

    def values(self) -> ValuesView[click.Command]:  # type: ignore[override]
        self._load_all()
        return dict.values(self)

    def items(self) -> ItemsView[str, click.Command]:  # type: ignore[override]
        self._load_all()
        return dict.items(self)


@click.group(
    cls=PairstoreGroup, commands=_Commands(), context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--db",
    envvar="PAIRSTORE_DB",
    default="pairstore.duckdb",
    show_default=True,
    help="The store file (or set PAIRSTORE_DB).",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    envvar="PAIRSTORE_QUIET",
    help="No progress bars or stage lines on stderr (errors still print; or set PAIRSTORE_QUIET=1).",
)
@click.version_option(package_name="pairstore")
@click.pass_context
def cli(ctx, db, quiet):
    """pairstore: preference pairs, holdout gate and provenance for DPO rounds.

    --db and --quiet go before or after the subcommand."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db
    ctx.obj["quiet"] = quiet
    # Every library call under the command reports to this (pairstore.progress.current): stderr only.
    ctx.with_resource(reporting(for_terminal(quiet=quiet)))
    ctx.with_resource(quiet_libraries(quiet))


def main(argv=None):
    cli.main(args=argv, prog_name="pairstore")


if __name__ == "__main__":
    main()
