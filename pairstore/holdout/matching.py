"""Holdout matching: which candidate rows are held-out items in disguise.

Shared by the export gate (pairstore/export/gate.py), the leak audit (audits/leaks.py), the battle miner and
`audit gate` through one function, members_in_rows (training rows in the shape of a stored pair: ROW_SCHEMA),
so all find the same members in the same rows:

    from pairstore.holdout.matching import candidate_table, find_holdout_hits
    cands = candidate_table([(0, "p1", ["b17"], [{"role": "user", "content": "Hi"}], None)])
    for hit in find_holdout_hits(store, cands, set_name="judge34"):
        print(hit.set_name, hit.item_id, hit.row_index, hit.pair_id, hit.how, hit.score)

Members checked: the active rows of `holdout` (one set, or all sets), the prompts of `eval_items` (set
name "eval:<suite>") and registered benchmark references ("benchmark:<name>"). With `set_name` given,
only that set is checked. Each member is looked for as one or more *needles*
(pairstore.holdout.needles): its normalized user turns, each long turn of a multi-turn member, each
answer of ANSWER_MIN_WORDS words or more.

How a row matches a needle is MATCHERS: an ordered list of named matchers, strongest first, each declared
once; members_in_rows runs them in order and keeps one hit per member and row, the strongest. A matcher
reads the candidate rows at once (SQL, the streaming scan) or one (needle, row) pair that the cheap
stages propose (pairstore.holdout.text_match).

Templates: members with a task key are never fuzzy-matched (different tasks of one template differ by a
word or two), and a row is spared from the text matchers only when it is a task the store generated
itself: its task key and match key are those of a row of `tasks`. A task key given in a file spares
nothing. An answer, a lone turn or a sentence that is a stock phrase of the store (held by several
distinct prompts of its other items: a refusal, a greeting) is not evidence: skipped, and counted in the
result.

Scale: the cheap stages stream every row once (pairstore.holdout.scan); what they find, a few rows, is
checked here in Python. Deep paraphrase (other words, same question) is beyond string matching: a
semantic check would be one more matcher after the prefilter, a text matcher of one (needle, row) pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.holdout.needles import NeedleIndex, materialize, members_sql, needle_index, needle_words
from pairstore.holdout.ngrams import DEFAULT_N, lookup_ngrams, registered_vocabulary
from pairstore.holdout.scan import Scan, scan_candidates
from pairstore.holdout.text_match import (
    ANSWER_MIN_WORDS,
    COMMON_NEEDLE_PROMPTS,
    COMMON_SHARE,
    CUT_TAIL_MIN_SHARE,
    CUT_TAIL_SLACK,
    EMBED_MIN_WORDS,
    FUZZY_MIN_CHARS,
    FUZZY_THRESHOLD,
    RARITY_MIN_TEXTS,
    SENTENCE_MIN_WORDS,
    STOPWORDS,
    STORE_SAMPLE,
    Needle,
    Rarity,
    RowText,
    TextMatch,
    distinctive,
    embedded,
    embedded_in,
    fuzzy_score,
    near,
    near_copy,
    reordered,
    same_key,
    similarity,
    text_length,
    tokens,
    whole_sentence,
    whole_text,
)
from pairstore.keys import canonical_messages, match_key
from pairstore.normalize import word_texts

if TYPE_CHECKING:
    from pairstore.store.store import Store

# Read from here by the gate, the audits, the miners and the tuning script.
__all__ = [
    "ANSWER_MIN_WORDS",
    "CANDIDATE_SCHEMA",
    "COMMON_NEEDLE_PROMPTS",
    "COMMON_SHARE",
    "CUT_TAIL_MIN_SHARE",
    "CUT_TAIL_SLACK",
    "EMBED_MIN_WORDS",
    "FUZZY_MIN_CHARS",
    "FUZZY_THRESHOLD",
    "HOW_ORDER",
    "MATCHERS",
    "RARITY_MIN_TEXTS",
    "ROW_SCHEMA",
    "SENTENCE_MIN_WORDS",
    "STOPWORDS",
    "STORE_SAMPLE",
    "GateResult",
    "Hit",
    "Matcher",
    "Needle",
    "Rarity",
    "RowText",
    "candidate_table",
    "candidates_sql",
    "check_candidates",
    "check_table",
    "distinctive",
    "embedded_in",
    "find_holdout_hits",
    "fuzzy_score",
    "match_texts",
    "members_in_rows",
    "needles_of_text",
    "near_copy",
    "similarity",
    "store_rarity",
    "text_length",
    "tokens",
]

# Prefilter: a (row, needle) pair is looked at only if the row holds at least this share of the
# needle's word 3-grams (a contained needle holds all; each changed word removes at most three).
SHINGLE_MIN_SHARE = 0.3
# 3-grams found in at least this share of the rows are boilerplate, not evidence.
COMMON_SHINGLE_SHARE = 0.002
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
        # every other text of the row: system and assistant turns in order, then chosen, rejected or the
        # NLL completion
        ("other_turns", _MESSAGES),
    ]
)


_PROMPT = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
# A training row as members_in_rows reads it: the shape of a stored pair (its prompt messages, its answers).
ROW_SCHEMA = pa.schema(
    [
        ("row_index", pa.int64()),
        ("pair_id", pa.string()),
        ("origin_ids", pa.list_(pa.string())),
        ("match_key", pa.string()),
        ("task_key", pa.string()),
        ("prompt", _PROMPT),
        # chosen, rejected or the NLL completion (None entries skipped)
        ("answers", pa.list_(pa.string())),
    ]
)


@dataclass(frozen=True)
class Hit:
    set_name: str
    item_id: str
    row_index: int
    pair_id: str | None
    how: str  # the name of the matcher that found it (MATCHERS)
    score: float  # 100 for exact kinds; the rapidfuzz score of a near copy; the share held when reordered

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
    # needles a row held that are stock phrases of the store (not evidence): how many, and each one
    skipped_needles: int = 0
    skipped: list[dict] = field(default_factory=list)


# -- the run the matchers read ----------------------------------------------------------------------------


@dataclass
class GateRun:
    """What the matchers of one check read: the store, the candidate rows (a table or view `cand` of
    CANDIDATE_SCHEMA), the needles of the members, the streaming scan's findings and the chosen set."""

    store: Store
    cand: str
    set_name: str | None
    index: NeedleIndex
    scan: Scan


