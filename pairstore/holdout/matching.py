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
only that set is checked. Each member is looked for as one or two *needles*: its normalized user turns
(pairstore.normalize.word_text, turns joined), and for a multi-turn member its first turn alone when
that has EMBED_MIN_WORDS words or more.

How a row matches a needle, strongest first (one hit per member and row):

1. ``id`` — one of the row's origin ids is the member's item id.
2. ``match_key`` — the row's user turns have the needle's match key: the same words once invisible
   characters, look-alike letters, case, Unicode form, punctuation, spacing and a split over several
   user turns are taken away (pairstore.normalize).
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
from pairstore.holdout.scan import GRAM_WORDS, loose_hash, loose_length, scan_candidates
from pairstore.keys import canonical_messages, match_key, match_text, xxh128
from pairstore.normalize import TURN_SEP, compact_text, sentences, word_text

if TYPE_CHECKING:
    from pairstore.store.store import Store

# A member's normalized text shorter than this is never fuzzy-matched (exact and
# embedded matches still apply).
FUZZY_MIN_CHARS = 64
# rapidfuzz score (0..100) at or above which a long prompt is a near copy of a member, once the
# distinctive-token rule (near_copy) holds. Chosen on the `tune` split of tests/fixtures/gate/
# near_duplicates.jsonl (scripts/tune_gate.py; docs/design.md, "The holdout gate").
FUZZY_THRESHOLD = 70.0
# A cut tail: the row keeps at least this share of the member's words, and every distinctive token the
# row misses lies in the member's last CUT_TAIL_SLACK words past the row's length.
CUT_TAIL_MIN_SHARE = 0.6
CUT_TAIL_SLACK = 3
# A word found in at least this share of the store's texts (STORE_SAMPLE of them, seeded) is common: it
# does not say what a question is about. Function words (STOPWORDS) are common in any store.
COMMON_SHARE = 0.02
STORE_SAMPLE = 5_000
RARITY_MIN_TEXTS = 200  # fewer texts than this in the store: only STOPWORDS are common
# A needle of at least this many words is also found inside longer text; shorter ones only as a whole
# turn, answer or sentence ("tell me a joke" inside "tell me a joke about cats" is another request).
EMBED_MIN_WORDS = 5
# A needle of at least this many words is found as a whole sentence or line of a row text ("Hi! Tell
# me a joke. Thanks!"); shorter ones only as a whole turn or answer.
SENTENCE_MIN_WORDS = 3
# A member's answer (a battle's sides, an eval item's reference, a problem's solution) is looked for
# when it has at least this many words: a short answer ("Paris.", "42") is any question's answer.
ANSWER_MIN_WORDS = 8
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
    answer: bool = False  # one of the member's answers, not its prompt

    @property
    def words(self) -> int:
        return len(tokens(self.text))

    @property
    def embeddable(self) -> bool:
        # Benchmark items of 13 words or more are found inside longer text by their 13-grams.
        return self.words >= EMBED_MIN_WORDS and not (self.kind == "benchmark" and self.words >= DEFAULT_N)

    @property
    def sentence(self) -> bool:
        return SENTENCE_MIN_WORDS <= self.words < EMBED_MIN_WORDS

    @property
    def fuzzy(self) -> bool:
        return (
            self.kind != "benchmark" and self.task_key is None and text_length(self.text) >= FUZZY_MIN_CHARS
        )


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
    if isinstance(rows, pa.Table):
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


# -- members -------------------------------------------------------------------


def _needles_of(
    set_name: str, item_id: str, kind: str, turns: list[str], task_key: str | None, answers=()
) -> list[Needle]:
    """The needles of one member from its normalized user turns (always one: an empty text still matches
    by origin id and task key), and from each of its answers (raw texts) of ANSWER_MIN_WORDS words or more."""
    joined = " ".join(" ".join(turns).split())
    out = [Needle(set_name, item_id, kind, joined, compact_text(joined), task_key)]
    if len(turns) > 1:
        for turn in turns:
            if len(turn.split()) >= EMBED_MIN_WORDS:
                out.append(Needle(set_name, item_id, kind, turn, compact_text(turn), task_key))
    seen = {joined}
    for a in answers or ():
        text = word_text(a) if isinstance(a, str) else ""
        if len(text.split()) >= ANSWER_MIN_WORDS and text not in seen:
            seen.add(text)
            out.append(Needle(set_name, item_id, kind, text, compact_text(text), None, answer=True))
    return out


