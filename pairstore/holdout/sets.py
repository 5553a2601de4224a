"""Holdout sets: named sets of items that no training mixture may touch.

    pairstore holdout sample judge34 --n 34 --seed 7
    pairstore holdout add judge34 --ids-file ids.txt
    pairstore holdout remove judge34 b0042 --reason "published in a blog post"

Members carry their match key (and, for generated tasks, their task key), so
the export gate and leak audits find them in any form. Removal keeps the row
(status 'removed', with the reason); every change is written to audit_log.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput, NotFound, duckdb_message
from pairstore.files import StrPath
from pairstore.keys import content_id, match_key, match_text, seeded_rank, xxh128
from pairstore.normalize import compact_text
from pairstore.progress import current as current_progress
from pairstore.store.rekey import match_texts_of_turns
from pairstore.store.sql_guard import check_condition
from pairstore.tables.holdout import add_exemption_row, add_set_members, mark_removed
from pairstore.tables.pairs import Pair

if TYPE_CHECKING:
    from pairstore.holdout.matching import Hit
    from pairstore.store.store import Store

SET_NAME = re.compile(r"[A-Za-z0-9_.:\-]+")


def _check_name(set_name: str) -> None:
    if not SET_NAME.fullmatch(set_name or ""):
        raise BadInput(
            f"bad holdout set name {set_name!r}: letters, digits, '.', '_', ':', '-' only", field="set"
        )


# A member as add_members takes it: item_id, item_kind, match_key, match_text, and optionally task_key and
# source_text (the text a member added as a text stands for).
MEMBER_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("item_kind", pa.string()),
        ("match_key", pa.string()),
        ("task_key", pa.string()),
        ("match_text", pa.string()),
        ("source_text", pa.string()),
    ]
)


def _member_table(members: list[dict] | pa.Table) -> pa.Table:
    table: pa.Table
    if isinstance(members, pa.Table):
        table = members
    else:
        table = pa.table({n: [m.get(n) for m in members] for n in MEMBER_SCHEMA.names})
    for name in ("item_id", "item_kind", "match_key", "match_text"):
        if name not in table.column_names or table[name].null_count:
            raise BadInput(f"a member lacks {name}", field=name)
    missing = [n for n in MEMBER_SCHEMA.names if n not in table.column_names]
    for n in missing:
        table = table.append_column(n, pa.nulls(table.num_rows, pa.string()))
    return table.select(MEMBER_SCHEMA.names).cast(MEMBER_SCHEMA)


def add_members(
    store: Store,
    set_name: str,
    members: list[dict] | pa.Table,
    *,
    description: str | None = None,
    method: str | None = None,
    seed: int | None = None,
) -> int:
    """Add members (item_id, item_kind, match_key, match_text[, task_key, source_text]; dicts or an Arrow
    table of MEMBER_SCHEMA) to a set in one transaction; returns how many were added or made active again.

    A member that was removed earlier becomes active again; one already active is left as it is. Every
    member added gets an audit-log entry of its own (`holdout.add`, its item id, the method and seed).
    Set-based: one INSERT and one UPDATE whatever the count (a whole benchmark in seconds)."""
    _check_name(set_name)
    table = _member_table(members)
    # a member listed twice is added once (its first listing)
    first = pc.is_in(
        pa.array(range(table.num_rows)), pc.index_in(pc.unique(table["item_id"]), table["item_id"])
    )
    if not pc.all(first).as_py():
        table = table.filter(first)
    return add_set_members(store, set_name, table, description=description, method=method, seed=seed)


def _battle_member(row: tuple[str, list[Any], str]) -> dict[str, Any]:
    battle_id, prompt, mk = row
    return {
        "item_id": battle_id,
        "item_kind": "battle",
        "match_key": mk,
        "task_key": None,
        "match_text": match_text([dict(m) for m in prompt]),
    }


# Each id looked up as a battle, a task, then an eval item (the first that has it): its kind, task key
# and user turns.
_RESOLVE_SQL = """
    SELECT i.line, i.item_id,
           CASE WHEN b.battle_id IS NOT NULL THEN 'battle' WHEN t.task_id IS NOT NULL THEN 'task'
                WHEN e.item_id IS NOT NULL THEN 'eval_item' END AS item_kind,
           CASE WHEN b.battle_id IS NULL THEN coalesce(t.task_key, e.task_key) END AS task_key,
           CASE WHEN b.battle_id IS NOT NULL
                THEN list_transform(list_filter(b.prompt, lambda m: m.role = 'user'), lambda m: m.content)
                WHEN t.task_id IS NOT NULL THEN [t.prompt]
                ELSE list_transform(list_filter(e.prompt, lambda m: m.role = 'user'), lambda m: m.content)
           END AS turns
    FROM _ids i
    LEFT JOIN battles b ON b.battle_id = i.item_id
    LEFT JOIN tasks t ON t.task_id = i.item_id
    LEFT JOIN (SELECT item_id, any_value(task_key) AS task_key, any_value(prompt) AS prompt
               FROM eval_items GROUP BY item_id) e ON e.item_id = i.item_id
    ORDER BY i.line"""


def resolve_ids(store: Store, ids: list[tuple[int, str]], path: str) -> pa.Table:
    """Members (MEMBER_SCHEMA) for ids (battle, task or eval item ids, each with its line), looked up in the
    store in one query; their user turns normalized in one batch. An unknown id is refused naming its line."""
    table = pa.table({"line": pa.array([n for n, _ in ids], pa.int64()), "item_id": [i for _, i in ids]})
    with store.registered("_ids", table):
        rows = store.con.sql(_RESOLVE_SQL).to_arrow_table()
    unknown = pc.is_null(rows["item_kind"])
    if pc.any(unknown).as_py():
        first = rows.filter(unknown).slice(0, 1).to_pylist()[0]
        raise BadInput(
            f"unknown id {first['item_id']!r} (not a battle, task or eval item in the store)",
            path=path,
            line=first["line"],
        )
    texts = match_texts_of_turns(rows["turns"].to_pylist())
    return pa.table(
        {
            "item_id": rows["item_id"],
            "item_kind": rows["item_kind"],
            "match_key": pa.array([xxh128(compact_text(t)) for t in texts], pa.string()),
            "task_key": rows["task_key"],
            "match_text": pa.array(texts, pa.string()),
            "source_text": pa.nulls(rows.num_rows, pa.string()),
        }
    )


def _read_text(path: StrPath) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        raise BadInput("bytes that are not UTF-8", path=str(path)) from None
    except FileNotFoundError:
        raise BadInput("no such file", path=str(path)) from None


def add_from_ids_file(store: Store, set_name: str, path: StrPath) -> int:
    """`holdout add SET --ids-file F`: one id per line (blank lines and # comments ignored)."""
    ids = [
        (i, ln.strip())
        for i, ln in enumerate(_read_text(path).splitlines(), start=1)
        if ln.strip() and not ln.strip().startswith("#")
    ]
    if not ids:
        raise BadInput("no ids in file", path=str(path))
    members = resolve_ids(store, ids, str(path))  # an id listed twice is one member (add_members)
    return add_members(store, set_name, members, method=f"ids-file {path}")


# The fields of a line of a texts file: the text (required) and an id (optional).
TEXT_FIELDS = ("id", "text")


def read_texts_file(path: StrPath) -> list[tuple[int, str | None, str]]:
    """(line, id or None, text) of every text of a texts file: JSONL objects with `text` and optionally `id`
    (a string); in a .txt file, each non-blank line is a text. Anything else (another field, a text that
    is not a non-empty string, an id listed twice) is refused naming the line and the field."""
    raw = _read_text(path)
    out: list[tuple[int, str | None, str]] = []
    if str(path).endswith(".txt"):
        return [(n, None, ln.strip()) for n, ln in enumerate(raw.splitlines(), start=1) if ln.strip()]
    ids: dict[str, int] = {}
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise BadInput(f"not JSON ({e.msg})", path=str(path), line=n) from None
        if not isinstance(record, dict):
            raise BadInput("expected a JSON object with a text", path=str(path), line=n)
        extra = sorted(set(record) - set(TEXT_FIELDS))
        if extra:
            raise BadInput(
                f"unknown field {extra[0]!r} (a texts file holds {' and '.join(TEXT_FIELDS)})",
                path=str(path),
                line=n,
                field=extra[0],
            )
        text, item_id = record.get("text"), record.get("id")
        if not isinstance(text, str) or not text.strip():
            raise BadInput("text: expected a non-empty string", path=str(path), line=n, field="text")
        if item_id is not None and not (isinstance(item_id, str) and item_id.strip()):
            raise BadInput("id: expected a non-empty string", path=str(path), line=n, field="id")
        if item_id is not None:
            if item_id in ids:
                raise BadInput(
                    f"id {item_id!r} is listed twice (first on line {ids[item_id]})",
                    path=str(path),
                    line=n,
                    field="id",
                )
            ids[item_id] = n
        out.append((n, item_id, text))
    return out


def add_from_texts_file(store: Store, set_name: str, path: StrPath) -> int:
    """`holdout add SET --texts-file F`: each text a member of kind `prompt` (its id the given one, else
    `t` and the content id of the text), normalized in one batch, added in one transaction; the text is
    kept (`source_text`), so a re-keyed store reads it again."""
    texts = read_texts_file(path)
    if not texts:
        raise BadInput("no texts in file", path=str(path))
    words = match_texts_of_turns([[t] for _, _, t in texts])
    ids = [i if i is not None else "t" + content_id(t)[:16] for _, i, t in texts]
    members = pa.table(
        {
            "item_id": pa.array(ids, pa.string()),
            "item_kind": pa.array(["prompt"] * len(ids), pa.string()),
            "match_key": pa.array([xxh128(compact_text(w)) for w in words], pa.string()),
            "task_key": pa.nulls(len(ids), pa.string()),
            "match_text": pa.array(words, pa.string()),
            "source_text": pa.array([t for _, _, t in texts], pa.string()),
        }
    )
    return add_members(store, set_name, members, method=f"texts-file {path}")


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
    def load(cls, store: Store) -> HoldoutFilter:
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
        prompt: object = None,
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
        d: Any = json.loads(detail) if isinstance(detail, str) else (detail or {})
        if action == "holdout.add":
            # one entry per member (item_id); entries of older versions list many (items)
            for item in d.get("items") or [d.get("item_id")]:
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


def removed_members(store: Store) -> list[dict]:
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
        mark_removed(store, set_name, item_id, reason=reason)


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
    return add_exemption_row(store, set_name, item_id, pair_id, reason=reason.strip())


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
