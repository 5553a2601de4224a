"""Holdout sets: named sets of items that no training mixture may touch.

    pairstore holdout sample judge34 --n 34 --seed 7
    pairstore holdout add judge34 --ids-file ids.txt
    pairstore holdout remove judge34 b0042 --reason "published in a blog post"

Members carry their match key (and, for generated tasks, their task key), so
the export gate and leak audits find them in any form. Removal keeps the row
(status 'removed', with the reason); every change is written to audit_log.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

from pairstore.errors import BadInput, NotFound, duckdb_message
from pairstore.holdout.matching import Hit
from pairstore.keys import match_key, match_text, seeded_rank
from pairstore.progress import current as current_progress
from pairstore.store.sql_guard import check_condition
from pairstore.tables.pairs import Pair

if TYPE_CHECKING:
    from pairstore.store.store import Store

SET_NAME = re.compile(r"[A-Za-z0-9_.:\-]+")


def _check_name(set_name: str) -> None:
    if not SET_NAME.fullmatch(set_name or ""):
        raise BadInput(
            f"bad holdout set name {set_name!r}: letters, digits, '.', '_', ':', '-' only", field="set"
        )


def add_members(
    store: Store,
    set_name: str,
    members: list[dict],
    *,
    description: str | None = None,
    method: str | None = None,
    seed: int | None = None,
) -> int:
    """Add members (item_id, item_kind, match_key, match_text, task_key) to a set; returns how many were new.

    A member that was removed earlier becomes active again (logged)."""
    _check_name(set_name)
    added = 0
    with store.transaction():
        store.con.execute(
            "INSERT INTO holdout_sets (set_name, description, method, seed) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [set_name, description, method, seed],
        )
        for m in members:
            row = store.one(
                "SELECT removed_at FROM holdout WHERE set_name = ? AND item_id = ?", [set_name, m["item_id"]]
            )
            if row is None:
                store.con.execute(
                    "INSERT INTO holdout (set_name, item_id, item_kind, match_key, task_key, match_text) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        set_name,
                        m["item_id"],
                        m["item_kind"],
                        m["match_key"],
                        m.get("task_key"),
                        m["match_text"],
                    ],
                )
                added += 1
            elif row[0] is not None:
                store.con.execute(
                    "UPDATE holdout SET removed_at = NULL, removed_reason = NULL "
                    "WHERE set_name = ? AND item_id = ?",
                    [set_name, m["item_id"]],
                )
                added += 1
        if added:
            store.audit(
                "holdout.add",
                set_name,
                {
                    "added": added,
                    "method": method,
                    "seed": seed,
                    "items": sorted(m["item_id"] for m in members),
                },
            )
    return added


def _battle_member(row) -> dict:
    battle_id, prompt, mk = row
    return {
        "item_id": battle_id,
        "item_kind": "battle",
        "match_key": mk,
        "task_key": None,
        "match_text": match_text([dict(m) for m in prompt]),
    }


def resolve_ids(store: Store, ids: list[tuple[int, str]], path: str) -> list[dict]:
    """Members for ids (battle, task or eval item ids), each looked up in the store."""
    members = []
    for line, item_id in ids:
        row = store.one("SELECT battle_id, prompt, match_key FROM battles WHERE battle_id = ?", [item_id])
        if row:
            members.append(_battle_member(row))
            continue
        row = store.one("SELECT task_id, prompt, match_key, task_key FROM tasks WHERE task_id = ?", [item_id])
        if row:
            members.append(
                {
                    "item_id": row[0],
                    "item_kind": "task",
                    "match_key": row[2],
                    "task_key": row[3],
                    "match_text": match_text(row[1]),
                }
            )
            continue
        row = store.one(
            "SELECT item_id, prompt, match_key, task_key FROM eval_items WHERE item_id = ? LIMIT 1", [item_id]
        )
        if row:
            members.append(
                {
                    "item_id": row[0],
                    "item_kind": "eval_item",
                    "match_key": row[2],
                    "task_key": row[3],
                    "match_text": match_text([dict(m) for m in row[1]]),
                }
            )
            continue
        raise BadInput(
            f"unknown id {item_id!r} (not a battle, task or eval item in the store)", path=path, line=line
        )
    return members


def add_from_ids_file(store: Store, set_name: str, path) -> int:
    """`holdout add SET --ids-file F`: one id per line (blank lines and # comments ignored)."""
    try:
        text = open(path, encoding="utf-8").read()
    except UnicodeDecodeError:
        raise BadInput("bytes that are not UTF-8", path=str(path)) from None
    except FileNotFoundError:
        raise BadInput("no such file", path=str(path)) from None
    ids = [
        (i, ln.strip())
        for i, ln in enumerate(text.splitlines(), start=1)
        if ln.strip() and not ln.strip().startswith("#")
    ]
    if not ids:
        raise BadInput("no ids in file", path=str(path))
    members = resolve_ids(store, ids, str(path))
    return add_members(store, set_name, members, method=f"ids-file {path}")


def _allocate(sizes: dict, n: int) -> dict:
    """Largest-remainder allocation of n over strata proportional to their sizes (ties by name)."""
    total = sum(sizes.values())
    exact = {k: n * v / total for k, v in sizes.items()}
    quota = {k: min(int(e), sizes[k]) for k, e in exact.items()}
    order = sorted(sizes, key=lambda k: (-(exact[k] - int(exact[k])), str(k)))
    left = n - sum(quota.values())
    while left > 0:
        progressed = False
        for k in order:
            if left and quota[k] < sizes[k]:
                quota[k] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return quota


def sample_holdout(store: Store, set_name: str, *, n: int, seed: int, where: str | None = None) -> list[str]:
    """Sample n battles, stratified by (vote, category), battles sharing a match key kept together.

    Deterministic: groups are ranked by xxh3(seed, match key). Returns the sampled battle ids."""
    _check_name(set_name)
    if n <= 0:
        raise BadInput("--n must be positive", field="n")
    if store.scalar("SELECT count(*) FROM holdout WHERE set_name = ?", [set_name]):
        raise BadInput(f"holdout set {set_name!r} already has members; sample into a new set", field="set")
    # Checked by pairstore.store.sql_guard: one condition, no statement, no side effect; it can only narrow.
    filt = f"WHERE ({check_condition(where, field='where')})" if where is not None else ""
    try:
        rows = store.con.execute(
            f"SELECT battle_id, prompt, match_key, vote, coalesce(category, '') "
            f"FROM (SELECT * FROM battles) AS battles {filt} ORDER BY battle_id"
        ).fetchall()
    except duckdb.Error as e:
        raise BadInput(f"bad SQL condition: {duckdb_message(e)}", field="where") from None
    groups: dict[str, list] = defaultdict(list)
    for r in rows:
        groups[r[2]].append(r)
    if sum(len(g) for g in groups.values()) < n:
        raise BadInput(f"only {len(rows)} battles to sample from, asked for {n}", field="n")
    strata: dict[tuple, list[str]] = defaultdict(list)
    for mk, g in groups.items():
        strata[(g[0][3], g[0][4])].append(mk)
    sizes = {s: sum(len(groups[mk]) for mk in mks) for s, mks in strata.items()}
    # Nested allocation: votes first (their shares are what judge tallies lean on), then categories.
    by_vote: dict[str, int] = defaultdict(int)
    for (vote, _), size in sizes.items():
        by_vote[vote] += size
    quota: dict[tuple, int] = {}
    for vote, vq in _allocate(dict(by_vote), n).items():
        quota.update(
            {
                (vote, cat): q
                for cat, q in _allocate({c: sz for (v, c), sz in sizes.items() if v == vote}, vq).items()
            }
        )
    chosen: list[str] = []
    taken = 0
    leftovers = []
    for s in sorted(strata):
        mks = sorted(strata[s], key=lambda k: (seeded_rank(seed, k), k))
        got = 0
        for mk in mks:
            if got < quota[s] and taken + len(groups[mk]) <= n:
                chosen.append(mk)
                got += len(groups[mk])
                taken += len(groups[mk])
            else:
                leftovers.append(mk)
    for mk in sorted(leftovers, key=lambda k: (seeded_rank(seed, k), k)):
        if taken + len(groups[mk]) <= n:
            chosen.append(mk)
            taken += len(groups[mk])
        if taken == n:
            break
    with current_progress().stage(f"holdout sample {set_name}", total=len(rows), unit="battles") as stage:
        members = [_battle_member(r[:3]) for mk in chosen for r in groups[mk]]
        add_members(store, set_name, members, method=f"sample n={n} stratified by vote,category", seed=seed)
        stage.advance(len(rows))
    return sorted(m["item_id"] for m in members)


def active_members(store: Store, set_name: str | None = None) -> list[dict]:
    return store.rows(
        "SELECT * FROM holdout WHERE removed_at IS NULL AND (? IS NULL OR set_name = ?) "
        "ORDER BY set_name, item_id",
        [set_name, set_name],
    )


def held_task_keys(store: Store) -> set[str]:
    return {
        r[0]
        for r in store.con.execute(
            "SELECT DISTINCT task_key FROM holdout WHERE removed_at IS NULL AND task_key IS NOT NULL"
        ).fetchall()
    }


@dataclass
class HoldoutFilter:
    """The held-out ids, match keys and task keys a miner must not mine from.

    The source-level check miners share: active members of every set by item id, match key and task
    key, and the items of every evaluation suite (which the gate checks as set "eval:<suite>"). It
    keeps miners from producing pairs the export gate would refuse; the gate, with every way of
    matching (pairstore.holdout.matching), is the check that counts."""

    item_ids: dict[str, set[str]] = field(default_factory=dict)  # item kind -> ids
    match_keys: set[str] = field(default_factory=set)
    task_keys: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, store) -> HoldoutFilter:
        f = cls()
        for row in active_members(store):
            f.item_ids.setdefault(row["item_kind"], set()).add(row["item_id"])
            f.match_keys.add(row["match_key"])
        f.task_keys |= held_task_keys(store)
        for row in store.rows("SELECT item_id, match_key, task_key FROM eval_items"):
            f.item_ids.setdefault("eval_item", set()).add(row["item_id"])
            f.match_keys.add(row["match_key"])
            if row["task_key"]:
                f.task_keys.add(row["task_key"])
        return f

    def holds(
        self,
        kind: str,
        item_id: str | None,
        *,
        prompt=None,
        stored_match_key: str | None = None,
        task_key: str | None = None,
    ) -> bool:
        """True when the item is a member by id, its prompt's or stored match key, or its task key."""
        if item_id is not None and item_id in self.item_ids.get(kind, ()):
            return True
        if stored_match_key is not None and stored_match_key in self.match_keys:
            return True
        if prompt is not None and self.match_keys and match_key(prompt) in self.match_keys:
            return True
        return task_key is not None and task_key in self.task_keys

    def holds_pair(self, pair: Pair) -> bool:
        if pair.task_key is not None and pair.task_key in self.task_keys:
            return True
        return bool(self.match_keys) and match_key(pair.messages()) in self.match_keys

    def __len__(self) -> int:
        return sum(len(v) for v in self.item_ids.values())


