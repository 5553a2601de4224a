"""Where each gate hit sits, so a refusal can be acted on: per hit, the recipe's `[[mix]]` block(s) and
their source, the file the pair came from (and its line), the held-out member and its text.

    places = hit_places(store, mix, standing)      # one HitPlace per hit, in the hits' order
    print("\n".join(p.line() for p in places))

Read-only: a few queries over the plan's table, pair_origins, the tables an origin names and the members'
tables. The texts shown are the stored ones, cut to TEXT_SHOWN characters on one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pairstore.holdout.matching import Hit

if TYPE_CHECKING:
    from pairstore.export.plan import MixturePlan
    from pairstore.store.store import Store

TEXT_SHOWN = 80
# The row that stands for the round's own system prompt (pairstore.export.gate checks it like a pair).
SYSTEM_PROMPT_ROW = -1

# Where a pair's origin was read from, per origin kind: the SQL giving (origin_id, file) for the origins
# of that kind in _hit_origins. An `import` or `attached` origin is `<file sha256 prefix>:<line>`.
_BY_ID = "SELECT o.origin_id, t.source_file FROM _hit_origins o JOIN {table} t ON t.{key} = o.origin_id"
_BY_SHA = (
    "SELECT o.origin_id, t.path || ':' || split_part(o.origin_id, ':', 2) FROM _hit_origins o "
    "JOIN {table} t ON starts_with(t.{key}, split_part(o.origin_id, ':', 1))"
)
_ORIGIN_FILES = {
    "battle": _BY_ID.format(table="battles", key="battle_id"),
    "arena": _BY_ID.format(table="battles", key="battle_id"),
    "generation": _BY_ID.format(table="generations", key="gen_id"),
    "problem": _BY_ID.format(table="problems", key="problem_id"),
    "import": _BY_SHA.format(table="ingests", key="file_sha256"),
    "attached": _BY_SHA.format(table="exports", key="sha256"),
}


@dataclass(frozen=True)
class HitPlace:
    """One gate hit and where it sits."""

    hit: Hit
    blocks: tuple[tuple[int, str], ...]  # (1-based [[mix]] block, its source) holding the pair
    file: str | None  # the file (and line) the pair came from, when the store knows it
    member_text: str | None  # the held-out member's stored text, cut to one short line

    def line(self) -> str:
        """`  SET ITEM pair PAIR (HOW) in [[mix]] block N (source S), from FILE:LINE: "member text"`."""
        h = self.hit
        how = h.how + (f" {h.score:g}" if h.score != 100 else "")
        if h.row_index == SYSTEM_PROMPT_ROW:
            where = f"the round's system prompt ({how})"
        else:
            blocks = ", ".join(f"[[mix]] block {i} (source {s})" for i, s in self.blocks)
            where = f"pair {h.pair_id} ({how})" + (f" in {blocks}" if blocks else "")
            where += f", from {self.file}" if self.file else ""
        text = f': "{self.member_text}"' if self.member_text else ""
        return f"  {h.set_name} {h.item_id} {where}{text}"

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.hit.as_dict(),
            "blocks": [{"block": i, "source": s} for i, s in self.blocks],
            "file": self.file,
            "member_text": self.member_text,
        }


def _one_line(text: str | None) -> str | None:
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_SHOWN else flat[: TEXT_SHOWN - 1] + "…"


# Where each kind of member keeps its text: SQL giving (set_name, item_id, text) for the members listed
# in _hit_members (set_name, item_id): eval items ("eval:SUITE"), benchmarks ("benchmark:NAME"), holdout.
_MEMBER_TEXTS = (
    "SELECT m.set_name, m.item_id, array_to_string(list_transform(e.prompt, lambda x: x.content), ' ') "
    "FROM _hit_members m JOIN eval_items e ON 'eval:' || e.suite = m.set_name AND e.item_id = m.item_id",
    "SELECT m.set_name, m.item_id, b.text FROM _hit_members m "
    "JOIN benchmark_refs b ON 'benchmark:' || b.benchmark = m.set_name AND b.item_id = m.item_id",
    "SELECT m.set_name, m.item_id, h.match_text FROM _hit_members m "
    "JOIN holdout h ON h.set_name = m.set_name AND h.item_id = m.item_id",
)


def _member_texts(store: Store, members: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The stored text of each (set, item), in one query per kind of member: a holdout member's user
    turns as matched, an eval item's prompt, a benchmark reference's text."""
    if not members:
        return {}
    names, items = zip(*sorted(members), strict=True)
    con = store.con
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _hit_members AS SELECT unnest(?::VARCHAR[]) AS set_name, "
        "unnest(?::VARCHAR[]) AS item_id",
        [list(names), list(items)],
    )
    try:
        texts: dict[tuple[str, str], str] = {}
        for sql in _MEMBER_TEXTS:
            for set_name, item_id, text in con.execute(sql).fetchall():
                if text:
                    texts.setdefault((set_name, item_id), text)
        return texts
    finally:
        con.execute("DROP TABLE IF EXISTS _hit_members")


def _pair_files(store: Store, pair_ids: list[str]) -> dict[str, str]:
    """The first file (by origin kind, then id) each pair was read from, where its origins name one."""
    con = store.con
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _hit_origins AS SELECT pair_id, origin_kind, origin_id "
        "FROM pair_origins WHERE pair_id IN (SELECT unnest(?::VARCHAR[]))",
        [pair_ids],
    )
    try:
        kinds = [k for (k,) in con.execute("SELECT DISTINCT origin_kind FROM _hit_origins").fetchall()]
        found: dict[tuple[str, str], str] = {}
        for kind in sorted(k for k in kinds if k in _ORIGIN_FILES):
            for origin_id, path in con.execute(_ORIGIN_FILES[kind]).fetchall():
                if path:
                    found.setdefault((kind, origin_id), path)
        files: dict[str, str] = {}
        for pair_id, kind, origin_id in con.execute(
            "SELECT pair_id, origin_kind, origin_id FROM _hit_origins ORDER BY ALL"
        ).fetchall():
            if (kind, origin_id) in found:
                files.setdefault(pair_id, found[(kind, origin_id)])
        return files
    finally:
        con.execute("DROP TABLE IF EXISTS _hit_origins")


def hit_places(store: Store, mixture: MixturePlan, hits: list[Hit]) -> list[HitPlace]:
    """Each hit with its blocks, file and member text (see the module's docstring)."""
    pair_ids = sorted({h.pair_id for h in hits if h.pair_id is not None})
    sources = {b.index: b.source for b in mixture.blocks}
    blocks: dict[str, list[tuple[int, str]]] = {}
    for pair_id, block in store.con.execute(
        f"SELECT pair_id, block FROM {mixture.table} WHERE pair_id IN (SELECT unnest(?::VARCHAR[])) "
        "ORDER BY pair_id, block",
        [pair_ids],
    ).fetchall():
        blocks.setdefault(pair_id, []).append((block + 1, sources.get(block, "?")))
    files = _pair_files(store, pair_ids) if pair_ids else {}
    texts = _member_texts(store, {(h.set_name, h.item_id) for h in hits})
    return [
        HitPlace(
            hit=h,
            blocks=tuple(blocks.get(h.pair_id, ())) if h.pair_id else (),
            file=files.get(h.pair_id) if h.pair_id else None,
            member_text=_one_line(texts.get((h.set_name, h.item_id))),
        )
        for h in hits
    ]