def _id_hits(run: GateRun) -> list[tuple]:
    """One of the row's origin ids is the member's item id (benchmark items have no ids in rows)."""
    with run.store.registered("_pm_members", run.index.members_table()):
        return run.store.con.execute(f"""
            SELECT DISTINCT m.set_name, m.item_id, c.row_index, c.pair_id
            FROM (SELECT row_index, pair_id, unnest(origin_ids) AS oid FROM {run.cand}) c
            JOIN _pm_members m ON m.item_id = c.oid AND m.kind <> 'benchmark'""").fetchall()


def _task_key_hits(run: GateRun) -> list[tuple]:
    """The row's task key is a member's: a generated task asked in other words."""
    with run.store.registered("_pm_members", run.index.members_table()):
        return run.store.con.execute(f"""
            SELECT DISTINCT m.set_name, m.item_id, c.row_index, c.pair_id
            FROM {run.cand} c JOIN _pm_members m ON m.task_key = c.task_key""").fetchall()


def _spared_key_hits(run: GateRun) -> list[tuple]:
    """A row the text matchers spare (a task the store generated) with a member's stored match key, or the
    key of a member's lone turn."""
    sql, params = members_sql(run.set_name)
    keyed = [(key, int(run.index.member[n])) for key, nids in run.index.turn_keys.items() for n in nids]
    members = pa.array([m for _, m in keyed], pa.int64())
    turns = pa.table(
        {
            "set_name": run.index.set_name.take(members),
            "item_id": run.index.item_id.take(members),
            "match_key": pa.array([k for k, _ in keyed], pa.string()),
        }
    )
    with run.store.registered("_pm_turn_keys", turns):
        return run.store.con.execute(
            f"""
            SELECT DISTINCT m.set_name, m.item_id, c.row_index, c.pair_id
            FROM {run.cand} c
            JOIN (SELECT set_name, item_id, match_key FROM ({sql})
                  UNION ALL SELECT set_name, item_id, match_key FROM _pm_turn_keys) m
              ON m.match_key = c.match_key
            WHERE {SPARED_SQL}""",
            params,
        ).fetchall()


