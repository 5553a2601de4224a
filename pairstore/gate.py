"""The holdout gate on a planned mixture: every distinct pair of `_mix` against every held-out member.

    gate, exempted = run_gate(store, "m11a")      # after mixture.plan_mixture; raises GateRefused on a hit

The candidate rows are built in SQL (a million pairs never become Python objects) in the columns of
pairstore.matching, which decides what is a hit (origin id, match key, task key, fuzzy, benchmark
13-grams). A hit that is not exempted (pairstore.holdout exemptions) refuses the export: GateRefused
(exit 3) lists the held-out items and carries the hits; the refusal is logged; nothing is written.
"""

from __future__ import annotations

import pyarrow as pa

from pairstore.errors import GateRefused
from pairstore.holdout import split_exempt
from pairstore.keys import match_text
from pairstore.matching import GateResult, check_table

HITS_SHOWN = 50
# Python's str.isspace() characters in the ASCII range: what normalize_for_match collapses.
_ASCII_WS_CODES = (9, 10, 11, 12, 13, 28, 29, 30, 31)


def ascii_match_text_sql(col: str) -> str:
    """SQL equal to keys.normalize_for_match for ASCII text (NFKC is the identity there and casefold is
    lower): whitespace runs collapsed to one space, trimmed. Most texts need only lower(); the split and
    join runs only where a quick scan finds a control whitespace, a double space or an edge space."""
    ws = " || ".join(f"chr({c})" for c in _ASCII_WS_CODES)
    collapse = (f"array_to_string(list_filter(string_split(translate(lower({col}), {ws}, "
                f"'{' ' * len(_ASCII_WS_CODES)}'), ' '), lambda w: w <> ''), ' ')")
    return (f"CASE WHEN regexp_matches({col}, '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f]|  |^ | $') "
            f"THEN {collapse} ELSE lower({col}) END")



def _build_candidates(store) -> None:
    """_gate_cand: one row per distinct pair of the mixture, in the matching module's columns.

    The match text (normalized user turns) feeds the fuzzy check, which skips rows with a task key, and
    the benchmark check: with no benchmark registered, rows with a task key go without it."""
    con = store.con
    everyone = bool(con.execute("SELECT count(*) FROM benchmark_refs").fetchall()[0][0])
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _gate_cand AS
        WITH d AS (SELECT pair_id, (row_number() OVER (ORDER BY kind, block, prow) - 1)::BIGINT AS row_index
                   FROM (SELECT pair_id, min(kind) AS kind, min(block) AS block, min(prow) AS prow
                         FROM _mix GROUP BY pair_id)),
        o AS (SELECT pair_id, list(origin_id ORDER BY origin_id) AS origin_ids
              FROM pair_origins WHERE pair_id IN (SELECT pair_id FROM d) GROUP BY pair_id),
        u AS (SELECT d.row_index, p.pair_id, p.match_key, p.task_key, o.origin_ids,
                     list_filter(p.prompt, lambda m: m.role = 'user') AS users
              FROM d JOIN pairs p USING (pair_id) LEFT JOIN o USING (pair_id))
        SELECT row_index, pair_id,
               coalesce(origin_ids, []::VARCHAR[]) AS origin_ids, match_key,
               CASE WHEN NOT ({everyone} OR task_key IS NULL) THEN NULL
                    WHEN list_bool_and(list_transform(users, lambda m: strlen(m.content) = length(m.content)))
                         IS NOT FALSE
                    THEN array_to_string(list_transform(users, lambda m: {ascii_match_text_sql('m.content')}),
                                         chr(30))
               END AS match_text,
               task_key
        FROM u""")
    # Non-ASCII user turns: NFKC and case folding in Python (keys.match_text), few rows in practice.
    todo = con.execute(f"""
        SELECT c.row_index, p.prompt FROM _gate_cand c JOIN pairs p USING (pair_id)
        WHERE c.match_text IS NULL AND ({everyone} OR c.task_key IS NULL)""").fetchall()
    if todo:
        fix = pa.table({"row_index": pa.array([r for r, _ in todo], pa.int64()),
                        "match_text": pa.array([match_text(p) for _, p in todo], pa.string())})
        with store.registered("_gate_fix", fix):
            con.execute("UPDATE _gate_cand SET match_text = f.match_text FROM _gate_fix f "
                        "WHERE _gate_cand.row_index = f.row_index")


def run_gate(store, round_name: str) -> tuple[GateResult, list[dict]]:
    """Check the planned mixture (_mix). Raises GateRefused on a hit that is not exempted."""
    _build_candidates(store)
    try:
        result = check_table(store, "_gate_cand")
    finally:
        store.con.execute("DROP TABLE IF EXISTS _gate_cand")
    standing, exempted = split_exempt(store, result.hits)
    if standing:
        lines = [f"  {h.set_name} {h.item_id} pair {h.pair_id} ({h.how}"
                 + (f" {h.score:g}" if h.how == "fuzzy" else "") + ")" for h in standing[:HITS_SHOWN]]
        if len(standing) > HITS_SHOWN:
            lines.append(f"  ... and {len(standing) - HITS_SHOWN} more")
        members = sorted({(h.set_name, h.item_id) for h in standing})
        with store.transaction():
            store.audit("export.refused", round_name, {
                "hits": [h.as_dict() for h in standing], "members": [f"{s}/{i}" for s, i in members]})
        raise GateRefused(
            f"export of round {round_name!r} refused by the holdout gate: {len(standing)} hit(s) on "
            f"{len(members)} held-out item(s); nothing written. Remove the pairs from the mixture, remove the "
            "member from its set, or exempt the (member, pair) with `pairstore holdout exempt`:\n"
            + "\n".join(lines), hits=standing)
    return result, exempted