def list_sets(store: Store) -> list[dict]:
    return store.rows("""
        SELECT s.set_name, count(h.item_id) FILTER (h.removed_at IS NULL) AS active,
               count(h.item_id) FILTER (h.removed_at IS NOT NULL) AS removed,
               s.method, s.seed, s.created_at
        FROM holdout_sets s LEFT JOIN holdout h USING (set_name)
        GROUP BY ALL ORDER BY s.set_name""")


def member_history(store: Store, set_name: str) -> dict[str, list[dict]]:
    """Every member's changes, oldest first, from the audit log (a re-added member's removal stays here,
    though its row is active again): {"action": "added" | "removed", "at", "reason"}."""
    out: dict[str, list[dict]] = {}
    for action, at, detail in store.con.execute(
        "SELECT action, logged_at, detail FROM audit_log WHERE subject = ? "
        "AND action IN ('holdout.add', 'holdout.remove') ORDER BY seq",
        [set_name],
    ).fetchall():
        d = json.loads(detail) if isinstance(detail, str) else (detail or {})
        if action == "holdout.add":
            for item in d.get("items") or []:
                out.setdefault(item, []).append({"action": "added", "at": str(at), "reason": d.get("method")})
        else:
            out.setdefault(str(d.get("item_id")), []).append(
                {"action": "removed", "at": str(at), "reason": d.get("reason")}
            )
    return out