def _benchmark_hits(run: GateRun) -> list[tuple]:
    """A word 13-gram of a registered benchmark item (the stage `audit decontam` runs, on the same words)."""
    return [
        (f"benchmark:{bench}", str(item_id), row_index, None)
        for row_index, bench, item_id in run.scan.benchmark
        if run.set_name is None or run.set_name == f"benchmark:{bench}"
    ]


@dataclass(frozen=True)
class Matcher:
    """One way a row holds a held-out member. `name` is the hit's `how`; `text` scores one (needle, row)
    pair the cheap stages propose (None: not held); `rows` reads the candidate rows at once and returns
    (set, item id, row index, pair id) of each hit."""

    name: str
    finds: str
    text: TextMatch | None = None
    rows: Callable[[GateRun], list[tuple]] | None = None


# The gate's matchers, strongest first: a (member, row) found by several keeps the first one's name.
MATCHERS: tuple[Matcher, ...] = (
    Matcher("id", "one of the row's origin ids is the member's item id", rows=_id_hits),
    Matcher(
        "match_key",
        "the row's user turns are the member's once disguise is normalized away (pairstore.normalize)",
        rows=_spared_key_hits,
        text=same_key,
    ),
    Matcher(
        "task_key", "the same canonical task key: a generated task asked in other words", rows=_task_key_hits
    ),
    Matcher(
        "whole_text", "the needle is a whole text of the row: a turn of any role, an answer", text=whole_text
    ),
    Matcher(
        "sentence",
        f"a needle of {SENTENCE_MIN_WORDS} to {EMBED_MIN_WORDS - 1} words is a whole sentence or line of "
        "a row text, greetings and thanks around it left out",
        text=whole_sentence,
    ),
    Matcher(
        "embedded",
        f"a needle of {EMBED_MIN_WORDS} words or more, word for word inside a row text",
        text=embedded,
    ),
    Matcher(
        "reordered",
        "more than half of the member's distinctive sentences (two or more), in any order",
        text=reordered,
    ),
    Matcher(
        "fuzzy",
        f"a near copy of a needle of {FUZZY_MIN_CHARS} characters or more: what it is about kept, "
        f"similarity {FUZZY_THRESHOLD:g} or more",
        text=near,
    ),
    Matcher("benchmark", "a word 13-gram of a registered benchmark item", rows=_benchmark_hits),
)
HOW_ORDER = tuple(m.name for m in MATCHERS)


def match_texts(needle: Needle, row: RowText, rarity: Rarity | None = None) -> tuple[str, float] | None:
    """How one row's texts hold one needle: the first text matcher of MATCHERS that finds it, and its
    score; None when none does."""
    if not needle.compact:
        return None
    for m in MATCHERS:
        if m.text is not None:
            score = m.text(needle, row, rarity)
            if score is not None:
                return m.name, score
    return None


# -- candidates ----------------------------------------------------------------


def candidate_table(rows: Iterable) -> pa.Table:
    """Rows (row_index, pair_id|None, origin_ids, prompt (str or messages), task_key|None[, answers]) -> an
    arrow table of ROW_SCHEMA (what members_in_rows reads); `answers`: the row's chosen, rejected or
    completion texts (None entries skipped).

    A prompt that is not a string or a list of messages raises BadInput naming the row."""
    cols: dict[str, list] = {name: [] for name in ROW_SCHEMA.names}
    for row in rows:
        row_index, pair_id, origin_ids, prompt, task_key = row[:5]
        msgs = canonical_messages(prompt, line=int(row_index))
        cols["row_index"].append(int(row_index))
        cols["pair_id"].append(pair_id)
        cols["origin_ids"].append([str(o) for o in (origin_ids or [])])
        cols["match_key"].append(match_key(msgs))
        cols["task_key"].append(task_key)
        cols["prompt"].append([{"role": m["role"], "content": m["content"]} for m in msgs])
        cols["answers"].append([a for a in (row[5] if len(row) > 5 else ()) if isinstance(a, str)])
    return pa.Table.from_pydict(cols, schema=ROW_SCHEMA)


