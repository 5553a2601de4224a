"""Holdout matching: which candidate rows are held-out items in disguise.

Shared by the export gate (pairstore/holdout/gate.py) and the leak audit (audits/leaks.py), so both find the
same members in the same rows:

    from pairstore.holdout.matching import candidate_table, find_holdout_hits
    cands = candidate_table([(0, "p1", ["b17"], [{"role": "user", "content": "Hi"}], None)])
    for hit in find_holdout_hits(store, cands, set_name="judge34"):
        print(hit.set_name, hit.item_id, hit.row_index, hit.pair_id, hit.how, hit.score)

Members checked: the active rows of `holdout` (one set, or all sets), the prompts of `eval_items` (set
name "eval:<suite>") and registered benchmark references ("benchmark:<name>"). With `set_name` given,
only that set is checked. Each member is looked for as one or two *needles*: its normalized user turns
(pairstore.holdout.normalize.word_text, turns joined), and for a multi-turn member its first turn alone when
that has EMBED_MIN_WORDS words or more.

How a row matches a needle, strongest first (one hit per member and row):

1. ``id`` — one of the row's origin ids is the member's item id.
2. ``match_key`` — the row's user turns have the needle's match key: the same words once invisible
   characters, look-alike letters, case, Unicode form, punctuation, spacing and a split over several
   user turns are taken away (pairstore.holdout.normalize).
3. ``task_key`` — the same canonical task key: a generated task asked in other words.
4. ``embedded`` — the needle is a whole system or assistant turn of the row, or (needles of
   EMBED_MIN_WORDS words or more) its words appear, word for word, anywhere in the row's turns.
5. ``fuzzy`` — needle and row text both FUZZY_MIN_CHARS long, every number of the needle in the row,
   and the rapidfuzz score at least FUZZY_THRESHOLD (fuzzy_score): a few words changed.
6. ``benchmark`` — 13-gram overlap with a registered benchmark item (pairstore.holdout.ngrams).

Templates: members with a task key are never fuzzy-matched (different tasks of one template differ by a
word or two), and a row is spared from 4-6 only when it is a task the store generated itself: its task
key and match key are those of a row of `tasks`. A task key given in a file spares nothing.

Scale: the cheap stages stream every row once (pairstore.holdout.scan); what they find, a few rows, is
checked here in Python. Deep paraphrase (other words, same question) is beyond string matching: a
semantic check would plug in after the prefilter, as another kind of hit on the pairs it scores.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from rapidfuzz import fuzz

from pairstore.errors import BadInput
from pairstore.holdout.ngrams import DEFAULT_N, Vocabulary, lookup_ngrams, registered_vocabulary
from pairstore.holdout.normalize import TURN_SEP, compact_text, word_text
from pairstore.holdout.scan import GRAM_WORDS, loose_hash, scan_candidates
from pairstore.keys import canonical_messages, match_key, match_text, xxh128

if TYPE_CHECKING:
    from pairstore.store.store import Store

# Normalized text shorter than this is never fuzzy-matched (exact and embedded matches still apply).
FUZZY_MIN_CHARS = 64
# rapidfuzz score (0..100) at or above which a long prompt is a near copy of a member.
# Three words changed in a 250-character prompt score about 93; two different questions that share a
# topic score well under 80.
FUZZY_THRESHOLD = 88.0
# A needle of at least this many words is also found inside longer text; shorter ones only as a whole
# turn ("tell me a joke" inside "tell me a joke about cats" is another request).
EMBED_MIN_WORDS = 5
# Prefilter: a (row, needle) pair is looked at only if the row holds at least this share of the
# needle's word 3-grams (a contained needle holds all; each changed word removes at most three).
SHINGLE_MIN_SHARE = 0.3
# 3-grams found in at least this share of the rows are boilerplate, not evidence.
COMMON_SHINGLE_SHARE = 0.002

HOW_ORDER = ("id", "match_key", "task_key", "embedded", "fuzzy", "benchmark")
# A row spared from text matching: a task the store generated (its task key and match key are a task's).
SPARED_SQL = (
    "(c.task_key IS NOT NULL AND EXISTS (SELECT 1 FROM tasks t WHERE t.task_key = c.task_key "
    "AND t.match_key = c.match_key))"
)

_MESSAGES = pa.list_(pa.string())
CANDIDATE_SCHEMA = pa.schema(
    [
        ("row_index", pa.int64()),
        ("pair_id", pa.string()),
        ("origin_ids", pa.list_(pa.string())),
        ("match_key", pa.string()),
        ("task_key", pa.string()),
        ("user_turns", _MESSAGES),
        ("other_turns", _MESSAGES),  # system and assistant turns, in order
    ]
)


@dataclass(frozen=True)
class Hit:
    set_name: str
    item_id: str
    row_index: int
    pair_id: str | None
    how: str  # id | match_key | task_key | embedded | fuzzy | benchmark
    score: float  # 100 for exact kinds; the rapidfuzz score for fuzzy

    def as_dict(self) -> dict:
        return {
            "set": self.set_name,
            "item_id": self.item_id,
            "row_index": self.row_index,
            "pair_id": self.pair_id,
            "how": self.how,
            "score": self.score,
        }


@dataclass
class GateResult:
    hits: list[Hit] = field(default_factory=list)
    members: dict = field(default_factory=dict)  # member kind -> count checked
    candidates: int = 0
    fuzzy_pairs_scored: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Needle:
    set_name: str
    item_id: str
    kind: str  # holdout | eval | benchmark
    text: str  # normalized words, turns joined by spaces
    compact: str  # the match-key text
    task_key: str | None

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def embeddable(self) -> bool:
        # Benchmark items of 13 words or more are found inside longer text by their 13-grams.
        return self.words >= EMBED_MIN_WORDS and not (self.kind == "benchmark" and self.words >= DEFAULT_N)

    @property
    def fuzzy(self) -> bool:
        return self.kind != "benchmark" and self.task_key is None and len(self.text) >= FUZZY_MIN_CHARS


# -- candidates ----------------------------------------------------------------


def split_turns(prompt, *, line: int | None = None) -> tuple[list[str], list[str]]:
    """(user turns, system and assistant turns) of a prompt (string or messages)."""
    msgs = canonical_messages(prompt, line=line)
    return (
        [m["content"] for m in msgs if m["role"] == "user"],
        [m["content"] for m in msgs if m["role"] != "user"],
    )


def candidate_table(rows: Iterable) -> pa.Table:
    """Rows (row_index, pair_id|None, origin_ids, prompt (str or messages), task_key|None) -> arrow table.

    A prompt that is not a string or a list of messages raises BadInput naming the row."""
    cols: dict[str, list] = {name: [] for name in CANDIDATE_SCHEMA.names}
    for row_index, pair_id, origin_ids, prompt, task_key in rows:
        users, others = split_turns(prompt, line=int(row_index))
        cols["row_index"].append(int(row_index))
        cols["pair_id"].append(pair_id)
        cols["origin_ids"].append([str(o) for o in (origin_ids or [])])
        cols["match_key"].append(match_key(prompt))
        cols["task_key"].append(task_key)
        cols["user_turns"].append(users)
        cols["other_turns"].append(others)
    return pa.Table.from_pydict(cols, schema=CANDIDATE_SCHEMA)


# -- members -------------------------------------------------------------------


def _needles_of(
    set_name: str, item_id: str, kind: str, turns: list[str], task_key: str | None
) -> list[Needle]:
    """The needles of one member from its normalized user turns (always one: an empty text still matches
    by origin id and task key)."""
    joined = " ".join(" ".join(turns).split())
    out = [Needle(set_name, item_id, kind, joined, compact_text(joined), task_key)]
    if len(turns) > 1 and len(turns[0].split()) >= EMBED_MIN_WORDS:
        out.append(Needle(set_name, item_id, kind, turns[0], compact_text(turns[0]), task_key))
    return out


def member_needles(store: Store, set_name: str | None = None) -> tuple[list[Needle], dict]:
    """Every needle to look for, and the number of members of each kind."""
    con = store.con
    needles: list[Needle] = []
    counts = {"holdout": 0, "eval": 0, "benchmark": 0}
    want_holdout = set_name is None or not set_name.startswith(("eval:", "benchmark:"))
    if want_holdout:
        rows = con.execute(
            "SELECT set_name, item_id, match_text, task_key FROM holdout WHERE removed_at IS NULL "
            "AND (? IS NULL OR set_name = ?) ORDER BY set_name, item_id",
            [set_name, set_name],
        ).fetchall()
        for s, i, text, tk in rows:
            counts["holdout"] += 1
            # Re-normalized here: a member added by hand, or by an older version, matches the same way.
            needles += _needles_of(s, i, "holdout", [word_text(t) for t in (text or "").split(TURN_SEP)], tk)
    if set_name is None or set_name.startswith("eval:"):
        suite = None if set_name is None else set_name[len("eval:") :]
        rows = con.execute(
            "SELECT suite, item_id, prompt, task_key FROM eval_items WHERE (? IS NULL OR suite = ?) "
            "ORDER BY suite, item_id",
            [suite, suite],
        ).fetchall()
        for s, i, prompt, tk in rows:
            counts["eval"] += 1
            needles += _needles_of(
                f"eval:{s}", i, "eval", match_text([dict(m) for m in prompt]).split(TURN_SEP), tk
            )
    if set_name is None or set_name.startswith("benchmark:"):
        bench = None if set_name is None else set_name[len("benchmark:") :]
        rows = con.execute(
            "SELECT benchmark, item_id, text FROM benchmark_refs WHERE (? IS NULL OR benchmark = ?) "
            "ORDER BY benchmark, item_id",
            [bench, bench],
        ).fetchall()
        for b, i, text in rows:
            counts["benchmark"] += 1
            needles += _needles_of(f"benchmark:{b}", i, "benchmark", [word_text(text)], None)
    return needles, counts


# -- scoring -------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _numbers(text: str) -> Counter:
    return Counter(_NUMBER.findall(text))


def fuzzy_score(member_text: str, row_text: str) -> float:
    """rapidfuzz similarity of two normalized texts, 0..100.

    `ratio` (normalized Indel similarity) catches a few words changed; when the row is longer than the
    member, `partial_ratio` (the member against the best-aligned window of the row) catches the member
    with a sentence added. The same question with other numbers ("63 times 31" vs "64 times 30") is
    another question: a near copy keeps every number of the member."""
    if not _numbers(member_text) <= _numbers(row_text):
        return 0.0
    score = fuzz.ratio(member_text, row_text)
    if len(row_text) > len(member_text):
        score = max(score, fuzz.partial_ratio(member_text, row_text))
    return float(score)


def embedded_in(needle_text: str, row_text: str) -> bool:
    """The needle's words appear in the row's words, consecutively and whole."""
    return f" {needle_text} " in f" {row_text} "


@dataclass
class _RowText:
    user: str  # the match text of the user turns (TURN_SEP between turns)
    others: list  # word_text of each system and assistant turn
    hay: str  # every turn's words, joined by spaces


def _row_texts(store: Store, cand: str, row_indexes: set[int]) -> dict[int, _RowText]:
    if not row_indexes:
        return {}
    ids = pa.table({"row_index": pa.array(sorted(row_indexes), pa.int64())})
    with store.registered("_pm_rows", ids):
        rows = store.con.execute(
            f"SELECT c.row_index, c.user_turns, c.other_turns FROM {cand} c "
            "SEMI JOIN _pm_rows USING (row_index)"
        ).fetchall()
    out = {}
    for row_index, users, others in rows:
        user = TURN_SEP.join(word_text(t) for t in users or [])
        other = [word_text(t) for t in others or []]
        out[int(row_index)] = _RowText(
            user, other, " ".join(" ".join([user.replace(TURN_SEP, " "), *other]).split())
        )
    return out


# -- the stages ------------------------------------------------------------------


def _id_and_task_hits(store: Store, cand: str, needles: list[Needle]) -> list[tuple]:
    members = pa.table(
        {
            "set_name": pa.array([n.set_name for n in needles], pa.string()),
            "item_id": pa.array([n.item_id for n in needles], pa.string()),
            "kind": pa.array([n.kind for n in needles], pa.string()),
            "task_key": pa.array([n.task_key for n in needles], pa.string()),
        }
    )
    with store.registered("_pm_members", members):
        return store.con.execute(f"""
            SELECT DISTINCT m.set_name, m.item_id, c.row_index, c.pair_id, 'id'
            FROM (SELECT row_index, pair_id, unnest(origin_ids) AS oid FROM {cand}) c
            JOIN _pm_members m ON m.item_id = c.oid AND m.kind <> 'benchmark'
            UNION ALL
            SELECT DISTINCT m.set_name, m.item_id, c.row_index, c.pair_id, 'task_key'
            FROM {cand} c JOIN _pm_members m ON m.task_key = c.task_key""").fetchall()


def _needle_grams(needles: list[Needle]) -> tuple[Vocabulary, pa.Table] | None:
    """(vocabulary of the words, table nid, ngram) of the needles that embedded or fuzzy matching reads."""
    idx = [i for i, n in enumerate(needles) if n.embeddable or n.fuzzy]
    if not idx:
        return None
    vocab = Vocabulary.of_texts([needles[i].text for i in idx])
    docs, hashes = vocab.ngrams([needles[i].text for i in idx], GRAM_WORDS)
    if not len(docs):
        return None
    return vocab, pa.table(
        {"nid": pa.array([idx[d] for d in docs.tolist()], pa.int64()), "ngram": pa.array(hashes, pa.uint64())}
    )


def _gram_pairs(store: Store, needle_grams: pa.Table, grams: pa.Table, n_rows: int) -> list[tuple]:
    """(row_index, needle index) pairs that share enough of the needle's 3-grams (see SHINGLE_MIN_SHARE)."""
    if grams.num_rows == 0:
        return []
    common = max(5, int(COMMON_SHINGLE_SHARE * n_rows + 0.999))
    with store.registered("_pm_grams", grams), store.registered("_pm_ngrams", needle_grams):
        return store.con.execute(f"""
            WITH n AS (SELECT DISTINCT nid, ngram FROM _pm_ngrams),
            g AS (SELECT DISTINCT row_index, ngram FROM _pm_grams),
            freq AS (SELECT ngram, count(*) AS rows FROM g GROUP BY ngram),
            f AS (SELECT n.nid, n.ngram, coalesce(freq.rows, 0) >= {common} AS is_common,
                         count(*) FILTER (coalesce(freq.rows, 0) < {common}) \
OVER (PARTITION BY n.nid) AS n_rare,
                         count(*) OVER (PARTITION BY n.nid) AS n_all
                  FROM n LEFT JOIN freq USING (ngram)),
            used AS (SELECT nid, ngram, CASE WHEN n_rare >= 3 THEN n_rare ELSE n_all END AS n_used
                     FROM f WHERE NOT is_common OR n_rare < 3)
            SELECT g.row_index, u.nid
            FROM g JOIN used u USING (ngram)
            GROUP BY g.row_index, u.nid
            HAVING count(*) >= greatest(1, least(any_value(u.n_used),
                                                 greatest(2, ceil({SHINGLE_MIN_SHARE} * \
any_value(u.n_used)))))
            ORDER BY 1, 2""").fetchall()


