"""Models ranked from votes: Bradley-Terry over human battles and blind judgments, with bootstrap
intervals, position bias, annotator agreement and the length of chosen against rejected answers.

    pairstore audit ratings [--bootstrap 1000] [--seed 0] [--json]

Games: every battle whose two model names are known (own model against opponent; win, loss, tie,
both_bad read from the own model's side) and every judgment (model_a against model_b). A tie or a
both-bad vote counts as half a win for each side, as FastChat's arena analysis does (its maximum
likelihood fit counts a tie once as a win of each side in a doubled table); no Davidson tie term. The fit
maximizes the Bradley-Terry likelihood (scipy L-BFGS over the log-strengths, the mean held at 0) and
reports ratings on the Elo scale FastChat uses: 1000 + 400 * log10-odds. The 95% intervals are the 2.5
and 97.5 percentiles of the ratings refit on games resampled with replacement (`bootstrap` rounds, numpy
seeded by `seed`).

Where the games do not bound a rating there is no number. The likelihood has a finite maximum only
among models that reach each other through wins both ways (the win graph's strongly connected parts;
a tie is half a win each way). The largest such part is rated, from the games inside it. Every other
model gets a status instead: `never lost`, `never won`, `above the rated models` or `below the rated
models` (it reaches them through wins, they never reach it, or the reverse), `not connected to the
rated models` (no chain of games either way). A bootstrap round whose games leave a rated model
unbounded counts that round as infinite on the open side; an interval end beyond the 2.5% tail is
then reported unbounded (None), not as the fit's bound.

Position bias: among decisive votes whose positions are known (Arena and Queue pages, FastChat logs,
judgments: model_a is the one shown as A), the share of "A is better", with scipy's exact binomial test
against one half. Agreement: Cohen's kappa for every two annotators (or judges) who judged the same item
for the same two models, outcomes read as "this model", "that model" or tie. Lengths: per pair source,
the mean characters of chosen and rejected answers and how often the chosen one is longer (the length
bias known from UltraFeedback).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from audits.report_render import figure_png
from pairstore.ingest.battles import ONE_ROW_PER_BATTLE

ELO_SCALE = 400 / math.log(10)
ELO_BASE = 1000.0


@dataclass(frozen=True)
class Game:
    a: str  # the model shown as A (or the own model where positions are unknown)
    b: str
    outcome: str  # a, b or tie
    source: str  # battles or judgments
    position_known: bool


RATED = "rated"


@dataclass
class Rating:
    model: str
    rating: float | None  # None: the games do not bound it (status says why)
    lower: float | None  # None: unbounded below (or no rating)
    upper: float | None  # None: unbounded above (or no rating)
    games: int
    wins: float  # ties as halves
    status: str = RATED  # rated, never lost, never won, above/below/not connected to the rated models

    @property
    def rating_text(self) -> str:
        return f"{self.rating:.0f}" if self.rating is not None else f"none ({self.status})"

    @property
    def interval_text(self) -> str:
        if self.rating is None:
            return "-"
        low = "-inf" if self.lower is None else f"{self.lower:.0f}"
        high = "+inf" if self.upper is None else f"{self.upper:.0f}"
        return f"{low} .. {high}"


@dataclass
class RatingsReport:
    ratings: list[Rating]
    games: int
    bootstrap: int
    seed: int
    position: dict = field(default_factory=dict)  # source -> {a_wins, decisive, share_a, p_value, ties}
    agreement: list[dict] = field(default_factory=list)
    lengths: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "ratings": [r.__dict__ for r in self.ratings],
            "games": self.games,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "ties": "half a win each (no Davidson term)",
            "position_bias": self.position,
            "agreement": self.agreement,
            "lengths": self.lengths,
        }


# ---------------------------------------------------------------------------- reading games


_OWN_OUTCOME = {"win": "a", "loss": "b", "tie": "tie", "both_bad": "tie"}


def read_games(store) -> list[Game]:
    games = []
    for own, opp, vote, pos in store.con.execute(
        "SELECT own_model, opponent_model, vote, own_position FROM battles "
        "WHERE own_model IS NOT NULL AND opponent_model IS NOT NULL AND own_model <> opponent_model "
        f"{ONE_ROW_PER_BATTLE} "
        "ORDER BY battle_id"
    ).fetchall():
        outcome = _OWN_OUTCOME[vote]
        if pos == "b":  # shown as B: the game as the annotator saw it
            games.append(Game(opp, own, {"a": "b", "b": "a"}.get(outcome, outcome), "battles", True))
        else:
            games.append(Game(own, opp, outcome, "battles", pos == "a"))
    for a, b, winner in store.con.execute(
        "SELECT model_a, model_b, winner FROM judgments ORDER BY judgment_id"
    ).fetchall():
        games.append(Game(a, b, winner, "judgments", True))
    return games


# ---------------------------------------------------------------------------- the fit


def win_matrix(games: list[Game], models: list[str]) -> np.ndarray:
    """W[i, j] = wins of model i over model j, a tie half a win each."""
    index = {m: i for i, m in enumerate(models)}
    w = np.zeros((len(models), len(models)))
    for g in games:
        i, j = index[g.a], index[g.b]
        if g.outcome == "a":
            w[i, j] += 1
        elif g.outcome == "b":
            w[j, i] += 1
        else:
            w[i, j] += 0.5
            w[j, i] += 0.5
    return w


def fit_bradley_terry(w: np.ndarray) -> np.ndarray:
    """Log-strengths (mean 0) maximizing sum W[i,j] * log sigmoid(s_i - s_j). Bounded at +-20 so a model
    that never lost gets a large finite strength instead of a diverging one."""
    from scipy.optimize import minimize

    n = w.shape[0]
    if n < 2:
        return np.zeros(n)

    def loss(s):
        d = s[:, None] - s[None, :]
        # -log sigmoid(d) = log(1 + exp(-d)), computed stably
        nll = float(np.sum(w * np.logaddexp(0.0, -d)))
        p = 1.0 / (1.0 + np.exp(-d))
        g = w * (1.0 - p)  # d/dd of log sigmoid
        grad = -(g.sum(axis=1) - g.sum(axis=0))
        return nll, grad

    res = minimize(loss, np.zeros(n), jac=True, method="L-BFGS-B", bounds=[(-20, 20)] * n,
                   options={"ftol": 1e-13, "gtol": 1e-10, "maxiter": 10_000})  # fmt: skip
    s = res.x
    return s - s.mean()


def to_elo(s: np.ndarray) -> np.ndarray:
    return ELO_BASE + ELO_SCALE * s


def strong_components(w: np.ndarray) -> list[list[int]]:
    """The strongly connected parts of the win graph (i -> j when W[i, j] > 0), each sorted, in Tarjan's
    order (a part is listed before every part that reaches it)."""
    n = w.shape[0]
    succ = [[j for j in range(n) if j != i and w[i, j] > 0] for i in range(n)]
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    parts: list[list[int]] = []
    for root in range(n):
        if root in index:
            continue
        # Iterative Tarjan: (node, next successor position) frames, so a long chain cannot overflow.
        work = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, k = work[-1]
            if k < len(succ[v]):
                work[-1] = (v, k + 1)
                u = succ[v][k]
                if u not in index:
                    index[u] = low[u] = len(index)
                    stack.append(u)
                    on_stack.add(u)
                    work.append((u, 0))
                elif u in on_stack:
                    low[v] = min(low[v], index[u])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = []
                while True:
                    u = stack.pop()
                    on_stack.discard(u)
                    part.append(u)
                    if u == v:
                        break
                parts.append(sorted(part))
    return parts


def _reach(w: np.ndarray, start: set[int]) -> set[int]:
    """Every model reachable from `start` through wins (i -> j when W[i, j] > 0)."""
    seen, todo = set(start), list(start)
    while todo:
        i = todo.pop()
        for j in np.nonzero(w[i] > 0)[0]:
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    return seen


def bounded_status(w: np.ndarray, models: list[str]) -> tuple[list[int], dict[int, str]]:
    """(the rated models: the largest strongly connected part of two or more models, ties broken by games
    then names; every other model's status)."""
    parts = [p for p in strong_components(w) if len(p) > 1]
    games = w + w.T
    rated = (
        min(parts, key=lambda p: (-len(p), -float(games[np.ix_(p, p)].sum()), [models[i] for i in p]))
        if parts
        else []
    )
    members = set(rated)
    above = _reach(w.T, members) - members  # they reach the rated models through wins
    below = _reach(w, members) - members
    status: dict[int, str] = {}
    for i in range(len(models)):
        if i in members:
            continue
        lost = float(w[:, i].sum() - w[i, i]) > 0
        won = float(w[i, :].sum() - w[i, i]) > 0
        if not lost:
            status[i] = "never lost"
        elif not won:
            status[i] = "never won"
        elif i in above:
            status[i] = "above the rated models"
        elif i in below:
            status[i] = "below the rated models"
        else:
            status[i] = "not connected to the rated models"
    return rated, status


def unbounded_sides(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a win matrix that may not be strongly connected: (unbounded above, unbounded below) per model.
    A part no other part reaches through wins is unbounded above, one that reaches no other part below;
    a part in the middle, or cut off from the rest, is unbounded both ways."""
    n = w.shape[0]
    up, down = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    parts = strong_components(w)
    if len(parts) == 1:
        return up, down
    part_of = {i: k for k, p in enumerate(parts) for i in p}
    into, out = set(), set()
    for i in range(n):
        for j in np.nonzero(w[i] > 0)[0]:
            if part_of[i] != part_of[int(j)]:
                out.add(part_of[i])
                into.add(part_of[int(j)])
    for k, p in enumerate(parts):
        source, sink = k not in into, k not in out
        up[p] = source or not sink
        down[p] = sink or not source
    return up, down


def _tail_percentile(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile (linear, as numpy's default) of values that may hold +-inf; None when it is
    infinite."""
    xs = np.sort(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    if not (math.isfinite(xs[lo]) and math.isfinite(xs[hi])):
        return None
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def ratings(games: list[Game], *, bootstrap: int = 1000, seed: int = 0) -> list[Rating]:
    from threadpoolctl import threadpool_limits

    # Thousands of fits of a few numbers each: BLAS threads would only wait on each other (eight times
    # slower on a busy machine), and one thread sums in one order on every machine.
    with threadpool_limits(limits=1, user_api="blas"):
        return _ratings(games, bootstrap=bootstrap, seed=seed)


def _resampled(cells: list[tuple[int, int, str]], draw: np.ndarray, n: int) -> np.ndarray:
    wb = np.zeros((n, n))
    for (i, j, outcome), c in zip(cells, draw):
        if outcome == "a":
            wb[i, j] += c
        elif outcome == "b":
            wb[j, i] += c
        else:
            wb[i, j] += 0.5 * c
            wb[j, i] += 0.5 * c
    return wb


def _ratings(games: list[Game], *, bootstrap: int, seed: int) -> list[Rating]:
    models = sorted({g.a for g in games} | {g.b for g in games})
    if not models:
        return []
    w = win_matrix(games, models)
    rated, status = bounded_status(w, models)
    point = np.full(len(models), np.nan)
    lower: list[float | None] = [None] * len(models)
    upper: list[float | None] = [None] * len(models)
    if rated:
        sub = w[np.ix_(rated, rated)]
        fitted = to_elo(fit_bradley_terry(sub))
        point[rated] = fitted
        for k, i in enumerate(rated):
            lower[i] = upper[i] = float(fitted[k])
    if rated and bootstrap > 0:
        rng = np.random.default_rng(seed)
        index = {m: i for i, m in enumerate(models)}
        # Resampling games is resampling the cells (i, j, outcome) multinomially by their counts.
        cells = Counter((index[g.a], index[g.b], g.outcome) for g in games)
        keys, counts = list(cells), np.array(list(cells.values()), dtype=float)
        draws = rng.multinomial(len(games), counts / counts.sum(), size=bootstrap)
        # Per round: the rated models' fit where its games bound them all; otherwise each model at +inf
        # or -inf on the side its games leave open (both, where either could be).
        lows, highs = np.empty((bootstrap, len(rated))), np.empty((bootstrap, len(rated)))
        for k, draw in enumerate(draws):
            wb = _resampled(keys, draw, len(models))[np.ix_(rated, rated)]
            up, down = unbounded_sides(wb)
            if not (up.any() or down.any()):
                lows[k] = highs[k] = to_elo(fit_bradley_terry(wb))
            else:
                lows[k] = np.where(down, -np.inf, np.where(up, np.inf, np.nan))
                highs[k] = np.where(up, np.inf, np.where(down, -np.inf, np.nan))
        for k, i in enumerate(rated):
            lower[i] = _tail_percentile(lows[:, k], 2.5)
            upper[i] = _tail_percentile(highs[:, k], 97.5)
    played: Counter[str] = Counter()
    for g in games:
        played[g.a] += 1
        played[g.b] += 1
    out = [
        Rating(m, None if np.isnan(point[i]) else float(point[i]), lower[i], upper[i], played[m],
               float(w[i].sum() - w[i, i]), status.get(i, RATED))
        for i, m in enumerate(models)
    ]  # fmt: skip
    return sorted(out, key=_rank)


_STATUS_ORDER = {"never lost": 0, "above the rated models": 1, RATED: 2, "below the rated models": 3,
                 "never won": 4, "not connected to the rated models": 5}  # fmt: skip


def _rank(r: Rating) -> tuple:
    """Best first: the models above every rated one, the rated ones by rating, then those below."""
    return (_STATUS_ORDER[r.status], -(r.rating or 0.0), r.model)


# ---------------------------------------------------------------------------- position, agreement, lengths


def position_bias(games: list[Game]) -> dict:
    from scipy.stats import binomtest

    out = {}
    for source in ("battles", "judgments", "all"):
        known = [g for g in games if g.position_known and source in ("all", g.source)]
        decisive = [g for g in known if g.outcome != "tie"]
        k = sum(1 for g in decisive if g.outcome == "a")
        n = len(decisive)
        out[source] = {
            "votes": len(known),
            "ties": len(known) - n,
            "a_wins": k,
            "decisive": n,
            "share_a": k / n if n else None,
            "p_value": float(binomtest(k, n, 0.5).pvalue) if n else None,
        }
    return out


def cohen_kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two raters' labels for the same items (None when undefined: no items, or both
    raters always gave one and the same label)."""
    n = len(first)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(first, second) if x == y) / n
    c1, c2 = Counter(first), Counter(second)
    expected = sum(c1[label] * c2[label] for label in set(c1) | set(c2)) / (n * n)
    if expected == 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def agreement(store) -> list[dict]:
    """Kappa per pair of raters over the items both judged for the same two models."""
    votes: dict[tuple, dict[str, str]] = defaultdict(dict)
    for item, a, b, winner, rater in store.con.execute(
        "SELECT battle_id, model_a, model_b, winner, coalesce(annotator, judge, source_file) FROM judgments "
        "ORDER BY judgment_id"
    ).fetchall():
        key = (item, *sorted((a, b)))
        votes[key][rater] = {"a": a, "b": b}.get(winner, "tie")  # the winner's name, or tie
    together: dict[tuple[str, str], tuple[list, list]] = defaultdict(lambda: ([], []))
    for by_rater in votes.values():
        raters = sorted(by_rater)
        for i, r1 in enumerate(raters):
            for r2 in raters[i + 1 :]:
                together[(r1, r2)][0].append(by_rater[r1])
                together[(r1, r2)][1].append(by_rater[r2])
    return [
        {"rater_1": r1, "rater_2": r2, "items": len(x), "agree": sum(p == q for p, q in zip(x, y)),
         "kappa": cohen_kappa(x, y)}
        for (r1, r2), (x, y) in sorted(together.items())
    ]  # fmt: skip


def lengths_by_source(store) -> list[dict]:
    return store.rows(
        "SELECT source, count(*) AS pairs, avg(length(chosen)) AS chosen_chars, "
        "avg(length(rejected)) AS rejected_chars, avg(CASE WHEN length(chosen) > length(rejected) THEN 1.0 "
        "ELSE 0.0 END) AS chosen_longer FROM pairs WHERE rejected IS NOT NULL GROUP BY source ORDER BY source"
    )


def audit_ratings(store, *, bootstrap: int = 1000, seed: int = 0) -> RatingsReport:
    games = read_games(store)
    return RatingsReport(
        ratings(games, bootstrap=bootstrap, seed=seed),
        len(games),
        bootstrap,
        seed,
        position_bias(games),
        agreement(store),
        lengths_by_source(store),
    )


def ratings_png(report: RatingsReport) -> bytes | None:
    """The ratings with their intervals, best on top."""
    if not report.ratings:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = [r for r in report.ratings if r.rating is not None]
    if not rs:
        return None
    points = [float(r.rating or 0.0) for r in rs]
    below = [None if r.lower is None else p - r.lower for r, p in zip(rs, points)]
    above = [None if r.upper is None else r.upper - p for r, p in zip(rs, points)]
    # An unbounded end is drawn twice as long as the longest bounded one: it runs off the interval scale.
    open_end = 2 * max([x for x in below + above if x is not None] + [50.0])
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(rs) + 1.2))
    y = list(range(len(rs)))[::-1]
    ax.errorbar(
        points,
        y,
        xerr=[[open_end if x is None else x for x in below], [open_end if x is None else x for x in above]],
        fmt="o",
        capsize=3,
    )
    ax.set_yticks(y, [r.model for r in rs])
    ax.set_xlabel("Bradley-Terry rating (Elo scale), 95% bootstrap interval")
    unrated = len(report.ratings) - len(rs)
    note = f"; {unrated} not bounded by their games" if unrated else ""
    ax.set_title(f"{report.games} games, {report.bootstrap} bootstrap rounds{note}", fontsize=9)
    return figure_png(fig)
