"""Compare two models: eval accuracy with paired flips, and blind-judge tallies on held-out battles.

    pairstore audit compare sm11a sm11d --suite math
    pairstore audit compare sm11a so7a --suite v6 --holdout judge34 --json

Evals (`evals` of suite S): each model's accuracy with a 95% Wilson interval;
on the items both answered, the paired flips (A right and B wrong, and the
reverse) and the exact McNemar p-value: a two-sided binomial test of the
discordant pairs against 1/2.

Judgments (`judgments` between A and B, in either seat): each battle counts
once. When a battle was judged more than once (e.g. both seat orders) its
verdicts are summed from A's side (+1 A, -1 B, 0 tie) and the sign decides; a
model has a heavy flaw on a battle when any verdict flagged it. Tallies
A-wins / B-wins / ties with a two-sided sign test on the decisive battles, over
all judged battles (those of --holdout SET when given) and over the clean
subset: battles that neither model's lineage ever trained on. Lineage = every
ancestor through rounds.parents and checkpoints.parents (and a checkpoint's
round); trained on = a row of a registered mixture of one of those rounds
whose origin id is the battle, whose match key is the battle's, or which the
holdout matcher (pairstore.holdout.matching: id, match key, fuzzy) ties to it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import pyarrow as pa

from pairstore.errors import BadInput, NotFound
from pairstore.holdout.matching import candidate_table, find_holdout_hits

Z95 = 1.959963984540054


# -- statistics ------------------------------------------------------------------


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials (0, 0 for n = 0): scipy.stats.binomtest's
    proportion_ci(method="wilson") at the confidence level z stands for."""
    if n == 0:
        return (0.0, 0.0)
    _check_counts(k, n)
    from scipy.stats import binomtest, norm  # lazy: scipy takes a while to import

    ci = binomtest(k, n).proportion_ci(confidence_level=float(2 * norm.cdf(z) - 1), method="wilson")
    return (max(0.0, float(ci.low)), min(1.0, float(ci.high)))


def binom_two_sided_half(k: int, n: int) -> float:
    """Exact two-sided binomial p-value of k successes in n trials at p = 1/2 (1.0 for n = 0):
    scipy.stats.binomtest."""
    if n == 0:
        return 1.0
    _check_counts(k, n)
    from scipy.stats import binomtest

    return float(binomtest(k, n, 0.5, alternative="two-sided").pvalue)


def _check_counts(k: int, n: int) -> None:
    if not 0 <= k <= n:
        raise BadInput(f"k={k} outside 0..{n}", field="k")


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact McNemar p-value: binomial test of one kind of discordant pair among all discordant pairs."""
    return binom_two_sided_half(a_only, a_only + b_only)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided sign test on decisive outcomes (ties dropped)."""
    return binom_two_sided_half(wins, wins + losses)


# -- evals -----------------------------------------------------------------------


@dataclass
class ModelAccuracy:
    model: str
    items: int
    correct: int
    accuracy: float
    wilson_low: float
    wilson_high: float


@dataclass
class PairedFlips:
    items: int  # items both models answered
    both: int
    neither: int
    a_only: int  # A right, B wrong
    b_only: int  # B right, A wrong
    mcnemar_p: float


def _correct_sql(alias: str = "") -> str:
    """An item counts as correct by its `correct` flag, else by score >= 0.5."""
    p = f"{alias}." if alias else ""
    return f"coalesce({p}correct, {p}score >= 0.5)"


def accuracy(store, model: str, suite: str) -> ModelAccuracy:
    n, k = store.con.execute(
        f"SELECT count(*), count(*) FILTER ({_correct_sql()}) FROM evals WHERE model = ? AND suite = ?",
        [model, suite],
    ).fetchall()[0]
    lo, hi = wilson_interval(k, n)
    return ModelAccuracy(model, n, k, k / n if n else 0.0, lo, hi)