def _score(needle: Needle, row: _RowText) -> tuple[str, float] | None:
    if needle.embeddable and embedded_in(needle.text, row.hay):
        return "embedded", 100.0
    if needle.fuzzy and len(row.hay) >= FUZZY_MIN_CHARS:
        user = row.user.replace(TURN_SEP, " ")
        score = fuzzy_score(needle.text, user) if user else 0.0
        if row.hay != user:  # the needle may sit in a system or assistant turn
            score = max(score, fuzzy_score(needle.text, row.hay))
        if score >= FUZZY_THRESHOLD:
            return "fuzzy", round(score, 2)
    return None


def check_table(
    store: Store, cand: str, *, set_name: str | None = None, fuzzy: bool = True, benchmarks: bool = True
) -> GateResult:
    """Hits for candidates held in a table or view `cand` of the store's connection (CANDIDATE_SCHEMA).

    The export builds it in SQL (millions of rows never become Python objects); find_holdout_hits
    registers an arrow table."""
    result = GateResult()
    con = store.con
    needles, result.members = member_needles(store, set_name)
    result.candidates = con.execute(f"SELECT count(*) FROM {cand}").fetchall()[0][0]
    found: list[tuple] = []
    if needles:
        found += _id_and_task_hits(store, cand, needles)
    by_hash: dict[int, list[int]] = {}
    for i, n in enumerate(needles):
        if n.compact:
            by_hash.setdefault(loose_hash(n.text), []).append(i)
    grams = _needle_grams(needles) if fuzzy else None
    vocab3 = None if grams is None else (grams[0], np.unique(grams[1]["ngram"].to_numpy()))
    bench = None
    if benchmarks and (set_name is None or set_name.startswith("benchmark:")):
        bench_vocab = registered_vocabulary(store, DEFAULT_N)
        if bench_vocab is not None:
            bench = (bench_vocab, DEFAULT_N, lambda rows, grams: lookup_ngrams(store, rows, grams, DEFAULT_N))
    # Spared rows (tasks the store generated) are compared by their stored match key only.
    keys: dict[str, list[int]] = {}
    for i, n in enumerate(needles):
        if n.compact:
            keys.setdefault(xxh128(n.compact), []).append(i)
    for row_index, pair_id, key in con.execute(
        f"SELECT c.row_index, c.pair_id, c.match_key FROM {cand} c WHERE {SPARED_SQL} "
        "AND c.match_key IN (SELECT unnest(?::VARCHAR[]))",
        [sorted(keys)],
    ).fetchall():
        found += [
            (needles[i].set_name, needles[i].item_id, row_index, pair_id, "match_key") for i in keys[key]
        ]
    scan = scan_candidates(store, cand, f"NOT {SPARED_SQL}", set(by_hash), vocab3, bench)
    pairs = _gram_pairs(store, grams[1], scan.gram_table(), scan.rows) if grams else []
    result.fuzzy_pairs_scored = len(pairs)
    texts = _row_texts(store, cand, {r for r, _, _ in scan.exact} | {r for r, _ in pairs})
    wanted = sorted(set(texts) | {r for r, _, _ in scan.benchmark})
    pair_of = (
        dict(
            con.execute(
                f"SELECT row_index, pair_id FROM {cand} WHERE row_index IN (SELECT unnest(?::BIGINT[]))",
                [wanted],
            ).fetchall()
        )
        if wanted
        else {}
    )
    for row_index, h, where in scan.exact:
        row = texts[row_index]
        for i in by_hash[h]:
            n = needles[i]
            if where == "user" and compact_text(row.user) == n.compact:
                found.append((n.set_name, n.item_id, row_index, pair_of.get(row_index), "match_key"))
            elif where == "other" and n.compact in {compact_text(o) for o in row.others}:
                found.append((n.set_name, n.item_id, row_index, pair_of.get(row_index), "embedded"))
    hits = [Hit(s, i, int(r), p, how, 100.0) for s, i, r, p, how in found]
    for row_index, nid in pairs:
        n = needles[nid]
        scored = _score(n, texts[row_index])
        if scored:
            hits.append(Hit(n.set_name, n.item_id, row_index, pair_of.get(row_index), *scored))
    for row_index, bench_name, item_id in scan.benchmark:
        if set_name is None or set_name == f"benchmark:{bench_name}":
            hits.append(
                Hit(
                    f"benchmark:{bench_name}",
                    str(item_id),
                    row_index,
                    pair_of.get(row_index),
                    "benchmark",
                    100.0,
                )
            )
    result.hits = _dedupe(hits)
    return result


