"""The holdout gate on a planned mixture: every distinct pair of it, every text,
against every held-out member.

    with planned_mixture(store, recipe) as mix:    # pairstore.export.plan
        outcome = run_gate(store, "m11a", mix)   # raises GateRefused on a hit
        outcome = run_gate(store, "m11a", mix, drop_held_out=True)  # drops the pairs that hit instead

The rows are a view over `pairs` (a million pairs never become Python objects) in the shape
pairstore.holdout.matching.members_in_rows reads, the function `audit leaks` calls on a file's rows; it
decides what is a hit (origin id, match key, task key, embedded, fuzzy,
benchmark 13-grams). The round's system prompt is checked as one more row: a held-out prompt pasted into
a recipe's `system_prompt` would otherwise reach every row of the mixture. A hit that is not exempted
(pairstore.holdout.sets exemptions) refuses the export: GateRefused (exit 3) names, per hit, the `[[mix]]`
block, the source, the file, the held-out member and its text (pairstore.export.refusal), and carries the
hits; the refusal is logged; nothing is written.

With `drop_held_out` the pairs that hit leave the planned mixture instead (each recorded with its hit and
place in the outcome, so the evidence holds them), and the gate runs again on what is left. A hit in the
round's system prompt cannot be dropped and still refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairstore.errors import BadInput, GateRefused
from pairstore.export.refusal import SYSTEM_PROMPT_ROW, hit_places
from pairstore.holdout.matching import GateResult, members_in_rows
from pairstore.holdout.sets import split_exempt
from pairstore.tables.audit_log import log_action

if TYPE_CHECKING:
    from pairstore.export.plan import MixturePlan

HITS_SHOWN = 50


@dataclass
class GateOutcome:
    """What the gate found on a mixture that passed: its result, the exempted hits (each with its
    reason) and, with drop_held_out, the hits whose pairs it dropped (HitPlace.as_dict each)."""

    result: GateResult
    exempted: list[dict]
    dropped: list[dict[str, Any]] = field(default_factory=list)


def _build_rows(store, mixture_table: str, system_prompt: str | None) -> None:
    """The view _gate_rows: one row per distinct pair of the mixture, in pairstore.holdout.matching's
    ROW_SCHEMA (the pair's prompt messages and its answers: chosen, rejected or the NLL completion), plus a
    row holding the round's system prompt (which the export writes into every row). Only the ids are
    materialized (_gate_ids); the texts are read from `pairs` as the matcher streams them."""
    con = store.con
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _gate_ids AS
        WITH d AS (SELECT pair_id, (row_number() OVER (ORDER BY kind, block, prow) - 1)::BIGINT AS row_index
                   FROM (SELECT pair_id, min(kind) AS kind, min(block) AS block, min(prow) AS prow
                         FROM {mixture_table} GROUP BY pair_id)),
        o AS (SELECT pair_id, list(origin_id ORDER BY origin_id) AS origin_ids
              FROM pair_origins WHERE pair_id IN (SELECT pair_id FROM d) GROUP BY pair_id)
        SELECT d.row_index, p.pair_id, coalesce(o.origin_ids, []::VARCHAR[]) AS origin_ids, \
p.match_key, p.task_key
        FROM d JOIN pairs p USING (pair_id) LEFT JOIN o USING (pair_id)""")
    con.execute("CREATE OR REPLACE TEMP TABLE _gate_system (row_index BIGINT, text VARCHAR)")
    if system_prompt is not None:
        con.execute("INSERT INTO _gate_system VALUES (?, ?)", [SYSTEM_PROMPT_ROW, system_prompt])
    con.execute("""
        CREATE OR REPLACE TEMP VIEW _gate_rows AS
        SELECT g.row_index, g.pair_id, g.origin_ids, g.match_key, g.task_key, p.prompt,
               [p.chosen, p.rejected] AS answers
        FROM _gate_ids g JOIN pairs p USING (pair_id)
        UNION ALL
        SELECT row_index, NULL, []::VARCHAR[], NULL, NULL,
               [{'role': 'system', 'content': text}]::STRUCT(role VARCHAR, content VARCHAR)[], []::VARCHAR[]
        FROM _gate_system""")