# A holdout member's answers, as stored with the item it names: both sides of a battle, a problem's
# solution, a task's chosen answer, an eval item's reference answer.
MEMBER_ANSWERS_SQL = """(CASE h.item_kind
    WHEN 'battle' THEN (SELECT list_concat(b.own_answers, b.opponent_answers) FROM battles b
                        WHERE b.battle_id = h.item_id)
    WHEN 'problem' THEN (SELECT [p.solution] FROM problems p WHERE p.problem_id = h.item_id)
    WHEN 'eval_item' THEN (SELECT list(e.gold) FROM eval_items e WHERE e.item_id = h.item_id)
    ELSE []::VARCHAR[] END)"""


def member_needles(store: Store, set_name: str | None = None) -> tuple[list[Needle], dict]:
    """Every needle to look for, and the number of members of each kind."""
    con = store.con
    needles: list[Needle] = []
    counts = {"holdout": 0, "eval": 0, "benchmark": 0}
    want_holdout = set_name is None or not set_name.startswith(("eval:", "benchmark:"))
    if want_holdout:
        rows = con.execute(
            f"SELECT h.set_name, h.item_id, h.match_text, h.task_key, {MEMBER_ANSWERS_SQL} AS answers "
            "FROM holdout h WHERE h.removed_at IS NULL "
            "AND (? IS NULL OR h.set_name = ?) ORDER BY h.set_name, h.item_id",
            [set_name, set_name],
        ).fetchall()
        for s, i, text, tk, answers in rows:
            counts["holdout"] += 1
            # Re-normalized here: a member added by hand, or by an older version, matches the same way.
            needles += _needles_of(
                s, i, "holdout", [word_text(t) for t in (text or "").split(TURN_SEP)], tk, answers
            )
    if set_name is None or set_name.startswith("eval:"):
        suite = None if set_name is None else set_name[len("eval:") :]
        rows = con.execute(
            "SELECT suite, item_id, prompt, task_key, gold FROM eval_items WHERE (? IS NULL OR suite = ?) "
            "ORDER BY suite, item_id",
            [suite, suite],
        ).fetchall()
        for s, i, prompt, tk, gold in rows:
            counts["eval"] += 1
            needles += _needles_of(
                f"eval:{s}", i, "eval", match_text([dict(m) for m in prompt]).split(TURN_SEP), tk, [gold]
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

# Function words of the languages the store sees most: they never say what a question is about.
STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as into onto about over under than then so
    is are was were be been being am do does did have has had having will would shall should can could may
    might must it its this that these those there here what which who whom whose when where why how i you
    he she we they me him her us them my your his our their mine yours not no yes also just very too all
    any some each every much many more most other such own same only both either neither please thanks
    thank hi hello hey dear s t d ll re ve m y o
    и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было
    вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас
    нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их
    чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой
    совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда зачем всех никогда можно при
    наконец два об другой хоть после над больше тот через эти нас про всего них какая много разве три
    эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им более всегда конечно
    всю между
    el la los las un una unos unas y o de del al en con por para que es son se lo le su sus como más
    der die das ein eine einen und oder zu im ist sind mit von für auf den dem des nicht
    le la les un une des et ou de du au en avec pour que est sont ce qui dans sur par pas""".split()
)


@dataclass
class Rarity:
    """How many of `n` sampled store texts hold each word: a word in COMMON_SHARE of them is common."""

    df: dict[str, int] = field(default_factory=dict)
    n: int = 0

    def common(self, token: str) -> bool:
        if token in STOPWORDS:
            return True
        return self.n >= RARITY_MIN_TEXTS and self.df.get(token, 0) >= COMMON_SHARE * self.n

    @classmethod
    def of_texts(cls, texts: Iterable[str], vocabulary: set[str] | None = None) -> Rarity:
        """Document frequencies of the tokens of normalized texts (only `vocabulary`'s, when given)."""
        df: Counter = Counter()
        n = 0
        for t in texts:
            n += 1
            toks = set(tokens(t))
            df.update(toks if vocabulary is None else toks & vocabulary)
        return cls(dict(df), n)


def _unspaced(ch: str) -> bool:
    """A character of a script written without spaces (CJK, kana, Hangul syllables are spaced; Thai, Lao,
    Khmer, Myanmar): each is a token of its own."""
    cp = ord(ch)
    return (
        0x2E80 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF or 0x0E00 <= cp <= 0x109F or 0x1780 <= cp <= 0x17FF
    )


def tokens(text: str) -> list[str]:
    """The words of a normalized text; a run of a script written without spaces, one token per character."""
    out = []
    for w in text.replace(TURN_SEP, " ").split():
        if not w.isascii() and any(_unspaced(c) for c in w):
            buf = ""
            for c in w:
                if _unspaced(c):
                    if buf:
                        out.append(buf)
                        buf = ""
                    out.append(c)
                else:
                    buf += c
            if buf:
                out.append(buf)
        else:
            out.append(w)
    return out


def text_length(text: str) -> int:
    """Characters, a character of a script written without spaces counting two (it carries a word's worth)."""
    return len(text) + sum(1 for c in text if not c.isascii() and _unspaced(c))


def _is_number(token: str) -> bool:
    return any(c.isdigit() for c in token)


def _number_parts(toks: Iterable[str]) -> Counter:
    """The numbers of a text as a multiset of digit runs: 13.00 and 13:00 (13 00) compare equal, 3 3 is
    not 13."""
    out: Counter = Counter()
    for t in toks:
        if _is_number(t):
            out.update(p for p in re.split(r"[^0-9]+", t) if p)
    return out


def distinctive(toks: Iterable[str], rarity: Rarity) -> set[str]:
    """What a question is about: its words that are not common in the store (numbers: _number_parts)."""
    return {t for t in toks if not _is_number(t) and (len(t) > 1 or _unspaced(t)) and not rarity.common(t)}


def similarity(member_text: str, row_text: str) -> float:
    """rapidfuzz similarity of two normalized texts, 0..100: `ratio` (normalized Indel similarity) for a few
    words changed; when the row is longer, `partial_ratio` (the member against the best-aligned window of
    the row) for the member with a sentence added."""
    score = fuzz.ratio(member_text, row_text)
    if len(row_text) > len(member_text):
        score = max(score, fuzz.partial_ratio(member_text, row_text))
    return float(score)


def near_copy(member_text: str, row_text: str, rarity: Rarity | None = None) -> float:
    """The fuzzy score of a row text against a member: its similarity when the distinctive-token rule holds,
    else 0.

    The rule: every distinctive token of the member (numbers, rare content words; `distinctive`) is in
    the row, or the row is the member with its tail cut (the row's own distinctive tokens are all the
    member's, it keeps CUT_TAIL_MIN_SHARE of its words, and what it misses is the member's tail). So
    function words changed, numbers written another way (normalized away before) or a cut tail still
    match, and the same template with another number or another content word does not."""
    rarity = rarity or Rarity()
    a, b = tokens(member_text), tokens(row_text)
    missing = distinctive(a, rarity) - set(b)
    numbers_a, numbers_b = _number_parts(a), _number_parts(b)
    missing_numbers = numbers_a - numbers_b
    if missing or missing_numbers:
        first_missing = min(
            (
                i
                for i, t in enumerate(a)
                if t in missing or (_is_number(t) and _number_parts([t]) - numbers_b)
            ),
            default=len(a),
        )
        cut_tail = (
            len(b) < len(a)
            and len(b) >= CUT_TAIL_MIN_SHARE * len(a)
            and distinctive(b, rarity) <= set(a)
            and not (numbers_b - numbers_a)
            and first_missing >= len(b) - CUT_TAIL_SLACK
        )
        if not cut_tail:
            return 0.0
    return similarity(member_text, row_text)


def fuzzy_score(member_text: str, row_text: str, rarity: Rarity | None = None) -> float:
    """near_copy with the function words of STOPWORDS as the only common words (no store at hand)."""
    return near_copy(member_text, row_text, rarity)


def embedded_in(needle_text: str, row_text: str) -> bool:
    """The needle's words appear in the row's words, consecutively and whole."""
    return f" {needle_text} " in f" {row_text} "


@dataclass
class RowText:
    """Every text of one candidate row, normalized."""

    user: str  # the match text of the user turns (TURN_SEP between turns)
    others: list  # word_text of each system and assistant turn and each answer
    hay: str  # every text's words, joined by spaces
    sentences: set = field(default_factory=set)  # the word text of every sentence and line of every text
    texts: list = field(default_factory=list)  # word_text of each text (user turns, then the others)

    @classmethod
    def of(cls, users: list[str], others: list[str]) -> RowText:
        user = TURN_SEP.join(word_text(t) for t in users or [])
        other = [word_text(t) for t in others or []]
        sents = {x for t in [*(users or []), *(others or [])] for x in sentences(t)}
        return cls(
            user,
            other,
            " ".join(" ".join([user.replace(TURN_SEP, " "), *other]).split()),
            sents,
            [*user.split(TURN_SEP), *other] if user else other,
        )


def _row_texts(store: Store, cand: str, row_indexes: set[int]) -> dict[int, RowText]:
    if not row_indexes:
        return {}
    ids = pa.table({"row_index": pa.array(sorted(row_indexes), pa.int64())})
    with store.registered("_pm_rows", ids):
        rows = store.con.execute(
            f"SELECT c.row_index, c.user_turns, c.other_turns FROM {cand} c "
            "SEMI JOIN _pm_rows USING (row_index)"
        ).fetchall()
    return {int(r): RowText.of(users, others) for r, users, others in rows}


def match_texts(needle: Needle, row: RowText, rarity: Rarity | None = None) -> tuple[str, float] | None:
    """How one row's texts hold one needle, by the text stages (the strongest kind first), or None:
    its match key (`match_key`), a whole text, sentence or line (`embedded`; sentences for needles of
    SENTENCE_MIN_WORDS words or more), its words inside a text (`embedded`, EMBED_MIN_WORDS or more),
    a near copy (`fuzzy`, near_copy at FUZZY_THRESHOLD or more)."""
    if not needle.compact:
        return None
    if not needle.answer and compact_text(row.user) == needle.compact:
        return "match_key", 100.0
    if needle.compact in {compact_text(t) for t in row.texts if t}:
        return "embedded", 100.0
    if needle.sentence and needle.text in row.sentences:
        return "embedded", 100.0
    if needle.embeddable and embedded_in(needle.text, row.hay):
        return "embedded", 100.0
    if needle.fuzzy:
        best = 0.0
        for text in {row.user.replace(TURN_SEP, " "), *row.others, row.hay}:
            if text_length(text) >= CUT_TAIL_MIN_SHARE * FUZZY_MIN_CHARS:
                best = max(best, near_copy(needle.text, text, rarity))
        if best >= FUZZY_THRESHOLD:
            return "fuzzy", round(best, 2)
    return None


def store_rarity(store, words: set[str]) -> Rarity:
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
    return Rarity.of_texts((word_text(t) for t in texts), words)


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
    idx = [i for i, n in enumerate(needles) if n.embeddable or n.fuzzy or n.sentence]
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


def _cached_rarity(store, needles: list[Needle]) -> Rarity:
    """store_rarity of the fuzzy needles' words, kept on the store object until its tables change size."""
    words = {t for n in needles if n.fuzzy for t in tokens(n.text)}
    stamp = tuple(
        store.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        for t in ("pairs", "battles", "problems", "eval_items")
    )
    cached = getattr(store, "_gate_rarity", None)
    if cached is not None and cached[0] == stamp and words <= cached[1]:
        return cached[2]
    rarity = store_rarity(store, words)
    store._gate_rarity = (stamp, words, rarity)
    return rarity


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
        if n.compact and not n.answer:
            keys.setdefault(xxh128(n.compact), []).append(i)
    for row_index, pair_id, key in con.execute(
        f"SELECT c.row_index, c.pair_id, c.match_key FROM {cand} c WHERE {SPARED_SQL} "
        "AND c.match_key IN (SELECT unnest(?::VARCHAR[]))",
        [sorted(keys)],
    ).fetchall():
        found += [
            (needles[i].set_name, needles[i].item_id, row_index, pair_id, "match_key") for i in keys[key]
        ]
    lengths = {loose_length(n.text) for n in needles if n.compact}
    # A whole system, assistant or answer text equal to a needle: needles of SENTENCE_MIN_WORDS words or
    # more are found through their 3-grams, so the exact stage reads only texts short enough to be one of
    # the shorter needles (padding of up to three bytes per character and 64 more allowed).
    short = [loose_length(n.text) for n in needles if n.compact and n.words < SENTENCE_MIN_WORDS]
    other_max = (4 * max(short) + 64 if short else 0) if grams is not None else None
    scan = scan_candidates(store, cand, f"NOT {SPARED_SQL}", set(by_hash), vocab3, bench, lengths, other_max)
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
                how = "embedded" if n.answer else "match_key"
                found.append((n.set_name, n.item_id, row_index, pair_of.get(row_index), how))
            elif where == "other" and n.compact in {compact_text(o) for o in row.others}:
                found.append((n.set_name, n.item_id, row_index, pair_of.get(row_index), "embedded"))
    hits = [Hit(s, i, int(r), p, how, 100.0) for s, i, r, p, how in found]
    rarity = _cached_rarity(store, needles) if any(needles[nid].fuzzy for _, nid in pairs) else None
    for row_index, nid in pairs:
        n = needles[nid]
        scored = match_texts(n, texts[row_index], rarity)
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
    return members_in_rows(store, candidates, set_name=set_name).hits


def check_candidates(store: Store, candidates: pa.Table, *, set_name: str | None = None) -> GateResult:
    """find_holdout_hits with the counts and notes the export evidence reports."""
    return members_in_rows(store, candidates, set_name=set_name)