def _dedupe(hits: list[Hit]) -> list[Hit]:
    """One hit per (set, member, row): the strongest kind of match."""
    best: dict[tuple, Hit] = {}
    for h in hits:
        k = (h.set_name, h.item_id, h.row_index)
        cur = best.get(k)
        if cur is None or HOW_ORDER.index(h.how) < HOW_ORDER.index(cur.how):
            best[k] = h
    return sorted(best.values(), key=lambda h: (h.row_index, h.set_name, h.item_id))


def find_holdout_hits(store: Store, candidates: pa.Table, *, set_name: str | None = None) -> list[Hit]:
    """Every (member, row) hit of `candidates` (see candidate_table), strongest kind of match first."""
    return check_candidates(store, candidates, set_name=set_name).hits


def check_candidates(store: Store, candidates: pa.Table, *, set_name: str | None = None) -> GateResult:
    """find_holdout_hits with the counts and notes the export evidence reports."""
    missing = [n for n in CANDIDATE_SCHEMA.names if n not in candidates.column_names]
    if missing:
        raise BadInput(f"candidate table lacks columns {', '.join(missing)}", field=missing[0])
    with store.registered("_pm_input", candidates.select(CANDIDATE_SCHEMA.names).cast(CANDIDATE_SCHEMA)):
        return check_table(store, "_pm_input", set_name=set_name)