def show_set(store: Store, set_name: str) -> list[dict]:
    """The members of a set with their status and their history (member_history)."""
    if not store.scalar("SELECT count(*) FROM holdout_sets WHERE set_name = ?", [set_name]):
        raise NotFound(f"no holdout set {set_name!r}")
    rows = store.rows(
        "SELECT item_id, item_kind, status, match_key, removed_reason FROM holdout_status "
        "WHERE set_name = ? ORDER BY item_id",
        [set_name],
    )
    history = member_history(store, set_name)
    for r in rows:
        r["history"] = history.get(r["item_id"], [])
    return rows


def removed_members(store) -> list[dict]:
    """Every member removal in the audit log, whether or not the member was added back since: what an
    export's evidence lists (set, id, when, reason)."""
    out = []
    for subject, at, detail in store.con.execute(
        "SELECT subject, logged_at, detail FROM audit_log WHERE action = 'holdout.remove' ORDER BY seq"
    ).fetchall():
        d = json.loads(detail) if isinstance(detail, str) else (detail or {})
        active = store.scalar(
            "SELECT removed_at IS NULL FROM holdout WHERE set_name = ? AND item_id = ?",
            [subject, d.get("item_id")],
        )
        out.append(
            {
                "set": subject,
                "item_id": d.get("item_id"),
                "removed_at": str(at),
                "reason": d.get("reason"),
                "active_now": bool(active),
            }
        )
    return out