def _hit_line(h) -> str:
    where = "the round's system prompt" if h.row_index == SYSTEM_PROMPT_ROW else f"pair {h.pair_id}"
    return (
        f"  {h.set_name} {h.item_id} {where} ({h.how}" + (f" {h.score:g}" if h.how == "fuzzy" else "") + ")"
    )


def _check_mixture(
    store, mixture_table: str, system_prompt: str | None
) -> tuple[GateResult, list, list[dict]]:
    """(result, standing hits, exemptions that cleared a hit) of the mixture in the temp table
    `mixture_table` (block, prow, pair_id, kind, ...)."""
    _build_rows(store, mixture_table, system_prompt)
    try:
        result = members_in_rows(store, "_gate_rows")
    finally:
        for drop in (
            "VIEW IF EXISTS _gate_rows",
            "TABLE IF EXISTS _gate_ids",
            "TABLE IF EXISTS _gate_system",
        ):
            store.con.execute(f"DROP {drop}")
    standing, exempted = split_exempt(store, result.hits)
    return result, standing, exempted


def _hit_lines(standing: list) -> tuple[list[str], list[tuple[str, str]]]:
    lines = [_hit_line(h) for h in standing[:HITS_SHOWN]]
    if len(standing) > HITS_SHOWN:
        lines.append(f"  ... and {len(standing) - HITS_SHOWN} more")
    members = sorted({(h.set_name, h.item_id) for h in standing})
    lines.append("held-out items: " + ", ".join(f"{s}/{i}" for s, i in members))
    return lines, members


def run_gate(
    store,
    round_name: str,
    mixture: MixturePlan,
    system_prompt: str | None = None,
    *,
    drop_held_out: bool = False,
) -> GateOutcome:
    """Check the planned mixture and the system prompt the export adds. Raises GateRefused on a hit
    that is not exempted; with `drop_held_out`, drops the pairs that hit and checks again."""
    result, standing, exempted = _check_mixture(store, mixture.table, system_prompt)
    dropped: list[dict[str, Any]] = []
    if standing and drop_held_out and not any(h.row_index == SYSTEM_PROMPT_ROW for h in standing):
        dropped = [p.as_dict() for p in hit_places(store, mixture, standing)]
        left = mixture.drop_pairs(sorted({h.pair_id for h in standing if h.pair_id is not None}))
        if not left:
            raise BadInput(
                f"round {round_name!r}: every pair of the mixture holds held-out text; "
                "nothing is left to export",
                field="mix",
            )
        result, standing, exempted = _check_mixture(store, mixture.table, system_prompt)
    if standing:
        places = hit_places(store, mixture, standing[:HITS_SHOWN])
        lines = [p.line() for p in places]
        if len(standing) > HITS_SHOWN:
            lines.append(f"  ... and {len(standing) - HITS_SHOWN} more")
        members = sorted({(h.set_name, h.item_id) for h in standing})
        lines.append("held-out items: " + ", ".join(f"{s}/{i}" for s, i in members))
        with store.transaction():
            log_action(
                store,
                "export.refused",
                round_name,
                {"hits": [h.as_dict() for h in standing], "members": [f"{s}/{i}" for s, i in members]},
            )
        way_out = (
            "Drop those pairs with `export --drop-held-out`, narrow the [[mix]] block's where, remove the "
            "member from its set, or exempt the (member, pair) with `pairstore holdout exempt`"
        )
        if any(h.row_index == SYSTEM_PROMPT_ROW for h in standing):
            way_out = "The round's system prompt holds held-out text: change the system prompt"
        raise GateRefused(
            f"export of round {round_name!r} refused by the holdout gate: {len(standing)} hit(s) on "
            f"{len(members)} held-out item(s); nothing written. {way_out}:\n" + "\n".join(lines),
            hits=standing,
        )
    return GateOutcome(result, exempted, dropped)