def candidates_sql(rows: str) -> str:
    """The candidate rows (CANDIDATE_SCHEMA) of a relation of training rows (ROW_SCHEMA): the one place that
    says which texts of a row are read, and as what. User turns are matched as the prompt; every other text
    (system and assistant turns in order, then the answers) as an other turn. The gate (a mixture's pairs),
    `audit leaks` (a file's rows), the battle miner and `audit gate` all go through it (members_in_rows)."""
    return f"""
        SELECT r.row_index, r.pair_id, coalesce(r.origin_ids, []::VARCHAR[]) AS origin_ids, r.match_key,
               r.task_key,
               coalesce(list_transform(list_filter(r.prompt, lambda m: m.role = 'user'), lambda m: m.content),
                        []::VARCHAR[]) AS user_turns,
               list_concat(
                   coalesce(list_transform(list_filter(r.prompt, lambda m: m.role <> 'user'),
                                           lambda m: m.content), []::VARCHAR[]),
                   coalesce(list_filter(r.answers, lambda a: a IS NOT NULL), []::VARCHAR[])) AS other_turns
        FROM {rows} r"""


def members_in_rows(
    store: Store, rows: str | pa.Table, *, set_name: str | None = None, fuzzy: bool = True
) -> GateResult:
    """Which held-out members (every set, eval item and benchmark, or only `set_name`) are in these training
    rows: a table or view of the store's connection, or an arrow table, of ROW_SCHEMA. The export gate, the
    check before training, `audit leaks`, the battle miner and `audit gate` all call this, so what one
    finds in a row the others find too."""
    if not isinstance(rows, str):  # an arrow table
        missing = [n for n in ROW_SCHEMA.names if n not in rows.column_names]
        if missing:
            raise BadInput(f"row table lacks columns {', '.join(missing)}", field=missing[0])
        with store.registered("_pm_input", rows.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)):
            return members_in_rows(store, "_pm_input", set_name=set_name, fuzzy=fuzzy)
    store.con.execute(f"CREATE OR REPLACE TEMP VIEW _pm_cand AS {candidates_sql(rows)}")
    try:
        return check_table(store, "_pm_cand", set_name=set_name, fuzzy=fuzzy)
    finally:
        store.con.execute("DROP VIEW IF EXISTS _pm_cand")


# -- rarity ----------------------------------------------------------------------


def store_rarity(store: Store, words: set[str]) -> Rarity:
    """Rarity of `words` in a seeded sample of the store's prompts (battles, pairs, problems, eval items)."""
    con = store.con
    texts: list[str] = []
    for sql in (
        "SELECT array_to_string(list_transform(prompt, lambda m: m.content), chr(10)) FROM pairs",
        "SELECT array_to_string(list_transform(prompt, lambda m: m.content), chr(10)) FROM battles",
        "SELECT question FROM problems",
        "SELECT array_to_string(list_transform(prompt, lambda m: m.content), chr(10)) FROM eval_items",
    ):
        left = STORE_SAMPLE - len(texts)
        if left <= 0:
            break
        texts += [
            r[0]
            for r in con.execute(
                f"SELECT * FROM ({sql}) t(x) USING SAMPLE reservoir({left} ROWS) REPEATABLE (21)"
            ).fetchall()
            if r[0]
        ]
    return Rarity.of_texts(word_texts(texts), words)


def _cached_rarity(store: Store, words: set[str]) -> Rarity:
    """store_rarity of these words, kept on the store object until its tables change size."""
    stamp = tuple(
        store.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        for t in ("pairs", "battles", "problems", "eval_items")
    )
    cached = getattr(store, "_gate_rarity", None)
    if cached is not None and cached[0] == stamp and words <= cached[1]:
        return cached[2]
    rarity = store_rarity(store, words)
    store._gate_rarity = (stamp, words, rarity)  # type: ignore[attr-defined]
    return rarity


# -- the text stage: (row, needle) pairs the cheap stages propose ----------------------------------------


