"""Battle pairs: human side-by-side votes turned into preference pairs.

    pairstore mine battle
    from miners.battle import mine_battles; mine_battles(store)

Rules (votes are from the own model's side):
- win:  own answer chosen, opponent's rejected   (rule "vote=win → own chosen")
- loss: opponent's answer chosen, own rejected   (rule "vote=loss → opponent chosen")
- tie, both_bad: no pair (dropped as 'tie' / 'both_bad').

A multi-turn battle (`battles.prompt` = optional system message + the user
turns; own_answers / opponent_answers aligned with the user turns) gives one
pair: its prompt is the user turns interleaved with the *chosen* side's
earlier answers, and chosen / rejected are the two sides' last answers. The
battle's system message is not kept: the round's recipe supplies the system
prompt at export.

Dropped, by reason:
- holdout: the battle is an active holdout member (item kind 'battle', any
  set), its match key (stored or recomputed from its prompt) equals an
  active member's or an evaluation item's, or the export gate's own matcher
  (pairstore.holdout.matching, every text of the battle: its turns and both
  sides' answers) finds a member in it — a held-out battle re-ingested under
  a new id with an escaped or templated prompt. Skipped before anything else,
  so no pair of a held-out battle is ever written (the export gate checks again).
- identity: the opponent's answer would be chosen but names its own model or
  maker (miners.patterns.IDENTITY_PATTERNS) — in the last answer or in an
  earlier one that becomes part of the prompt.
- malformed: answers not aligned with the user turns.
- empty side, identical sides, duplicate: from pairstore.tables.pairs.add_pairs.
Each pair has one origin: ('battle', battle_id, rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from miners.patterns import names_own_model
from miners.registry import MineResult, new_result, option, register, write_pairs
from pairstore.errors import BadInput, duckdb_message
from pairstore.holdout.matching import candidate_table, find_holdout_hits
from pairstore.holdout.sets import HoldoutFilter
from pairstore.progress import current as current_progress
from pairstore.store.sql_guard import check_condition
from pairstore.tables.pairs import Origin, Pair, battle_pair_prompt

RULES = {"win": "vote=win → own chosen", "loss": "vote=loss → opponent chosen"}


def _matched_battles(store, battles: list[dict]) -> set[str]:
    """Battle ids the export gate's matcher finds in any held-out member, eval item or benchmark: a held-out
    battle re-ingested under a new id, its prompt escaped, templated or disguised, or its answers reused."""
    if not battles:
        return set()
    cands = candidate_table(
        (
            i,
            None,
            [b["battle_id"]],
            [dict(m) for m in b["prompt"]],
            None,
            [*b["own_answers"], *b["opponent_answers"]],
        )
        for i, b in enumerate(battles)
    )
    return {battles[h.row_index]["battle_id"] for h in find_holdout_hits(store, cands)}


@dataclass(frozen=True, kw_only=True)
class BattleOptions:
    where: str | None = option(None, help="Only battles matching this SQL condition over `battles`.")


@register("battle", version="2", options=BattleOptions, sources=("battle",))
def mine_battles(store, options: BattleOptions) -> MineResult:
    """Pairs from human battle votes: win → own chosen, loss → opponent chosen; ties and both-bad dropped.

    `where`: optional SQL condition over `battles` (e.g. "category = 'math'")."""
    where = options.where
    result = new_result(mine_battles)
    holdout = HoldoutFilter.load(store)
    # Checked by pairstore.store.sql_guard: one condition, no statement, no side effect; it can only narrow.
    filt = f" WHERE ({check_condition(where, field='where')})" if where is not None else ""
    sql = (
        "SELECT battle_id, prompt, own_answers, opponent_answers, vote, category, match_key "
        "FROM (SELECT * FROM battles) AS battles" + filt + " ORDER BY battle_id"
    )
    try:
        battles = store.rows(sql)
    except duckdb.Error as e:
        raise BadInput(f"bad SQL condition: {duckdb_message(e)}", field="where") from None
    pairs = []
    matched = _matched_battles(store, battles)
    for b in current_progress().track(battles, "mine battle: battles", unit="battles"):
        result.stats["battles"] += 1
        prompt = [dict(m) for m in b["prompt"]]
        if b["battle_id"] in matched or holdout.holds(
            "battle", b["battle_id"], prompt=prompt, stored_match_key=b["match_key"]
        ):
            result.dropped["holdout"] += 1
            continue
        vote = b["vote"]
        result.stats[f"vote={vote}"] += 1
        if vote not in RULES:
            result.dropped[vote] += 1
            continue
        users = [m["content"] for m in prompt if m["role"] == "user"]
        own, opponent = list(b["own_answers"]), list(b["opponent_answers"])
        if not users or len(own) != len(users) or len(opponent) != len(users):
            result.dropped["malformed"] += 1
            continue
        chosen_side, rejected_side = (own, opponent) if vote == "win" else (opponent, own)
        if vote == "loss" and any(names_own_model(a) for a in opponent):
            result.dropped["identity"] += 1
            continue
        pairs.append(
            Pair(
                prompt=battle_pair_prompt(users, chosen_side),
                chosen=chosen_side[-1],
                rejected=rejected_side[-1],
                source="battle",
                family=b["category"],
                origins=[Origin("battle", b["battle_id"], RULES[vote])],
            )
        )
    return write_pairs(store, result, pairs, holdout)
