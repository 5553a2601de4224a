"""A miner is declared once: its options dataclass gives `pairstore mine NAME` (names, types, defaults,
help), run_miner's keywords, and the sources a recipe may name."""

from __future__ import annotations

import dataclasses
import json

import pytest

from miners import registry
from miners.registry import MineResult, new_result, option, register, run_miner, write_pairs
from pairstore.errors import BadInput, PairstoreError
from pairstore.rounds.recipes import known_sources, parse_recipe
from pairstore.tables import pairs as pair_table
from pairstore.tables.pairs import Origin, Pair
from tests.conftest import TRAIN_TABLE


@dataclasses.dataclass(frozen=True, kw_only=True)
class EchoOptions:
    text: str = option(help="The chosen answer.")
    copies: int = option(2, help="How many prompts get it.", min=1)
    shout: bool = option(False, help="Upper-case the answer.")
    seed: int = option(0, help="Seed of nothing in particular.", seed=True)


@pytest.fixture
def echo_miner():
    """A miner registered for one test, then taken out of the registry and the declared sources."""
    registry.miners()  # the built-in miners first, so the toy one is the only addition
    known_sources()
    miners_before = dict(registry._REGISTRY)
    sources_before = dict(pair_table._DECLARED_SOURCES)

    @register("echo_test", version="3", options=EchoOptions, sources=("echo_test",))
    def mine_echo(store, options: EchoOptions) -> MineResult:
        """Echo pairs: one fixed chosen answer for a few prompts."""
        result = new_result(mine_echo)
        answer = options.text.upper() if options.shout else options.text
        pairs = [
            Pair(
                prompt=f"question {i}",
                chosen=answer,
                rejected="no",
                source="echo_test",
                origins=[Origin("test", f"echo:{i}", "echo")],
            )
            for i in range(options.copies)
        ]
        with store.transaction():
            return write_pairs(store, result, pairs)

    yield mine_echo
    registry._REGISTRY.clear()
    registry._REGISTRY.update(miners_before)
    pair_table._DECLARED_SOURCES.clear()
    pair_table._DECLARED_SOURCES.update(sources_before)


def test_the_command_comes_from_the_options(echo_miner, run_cli):
    r = run_cli("mine", "echo-test", "--help")
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "Echo pairs: one fixed chosen answer for a few prompts." in text
    assert "--text TEXT The chosen answer. [required]" in text
    assert "--copies INTEGER RANGE How many prompts get it. [default: 2; x>=1]" in text
    assert "--shout Upper-case the answer." in text
    r = run_cli("mine", "echo-test", "--text", "yes", "--shout", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["miner"], out["version"], out["kept"], out["by_source"]) == (
        "echo_test",
        "3",
        2,
        {"echo_test": 2},
    )
    assert run_cli("mine", "echo-test").exit_code == 2  # --text is required
    r = run_cli("mine", "echo-test", "--text", "y", "--seed", str(2**64))
    assert r.exit_code == 2 and "does not fit in 64 bits" in r.output
    r = run_cli("mine", "list")
    assert "echo_test" in r.output and "Echo pairs" in r.output


def test_keywords_and_options_objects_are_the_same_run(echo_miner, store):
    a = run_miner(store, "echo_test", text="a", copies=1)
    b = echo_miner(store, EchoOptions(text="b", copies=1))
    c = echo_miner(store, text="a", copies=1)
    assert (a.kept, b.kept, c.kept) == (1, 1, 0)  # c is a again: nothing new
    with pytest.raises(BadInput, match="no option 'colour'"):
        run_miner(store, "echo_test", text="a", colour="red")
    with pytest.raises(BadInput, match="text"):
        run_miner(store, "echo_test")


def test_declared_sources_are_what_a_recipe_may_name(echo_miner):
    assert "echo_test" in known_sources()
    assert {"battle", "self_repair", "gold_repair", "loopfix", "style"} <= set(known_sources())
    assert {"ultrafeedback", "compliance", "compliance_sft", "attached", "arena"} <= set(known_sources())
    recipe = parse_recipe(
        'name = "e1"\nkind = "dpo"\nparent = "base"\nseed = 1\n[[mix]]\nsource = "echo_test"\n' + TRAIN_TABLE
    )
    assert recipe.mix[0].source == "echo_test"


def test_a_declaration_is_checked_when_registered():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NoHelp:
        model: str = "m"

    with pytest.raises(PairstoreError, match="NoHelp.model: declare it with"):
        register("bad_test", version="1", options=NoHelp, sources=())

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class ListOption:
        models: list = option(None, help="x")

    with pytest.raises(PairstoreError, match="an option is a str, int, float or bool"):
        register("bad_test", version="1", options=ListOption, sources=())
    assert "bad_test" not in registry._REGISTRY


def test_every_builtin_miner_has_a_command_with_every_option(run_cli):
    for spec in registry.miners().values():
        r = run_cli("mine", spec.name.replace("_", "-"), "--help")
        assert r.exit_code == 0, r.output
        for o in spec.option_specs:
            shown = o.flag or ("" if o.argument else f"--{o.name.replace('_', '-')}")
            assert shown in r.output, (spec.name, o.name)
