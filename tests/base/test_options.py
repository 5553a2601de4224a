"""Options declared once (pairstore.options): every value a caller gives is checked against the declaration
with one plain message, and a valid object survives the trip through its JSON (what evidence saves)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pairstore.errors import BadInput, PairstoreError
from pairstore.options import check_options, make_options, option, option_specs, options_json


@dataclass(frozen=True, kw_only=True)
class Example:
    bundle: str = option(help="A folder.", path=True)
    steps: int | None = option(None, help="Steps.", min=1)
    rate: float = option(0.5, help="A rate.", min=0, max=1)
    mode: str = option("fast", help="How.", choices=("fast", "slow"))
    quiet: bool = option(False, help="Say less.")
    tags: tuple[str, ...] = option((), help="Tags.")
    weights: tuple[float, ...] = option((), help="Weights.")


def test_values_are_checked_against_the_declaration_with_plain_messages():
    ok = make_options(
        Example, {"bundle": Path("runs/a"), "steps": 3, "tags": ["x", "y"], "rate": 1}, what="demo"
    )
    assert ok == Example(bundle="runs/a", steps=3, tags=("x", "y"), rate=1.0)
    assert (
        options_json(ok)["tags"] == ["x", "y"] and make_options(Example, options_json(ok), what="demo") == ok
    )
    cases = [
        ({}, "demo: option bundle is required"),
        ({"bundle": "a", "stpes": 3}, "demo has no option 'stpes' \\(options: bundle, steps, rate"),
        ({"bundle": "a", "steps": 0}, "option steps must be at least 1, got 0"),
        ({"bundle": "a", "steps": 2.5}, "option steps is an integer, not 2.5"),
        ({"bundle": "a", "steps": True}, "option steps is an integer, not True"),
        ({"bundle": "a", "rate": 2}, "option rate must be at most 1, got 2.0"),
        ({"bundle": "a", "rate": float("nan")}, "option rate must be a finite number"),
        ({"bundle": "a", "mode": "medium"}, "option mode is one of fast, slow, not 'medium'"),
        ({"bundle": "a", "quiet": "yes"}, "option quiet is true or false, not 'yes'"),
        ({"bundle": "a", "tags": "x"}, "option tags is a list, not 'x'"),
        ({"bundle": "a", "weights": [1, "2"]}, "option weights is a number, not '2'"),
        ({"bundle": 3}, "option bundle is a string, not 3"),
    ]
    for values, message in cases:
        with pytest.raises(BadInput, match=message):
            make_options(Example, values, what="demo")
    with pytest.raises(BadInput, match="option steps must be at least 1"):
        check_options(Example(bundle="a", steps=-1), what="demo")


_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.one_of(st.text(max_size=3), st.floats(-2, 2), st.integers(-2, 2)), max_size=3),
)


@given(
    st.dictionaries(
        st.sampled_from(["bundle", "steps", "rate", "mode", "quiet", "tags", "weights", "x"]), _ANY
    )
)
def test_any_values_give_a_checked_object_or_one_bad_input(values):
    """Total: whatever a spec file or a caller holds, the answer is a valid object or BadInput."""
    try:
        got = make_options(Example, values, what="demo")
    except BadInput as e:
        assert "\n" not in str(e)
        return
    assert make_options(Example, options_json(got), what="demo") == got
    assert got.steps is None or got.steps >= 1
    assert 0 <= got.rate <= 1 and got.mode in ("fast", "slow")
    assert all(isinstance(t, str) for t in got.tags) and all(isinstance(w, float) for w in got.weights)


def test_a_field_without_option_or_of_another_type_is_refused():
    @dataclass(frozen=True)
    class Bare:
        x: int = 1

    with pytest.raises(PairstoreError, match="Bare.x: declare it with pairstore.options.option"):
        option_specs(Bare)

    @dataclass(frozen=True)
    class Listed:
        x: list = option(None, help="x")

    with pytest.raises(PairstoreError, match="an option is a str, int, float or bool"):
        option_specs(Listed)
    specs = {s.name: s for s in option_specs(Example)}
    assert specs["tags"].multiple and specs["steps"].optional and specs["bundle"].required
    assert specs["steps"].cli_name == "--steps" and specs["bundle"].path
