"""The planned mixture is an object one context manager creates and drops: the gate, the writer and the
registry read the table it names, and nothing of it outlives the export."""

from __future__ import annotations

import pytest

from pairstore.errors import GateRefused
from pairstore.export.gate import run_gate
from pairstore.export.plan import planned_mixture
from pairstore.export.run import export_round
from pairstore.holdout.sets import add_members
from pairstore.keys import match_key, match_text
from pairstore.rounds.recipes import get_round


def temp_tables(store) -> set[str]:
    return {
        t
        for (t,) in store.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary AND table_name LIKE '%mix%'"
        ).fetchall()
    }


def test_the_plan_lives_inside_its_context_only(round_r1):
    store = round_r1
    recipe = get_round(store, "r1")
    with planned_mixture(store, recipe) as mix:
        assert temp_tables(store) == {mix.table}
        assert [b.source for b in mix.blocks] == [m.source for m in recipe.mix]
        assert mix.kinds() == {"dpo", "sft"}
        copies = store.scalar(f"SELECT sum(copies) FROM {mix.table}")
        assert copies == sum(b.rows for b in mix.blocks)
        assert mix.entries() == store.scalar(f"SELECT count(*) FROM {mix.table}")
        with planned_mixture(store, recipe) as other:  # two plans on one connection do not collide
            assert other.table != mix.table and other.entries() == mix.entries()
        assert temp_tables(store) == {mix.table}
    assert temp_tables(store) == set()


def test_the_plan_is_dropped_when_the_gate_refuses(round_r1):
    store = round_r1
    prompt = store.scalar(
        "SELECT prompt[1].content FROM pairs WHERE source = 'battle' ORDER BY pair_id LIMIT 1"
    )
    add_members(
        store,
        "set1",
        [
            {
                "item_id": "b-held",
                "item_kind": "battle",
                "match_key": match_key(prompt),
                "match_text": match_text(prompt),
            }
        ],
    )
    with pytest.raises(GateRefused):
        with planned_mixture(store, get_round(store, "r1")) as mix:
            run_gate(store, "r1", mix)
    assert temp_tables(store) == set()


def test_an_export_leaves_no_plan_behind(round_r1, tmp_path):
    store = round_r1
    result = export_round(store, "r1", tmp_path / "out")
    assert result.files and temp_tables(store) == set()
    rows = store.scalar("SELECT count(*) FROM export_rows")
    assert rows == sum(f.rows for f in result.files.values())