def _member_since(store, set_name: str, item_id: str):
    """When the member became what the gate checks: added to its set, its eval item or benchmark stored."""
    if set_name.startswith("eval:"):
        return store.scalar(
            "SELECT created_at FROM eval_items WHERE suite = ? AND item_id = ?", [set_name[5:], item_id]
        )
    if set_name.startswith("benchmark:"):
        return store.scalar(
            "SELECT registered_at FROM benchmark_refs WHERE benchmark = ? AND item_id = ?",
            [set_name[10:], item_id],
        )
    # The last time it was added or re-added (a re-add clears removed_at; the audit log keeps both).
    # one entry per member (item_id); entries of older versions list many (items)
    last_add = store.scalar(
        "SELECT max(logged_at) FROM audit_log WHERE action = 'holdout.add' AND subject = ? "
        "AND (json_extract_string(detail, '$.item_id') = ? "
        "OR list_contains(CAST(json_extract(detail, '$.items') AS VARCHAR[]), ?))",
        [set_name, item_id, item_id],
    )
    added = store.scalar(
        "SELECT added_at FROM holdout WHERE set_name = ? AND item_id = ?", [set_name, item_id]
    )
    return max(x for x in (last_add, added) if x is not None) if (last_add or added) else None


def exported_system_prompt(path) -> str | None:
    """The system prompt an export wrote into its rows (the first row's leading system message), or None."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        return None
    f = pq.ParquetFile(path)
    if f.metadata.num_rows == 0:
        return None
    first = f.read_row_group(0, columns=["prompt"]).column("prompt")[0].as_py() or []
    return first[0]["content"] if first and first[0].get("role") == "system" else None


def regate_export(store, export_ids: list[str], system_prompt: str | None = None) -> GateResult:
    """Today's gate on registered exports (their rows in export_rows, and the system prompt their rows
    carry): the check `train dpo` runs before training and `audit mixtures` reports. Raises GateRefused
    naming every standing hit and what changed since the export (members added, re-added or registered
    after it; a member older than the export was found by a stronger gate). Read-only: nothing logged."""
    con = store.con
    created = store.scalar(
        "SELECT min(created_at) FROM exports WHERE export_id IN (SELECT unnest(?::VARCHAR[]))", [export_ids]
    )
    rounds = sorted(
        {
            r
            for (r,) in con.execute(
                "SELECT DISTINCT round FROM exports WHERE export_id IN (SELECT unnest(?::VARCHAR[]))",
                [export_ids],
            ).fetchall()
        }
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _regate_mix AS "
        "SELECT pair_id, p.kind, 0 AS block, min(r.row_index) AS prow "
        "FROM export_rows r JOIN pairs p USING (pair_id) "
        "WHERE r.export_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY pair_id, p.kind",
        [export_ids],
    )
    try:
        result, standing, _ = _check_mixture(store, "_regate_mix", system_prompt)
    finally:
        con.execute("DROP TABLE IF EXISTS _regate_mix")
    if standing:
        lines, members = _hit_lines(standing)
        changes = []
        for set_name, item_id in members:
            since = _member_since(store, set_name, item_id)
            if since is not None and created is not None and since > created:
                changes.append(f"{set_name}/{item_id} added {since:%Y-%m-%d %H:%M:%S} after the export")
            else:
                changes.append(f"{set_name}/{item_id} held out at export time, now found by the gate")
        raise GateRefused(
            f"the mixture of round(s) {', '.join(rounds)} exported {created:%Y-%m-%d %H:%M:%S} would now be "
            f"refused by the holdout gate: {len(standing)} hit(s) on {len(members)} held-out item(s). "
            "Changed since the export: " + "; ".join(changes) + ". Re-export the round (or exempt the "
            "(member, pair) with `pairstore holdout exempt`):\n" + "\n".join(lines),
            hits=standing,
        )
    return result