def paired_flips(store, a: str, b: str, suite: str) -> PairedFlips:
    both, neither, a_only, b_only = store.con.execute(
        f"""
        SELECT count(*) FILTER (ca AND cb), count(*) FILTER (NOT ca AND NOT cb),
               count(*) FILTER (ca AND NOT cb), count(*) FILTER (NOT ca AND cb)
        FROM (SELECT x.item_id, {_correct_sql("x")} AS ca, {_correct_sql("y")} AS cb
              FROM evals x JOIN evals y ON x.item_id = y.item_id AND x.suite = y.suite
              WHERE x.suite = ? AND x.model = ? AND y.model = ?)""",
        [suite, a, b],
    ).fetchall()[0]
    return PairedFlips(
        both + neither + a_only + b_only, both, neither, a_only, b_only, mcnemar_exact(a_only, b_only)
    )


# -- judgments -------------------------------------------------------------------


@dataclass
class JudgeTally:
    battles: int
    a_wins: int
    b_wins: int
    ties: int
    sign_p: float
    heavy_flaws_a: int
    heavy_flaws_b: int


def battle_verdicts(store, a: str, b: str) -> dict[str, tuple[int, bool, bool]]:
    """battle_id -> (verdict from A's side: 1, -1 or 0; A heavy flaw; B heavy flaw), each battle once."""
    rows = store.con.execute(
        """
        SELECT battle_id,
               sum(CASE WHEN winner = 'tie' THEN 0
                        WHEN (winner = 'a') = (model_a = ?) THEN 1 ELSE -1 END) AS s,
               bool_or(CASE WHEN model_a = ? THEN heavy_flaw_a ELSE heavy_flaw_b END) AS fa,
               bool_or(CASE WHEN model_a = ? THEN heavy_flaw_b ELSE heavy_flaw_a END) AS fb
        FROM judgments
        WHERE (model_a = ? AND model_b = ?) OR (model_a = ? AND model_b = ?)
        GROUP BY battle_id ORDER BY battle_id""",
        [a, a, a, a, b, b, a],
    ).fetchall()
    return {bid: ((s > 0) - (s < 0), bool(fa), bool(fb)) for bid, s, fa, fb in rows}


def tally(verdicts: dict, battles=None) -> JudgeTally:
    items = [v for k, v in verdicts.items() if battles is None or k in battles]
    aw = sum(1 for s, _, _ in items if s > 0)
    bw = sum(1 for s, _, _ in items if s < 0)
    return JudgeTally(
        len(items),
        aw,
        bw,
        len(items) - aw - bw,
        sign_test(aw, bw),
        sum(1 for _, fa, _ in items if fa),
        sum(1 for _, _, fb in items if fb),
    )


def ancestors(store, name: str) -> set[str]:
    """`name` and every ancestor through rounds.parents, checkpoints.parents and checkpoints.round."""
    parents: dict[str, set[str]] = {}
    for n, ps in store.con.execute("SELECT name, parents FROM rounds").fetchall():
        parents.setdefault(n, set()).update(ps or [])
    for n, ps, rnd in store.con.execute("SELECT name, parents, round FROM checkpoints").fetchall():
        parents.setdefault(n, set()).update(ps or [])
        if rnd and rnd != n:
            parents[n].add(rnd)
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(parents.get(n, ()))
    return seen


