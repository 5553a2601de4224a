"""`pairstore serve`, `pairstore judge` and `pairstore audit ratings`: collecting votes and ranking models.

pairstore serve --model so7a=http://127.0.0.1:8000/v1 --model sm11a=runs/sm11a --own-model sm11a
pairstore judge --set judge34 --a sm11a --b so7a --judge qwen=http://127.0.0.1:8001/v1
pairstore audit ratings --bootstrap 1000
"""

from __future__ import annotations

import click

from audits.ratings import audit_ratings
from pairstore.cli.base import check_seed, echo_json, echo_table, open_db


@click.command("ratings")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(0, 100_000),
              help="Bootstrap rounds for the 95% intervals (0: none).")  # fmt: skip
@click.option("--seed", default=0, show_default=True, type=int, callback=check_seed, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def ratings_cmd(ctx, bootstrap, seed, as_json):
    """Bradley-Terry ratings over battles and judgments (ties half a win each), 95% bootstrap intervals,
    position bias, annotator agreement (Cohen's kappa) and chosen-vs-rejected length by source."""
    with open_db(ctx, read_only=True) as store:
        report = audit_ratings(store, bootstrap=bootstrap, seed=seed)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(
        f"{report.games} games (ties as half wins), {report.bootstrap} bootstrap rounds, seed {report.seed}"
    )
    echo_table(
        ["model", "rating", "95% interval", "games", "wins"],
        [
            (r.model, f"{r.rating:.0f}", f"{r.lower:.0f} .. {r.upper:.0f}", r.games, f"{r.wins:g}")
            for r in report.ratings
        ],
    )
    click.echo("")
    echo_table(
        ["position", "votes", "ties", "A wins", "decisive", "share A", "binomial p"],
        [
            (src, p["votes"], p["ties"], p["a_wins"], p["decisive"],
             "-" if p["share_a"] is None else f"{p['share_a']:.3f}",
             "-" if p["p_value"] is None else f"{p['p_value']:.3g}")
            for src, p in report.position.items()
        ],
    )  # fmt: skip
    if report.agreement:
        click.echo("")
        echo_table(
            ["rater 1", "rater 2", "items", "agree", "kappa"],
            [(a["rater_1"], a["rater_2"], a["items"], a["agree"],
              "-" if a["kappa"] is None else f"{a['kappa']:.3f}") for a in report.agreement],
        )  # fmt: skip
    if report.lengths:
        click.echo("")
        echo_table(
            ["source", "pairs", "chosen chars", "rejected chars", "chosen longer"],
            [(x["source"], x["pairs"], f"{x['chosen_chars']:.0f}", f"{x['rejected_chars']:.0f}",
              f"{x['chosen_longer']:.1%}") for x in report.lengths],
        )  # fmt: skip
