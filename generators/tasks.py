"""Generate loop-fix tasks and write them to the store, as training tasks or as a held-out eval suite.

    pairstore generate loopfix --n 700 --seed 11 --suite lf-eval     # an eval suite, held out
    pairstore generate loopfix --n 5000 --seed 12                    # training tasks, never held-out keys

Tasks are dealt round-robin over the selected families, in their declared order
(generators.registry).
Family f's k-th task is the first acceptable draw of its stream: draw d of
family f under seed s is fully determined by (s, f, d), and a draw is skipped
(the next one taken) when its task key is excluded or already produced in this
call. So the same seed and arguments give the same tasks on every Python
version, and generating more tasks extends the list instead of changing it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from generators.base import DIFFICULTIES, Task, canonical_json
from generators.registry import family_specs, get_family, resolve_families
from pairstore.errors import BadInput, PairstoreError
from pairstore.holdout.sets import add_members, held_task_keys
from pairstore.keys import match_key, match_text
from pairstore.tables.audit_log import log_action
from pairstore.tables.evals import add_eval_items
from pairstore.tables.tasks import insert_tasks, mark_suite

# A family that rejects this many draws in a row has run out of new tasks (all excluded or produced).
MAX_CONSECUTIVE_SKIPS = 5000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise BadInput(f"seed must be an integer, got {seed!r}", field="seed")
    if not INT64_MIN <= seed <= INT64_MAX:
        raise BadInput(f"seed {seed} does not fit in 64 bits", field="seed")
    return seed


def generate_tasks(
    seed: int,
    n: int,
    families: Iterable[str] | str | None = None,
    exclude_task_keys: Iterable[str] = frozenset(),
    *,
    difficulty: int | None = None,
) -> list[Task]:
    """`n` tasks spread evenly over `families` (default all), deterministic in `seed`.

    Never yields a task key in `exclude_task_keys`, never the same task key twice. `difficulty`
    (1-3) fixes the level; None draws it per task. Raises BadInput on bad arguments and
    PairstoreError when a family has no new task left to give.
    """
    _check_seed(seed)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise BadInput(f"n must be a non-negative integer, got {n!r}", field="n")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise BadInput(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}", field="difficulty")
    names = resolve_families(families)
    excluded = frozenset(exclude_task_keys)
    produced: set[str] = set()
    next_draw = dict.fromkeys(names, 0)
    generators = {name: get_family(name) for name in names}
    tasks: list[Task] = []
    for i in range(n):
        name = names[i % len(names)]
        family = generators[name]
        skips = 0
        while True:
            task = family.make(seed, next_draw[name], difficulty)
            next_draw[name] += 1
            if task.task_key not in excluded and task.task_key not in produced:
                break
            skips += 1
            if skips >= MAX_CONSECUTIVE_SKIPS:
                raise PairstoreError(
                    f"family {name}: no new task after {skips} draws in a row (seed {seed}, "
                    f"{len(tasks)} tasks so far); its parameter space is used up"
                    + ("" if difficulty is None else f" at difficulty {difficulty}")
                )
        produced.add(task.task_key)
        tasks.append(task)
    return tasks


def _same_content(row: dict, task: Task) -> bool:
    params = row["params"] if isinstance(row["params"], dict) else json.loads(row["params"])
    return (row["family"], row["task_key"], row["gold"], row["chosen"], canonical_json(params)) == (
        task.family,
        task.task_key,
        task.gold,
        task.chosen,
        canonical_json(task.params),
    )


def write_tasks(store, tasks: Iterable[Task], suite: str | None = None) -> dict:
    """Insert tasks into `tasks`; with a suite also into eval_items and the holdout set named `suite`.

    Idempotent: a task id already there is skipped (an existing training task written into a
    suite is marked with it); the same task id with different content raises BadInput and
    changes nothing. Returns counts: tasks_inserted, tasks_existing, eval_items_inserted,
    holdout_added. One transaction.
    """
    if suite is not None and (not isinstance(suite, str) or not suite.strip()):
        raise BadInput(f"suite must be a non-empty name, got {suite!r}", field="suite")
    unique: dict[str, Task] = {}
    for task in tasks:
        seen = unique.get(task.task_id)
        if seen is not None and seen != task:
            raise BadInput(f"task {task.task_id} appears twice with different content", field="task_id")
        unique[task.task_id] = task
    ordered = list(unique.values())
    counts = {"tasks_inserted": 0, "tasks_existing": 0, "eval_items_inserted": 0, "holdout_added": 0}
    with store.transaction():
        ids = [t.task_id for t in ordered]
        existing = (
            {
                r["task_id"]: r
                for r in store.rows(
                    "SELECT task_id, family, task_key, gold, chosen, params, suite FROM tasks "
                    "WHERE task_id IN (SELECT unnest(?::VARCHAR[]))",
                    [ids],
                )
            }
            if ids
            else {}
        )
        new_rows, to_mark = [], []
        for task in ordered:
            row = existing.get(task.task_id)
            if row is None:
                new_rows.append(
                    [
                        task.task_id,
                        task.family,
                        task.task_key,
                        task.prompt,
                        task.gold,
                        task.chosen,
                        canonical_json(task.params),
                        task.phrasing,
                        task.seed,
                        suite,
                        match_key(task.prompt),
                    ]
                )
                continue
            if not _same_content(row, task):
                raise BadInput(
                    f"task {task.task_id} ({task.task_key}) is already in the store with different "
                    "content (gold, chosen answer or parameters); a generator changed its output",
                    field="task_id",
                )
            counts["tasks_existing"] += 1
            if suite is not None and row["suite"] is None:
                to_mark.append(task.task_id)
        counts["tasks_inserted"] = insert_tasks(store, new_rows)
        if suite is not None:
            mark_suite(store, suite, to_mark)
        if suite is not None and ordered:
            counts.update(_write_suite(store, ordered, suite))
        if counts["tasks_inserted"] or counts["eval_items_inserted"]:
            log_action(
                store,
                "generate_tasks",
                suite or "training",
                {
                    "suite": suite,
                    **counts,
                    "families": dict(sorted(Counter(t.family for t in ordered).items())),
                    "versions": _versions({t.family for t in ordered}),
                },
            )
    return counts


def _versions(names: set[str]) -> dict[str, str | None]:
    """family -> its declared version (None: a family no longer registered), sorted by name."""
    specs = family_specs()
    return {name: specs[name].version if name in specs else None for name in sorted(names)}


def _write_suite(store, tasks: list[Task], suite: str) -> dict:
    """eval_items rows and holdout members for a suite's tasks (inside write_tasks' transaction)."""
    ids = [t.task_id for t in tasks]
    inserted = add_eval_items(
        store,
        suite,
        [
            {
                "item_id": t.task_id,
                "kind": "task",
                "prompt": [{"role": "user", "content": t.prompt}],
                "gold": t.gold,
                "task_key": t.task_key,
            }
            for t in tasks
        ],
    )
    # Members already in the set (even removed ones: a removal was deliberate and logged) are left alone.
    in_set = {
        r["item_id"]
        for r in store.rows(
            "SELECT item_id FROM holdout WHERE set_name = ? AND item_id IN (SELECT unnest(?::VARCHAR[]))",
            [suite, ids],
        )
    }
    members = [
        {
            "item_id": t.task_id,
            "item_kind": "task",
            "match_key": match_key(t.prompt),
            "match_text": match_text(t.prompt),
            "task_key": t.task_key,
        }
        for t in tasks
        if t.task_id not in in_set
    ]
    added = 0
    if members:
        seeds = {t.seed for t in tasks}
        added = add_members(
            store,
            suite,
            members,
            description=f"loop-fix eval suite {suite}",
            method="generate loopfix",
            seed=seeds.pop() if len(seeds) == 1 else None,
        )
    return {"eval_items_inserted": inserted, "holdout_added": added}


def training_exclusions(store) -> set[str]:
    """Task keys training may not use: every active holdout member's and every eval item's."""
    keys = set(held_task_keys(store))
    keys.update(
        r["task_key"]
        for r in store.rows("SELECT DISTINCT task_key FROM eval_items WHERE task_key IS NOT NULL")
    )
    return keys


@dataclass
class LoopfixSummary:
    """What one `generate loopfix` run did."""

    seed: int
    requested: int
    suite: str | None
    families: dict[str, int] = field(default_factory=dict)  # family -> tasks generated
    tasks_inserted: int = 0
    tasks_existing: int = 0
    eval_items_inserted: int = 0
    holdout_added: int = 0
    excluded_keys: int = 0  # task keys generation had to avoid

    def to_dict(self) -> dict:
        return asdict(self)


def generate_loopfix(
    store,
    n: int,
    seed: int,
    families: Iterable[str] | str | None = None,
    suite: str | None = None,
    *,
    difficulty: int | None = None,
) -> LoopfixSummary:
    """Generate `n` tasks and write them: for training (no suite) or as the held-out suite `suite`.

    Training generation excludes every task key held in an active holdout set or used by an eval
    item. Suite generation excludes the keys of existing training tasks, so a new suite never
    tests what training already saw. Everything happens in one transaction.
    """
    names = resolve_families(families)
    with store.transaction():
        if suite is None:
            excluded = training_exclusions(store)
        else:
            excluded = {
                r["task_key"] for r in store.rows("SELECT DISTINCT task_key FROM tasks WHERE suite IS NULL")
            }
        tasks = generate_tasks(seed, n, names, excluded, difficulty=difficulty)
        counts = write_tasks(store, tasks, suite)
    per_family = Counter(t.family for t in tasks)
    return LoopfixSummary(
        seed=seed,
        requested=n,
        suite=suite,
        families={name: per_family.get(name, 0) for name in names},
        excluded_keys=len(excluded),
        **counts,
    )
