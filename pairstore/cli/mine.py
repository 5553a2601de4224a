"""`pairstore mine`: one command per registered miner, built from its declaration (miners.registry).

pairstore mine list
pairstore mine battle
pairstore mine self-repair --model so7a --dataset gsm8k

Each miner's options dataclass gives its command's options (name, type, default, help); the group
lists the miners only when asked, so `pairstore --help` does not import them.
"""

from __future__ import annotations

from typing import Any

import click

from miners.registry import MinerSpec, get_miner, miners, run_miner
from pairstore.cli.base import echo_json, echo_rows, listing_options, open_db
from pairstore.cli.ingest import echo_pairs_result, ingest_compliance_cmd, ingest_ultrafeedback_cmd
from pairstore.cli.options import parameters
from pairstore.errors import NotFound


def _miner_command(spec: MinerSpec) -> click.Command:
    def run(as_json: bool, **values: Any) -> None:
        ctx = click.get_current_context()
        with open_db(ctx) as store:
            result = run_miner(store, spec.name, **values)
        if as_json:
            echo_json(result.as_dict())
            return
        echo_pairs_result(result)

    params = parameters(spec.options)
    params.append(
        click.Option(["--json", "as_json"], is_flag=True, help="Print the result as one JSON object.")
    )
    return click.Command(spec.name.replace("_", "-"), callback=run, params=params, help=spec.summary)


class MinerGroup(click.Group):
    """The registered miners as subcommands, found when `pairstore mine` is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *(n.replace("_", "-") for n in miners())])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        try:
            return _miner_command(get_miner(cmd_name))
        except NotFound:
            return None


@click.group("mine", cls=MinerGroup)
def mine_group() -> None:
    """Mine preference pairs from what the store holds."""


@mine_group.command("list")
@listing_options
def mine_list_cmd(output: str) -> None:
    """List the registered miners and their versions."""
    specs = list(miners().values())
    echo_rows(
        output,
        ["miner", "version", "sources", "what"],
        [
            (s.name, s.version, ", ".join(s.sources) if output == "table" else list(s.sources), s.summary)
            for s in specs
        ],
    )


def _hidden_alias(cmd: click.Command, name: str) -> click.Command:
    """`cmd` under another name, left out of the help: the dataset imports were miners once, and scripts
    that call `pairstore mine ultrafeedback` keep working."""
    return click.Command(name, callback=cmd.callback, params=cmd.params, help=cmd.help, hidden=True)


mine_group.add_command(_hidden_alias(ingest_ultrafeedback_cmd, "ultrafeedback"))
mine_group.add_command(_hidden_alias(ingest_compliance_cmd, "compliance"))