def _gram_pairs(store: Store, needle_grams: pa.Table, grams: pa.Table, n_rows: int) -> list[tuple]:
    """(row_index, nid) pairs that share enough of the needle's 3-grams (see SHINGLE_MIN_SHARE).

    A gram in COMMON_SHINGLE_SHARE of the rows (and at least five) is boilerplate: a needle with three rare
    grams or more counts only its rare ones. The per-needle counts are numpy over the needles' grams; only
    the grams some row holds go to DuckDB, joined with the rows' grams."""
    if grams.num_rows == 0 or needle_grams.num_rows == 0:
        return []
    row_index = grams["row_index"].to_numpy()
    row_gram = grams["ngram"].to_numpy()
    # distinct (row, gram), then how many rows hold each gram
    order = np.lexsort((row_gram, row_index))
    row_index, row_gram = row_index[order], row_gram[order]
    fresh = np.ones(len(row_index), dtype=bool)
    fresh[1:] = (row_index[1:] != row_index[:-1]) | (row_gram[1:] != row_gram[:-1])
    row_index, row_gram = row_index[fresh], row_gram[fresh]
    seen, rows_holding = np.unique(row_gram, return_counts=True)
    common = max(5, int(COMMON_SHINGLE_SHARE * n_rows + 0.999))
    nid = needle_grams["nid"].to_numpy()
    gram = needle_grams["ngram"].to_numpy()
    is_common = np.isin(gram, seen[rows_holding >= common])
    size = int(nid.max()) + 1
    n_all = np.bincount(nid, minlength=size)
    n_rare = np.bincount(nid[~is_common], minlength=size)
    n_used = np.where(n_rare >= 3, n_rare, n_all)
    used = ~is_common | (n_rare[nid] < 3)
    need = np.maximum(1, np.minimum(n_used, np.maximum(2, np.ceil(SHINGLE_MIN_SHARE * n_used)))).astype(
        np.int64
    )
    keep = used & np.isin(gram, seen)
    if not keep.any():
        return []
    held = pa.table(
        {"nid": pa.array(nid[keep]), "ngram": pa.array(gram[keep]), "need": pa.array(need[nid[keep]])}
    )
    rows = pa.table({"row_index": pa.array(row_index, pa.int64()), "ngram": pa.array(row_gram)})
    with store.registered("_pm_grams", rows), store.registered("_pm_ngrams", held):
        return store.con.execute("""
            SELECT g.row_index, n.nid FROM _pm_grams g JOIN _pm_ngrams n USING (ngram)
            GROUP BY g.row_index, n.nid HAVING count(*) >= any_value(n.need)
            ORDER BY 1, 2""").fetchall()


def _exact_pairs(index: NeedleIndex, exact: list) -> set[tuple[int, int]]:
    """(row_index, nid) of every needle whose loose hash a row text has (scan.exact)."""
    if not exact:
        return set()
    order = np.argsort(index.loose_hash, kind="stable")
    sorted_hashes = index.loose_hash[order]
    out: set[tuple[int, int]] = set()
    for row_index, h, _ in exact:
        lo, hi = (
            np.searchsorted(sorted_hashes, np.uint64(h), "left"),
            np.searchsorted(sorted_hashes, np.uint64(h), "right"),
        )
        out.update((int(row_index), int(nid)) for nid in order[lo:hi] if index.words[nid] > 0)
    return out


def _row_texts(store: Store, cand: str, row_indexes: set[int]) -> dict[int, RowText]:
    if not row_indexes:
        return {}
    ids = pa.table({"row_index": pa.array(sorted(row_indexes), pa.int64())})
    with store.registered("_pm_rows", ids):
        rows = store.con.execute(
            f"SELECT c.row_index, c.user_turns, c.other_turns FROM {cand} c "
            "SEMI JOIN _pm_rows USING (row_index)"
        ).fetchall()
    texts = RowText.of_rows([(list(users or []), list(others or [])) for _, users, others in rows])
    return {int(r[0]): t for r, t in zip(rows, texts)}


def _text_hits(run: GateRun, pairs: set[tuple[int, int]], result: GateResult) -> list[tuple]:
    """The text matchers of MATCHERS, strongest first, on each (row, needle) pair; stock needles skipped."""
    if not pairs:
        return []
    made = materialize(run.store, run.index, sorted({nid for _, nid in pairs}))
    result.skipped_needles = len(made.common)
    result.skipped = sorted(
        (
            {"set": n.set_name, "item_id": n.item_id, "text": n.text[:200], "answer": n.answer}
            for n in made.common.values()
        ),
        key=lambda x: (x["set"], x["item_id"], x["text"]),
    )
    texts = _row_texts(run.store, run.cand, {r for r, nid in pairs if nid in made.needles})
    fuzzy_words = needle_words(made.needles.values())
    rarity = _cached_rarity(run.store, fuzzy_words) if fuzzy_words else None
    found = []
    for row_index, nid in sorted(pairs):
        needle = made.needles.get(nid)
        if needle is None:
            continue
        scored = match_texts(needle, texts[row_index], rarity)
        if scored is not None:
            found.append((needle.set_name, needle.item_id, row_index, None, *scored))
    return found


