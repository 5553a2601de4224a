"""`pairstore serve`, `pairstore judge` and `pairstore audit ratings`: collecting votes and ranking models.

pairstore serve --model so7a=http://127.0.0.1:8000/v1 --model sm11a=runs/sm11a --own-model sm11a
pairstore judge --set judge34 --a sm11a --b so7a --judge qwen=http://127.0.0.1:8001/v1
pairstore audit ratings --bootstrap 1000
"""

from __future__ import annotations

import click

from audits.ratings import audit_ratings
from pairstore.chat_endpoint import DEFAULT_KEY_ENV, RetryPolicy
from pairstore.cli.base import F, check_seed, echo_json, echo_table, open_db


def api_key_env_option(fn: F) -> F:
    """--api-key-env NAME: the environment variable holding the API key of an OpenAI-compatible endpoint."""
    return click.option(
        "--api-key-env",
        metavar="NAME",
        default=None,
        help="The environment variable holding the API key of the endpoint(s) that name none "
        f"(default {DEFAULT_KEY_ENV}); sent as a bearer token, never printed or stored.",
    )(fn)


@click.command("ratings")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(0, 100_000),
              help="Bootstrap rounds for the 95% intervals (0: none).")  # fmt: skip
@click.option("--seed", default=0, show_default=True, type=int, callback=check_seed, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def ratings_cmd(ctx: click.Context, bootstrap: int, seed: int, as_json: bool) -> None:
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
        [(r.model, r.rating_text, r.interval_text, r.games, f"{r.wins:g}") for r in report.ratings],
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


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; any but a loopback address needs annotator tokens.",
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port.")
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="NAME=ENDPOINT[@ENVVAR]",
    help="A model for the Arena: an OpenAI-compatible base URL (vllm serve, llama.cpp, TGI; @ENVVAR names "
    "the variable holding its API key) or a local bundle folder (greedy, the bundle's generation "
    "settings). Repeat for each model.",
)
@click.option("--models-file", type=click.Path(dir_okay=False),
              help="NAME=ENDPOINT[@ENVVAR] lines (# comments), as --model.")  # fmt: skip
@api_key_env_option
@click.option("--own-model", help="The model whose side Arena votes are read from (one of --model).")
@click.option(
    "--token",
    "tokens",
    multiple=True,
    metavar="NAME=TOKEN",
    help="An annotator and their token (16 characters or more); repeatable.",
)
@click.option("--tokens-file", type=click.Path(dir_okay=False), help="NAME=TOKEN lines.")
@click.option("--prompts", type=click.Path(dir_okay=False), help="JSONL of prompts the Arena can draw from.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    help="A folder written by `pairstore audit report`, shown under Browse.",
)
@click.option(
    "--max-new-tokens",
    default=256,
    show_default=True,
    type=click.IntRange(1, 32768),
    help="Answer length limit for the Arena's models.",
)
@click.option(
    "--seed", default=0, show_default=True, type=int, callback=check_seed, help="Seed of the opponent draw."
)
@click.option("--hold-s", default=1.0, show_default=True, type=click.FloatRange(0, 60),
              help="Keep the store open this many seconds after a request "
                   "(0: open it per request).")  # fmt: skip
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="A name the browser may reach the server by (the Host header), beside the loopback "
                   "names and the --host address; '*.example.org' for a domain. Repeatable.")  # fmt: skip
@click.pass_context
def serve_cmd(
    ctx: click.Context,
    host: str,
    port: int,
    models: tuple[str, ...],
    models_file: str | None,
    api_key_env: str | None,
    own_model: str | None,
    tokens: tuple[str, ...],
    tokens_file: str | None,
    prompts: str | None,
    report_dir: str | None,
    max_new_tokens: int,
    seed: int,
    hold_s: float,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Collect battles (Arena) and blind judgments (Queue) in the browser; Browse the store read-only.

    The server keeps the store open only while requests come (--hold-s after the last, 5 s at most), and
    lets it go at once when another pairstore command waits for it: commands run while it serves. Votes
    that come while a command writes wait in the server and land in order when it finishes."""  # fmt: skip
    from pairstore.cli.serve import build_app

    app = build_app(ctx.find_root().obj["db"], host=host, models=models, models_file=models_file,
                    api_key_env=api_key_env, own_model=own_model, tokens=tokens, tokens_file=tokens_file,
                    prompts=prompts, report_dir=report_dir, seed=seed, max_new_tokens=max_new_tokens,
                    hold_s=hold_s, allowed_hosts_extra=allowed_hosts)  # fmt: skip
    import uvicorn

    click.echo(f"serving {ctx.find_root().obj['db']} on http://{host}:{port}/ (Ctrl-C stops)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


@click.command("judge")
@click.option(
    "--set", "set_name", required=True, help="The holdout set whose battles are judged (e.g. judge34)."
)
@click.option("--a", "model_a", required=True, help="One model (its stored answers, `generations`).")
@click.option("--b", "model_b", required=True, help="The other model.")
@click.option(
    "--judge",
    "judge_spec",
    metavar="NAME=ENDPOINT[@ENVVAR]",
    help="An OpenAI-compatible judge (base URL; @ENVVAR names its key's variable) or a local bundle; "
    "default: the rule judge.",
)
@api_key_env_option
@click.option("--retries", default=5, show_default=True, type=click.IntRange(0, 100),
              help="Tries after the first for a 429, a 5xx or a dropped connection.")  # fmt: skip
@click.option("--max-wait-s", default=60.0, show_default=True, type=click.FloatRange(0, 3600),
              help="The longest wait before a retry (the server's Retry-After, else doubling from 1 s); "
                   "a server asking for more ends the run.")  # fmt: skip
@click.option(
    "--max-new-tokens",
    default=256,
    show_default=True,
    type=click.IntRange(1, 32768),
    help="The judge's answer length limit.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def judge_cmd(
    ctx: click.Context,
    set_name: str,
    model_a: str,
    model_b: str,
    judge_spec: str | None,
    api_key_env: str | None,
    retries: int,
    max_wait_s: float,
    max_new_tokens: int,
    as_json: bool,
) -> None:
    """Blind pairwise judging of two models' stored answers on a holdout set, both orders; verdicts go to
    `judgments` with the judge's name and prompt hash, each as it is given. A rerun asks only for the
    verdicts still missing. Heavy flaws count double in the tally."""  # fmt: skip
    from miners.pairwise_judge import judge_set
    from pairstore.cli.serve import chat_models

    ask, name = None, None
    if judge_spec:
        policy = RetryPolicy(attempts=retries + 1, max_wait_s=max_wait_s)
        ((name, chat),) = chat_models(
            [judge_spec], max_new_tokens=max_new_tokens, key_env=api_key_env, retry=policy
        ).items()
        ask = chat.complete
    with open_db(ctx) as store:
        result = judge_set(store, set_name, model_a, model_b, ask=ask, judge=name)
    if as_json:
        echo_json(result.as_dict())
        return
    click.echo(
        f"{result.judge} on {set_name}: {result.items} items, {result.stored} verdicts stored, "
        f"{result.reused} kept from before, {result.unknown} unknown (not stored)"
    )
    click.echo(", ".join(f"{k} {v}" for k, v in result.tally.items()))
