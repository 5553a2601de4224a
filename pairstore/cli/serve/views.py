"""The store reads behind the pages: plain values from one open store, no SQL from the page (every
query is a literal here, every value a parameter).

What a page may show is decided here, at request time, from the store as it is then:

- **Held out**: a battle an active member of any holdout set holds, by its id or by its match key (the
  gate's own exact check: the same prompt ingested again under another id is held too), and a pair whose
  origin is such a battle, or whose own match key or task key a member holds. Browse names such a battle
  and refuses its prompt, answers and pairs; only the Queue page shows it, to judge it blind.
- **Another annotator's vote**: a battle voted in this app (origin serve) is shown only to its annotator,
  and a pair mined from it the same.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pairstore.keys import match_key, seeded_rank

if TYPE_CHECKING:
    from pairstore.store.store import Store

RECENT = 50

# A battle row `b` no active member holds, by id or by match key. Two anti-joins, not one with OR: an OR
# in the join makes it a nested loop (15 s for 100k battles against 10k members, 0.1 s this way).
NOT_HELD_SQL = (
    "NOT EXISTS (SELECT 1 FROM holdout h WHERE h.removed_at IS NULL AND h.item_id = b.battle_id) "
    "AND NOT EXISTS (SELECT 1 FROM holdout h WHERE h.removed_at IS NULL AND h.match_key = b.match_key)"
)
# A battle row `b` the viewer (the parameter) may see: not another annotator's vote in this app.
VIEWER_SQL = "(b.origin IS DISTINCT FROM 'serve' OR b.annotator IS NOT DISTINCT FROM ?)"


def held_sets(
    store: Store, *, ids: Sequence[str] = (), keys: Sequence[str] = (), task_keys: Sequence[str] = ()
) -> list[str]:
    """The active holdout sets holding any of these item ids, match keys or task keys."""
    if not (ids or keys or task_keys):
        return []
    return [
        r[0]
        for r in store.con.execute(
            "SELECT DISTINCT set_name FROM holdout WHERE removed_at IS NULL AND (list_contains(?, item_id) "
            "OR list_contains(?, match_key) OR (task_key IS NOT NULL AND list_contains(?, task_key))) "
            "ORDER BY 1",
            [list(ids), list(keys), list(task_keys)],
        ).fetchall()
    ]


def prompt_held(store: Store, users: Sequence[str], battle_id: str | None = None) -> list[str]:
    """The sets holding a conversation by its user turns (and its battle id, once stored)."""
    key = match_key([{"role": "user", "content": u} for u in users])
    return held_sets(store, ids=[battle_id] if battle_id else [], keys=[key])


def may_see(battle: dict, annotator: str | None) -> bool:
    """A vote made in this app is its annotator's alone; any other battle is the team's."""
    return battle.get("origin") != "serve" or battle.get("annotator") == annotator


def index(store: Store, annotator: str | None) -> dict:
    counts = {
        t: store.scalar(f"SELECT count(*) FROM {t}")
        for t in ("battles", "judgments", "pairs", "holdout_sets", "exports", "checkpoints")
    }
    sets = store.rows(
        "SELECT s.set_name, s.description, count(h.item_id) FILTER (WHERE h.removed_at IS NULL) AS active "
        "FROM holdout_sets s LEFT JOIN holdout h USING (set_name) GROUP BY ALL ORDER BY 1"
    )
    rounds = store.rows(
        "SELECT round, count(*) AS files, max(created_at) AS last FROM exports GROUP BY 1 ORDER BY 1"
    )
    recent = store.rows(
        "SELECT b.battle_id, b.vote, b.own_model, b.opponent_model, b.voted_at, b.origin FROM battles b "
        f"WHERE {NOT_HELD_SQL} AND {VIEWER_SQL} ORDER BY b.voted_at DESC NULLS LAST, b.battle_id LIMIT ?",
        [annotator, RECENT],
    )
    return {"counts": counts, "sets": sets, "rounds": rounds, "recent": recent}


def battle(store: Store, battle_id: str, annotator: str | None) -> dict | None:
    """The battle's page; {battle_id, held_out: [sets]} for a held-out one; None where the viewer may not
    see it."""
    rows = store.rows(
        "SELECT battle_id, prompt, own_answers, opponent_answers, vote, category, own_model, opponent_model, "
        "voted_at, annotator, own_position, origin, source_file, match_key FROM battles WHERE battle_id = ?",
        [battle_id],
    )
    if not rows or not may_see(rows[0], annotator):
        return None
    b = rows[0]
    sets = held_sets(store, ids=[battle_id], keys=[b["match_key"]])
    if sets:
        return {"battle_id": battle_id, "held_out": sets}
    users = [m["content"] for m in b["prompt"] if m["role"] == "user"]
    b["turns"] = list(zip(users, b["own_answers"], b["opponent_answers"]))
    b["pairs"] = store.rows(
        "SELECT p.pair_id, p.source, o.rule, p.created_at FROM pair_origins o JOIN pairs p USING (pair_id) "
        "WHERE o.origin_kind = 'battle' AND o.origin_id = ? ORDER BY p.pair_id",
        [battle_id],
    )
    b["went"] = store.rows(
        "SELECT DISTINCT e.round, e.path, e.created_at, c.name AS checkpoint FROM pair_origins o "
        "JOIN export_rows r USING (pair_id) JOIN exports e USING (export_id) "
        "LEFT JOIN checkpoints c ON c.round = e.round "
        "WHERE o.origin_kind = 'battle' AND o.origin_id = ? ORDER BY 1, 4",
        [battle_id],
    )
    b["held_out"] = []
    return b


def pair(store: Store, pair_id: str, annotator: str | None) -> dict | None:
    """The pair's page; {pair_id, held_out: [sets]} for a held-out one; None where the viewer may not see
    it."""
    rows = store.rows(
        "SELECT pair_id, kind, prompt, chosen, rejected, source, family, miner, miner_version, created_at, "
        "match_key, task_key FROM pairs WHERE pair_id = ?",
        [pair_id],
    )
    if not rows:
        return None
    p = rows[0]
    p["origins"] = store.rows(
        "SELECT origin_kind, origin_id, rule, miner FROM pair_origins WHERE pair_id = ? ORDER BY 1, 2",
        [pair_id],
    )
    battles = store.rows(
        "SELECT b.battle_id, b.match_key, b.origin, b.annotator FROM pair_origins o "
        "JOIN battles b ON b.battle_id = o.origin_id WHERE o.pair_id = ? AND o.origin_kind = 'battle'",
        [pair_id],
    )
    if not all(may_see(b, annotator) for b in battles):
        return None
    hidden = held_sets(
        store,
        ids=[o["origin_id"] for o in p["origins"]],
        keys=[k for k in [p["match_key"], *(b["match_key"] for b in battles)] if k],
        task_keys=[p["task_key"]] if p["task_key"] else [],
    )
    if hidden:
        return {"pair_id": pair_id, "held_out": hidden}
    p["held_out"] = []
    p["exports"] = store.rows(
        "SELECT e.round, e.path, r.row_index FROM export_rows r JOIN exports e USING (export_id) "
        "WHERE r.pair_id = ? ORDER BY 1",
        [pair_id],
    )
    return p


def holdout_set(store: Store, name: str) -> dict | None:
    rows = store.rows("SELECT * FROM holdout_sets WHERE set_name = ?", [name])
    if not rows:
        return None
    s = rows[0]
    s["members"] = store.rows(
        "SELECT item_id, item_kind, added_at, removed_at, removed_reason FROM holdout WHERE set_name = ? "
        "ORDER BY item_id",
        [name],
    )
    s["active"] = sum(1 for m in s["members"] if m["removed_at"] is None)
    s["history"] = store.rows(
        "SELECT logged_at, action, detail FROM audit_log WHERE subject = ? ORDER BY seq", [name]
    )
    return s


def round_exports(store: Store, name: str) -> list[dict]:
    rows = store.rows(
        "SELECT export_id, kind, path, sha256, rows, content_hash, evidence, created_at, superseded_at "
        "FROM exports WHERE round = ? ORDER BY created_at",
        [name],
    )
    for r in rows:
        r["evidence"] = (
            json.dumps(json.loads(r["evidence"]), indent=2, sort_keys=True) if r["evidence"] else ""
        )
    return rows


# ---------------------------------------------------------------------------- the queue


@dataclass
class QueueItem:
    item_id: str  # battle id, or <suite>/<item id>
    item_kind: str
    prompt: list[dict]
    answers: dict[str, str]  # model -> answer


def queue_models(store: Store) -> list[str]:
    return [r[0] for r in store.con.execute("SELECT DISTINCT model FROM generations ORDER BY 1").fetchall()]


def queue_sources(store: Store) -> dict[str, list[str]]:
    return {
        "sets": [r[0] for r in store.con.execute("SELECT set_name FROM holdout_sets ORDER BY 1").fetchall()],
        "suites": [
            r[0] for r in store.con.execute("SELECT DISTINCT suite FROM eval_items ORDER BY 1").fetchall()
        ],
    }


def queue_answers(
    store: Store, *, set_name: str | None, suite: str | None, models: tuple[str, str]
) -> list[tuple]:
    """(item id, item kind, raw id, suite, {model: answer}) of every item both models answered, in a seeded
    order; one query for every item's answers (the first sample of each model)."""
    if set_name is not None:
        rows = store.con.execute(
            "WITH members AS (SELECT item_id, item_kind FROM holdout "
            "WHERE set_name = ? AND removed_at IS NULL "
            "AND item_kind IN ('battle', 'eval_item')), "
            "answers AS (SELECT g.item_id, g.model, g.output, "
            "row_number() OVER (PARTITION BY g.model, g.item_id "
            "ORDER BY g.sample_index, g.created_at, g.gen_id) AS n FROM generations g "
            "WHERE list_contains(?, g.model) AND g.item_id IN (SELECT item_id FROM members)) "
            "SELECT m.item_id, m.item_kind, a.model, a.output FROM members m JOIN answers a USING (item_id) "
            "WHERE a.n = 1",
            [set_name, list(models)],
        ).fetchall()
        found: dict = {}
        for item_id, kind, model, output in rows:
            found.setdefault((item_id, kind, item_id, None), {})[model] = output
    else:
        rows = store.con.execute(
            "SELECT item_id, model, output FROM (SELECT item_id, model, output, "
            "row_number() OVER (PARTITION BY "
            "model, item_id ORDER BY sample_index, created_at, gen_id) AS n FROM generations "
            "WHERE item_kind = 'eval_item' AND suite = ? AND list_contains(?, model)) WHERE n = 1",
            [suite, list(models)],
        ).fetchall()
        found = {}
        for item_id, model, output in rows:
            found.setdefault((f"{suite}/{item_id}", "eval_item", item_id, suite), {})[model] = output
    items = [(*key, answers) for key, answers in found.items() if len(answers) == len(models)]
    return sorted(items, key=lambda it: (seeded_rank(0, it[0]), it[0]))


