"""Every listing command prints its rows as a table, JSON or CSV; `sql` keeps column order, writes
nested values as JSON cells, and passes DuckDB's own hints through."""

from __future__ import annotations

import csv
import io
import json
from importlib import resources

import click
import pytest

from pairstore.cli import cli

SAMPLE = resources.files("pairstore") / "sample_data"

# The commands that list rows of the store or of a registry, with the arguments that give them rows.
LISTINGS = {
    ("round", "list"): [],
    ("mine", "list"): [],
    ("holdout", "list"): [],
    ("holdout", "show"): ["h8"],
    ("generate", "families"): [],
    ("audit", "mixtures"): [],
    ("audit", "loops"): [],
    ("sql",): ["SELECT battle_id, vote FROM battles ORDER BY battle_id LIMIT 3"],
}


def _walk(group: click.Group = cli, path: tuple[str, ...] = ()):
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_every_command_with_an_output_choice_is_a_listing_and_offers_all_three():
    with_output = {path for path, cmd in _walk() if any(p.name == "output" for p in cmd.params)}
    assert with_output == set(LISTINGS)
    for path in with_output:
        cmd = dict(_walk())[path]
        flags = {o for p in cmd.params if p.name == "output" for o in p.opts}
        assert flags == {"--table", "--json", "--csv"}, path


@pytest.fixture
def listed_store(run_cli):
    assert run_cli("ingest", "battles", SAMPLE / "battles.jsonl").exit_code == 0
    assert run_cli("holdout", "sample", "h8", "--n", "8", "--seed", "7").exit_code == 0
    return run_cli


@pytest.mark.parametrize("path", sorted(LISTINGS), ids=" ".join)
def test_each_listing_prints_the_same_rows_in_every_form(listed_store, path):
    args = [*path, *LISTINGS[path]]
    table = listed_store(*args, "--table")
    as_json = listed_store(*args, "--json")
    as_csv = listed_store(*args, "--csv")
    for r in (table, as_json, as_csv):
        assert r.exit_code == 0, r.output
    rows = json.loads(as_json.stdout)
    assert isinstance(rows, list)
    parsed = list(csv.reader(io.StringIO(as_csv.stdout)))
    header, body = parsed[0], parsed[1:]
    assert len(body) == len(rows)
    if body:  # the table shows the same columns (an empty listing may say so in words)
        assert all(h in table.stdout for h in header)


def test_sql_json_keeps_the_column_order_and_csv_writes_messages_as_json(listed_store):
    q = "SELECT vote, battle_id, prompt FROM battles ORDER BY battle_id LIMIT 2"
    rows = json.loads(listed_store("sql", q, "--json").stdout)
    assert list(rows[0]) == ["vote", "battle_id", "prompt"]
    parsed = list(csv.reader(io.StringIO(listed_store("sql", q, "--csv").stdout)))
    assert parsed[0] == ["vote", "battle_id", "prompt"]
    messages = json.loads(parsed[1][2])  # a JSON cell, not Python's repr
    assert messages == rows[0]["prompt"] and messages[0]["role"] == "user"


@pytest.mark.parametrize(
    "query,hint",
    [
        ("SELECT * FROM battle", 'Did you mean "battles"'),
        ("SELECT vot FROM battles", 'Candidate bindings: "vote"'),
    ],
)
def test_sql_errors_keep_duckdbs_hint_on_one_line(listed_store, query, hint):
    r = listed_store("sql", query)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and hint in lines[0], r.stderr
