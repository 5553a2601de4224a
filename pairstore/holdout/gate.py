"""The holdout gate on a planned mixture: every distinct pair of it against every held-out member.

    with planned_mixture(store, recipe) as mix:    # pairstore.export.plan
        gate, exempted = run_gate(store, "m11a", mix)   # raises GateRefused on a hit

The candidate rows are built in SQL (a million pairs never become Python objects) in the columns of
pairstore.holdout.matching, which decides what is a hit (origin id, match key, task key, embedded, fuzzy,
benchmark 13-grams). The round's system prompt is checked as one more row: a held-out prompt pasted into
a recipe's `system_prompt` would otherwise reach every row of the mixture. A hit that is not exempted
(pairstore.holdout.sets exemptions) refuses the export: GateRefused (exit 3) lists every held-out item and
carries the hits; the refusal is logged; nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairstore.errors import GateRefused
from pairstore.holdout.matching import GateResult, check_table
from pairstore.holdout.sets import split_exempt

if TYPE_CHECKING:
    from pairstore.export.plan import MixturePlan

HITS_SHOWN = 50
# The row that stands for the round's own system prompt (a literal or the bundle's), checked like a pair.
SYSTEM_PROMPT_ROW = -1


def _build_candidates(store, mixture: MixturePlan, system_prompt: str | None) -> None:
    """The view _gate_cand: one row per distinct pair of the mixture, in pairstore.holdout.matching's columns, plus a
    row holding the round's system prompt (which the export writes into every row). Only the ids are
    materialized (_gate_ids); the turns are read from `pairs` as the matcher streams them."""
    con = store.con
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _gate_ids AS
        WITH d AS (SELECT pair_id, (row_number() OVER (ORDER BY kind, block, prow) - 1)::BIGINT AS row_index
                   FROM (SELECT pair_id, min(kind) AS kind, min(block) AS block, min(prow) AS prow
                         FROM {mixture.table} GROUP BY pair_id)),
        o AS (SELECT pair_id, list(origin_id ORDER BY origin_id) AS origin_ids
              FROM pair_origins WHERE pair_id IN (SELECT pair_id FROM d) GROUP BY pair_id)
        SELECT d.row_index, p.pair_id, coalesce(o.origin_ids, []::VARCHAR[]) AS origin_ids, p.match_key, p.task_key
        FROM d JOIN pairs p USING (pair_id) LEFT JOIN o USING (pair_id)""")
    con.execute("CREATE OR REPLACE TEMP TABLE _gate_system (row_index BIGINT, text VARCHAR)")
    if system_prompt is not None:
        con.execute("INSERT INTO _gate_system VALUES (?, ?)", [SYSTEM_PROMPT_ROW, system_prompt])
    con.execute("""
        CREATE OR REPLACE TEMP VIEW _gate_cand AS
        SELECT g.row_index, g.pair_id, g.origin_ids, g.match_key, g.task_key,
               list_transform(list_filter(p.prompt, lambda m: m.role = 'user'), lambda m: m.content) AS user_turns,
               list_transform(list_filter(p.prompt, lambda m: m.role <> 'user'), lambda m: m.content) AS other_turns
        FROM _gate_ids g JOIN pairs p USING (pair_id)
        UNION ALL
        SELECT row_index, NULL, []::VARCHAR[], NULL, NULL, []::VARCHAR[], [text] FROM _gate_system""")


def _hit_line(h) -> str:
    where = "the round's system prompt" if h.row_index == SYSTEM_PROMPT_ROW else f"pair {h.pair_id}"
    return (
        f"  {h.set_name} {h.item_id} {where} ({h.how}" + (f" {h.score:g}" if h.how == "fuzzy" else "") + ")"
    )


def run_gate(
    store, round_name: str, mixture: MixturePlan, system_prompt: str | None = None
) -> tuple[GateResult, list[dict]]:
    """Check the planned mixture and the system prompt the export adds. Raises GateRefused on a hit
    that is not exempted."""
    _build_candidates(store, mixture, system_prompt)
    try:
        result = check_table(store, "_gate_cand")
    finally:
        for drop in (
            "VIEW IF EXISTS _gate_cand",
            "TABLE IF EXISTS _gate_ids",
            "TABLE IF EXISTS _gate_system",
        ):
            store.con.execute(f"DROP {drop}")
    standing, exempted = split_exempt(store, result.hits)
    if standing:
        lines = [_hit_line(h) for h in standing[:HITS_SHOWN]]
        if len(standing) > HITS_SHOWN:
            lines.append(f"  ... and {len(standing) - HITS_SHOWN} more")
        members = sorted({(h.set_name, h.item_id) for h in standing})
        lines.append("held-out items: " + ", ".join(f"{s}/{i}" for s, i in members))
        with store.transaction():
            store.audit(
                "export.refused",
                round_name,
                {"hits": [h.as_dict() for h in standing], "members": [f"{s}/{i}" for s, i in members]},
            )
        raise GateRefused(
            f"export of round {round_name!r} refused by the holdout gate: {len(standing)} hit(s) on "
            f"{len(members)} held-out item(s); nothing written. Remove the pairs from the mixture, remove the "
            "member from its set, or exempt the (member, pair) with `pairstore holdout exempt`:\n"
            + "\n".join(lines),
            hits=standing,
        )
    return result, exempted