def check_table(
    store: Store, cand: str, *, set_name: str | None = None, fuzzy: bool = True, benchmarks: bool = True
) -> GateResult:
    """Hits for candidates held in a table or view `cand` of the store's connection (CANDIDATE_SCHEMA):
    every matcher of MATCHERS, in order.

    The export builds it in SQL (millions of rows never become Python objects); find_holdout_hits
    registers an arrow table."""
    result = GateResult()
    con = store.con
    index = needle_index(store, set_name)
    result.members = dict(index.counts)
    result.candidates = con.execute(f"SELECT count(*) FROM {cand}").fetchall()[0][0]
    has_words = index.words > 0
    lengths = set(np.unique(index.loose_len[has_words]).tolist())
    grams = index.grams if fuzzy else None
    vocab3 = (
        None
        if grams is None or index.vocabulary is None  # (needle_index sets the two together)
        else (index.vocabulary, np.unique(grams["ngram"].to_numpy()))
    )
    bench = None
    if benchmarks and (set_name is None or set_name.startswith("benchmark:")):
        bench_vocab = registered_vocabulary(store, DEFAULT_N)
        if bench_vocab is not None:
            bench = (bench_vocab, DEFAULT_N, lambda rows, g: lookup_ngrams(store, rows, g, DEFAULT_N))
    # A whole system, assistant or answer text equal to a needle: needles of SENTENCE_MIN_WORDS words or
    # more are found through their 3-grams, so the exact stage reads only texts short enough to be one of
    # the shorter needles (padding of up to three bytes per character and 64 more allowed).
    short = index.loose_len[has_words & (index.words < SENTENCE_MIN_WORDS)]
    other_max = (4 * int(short.max()) + 64 if len(short) else 0) if grams is not None else None
    scan = scan_candidates(
        store, cand, f"NOT {SPARED_SQL}", index.loose_hash[has_words], vocab3, bench, lengths, other_max
    )
    run = GateRun(store, cand, set_name, index, scan)
    gram_pairs = _gram_pairs(store, grams, scan.gram_table(), scan.rows) if grams is not None else []
    result.fuzzy_pairs_scored = len(gram_pairs)
    pairs = {(int(r), int(n)) for r, n in gram_pairs} | _exact_pairs(index, scan.exact)
    found: list[tuple] = []
    for m in MATCHERS:
        if m.rows is not None:
            found += [(*hit, m.name, 100.0) for hit in m.rows(run)]
    found += _text_hits(run, pairs, result)
    wanted = sorted({r for _, _, r, _, _, _ in found})
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
    hits = [
        Hit(s, i, int(r), p if p is not None else pair_of.get(r), how, score)
        for s, i, r, p, how, score in found
    ]
    result.hits = _dedupe(hits)
    if result.skipped_needles:
        result.notes.append(
            f"{result.skipped_needles} needle(s) skipped as stock phrases of the store (an answer, turn or "
            "sentence several distinct prompts of its other items hold): not evidence of a leak"
        )
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
    return members_in_rows(store, candidates, set_name=set_name).hits


def check_candidates(store: Store, candidates: pa.Table, *, set_name: str | None = None) -> GateResult:
    """find_holdout_hits with the counts and notes the export evidence reports."""
    return members_in_rows(store, candidates, set_name=set_name)


def needles_of_text(
    set_name: str, item_id: str, kind: str, turns: list[str], task_key: str | None = None
) -> list[Needle]:
    """The needles of a member given as raw user turns (no answers): the tuning script's members."""
    from pairstore.holdout.needles import Member, needles_of_members

    return [n for _, n in needles_of_members([Member(set_name, item_id, kind, task_key, turns, None, [])])[0]]
