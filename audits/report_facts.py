"""What the provenance report's sections share, and how a section is declared.

A section is one function, declared once with its key, title and the store tables it reads:

    @section("lineage", "Lineage", reads=("rounds", "checkpoints", "exports"))
    def lineage(facts: ReportFacts, s: Section) -> None:
        s.paragraphs.append(...)

`section` turns the function into a SectionSpec. audits.report lists the specs in the order the
report shows them and runs them in that order; the markdown and the HTML are assembled from that list.

ReportFacts holds what several parts read (the lineage, the incumbent, the leak audit of every holdout
set, the decontamination, the recomputed mixture hashes), each computed once, on first use. A fact
read by a section counts among what the section reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa

from audits.leaks import LeakReport, audit_leaks
from audits.mixtures import FileCheck, check_mixtures
from audits.report_render import Section
from pairstore.errors import NotFound
from pairstore.holdout.ngrams import arrow_query, benchmark_hits
from pairstore.rounds.lineage import lineage
from pairstore.store.store import Store

# What the report's parts read, by where it comes from (tests/audits/test_audit_report.py checks each
# section reads only what it declares). The model's lineage (pairstore.rounds.lineage):
LINEAGE_READS = ("rounds", "checkpoints", "exports")
# The holdout members and the texts they match by (pairstore.holdout.matching), and the store's other
# texts the gate samples to tell a stock phrase from a distinctive one (pairstore.holdout.needles).
MEMBER_READS = ("holdout", "battles", "problems", "tasks", "eval_items", "pairs", "generations")
# The leak audit of every set against every registered mixture (ReportFacts.leak_reports).
LEAK_READS = (*MEMBER_READS, "holdout_sets", "exports", "export_rows", "pairs", "pair_origins")
# A comparison of two models (audits.compare): evaluations, judgments and the battles either trained on.
COMPARE_READS = (*LEAK_READS, "evals", "judgments", "benchmark_refs", "benchmark_ngrams")
# The recomputed hashes of every mixture and bundle file (ReportFacts.mixture_checks).
MIXTURE_READS = ("exports", "checkpoints", "audit_log")


@dataclass(frozen=True)
class SectionSpec:
    """One section of the report: its anchor (`key`), its heading, the store tables it reads (its
    facts' included) and the function that fills it."""

    key: str
    title: str
    reads: tuple[str, ...]
    fill: Callable[[ReportFacts, Section], None]

    def build(self, facts: ReportFacts) -> Section:
        s = Section(self.key, self.title)
        self.fill(facts, s)
        return s


def section(key: str, title: str, *, reads: tuple[str, ...]) -> Callable[[Callable[..., None]], SectionSpec]:
    """Decorator: declare `fill(facts, section)` as the report section `key` titled `title`."""

    def declare(fill: Callable[..., None]) -> SectionSpec:
        return SectionSpec(key, title, tuple(dict.fromkeys(reads)), fill)

    return declare


def chain_models(stages: list[dict]) -> list[str]:
    """The models of a chain: every stage's name, in lineage order."""
    return [st["name"] for st in stages]


def default_incumbent(store: Store, model: str, stages: list[dict]) -> str | None:
    """The model's nearest ancestor with evaluations, first parents first (a soup's `a`, a round's parent)."""
    by_name = {st["name"]: st for st in stages}
    evaluated = {r[0] for r in store.con.execute("SELECT DISTINCT model FROM evals").fetchall()}
    frontier, seen = list(by_name[model]["parents"]), {model}
    while frontier:
        name = frontier.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name in evaluated:
            return name
        frontier += list(by_name.get(name, {}).get("parents", []))
    return None


def _pair_texts(store: Store, rounds: list[str]) -> pa.Table:
    """(round, row_index, pair_id, text) of every row of the rounds' registered mixtures."""
    con = store.con
    con.register("_rep_rounds", pa.table({"round": pa.array(rounds, pa.string())}))
    try:
        return arrow_query(
            con,
            """
            SELECT DISTINCT e.round, r.row_index, p.pair_id,
                   array_to_string(list_transform(p.prompt, lambda m: m.content), chr(10)) \
|| chr(10) || p.chosen
                   || coalesce(chr(10) || p.rejected, '') AS text
            FROM export_rows r JOIN exports e USING (export_id) JOIN pairs p USING (pair_id)
            WHERE e.round IN (SELECT round FROM _rep_rounds)
            ORDER BY e.round, r.row_index""",
        )
    finally:
        con.unregister("_rep_rounds")


def decontamination_rows(store: Store, rounds: list[str]) -> list[list[Any]] | None:
    """Per registered benchmark: [benchmark, items, n, rows checked, contaminated rows, items matched,
    rounds hit] over the rounds' mixture rows; None when no benchmark is registered."""
    benches = store.rows(
        "SELECT benchmark, n, count(*) AS items FROM benchmark_refs GROUP BY ALL ORDER BY benchmark"
    )
    if not benches:
        return None
    texts = _pair_texts(store, rounds)
    rows = []
    for n in sorted({b["n"] for b in benches}):
        tbl = pa.table({"row_index": pa.array(range(texts.num_rows), pa.int64()), "text": texts["text"]})
        hits = benchmark_hits(store, tbl, n=n)
        for b in (b for b in benches if b["n"] == n):
            mine = [(r, i) for r, bn, i in hits if bn == b["benchmark"]]
            rounds_hit = sorted({texts["round"][r].as_py() for r, _ in mine})
            rows.append(
                [
                    b["benchmark"],
                    b["items"],
                    n,
                    texts.num_rows,
                    len({r for r, _ in mine}),
                    len({i for _, i in mine}),
                    ", ".join(rounds_hit) or "-",
                ]
            )
    return rows


class ReportFacts:
    """The store and the report's options, and what several sections read, each computed once on first
    use. `all_models`: evaluation, loop table and dose curve cover every model, not only the chain's."""

    def __init__(
        self,
        store: Store,
        model: str,
        *,
        tokenizer: str | None = None,
        incumbent: str | None = None,
        all_models: bool = False,
    ) -> None:
        self.store, self.model, self.tokenizer, self.all_models = store, model, tokenizer, all_models
        self._incumbent = incumbent

    def check(self) -> None:
        """Read the lineage and the incumbent now: an unknown model, or an incumbent without evaluations,
        raises NotFound before any section's work."""
        _ = (self.stages, self.incumbent)

    @cached_property
    def stages(self) -> list[dict]:
        """The model's lineage, parents first (NotFound for an unknown model)."""
        return lineage(self.store, self.model)

    @cached_property
    def rounds(self) -> list[str]:
        return [st["name"] for st in self.stages]

    @cached_property
    def models(self) -> list[str] | None:
        """The models the evaluation covers: the chain's; None for every model in the store."""
        return None if self.all_models else chain_models(self.stages)

    @cached_property
    def incumbent(self) -> str | None:
        """What the verdict compares the model with: the one asked for (it must have evaluations), or
        the model's nearest evaluated ancestor."""
        if self._incumbent is None:
            return default_incumbent(self.store, self.model, self.stages)
        if not self.store.scalar("SELECT count(*) FROM evals WHERE model = ?", [self._incumbent]):
            raise NotFound(f"no evaluations of the incumbent {self._incumbent!r}")
        return self._incumbent

    @cached_property
    def max_lengths(self) -> dict[str, int]:
        """round -> the max length its training run used (where its evidence records one)."""
        return {
            st["name"]: st["run"]["hyperparameters"]["max_length"]
            for st in self.stages
            if st.get("run") and (st["run"].get("hyperparameters") or {}).get("max_length")
        }

    @cached_property
    def leak_reports(self) -> list[LeakReport]:
        """The leak audit of every holdout set against every registered mixture, by set name."""
        sets = self.store.con.execute("SELECT set_name FROM holdout_sets ORDER BY set_name").fetchall()
        return [audit_leaks(self.store, name) for (name,) in sets]

    @cached_property
    def decontamination(self) -> list[list[Any]] | None:
        return decontamination_rows(self.store, self.rounds)

    @cached_property
    def mixture_checks(self) -> list[FileCheck]:
        """Every registered mixture's and recorded bundle file's SHA-256, recomputed now."""
        return check_mixtures(self.store)
