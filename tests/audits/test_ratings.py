"""Ratings from votes: the Bradley-Terry fit against direct computations, bootstrap intervals, position
bias, Cohen's kappa, and the audit over a store's battles and judgments."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.ratings import (
    ELO_SCALE,
    Game,
    audit_ratings,
    cohen_kappa,
    fit_bradley_terry,
    position_bias,
    ratings,
    strong_components,
    win_matrix,
)
from pairstore.ingest.battles import add_battle_records
from pairstore.ingest.judgments import add_judgment_records


def _games(table):
    """table: (a, b, a wins, b wins, ties)."""
    out = []
    for a, b, wa, wb, t in table:
        out += [Game(a, b, "a", "judgments", True)] * wa
        out += [Game(a, b, "b", "judgments", True)] * wb
        out += [Game(a, b, "tie", "judgments", True)] * t
    return out


def _zermelo(w: np.ndarray, iters: int = 20000) -> np.ndarray:
    """Hunter's MM iteration for Bradley-Terry strengths, written from the model's definition:
    p_i <- W_i / sum_j n_ij / (p_i + p_j)."""
    n = w + w.T
    p = np.ones(w.shape[0])
    for _ in range(iters):
        p = w.sum(axis=1) / np.array(
            [sum(n[i, j] / (p[i] + p[j]) for j in range(len(p)) if j != i) for i in range(len(p))]
        )
        p /= np.exp(np.log(p).mean())
    return np.log(p)


def test_two_models_match_the_closed_form_with_ties_as_halves():
    games = _games([("x", "y", 7, 3, 4)])
    s = fit_bradley_terry(win_matrix(games, ["x", "y"]))
    share = (7 + 2) / 14
    assert s[0] - s[1] == pytest.approx(math.log(share / (1 - share)), abs=1e-6)
    r = {x.model: x for x in ratings(games, bootstrap=0)}
    assert r["x"].rating - r["y"].rating == pytest.approx(ELO_SCALE * math.log(9 / 5), abs=1e-4)
    assert r["x"].wins == 9 and r["x"].games == 14


def test_four_models_match_an_mm_iteration_and_the_order_of_games_does_not_matter():
    table = [
        ("a", "b", 6, 2, 3),
        ("a", "c", 5, 5, 1),
        ("b", "c", 1, 4, 2),
        ("c", "d", 3, 3, 0),
        ("a", "d", 4, 1, 2),
    ]
    games = _games(table)
    models = ["a", "b", "c", "d"]
    w = win_matrix(games, models)
    fitted = fit_bradley_terry(w)
    assert np.allclose(fitted, _zermelo(w), atol=1e-5)
    shuffled = games[::-1]
    assert np.allclose(fit_bradley_terry(win_matrix(shuffled, models)), fitted, atol=1e-8)


def test_bootstrap_intervals_cover_the_fit_are_seeded_and_narrow_with_more_games():
    few = _games([("x", "y", 6, 4, 2), ("y", "z", 5, 5, 2)])
    many = _games([("x", "y", 60, 40, 20), ("y", "z", 50, 50, 20)])
    r1 = ratings(few, bootstrap=200, seed=3)
    assert r1 == ratings(few, bootstrap=200, seed=3)
    assert r1 != ratings(few, bootstrap=200, seed=4)
    for r in r1:
        assert r.lower <= r.rating <= r.upper
    width = {r.model: r.upper - r.lower for r in r1}
    width_many = {r.model: r.upper - r.lower for r in ratings(many, bootstrap=200, seed=3)}
    assert all(width_many[m] < width[m] for m in width)


def test_a_model_that_never_lost_or_never_won_gets_no_number():
    r = {x.model: x for x in ratings(_games([("x", "y", 5, 0, 0), ("y", "z", 2, 2, 0)]), bootstrap=20)}
    assert r["x"].rating is None and r["x"].status == "never lost" and r["x"].lower is None
    # y and z are rated from their own games: two wins each, so level
    assert r["y"].rating == pytest.approx(r["z"].rating, abs=1e-6) and r["y"].status == "rated"
    first = ratings(_games([("x", "y", 5, 0, 0), ("y", "z", 2, 2, 0)]), bootstrap=0)[0]
    assert first.model == "x"  # listed above the models it beat
    r = {x.model: x for x in ratings(_games([("x", "y", 3, 3, 0), ("x", "w", 4, 0, 0)]), bootstrap=0)}
    assert r["w"].rating is None and r["w"].status == "never won" and r["w"].rating_text == "none (never won)"


def test_parts_of_the_win_graph_that_never_meet_both_ways_are_named_not_rated():
    # x, y, z play each other both ways; p and q only play each other; a and b always beat x, y, z
    # though they split their own games; c always loses to z but beat d, who beat c too
    table = [("x", "y", 3, 2, 1), ("y", "z", 2, 2, 0), ("z", "x", 1, 3, 0), ("p", "q", 2, 1, 0),
             ("a", "b", 1, 1, 0), ("a", "x", 2, 0, 0), ("b", "y", 3, 0, 0),
             ("c", "d", 1, 1, 0), ("z", "c", 2, 0, 0)]  # fmt: skip
    got = {r.model: r for r in ratings(_games(table), bootstrap=0)}
    assert {m for m, r in got.items() if r.rating is not None} == {"x", "y", "z"}
    assert got["a"].status == got["b"].status == "above the rated models"
    assert got["c"].status == got["d"].status == "below the rated models"
    assert got["p"].status == got["q"].status == "not connected to the rated models"
    # the rated three are fitted from their own games only: the same as without the others
    alone = {r.model: r.rating for r in ratings(_games(table[:3]), bootstrap=0)}
    assert all(got[m].rating == pytest.approx(alone[m], abs=1e-6) for m in alone)
    order = [r.model for r in ratings(_games(table), bootstrap=0)]
    assert order[:2] == ["a", "b"] and set(order[2:5]) == {"x", "y", "z"}


def test_a_bootstrap_round_that_leaves_a_rating_open_makes_that_interval_end_unbounded():
    (x, y) = ratings(_games([("x", "y", 9, 1, 0)]), bootstrap=200, seed=1)
    # a resample of ten games has no win of y about a third of the time: x's upper end is open
    assert x.model == "x" and x.upper is None and x.lower is not None and x.rating is not None
    assert y.lower is None and y.upper is not None
    assert x.interval_text.endswith("+inf") and y.interval_text.startswith("-inf")


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdef"),
                          st.sampled_from(["a", "b", "tie"])), min_size=1, max_size=30))  # fmt: skip
def test_every_number_reported_is_a_finite_maximum_of_the_likelihood(raw):
    games = [Game(a, b, o, "judgments", True) for a, b, o in raw if a != b]
    got = ratings(games, bootstrap=0)
    rated = sorted(r.model for r in got if r.rating is not None)
    assert all(r.status == "rated" for r in got if r.rating is not None)
    if not rated:
        return
    # the rated models win and lose against each other through chains both ways (one strong part) ...
    w = win_matrix([g for g in games if g.a in rated and g.b in rated], rated)
    assert len(strong_components(w)) == 1
    # ... so their fit sits strictly inside the optimizer's bounds, with a zero gradient there
    s = fit_bradley_terry(w)
    assert np.all(np.abs(s) < 19)
    d = s[:, None] - s[None, :]
    g = w * (1.0 - 1.0 / (1.0 + np.exp(-d)))
    assert np.allclose(g.sum(axis=1) - g.sum(axis=0), 0, atol=1e-5)
    # and every model left out is one the rated part cannot bound: it never meets them both ways
    for r in got:
        if r.rating is None:
            assert r.status != "rated"
            together = sorted({r.model, *rated})
            assert (
                len(
                    strong_components(
                        win_matrix([g for g in games if g.a in together and g.b in together], together)
                    )
                )
                > 1
            )
    # a model that won every game it played never has a number
    for m in {g.a for g in games} | {g.b for g in games}:
        lost = any((g.a == m and g.outcome != "a") or (g.b == m and g.outcome != "b") for g in games)
        if not lost:
            assert next(r for r in got if r.model == m).rating is None


def test_position_bias_counts_a_wins_among_decisive_known_positions():
    games = [Game("m", "n", "a", "judgments", True)] * 15 + [Game("m", "n", "b", "judgments", True)] * 5
    games += [Game("m", "n", "tie", "judgments", True)] * 7 + [Game("m", "n", "a", "battles", False)] * 9
    p = position_bias(games)
    assert p["judgments"]["a_wins"] == 15 and p["judgments"]["decisive"] == 20 and p["judgments"]["ties"] == 7
    assert p["judgments"]["share_a"] == 0.75
    # exact two-sided binomial: P(X >= 15) * 2 for n = 20
    tail = sum(math.comb(20, k) for k in range(15, 21)) / 2**20
    assert p["judgments"]["p_value"] == pytest.approx(2 * tail)
    assert p["battles"]["votes"] == 0  # positions unknown are left out


def test_cohen_kappa_against_the_textbook_two_by_two():
    # 50 items: both yes 20, rater1 yes/rater2 no 5, no/yes 10, both no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    first = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    second = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(first, second) == pytest.approx(0.4)
    assert cohen_kappa(["t", "t"], ["t", "t"]) is None
    assert cohen_kappa([], []) is None


def _battle(i, vote, position, own="mine", opp="other"):
    return {
        "battle_id": f"b{i}",
        "prompt": f"question {i}?",
        "own_answer": f"own {i}",
        "opponent_answer": f"opp {i}",
        "vote": vote,
        "own_model": own,
        "opponent_model": opp,
        "own_position": position,
        "annotator": "ann",
        "origin": "serve",
    }


def test_audit_reads_battles_from_the_side_shown_and_judgments_with_agreement(store, run_cli):
    add_battle_records(
        store,
        [_battle(0, "win", "a"), _battle(1, "win", "b"), _battle(2, "loss", "b"), _battle(3, "tie", "a")],
        source="test",
    )
    verdicts = []
    for i, (w1, w2) in enumerate([("a", "a"), ("b", "a"), ("tie", "tie"), ("a", "b")]):
        # the second annotator saw the models the other way round: their "a" is model n
        verdicts.append(
            {"battle_id": f"b{i}", "model_a": "m", "model_b": "n", "winner": w1, "annotator": "p"}
        )
        verdicts.append(
            {"battle_id": f"b{i}", "model_a": "n", "model_b": "m", "winner": w2, "annotator": "q"}
        )
    add_judgment_records(store, verdicts, source="test")
    rep = audit_ratings(store, bootstrap=50)
    games = rep.games
    assert games == 12
    # battles as shown: b0 own on A won -> A; b1 own on B won -> B; b2 own on B lost -> A; b3 tie
    assert rep.position["battles"] == {
        "votes": 4, "ties": 1, "a_wins": 2, "decisive": 3, "share_a": 2 / 3, "p_value": 1.0,
    }  # fmt: skip
    # in names: p says m, n, tie, m; q says n, n, tie, m -> agree on items 1, 2 and 3
    (k,) = rep.agreement
    assert (k["rater_1"], k["rater_2"], k["items"], k["agree"]) == ("p", "q", 4, 3)
    assert k["kappa"] == pytest.approx(cohen_kappa(["m", "n", "tie", "m"], ["n", "n", "tie", "m"]))
    assert {r.model for r in rep.ratings} == {"mine", "other", "m", "n"}
    store.close()
    got = run_cli("audit", "ratings", "--bootstrap", "50", "--json")
    assert got.exit_code == 0, got.output
    report = json.loads(got.output)
    assert report["games"] == 12
    # two groups that never played each other: the one with more games is rated, the other has no number
    by_model = {r["model"]: r for r in report["ratings"]}
    assert by_model["m"]["rating"] is not None and by_model["mine"]["rating"] is None
    assert by_model["mine"]["status"] == "not connected to the rated models"
    table = run_cli("audit", "ratings", "--bootstrap", "50")
    assert table.exit_code == 0 and "rating" in table.output and "position" in table.output
    assert "none (not connected to the rated models)" in table.output


def test_the_report_section_shows_the_table_and_the_plot(store):
    from audits.report import build_section

    assert build_section(store, "ratings").tables == []
    add_battle_records(
        store, [_battle(i, ("win", "loss", "tie")[i % 3], "ab"[i % 2]) for i in range(9)], source="t"
    )
    s = build_section(store, "ratings")
    caption, table = s.tables[0]
    assert table.columns[:2] == ["model", "rating"] and {r[0] for r in table.rows} == {"mine", "other"}
    (name, png) = s.images[0]
    assert name == "ratings.png" and png.startswith(b"\x89PNG")
