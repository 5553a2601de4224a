"""The normalization has a version: stored with every keyed table; a store keyed by another one is re-keyed
in one transaction when opened for writing, refused when opened read-only, and the gate still refuses."""

from __future__ import annotations

import json

import duckdb
import pytest

from pairstore import normalize
from pairstore.errors import GateRefused, PairstoreError
from pairstore.export.run import export_round
from pairstore.holdout.ngrams import register_benchmark
from pairstore.holdout.sets import HoldoutFilter, add_members
from pairstore.keys import match_key, match_text
from pairstore.normalize import Step
from pairstore.rounds.recipes import add_round
from pairstore.store import rekey
from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, add_pairs

MEMBER = "Could you kindly tell me the capital of Peru and its population?"
COPY = "Could you tell me the capital of Peru and its population?"  # the member without its filler word


def _without_kindly(text: str) -> str:
    return " ".join(w for w in text.split() if w != "kindly")


def change_one_step(monkeypatch) -> str:
    """The `spaces` step, changed: it also drops the filler word "kindly" (so its version goes up)."""
    steps = tuple(
        Step("spaces", s.version + 1, _without_kindly) if s.name == "spaces" else s for s in normalize.STEPS
    )
    monkeypatch.setattr(normalize, "STEPS", steps)
    return normalize.normalization_version()


def _keyed_store(store, tmp_path, dpo_recipe):
    con = store.con
    con.execute(
        "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, match_key, "
        "record_hash) VALUES ('b1', [{'role': 'user', 'content': ?}], ['a'], ['b'], 1, 'win', ?, 'h')",
        [MEMBER, match_key(MEMBER)],
    )
    add_members(
        store,
        "judge",
        [
            {
                "item_id": "b1",
                "item_kind": "battle",
                "match_key": match_key(MEMBER),
                "match_text": match_text(MEMBER),
            }
        ],
    )
    copy = Pair(
        prompt=COPY, chosen="Lima; about ten million.", rejected="No idea.", source="battle", origins=[]
    )
    other = Pair(
        prompt="Kindly name three rivers of Chile.",
        chosen="Loa, Biobío, Maule.",
        rejected="Nile.",
        source="battle",
        origins=[Origin("battle", "b9", "vote=win")],
    )
    add_pairs(store, [copy, other], miner="t", miner_version="1")
    register_benchmark(store, "bench", [("0", "Please kindly " + " ".join(f"word{i}" for i in range(20)))])
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    add_round(store, tmp_path / "base.toml")
    (tmp_path / "rb.toml").write_text(dpo_recipe("rb", blocks=['source = "battle"']))
    add_round(store, tmp_path / "rb.toml")


def _stored(path, sql: str) -> list:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_changed_step_rekeys_the_store_in_one_transaction_and_the_gate_still_refuses(
    store, db_path, tmp_path, dpo_recipe, monkeypatch
):
    _keyed_store(store, tmp_path, dpo_recipe)
    before = normalize.normalization_version()
    assert {v for (v,) in _stored_versions(store)} == {before}
    # Under today's normalization the pair is not the member: the gate passes it.
    export_round(store, "rb", tmp_path / "today")
    store.close()

    after = change_one_step(monkeypatch)
    assert after != before and "spaces/2" in after
    # The stored keys are now out of step with what the gate computes from text.
    (member_key,) = _stored(db_path, "SELECT match_key FROM holdout")[0]
    assert member_key != match_key(MEMBER) and match_key(MEMBER) == match_key(COPY)

    # Read-only: refused, naming the tables, the step and the command.
    with pytest.raises(PairstoreError) as e:
        open_store(db_path, read_only=True)
    assert (
        "pairstore holdout rekey" in str(e.value) and "spaces" in str(e.value) and "holdout" in str(e.value)
    )

    # For writing: every keyed table re-keyed, the version recorded, the change logged.
    store = open_store(db_path)
    assert {v for (v,) in _stored_versions(store)} == {after}
    assert store.scalar("SELECT match_key FROM holdout") == match_key(MEMBER)
    assert (
        store.scalar("SELECT match_text FROM holdout")
        == "could you tell me the capital of peru and its population"
    )
    assert store.scalar("SELECT match_key FROM battles") == match_key(MEMBER)
    for prompt, key in store.con.execute("SELECT prompt[1].content, match_key FROM pairs").fetchall():
        assert key == match_key(prompt)
    assert store.scalar("SELECT match_key FROM benchmark_refs") == match_key(
        "Please " + " ".join(f"word{i}" for i in range(20))
    )
    logged = store.one("SELECT detail FROM audit_log WHERE action = 'store.rekey'")
    assert logged is not None and '"to": "' + after in logged[0]
    # The miners' check reads the stored keys: it now holds the copy, and the gate refuses it.
    assert HoldoutFilter.load(store).holds_pair(Pair(prompt=COPY, chosen="x", rejected="y", source="battle"))
    with pytest.raises(GateRefused) as refused:
        export_round(store, "rb", tmp_path / "after")
    assert {(h.item_id, h.how) for h in refused.value.hits} == {("b1", "match_key")}
    store.close()
    # A second open finds nothing stale: nothing re-keyed, nothing logged again.
    store = open_store(db_path)
    assert store.scalar("SELECT count(*) FROM audit_log WHERE action = 'store.rekey'") == 1
    store.close()


def _stored_versions(store) -> list:
    return store.con.execute("SELECT normalization FROM key_versions").fetchall()


def test_a_failed_rekey_leaves_the_store_as_it_was(store, db_path, tmp_path, dpo_recipe, monkeypatch):
    _keyed_store(store, tmp_path, dpo_recipe)
    store.close()
    keys_before = _stored(
        db_path, "SELECT 'pairs', match_key FROM pairs UNION ALL SELECT 'h', match_key FROM holdout"
    )
    versions_before = _stored(db_path, "SELECT table_name, normalization FROM key_versions ORDER BY 1")
    change_one_step(monkeypatch)

    def fail(con):
        raise RuntimeError("disk full half-way through the re-key")

    monkeypatch.setitem(rekey.KEYED_TABLES, "holdout", fail)  # after battles, problems, tasks, pairs
    with pytest.raises(RuntimeError):
        open_store(db_path)
    assert (
        _stored(db_path, "SELECT 'pairs', match_key FROM pairs UNION ALL SELECT 'h', match_key FROM holdout")
        == keys_before
    )
    assert (
        _stored(db_path, "SELECT table_name, normalization FROM key_versions ORDER BY 1") == versions_before
    )


def test_every_keyed_table_is_recorded_and_the_command_reports_it(run_cli):
    res = run_cli("holdout", "rekey", "--all", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["normalization"] == normalize.normalization_version()
    assert {t["table"] for t in out["tables"]} == set(rekey.KEYED_TABLES)
    assert all(t["current"] for t in out["tables"])