def remove_member(store: Store, set_name: str, item_id: str, *, reason: str) -> None:
    if not reason or not reason.strip():
        raise BadInput("a reason is required to remove a holdout member", field="reason")
    with store.transaction():
        row = store.one(
            "SELECT removed_at FROM holdout WHERE set_name = ? AND item_id = ?", [set_name, item_id]
        )
        if row is None:
            raise NotFound(f"{item_id!r} is not a member of holdout set {set_name!r}")
        if row[0] is not None:
            raise BadInput(f"{item_id!r} was already removed from {set_name!r}", field="id")
        store.con.execute(
            "UPDATE holdout SET removed_at = current_timestamp, removed_reason = ? "
            "WHERE set_name = ? AND item_id = ?",
            [reason, set_name, item_id],
        )
        store.audit("holdout.remove", set_name, {"item_id": item_id, "reason": reason})


# -- exemptions: the one way past a gate hit short of removing the member -------------


def add_exemption(store: Store, set_name: str, item_id: str, pair_id: str, *, reason: str) -> bool:
    """Let one pair through the gate for one member, with a reason (logged). Returns False if it existed."""
    if not reason or not reason.strip():
        raise BadInput("an exemption needs a reason (--reason TEXT)", field="reason")
    if set_name.startswith("eval:"):
        known = store.one("SELECT 1 FROM eval_items WHERE suite = ? AND item_id = ?", [set_name[5:], item_id])
    elif set_name.startswith("benchmark:"):
        known = store.one(
            "SELECT 1 FROM benchmark_refs WHERE benchmark = ? AND item_id = ?", [set_name[10:], item_id]
        )
    else:
        known = store.one("SELECT 1 FROM holdout WHERE set_name = ? AND item_id = ?", [set_name, item_id])
    if not known:
        raise NotFound(f"{item_id!r} is not a member of {set_name!r}")
    if not store.one("SELECT 1 FROM pairs WHERE pair_id = ?", [pair_id]):
        raise NotFound(f"no pair {pair_id!r}")
    with store.transaction():
        row = store.one(
            "SELECT reason FROM holdout_exemptions WHERE set_name = ? AND item_id = ? AND pair_id = ?",
            [set_name, item_id, pair_id],
        )
        if row is not None:
            return False
        store.con.execute(
            "INSERT INTO holdout_exemptions (set_name, item_id, pair_id, reason) VALUES (?, ?, ?, ?)",
            [set_name, item_id, pair_id, reason.strip()],
        )
        store.audit(
            "holdout.exempt", set_name, {"item_id": item_id, "pair_id": pair_id, "reason": reason.strip()}
        )
    return True


def split_exempt(store: Store, hits: list[Hit]) -> tuple[list[Hit], list[dict]]:
    """(hits that stand, exemptions that cleared a hit) using holdout_exemptions (set, member, pair)."""
    if not hits:
        return [], []
    rows = store.con.execute(
        "SELECT set_name, item_id, pair_id, reason, created_at FROM holdout_exemptions"
    ).fetchall()
    reasons = {(s, i, p): (r, c) for s, i, p, r, c in rows}
    standing, cleared, seen = [], [], set()
    for h in hits:
        ex = reasons.get((h.set_name, h.item_id, h.pair_id))
        if ex is None:
            standing.append(h)
            continue
        key = (h.set_name, h.item_id, h.pair_id, h.how)
        if key not in seen:
            seen.add(key)
            cleared.append(
                {
                    "set": h.set_name,
                    "item_id": h.item_id,
                    "pair_id": h.pair_id,
                    "how": h.how,
                    "score": h.score,
                    "reason": ex[0],
                    "exempted_at": str(ex[1]),
                }
            )
    return standing, cleared
