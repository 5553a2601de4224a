"""Holdout matching: which candidate rows are held-out items in disguise.

Shared by the export gate (pairstore/export.py) and the leak audit (audits/):

    from pairstore.matching import candidate_table, find_holdout_hits
    cands = candidate_table([(0, "p1", ["b17"], [{"role": "user", "content": "Hi"}], None)])
    for hit in find_holdout_hits(store, cands, set_name="judge34"):
        print(hit.set_name, hit.item_id, hit.row_index, hit.pair_id, hit.how, hit.score)

Members checked: the active rows of `holdout` (one set, or all sets), the
prompts of `eval_items` (set name "eval:<suite>") and registered benchmark
references (set name "benchmark:<name>"). With `set_name` given, only that
set is checked ("eval:<suite>" and "benchmark:<name>" name those).

How a row matches a member, strongest first (one hit per member and row):

1. ``id`` — one of the row's origin ids is the member's item id (a pair mined
   from held-out battle b17 has origin id b17).
2. ``match_key`` — same normalized user turns (keys.match_key): catches CRLF,
   trailing spaces, tabs, case, another Unicode form, a system prompt in front.
3. ``task_key`` — same canonical task key: a generated task asked again in
   other words. Rows and members with a task key are never fuzzy-matched:
   templated prompts of different tasks ("count the r's in strawberry" vs
   "count the e's in raspberry") differ by a word or two and are not leaks.
4. ``fuzzy`` — both normalized texts at least FUZZY_MIN_CHARS long, every
   number of the member also in the row (the same question with other numbers
   is another question), and the rapidfuzz score at least FUZZY_THRESHOLD (see
   fuzzy_score). Below that length a changed word is a different question, not
   a paraphrase.
5. ``benchmark`` — 13-gram overlap with a registered benchmark item
   (pairstore.ngrams.benchmark_hits), plus exact match keys of benchmark items.

The fuzzy step scales to millions of rows: a prefilter in DuckDB keeps only
(row, member) pairs that share at least SHINGLE_MIN_SHARE of the member's word
3-gram shingles (a near copy keeps most of them: an added sentence keeps all,
each changed word removes at most three); rapidfuzz scores only those.
Boilerplate shingles (common among the rows: "please answer the", "step by
step") are left out of the count, so a template shared by many prompts does
not pair every member with every row.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
from rapidfuzz import fuzz

from pairstore.errors import BadInput
from pairstore.keys import canonical_messages, match_key, match_text
from pairstore.ngrams import benchmark_hits

# Normalized user-turn text shorter than this is never fuzzy-matched (exact keys still apply).
FUZZY_MIN_CHARS = 64
# rapidfuzz score (0..100) at or above which a long prompt is a near copy of a member.
# Three words changed in a 250-character prompt score about 93; a sentence added scores 100
# (partial alignment); two different questions that share a topic score well under 80.
FUZZY_THRESHOLD = 88.0
# Prefilter: word 3-gram shingles; a pair is scored only if the row holds at least this share
# of the member's shingles (and at least two of them).
SHINGLE_WORDS = 3
SHINGLE_MIN_SHARE = 0.3
# Shingles found in at least this share of a sample of COMMON_SAMPLE rows are boilerplate, not evidence.
COMMON_SHINGLE_SHARE = 0.002
COMMON_SAMPLE = 5_000

HOW_ORDER = ("id", "match_key", "task_key", "fuzzy", "benchmark")

CANDIDATE_SCHEMA = pa.schema([
    ("row_index", pa.int64()),
    ("pair_id", pa.string()),
    ("origin_ids", pa.list_(pa.string())),
    ("match_key", pa.string()),
    ("match_text", pa.string()),
    ("task_key", pa.string()),
])

MEMBER_SCHEMA = pa.schema([
    ("set_name", pa.string()),
    ("item_id", pa.string()),
    ("member_kind", pa.string()),   # holdout | eval | benchmark
    ("match_key", pa.string()),
    ("match_text", pa.string()),
    ("task_key", pa.string()),
])


@dataclass(frozen=True)
class Hit:
    set_name: str
    item_id: str
    row_index: int
    pair_id: str | None
    how: str          # id | match_key | task_key | fuzzy | benchmark
    score: float      # 100 for exact kinds; the rapidfuzz score for fuzzy; n-gram hits for benchmark

    def as_dict(self) -> dict:
        return {"set": self.set_name, "item_id": self.item_id, "row_index": self.row_index,
                "pair_id": self.pair_id, "how": self.how, "score": self.score}


@dataclass
class GateResult:
    hits: list[Hit] = field(default_factory=list)
    members: dict = field(default_factory=dict)      # member kind -> count checked
    candidates: int = 0
    fuzzy_pairs_scored: int = 0
    notes: list[str] = field(default_factory=list)


# -- candidates ----------------------------------------------------------------

def candidate_table(rows: Iterable) -> pa.Table:
    """Rows (row_index, pair_id|None, origin_ids, prompt (str or messages), task_key|None) -> arrow table.

    Computes the match key and match text (normalized user turns) of each prompt.
    A prompt that is not a string or a list of messages raises BadInput naming the row.
    """
    cols: dict[str, list] = {name: [] for name in CANDIDATE_SCHEMA.names}
    for row_index, pair_id, origin_ids, prompt, task_key in rows:
        msgs = canonical_messages(prompt, line=int(row_index))
        cols["row_index"].append(int(row_index))
        cols["pair_id"].append(pair_id)
        cols["origin_ids"].append([str(o) for o in (origin_ids or [])])
        cols["match_key"].append(match_key(msgs))
        cols["match_text"].append(match_text(msgs))
        cols["task_key"].append(task_key)
    return pa.Table.from_pydict(cols, schema=CANDIDATE_SCHEMA)


# -- members -------------------------------------------------------------------

def member_table(store, set_name: str | None = None) -> pa.Table:
    """Every member to check: active holdout rows, eval items, benchmark references."""
    con = store.con
    cols: dict[str, list] = {name: [] for name in MEMBER_SCHEMA.names}

    def add(set_, item, kind, key, text, task):
        cols["set_name"].append(set_)
        cols["item_id"].append(item)
        cols["member_kind"].append(kind)
        cols["match_key"].append(key)
        cols["match_text"].append(text)
        cols["task_key"].append(task)

    want_holdout = set_name is None or not set_name.startswith(("eval:", "benchmark:"))
    want_eval = set_name is None or set_name.startswith("eval:")
    want_bench = set_name is None or set_name.startswith("benchmark:")
    if want_holdout:
        q = "SELECT set_name, item_id, match_key, match_text, task_key FROM holdout WHERE removed_at IS NULL"
        params = []
        if set_name is not None:
            q += " AND set_name = ?"
            params.append(set_name)
        for s, i, k, t, tk in con.execute(q + " ORDER BY set_name, item_id", params).fetchall():
            add(s, i, "holdout", k, t, tk)
    if want_eval:
        q = "SELECT suite, item_id, prompt, match_key, task_key FROM eval_items"
        params = []
        if set_name is not None:
            q += " WHERE suite = ?"
            params.append(set_name[len("eval:"):])
        for suite, item, prompt, key, tk in con.execute(q + " ORDER BY suite, item_id", params).fetchall():
            add(f"eval:{suite}", item, "eval", key, match_text(prompt), tk)
    if want_bench:
        q = "SELECT benchmark, item_id, match_key FROM benchmark_refs"
        params = []
        if set_name is not None:
            q += " WHERE benchmark = ?"
            params.append(set_name[len("benchmark:"):])
        for bench, item, key in con.execute(q + " ORDER BY benchmark, item_id", params).fetchall():
            # Benchmark text is matched by 13-grams (ngrams.py), not fuzzily here.
            add(f"benchmark:{bench}", item, "benchmark", key, None, None)
    return pa.Table.from_pydict(cols, schema=MEMBER_SCHEMA)


# -- scoring -------------------------------------------------------------------

def fuzzy_score(member_text: str, row_text: str) -> float:
    """rapidfuzz similarity of two normalized texts, 0..100.

    `ratio` (normalized Indel similarity) catches a few words changed. When the row is
    longer than the member, `partial_ratio` (the member against the best-aligned window of
    the row) catches the member with a sentence added or embedded in a longer text.
    """

    # The same question with other numbers ("63 times 31" vs "64 times 30") is another question:
    # a near copy keeps every number of the member (a sentence added or words changed keep them).
    if not _numbers(member_text) <= _numbers(row_text):
        return 0.0
    score = fuzz.ratio(member_text, row_text)
    if len(row_text) > len(member_text):
        score = max(score, fuzz.partial_ratio(member_text, row_text))
    return float(score)


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _numbers(text: str) -> Counter:
    return Counter(_NUMBER.findall(text))


_WORD_PUNCT = '.,;:!?"()[]{}*`'


def _words_sql(text_col: str) -> str:
    """SQL list of the words of a normalized text: split at spaces and turn breaks, common punctuation
    dropped. Nested replace(), no regex or translate (both several times slower over every row)."""
    expr = f"replace({text_col}, chr(30), ' ')"
    for ch in _WORD_PUNCT:
        expr = f"replace({expr}, '{ch}', '')"
    return f"string_split({expr}, ' ')"


# Word 3-gram hashes of a `words` list column (the same expression for rows and members).
_SHINGLES_SQL = "list_transform(range(1, len(words) - 1), lambda i: hash(words[i], words[i + 1], words[i + 2]))"


def _fuzzy_hits(store, cand: str, members: str) -> tuple[list[Hit], int]:
    con = store.con
    eligible = (f"task_key IS NULL AND match_text IS NOT NULL AND length(match_text) >= {FUZZY_MIN_CHARS}")
    n_rows = con.execute(f"SELECT count(*) FROM {cand} WHERE {eligible}").fetchall()[0][0]
    # Shingles common among the rows ("please answer the", "step by step") say nothing about a
    # member and would pair it with most rows: drop those seen in COMMON_SHINGLE_SHARE of a
    # deterministic sample of about COMMON_SAMPLE rows.
    step = max(1, n_rows // COMMON_SAMPLE)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _pm_common AS
        WITH w AS (SELECT {_words_sql('match_text')} AS words
                   FROM {cand} WHERE {eligible} AND row_index % {step} = 0),
        s AS (SELECT unnest({_SHINGLES_SQL}) AS h FROM w)
        SELECT h FROM s GROUP BY h
        HAVING count(*) >= greatest(5, ceil({COMMON_SHINGLE_SHARE} * (SELECT count(*) FROM w)))""")
    # Members' shingles (the rare ones, unless a member has fewer than three), with how many a row must share.
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _pm_member_sh AS
        WITH m AS (
            SELECT DISTINCT mid, set_name, item_id, match_text, unnest({_SHINGLES_SQL}) AS h
            FROM (SELECT row_number() OVER (ORDER BY set_name, item_id) AS mid, set_name, item_id, match_text,
                         {_words_sql('match_text')} AS words
                  FROM {members}
                  WHERE member_kind <> 'benchmark' AND {eligible})),
        f AS (SELECT m.*, c.h IS NOT NULL AS common,
                     count(*) FILTER (c.h IS NULL) OVER (PARTITION BY mid) AS n_rare,
                     count(*) OVER (PARTITION BY mid) AS n_all
              FROM m LEFT JOIN _pm_common c USING (h))
        SELECT mid, set_name, item_id, match_text, h,
               greatest(1, least(n_used, greatest(2, ceil({SHINGLE_MIN_SHARE} * n_used)::BIGINT))) AS need
        FROM (SELECT *, CASE WHEN n_rare >= 3 THEN n_rare ELSE n_all END AS n_used FROM f)
        WHERE NOT common OR n_rare < 3""")
    con.execute("DROP TABLE IF EXISTS _pm_common")
    if not con.execute("SELECT count(*) FROM _pm_member_sh").fetchall()[0][0]:
        con.execute("DROP TABLE IF EXISTS _pm_member_sh")
        return [], 0
    pairs = con.execute(f"""
        WITH w AS (SELECT row_index, {_words_sql('match_text')} AS words FROM {cand} WHERE {eligible}),
        c AS (SELECT row_index, unnest({_SHINGLES_SQL}) AS h FROM w),
        shared AS (
            SELECT c.row_index, m.mid, count(*) AS n, any_value(m.need) AS need
            FROM c JOIN _pm_member_sh m USING (h)
            GROUP BY c.row_index, m.mid)
        SELECT s.row_index, c2.pair_id, c2.match_text, m.set_name, m.item_id, m.match_text
        FROM shared s
        JOIN (SELECT DISTINCT mid, set_name, item_id, match_text FROM _pm_member_sh) m USING (mid)
        JOIN {cand} c2 ON c2.row_index = s.row_index
        WHERE s.n >= s.need
        ORDER BY s.row_index, m.set_name, m.item_id""").fetchall()
    con.execute("DROP TABLE IF EXISTS _pm_member_sh")
    hits = []
    for row_index, pair_id, row_text, set_name, item_id, member_text in pairs:
        score = fuzzy_score(member_text, row_text)
        if score >= FUZZY_THRESHOLD:
            hits.append(Hit(set_name, item_id, int(row_index), pair_id, "fuzzy", round(score, 2)))
    return hits, len(pairs)


def _exact_hits(store, cand: str, members: str) -> list[Hit]:
    rows = store.con.execute(f"""
        SELECT m.set_name, m.item_id, c.row_index, c.pair_id, 'id' AS how
        FROM (SELECT row_index, pair_id, unnest(origin_ids) AS oid FROM {cand}) c
        JOIN {members} m ON m.item_id = c.oid AND m.member_kind <> 'benchmark'
        UNION ALL
        SELECT m.set_name, m.item_id, c.row_index, c.pair_id, 'match_key'
        FROM {cand} c JOIN {members} m ON m.match_key = c.match_key
        UNION ALL
        SELECT m.set_name, m.item_id, c.row_index, c.pair_id, 'task_key'
        FROM {cand} c JOIN {members} m ON m.task_key = c.task_key
        """).fetchall()
    return [Hit(s, i, int(r), p, how, 100.0) for s, i, r, p, how in rows]


def _benchmark_hits(store, cand: str, notes: list[str]) -> list[Hit]:
    if not store.con.execute("SELECT count(*) FROM benchmark_ngrams").fetchall()[0][0]:
        return []
    texts = store.con.sql(f"""
        SELECT row_index, replace(match_text, chr(30), chr(10)) AS text FROM {cand}
        WHERE match_text IS NOT NULL ORDER BY row_index""").to_arrow_table()
    pair_of = dict(store.con.execute(f"SELECT row_index, pair_id FROM {cand}").fetchall())
    out = []
    for row_index, bench, item_id in benchmark_hits(store, texts, n=13):
        out.append(Hit(f"benchmark:{bench}", str(item_id), int(row_index), pair_of.get(int(row_index)),
                       "benchmark", 100.0))
    return out


def _dedupe(hits: list[Hit]) -> list[Hit]:
    """One hit per (set, member, row): the strongest kind of match."""
    best: dict[tuple, Hit] = {}
    for h in hits:
        k = (h.set_name, h.item_id, h.row_index)
        cur = best.get(k)
        if cur is None or HOW_ORDER.index(h.how) < HOW_ORDER.index(cur.how):
            best[k] = h
    return sorted(best.values(), key=lambda h: (h.row_index, h.set_name, h.item_id))


def check_table(store, cand: str, *, set_name: str | None = None, fuzzy: bool = True,
                benchmarks: bool = True) -> GateResult:
    """Hits for candidates held in a table or view `cand` of the store's connection.

    `cand` has the columns of CANDIDATE_SCHEMA. The export builds it in SQL (millions of rows
    never become Python objects); find_holdout_hits registers an arrow table.
    """
    result = GateResult()
    members = member_table(store, set_name)
    kinds = members.column("member_kind").to_pylist()
    result.members = {k: kinds.count(k) for k in ("holdout", "eval", "benchmark")}
    result.candidates = store.con.execute(f"SELECT count(*) FROM {cand}").fetchall()[0][0]
    if members.num_rows == 0 and not benchmarks:
        return result
    store.con.register("_pm_members", members)
    try:
        hits = _exact_hits(store, cand, "_pm_members")
        if fuzzy:
            fuzzy_hits, scored = _fuzzy_hits(store, cand, "_pm_members")
            hits += fuzzy_hits
            result.fuzzy_pairs_scored = scored
    finally:
        store.con.unregister("_pm_members")
    if benchmarks and (set_name is None or set_name.startswith("benchmark:")):
        bench_hits = _benchmark_hits(store, cand, result.notes)
        if set_name is not None:
            bench_hits = [h for h in bench_hits if h.set_name == set_name]
        hits += bench_hits
    result.hits = _dedupe(hits)
    return result


def find_holdout_hits(store, candidates: pa.Table, *, set_name: str | None = None) -> list[Hit]:
    """Every (member, row) hit of `candidates` (see candidate_table), strongest kind of match first."""
    return check_candidates(store, candidates, set_name=set_name).hits


def check_candidates(store, candidates: pa.Table, *, set_name: str | None = None) -> GateResult:
    """find_holdout_hits with the counts and notes (a skipped check) the export evidence reports."""
    missing = [n for n in CANDIDATE_SCHEMA.names if n not in candidates.column_names]
    if missing:
        raise BadInput(f"candidate table lacks columns {', '.join(missing)}", field=missing[0])
    store.con.register("_pm_cand", candidates.select(CANDIDATE_SCHEMA.names).cast(CANDIDATE_SCHEMA))
    try:
        return check_table(store, "_pm_cand", set_name=set_name)
    finally:
        store.con.unregister("_pm_cand")