def trained_battles(store, model: str, battle_ids: set[str], holdout: str | None = None) -> set[str]:
    """Which of `battle_ids` the lineage of `model` trained on (see module docstring)."""

    rounds = sorted(ancestors(store, model))
    if not rounds or not battle_ids:
        return set()
    con = store.con
    con.register("_cmp_rounds", pa.table({"round": pa.array(rounds, pa.string())}))
    con.register("_cmp_battles", pa.table({"battle_id": pa.array(sorted(battle_ids), pa.string())}))
    try:
        con.execute("""
            CREATE OR REPLACE TEMP VIEW _cmp_rows AS
            SELECT DISTINCT r.pair_id FROM export_rows r JOIN exports e USING (export_id)
            SEMI JOIN _cmp_rounds c ON c.round = e.round""")
        direct = {
            r[0]
            for r in con.execute("""
            SELECT b.battle_id FROM _cmp_battles b JOIN battles t USING (battle_id)
            WHERE EXISTS (SELECT 1 FROM pair_origins o SEMI JOIN _cmp_rows USING (pair_id)
                          WHERE o.origin_id = b.battle_id)
               OR EXISTS (SELECT 1 FROM pairs p SEMI JOIN _cmp_rows USING (pair_id)
                          WHERE p.match_key = t.match_key)""").fetchall()
        }
        rows = con.execute("""
            SELECT p.pair_id, p.prompt, p.task_key,
                   (SELECT list(o.origin_id) FROM pair_origins o WHERE o.pair_id = p.pair_id)
            FROM pairs p SEMI JOIN _cmp_rows USING (pair_id) ORDER BY p.pair_id""").fetchall()
    finally:
        con.execute("DROP VIEW IF EXISTS _cmp_rows")
        con.unregister("_cmp_rounds")
        con.unregister("_cmp_battles")
    if rows:
        cands = candidate_table(
            (i, pid, list(o or []), [dict(m) for m in prompt], tk)
            for i, (pid, prompt, tk, o) in enumerate(rows)
        )
        hits = find_holdout_hits(store, cands, set_name=holdout)
        direct |= {
            h.item_id
            for h in hits
            if h.item_id in battle_ids and not h.set_name.startswith(("eval:", "benchmark:"))
        }
    return direct


@dataclass
class Comparison:
    a: str
    b: str
    suite: str | None
    accuracy_a: ModelAccuracy | None
    accuracy_b: ModelAccuracy | None
    flips: PairedFlips | None
    judge_all: JudgeTally
    judge_clean: JudgeTally
    holdout: str | None = None
    clean_battles: list[str] = field(default_factory=list)
    trained_by: dict = field(default_factory=dict)  # model -> battles its lineage trained on

    def as_dict(self) -> dict:
        return {
            "a": self.a,
            "b": self.b,
            "suite": self.suite,
            "holdout": self.holdout,
            "accuracy": {
                "a": asdict(self.accuracy_a) if self.accuracy_a else None,
                "b": asdict(self.accuracy_b) if self.accuracy_b else None,
            },
            "paired": asdict(self.flips) if self.flips else None,
            "judge": {
                "all": asdict(self.judge_all),
                "clean": asdict(self.judge_clean),
                "clean_battles": self.clean_battles,
                "trained_by": self.trained_by,
            },
        }


def compare(store, a: str, b: str, *, suite: str | None = None, holdout: str | None = None) -> Comparison:
    """Evals of `suite` (when given) and blind-judge tallies of A against B."""
    if a == b:
        raise BadInput("compare needs two different models", field="B")
    known = {
        r[0]
        for r in store.con.execute(
            "SELECT model FROM evals UNION SELECT model_a FROM judgments UNION SELECT model_b FROM judgments "
            "UNION SELECT name FROM checkpoints UNION SELECT name FROM rounds"
        ).fetchall()
    }
    for m in (a, b):
        if m not in known:
            raise NotFound(f"no evals, judgments, checkpoint or round named {m!r}")
    acc_a = acc_b = flips = None
    if suite is not None:
        acc_a, acc_b = accuracy(store, a, suite), accuracy(store, b, suite)
        if acc_a.items == 0 and acc_b.items == 0:
            raise NotFound(f"no evals of suite {suite!r} for {a} or {b}")
        flips = paired_flips(store, a, b, suite)
    verdicts = battle_verdicts(store, a, b)
    if holdout is not None:
        if not store.scalar("SELECT count(*) FROM holdout_sets WHERE set_name = ?", [holdout]):
            raise NotFound(f"no holdout set {holdout!r}")
        members = {
            r[0]
            for r in store.con.execute(
                "SELECT item_id FROM holdout WHERE set_name = ? AND removed_at IS NULL", [holdout]
            ).fetchall()
        }
        verdicts = {k: v for k, v in verdicts.items() if k in members}
    battles = set(verdicts)
    trained = {m: sorted(trained_battles(store, m, battles, holdout)) for m in (a, b)}
    clean = sorted(battles - set(trained[a]) - set(trained[b]))
    return Comparison(
        a,
        b,
        suite,
        acc_a,
        acc_b,
        flips,
        tally(verdicts),
        tally(verdicts, set(clean)),
        holdout,
        clean,
        trained,
    )