def _judged_by(store: Store, annotator: str | None, models: tuple[str, str]) -> set[str]:
    return {
        r[0]
        for r in store.con.execute(
            "SELECT battle_id FROM judgments WHERE annotator = ? AND "
            "((model_a = ? AND model_b = ?) OR (model_a = ? AND model_b = ?))",
            [annotator, models[0], models[1], models[1], models[0]],
        ).fetchall()
    }


def next_item(
    store: Store, *, set_name: str | None, suite: str | None, models: tuple[str, str], annotator: str | None
) -> tuple[QueueItem | None, int, int]:
    """(the next item this annotator has not judged for these two models, either order; judged, total)."""
    items = queue_answers(store, set_name=set_name, suite=suite, models=models)
    done = _judged_by(store, annotator, models)
    judged = sum(1 for it in items if it[0] in done)
    for item_id, kind, raw, item_suite, answers in items:
        if item_id in done:
            continue
        if kind == "battle":
            row = store.rows("SELECT prompt, origin, annotator FROM battles WHERE battle_id = ?", [raw])
            if row and not may_see(row[0], annotator):
                continue
            prompt = (row[0]["prompt"],) if row else None
        else:
            prompt = store.one(
                "SELECT prompt FROM eval_items WHERE item_id = ? AND (? IS NULL OR suite = ?) LIMIT 1",
                [raw, item_suite, item_suite],
            )
        if prompt is None:
            continue
        return QueueItem(item_id, kind, [dict(m) for m in prompt[0]], answers), judged, len(items)
    return None, judged, len(items)
