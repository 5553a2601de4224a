"""What one row's texts hold of one needle: the text matchers of the gate and the scores behind them.

    from pairstore.holdout.text_match import Needle, RowText, TEXT_MATCHERS, match_texts
    row = RowText.of(["Hi! What is the capital of Peru?"], ["Lima."])
    match_texts(Needle("judge", "b1", "holdout", "what is the capital of peru"), row)  # ("sentence", 100.0)

A *needle* is one text of a held-out member, normalized (pairstore.normalize.word_text): its user turns
joined, one long turn alone, or one of its answers. A row's texts are every text of a training row
(`RowText`). The matchers of pairstore.holdout.matching that read text (match key, whole text, sentence,
embedded, reordered, near copy) are functions here of one (needle, row) pair, each returning a score
(100 for an exact kind) or None; `match_texts` runs them strongest first.

Two rules keep what is not evidence out:

- **Near copies keep what a question is about** (`near_copy`): every distinctive token of the member
  (numbers, content words not common in the store, `Rarity`) is in the row, or the row is the member
  with its tail cut; and no content word of the member is replaced by another content word (the same
  template with other content is another question, however common its words are in the store).
- **Only distinctive needles** (`Commonness`): an answer, a turn or a sentence that several distinct
  prompts of the store's other (not held-out) items hold as a whole text or sentence is a stock phrase
  (a refusal, a greeting, a sign-off): it says nothing about which member leaked. COMMON_NEEDLE_PROMPTS
  was chosen on labelled data (tests/fixtures/gate/common_needles.jsonl, scripts/tune_gate.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from pairstore.normalize import TURN_SEP, compact_text, sentences_of, word_texts

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
# Reordered: a member's sentences of at least this many words that are not common are its distinctive
# sentences; a member with REORDER_MIN_PARTS of them is found in a row holding more than half of them
# (and at least REORDER_MIN_PARTS), each as a sentence or word for word, in any order.
REORDER_PART_MIN_WORDS = 5
REORDER_MIN_PARTS = 2
# Only distinctive needles: an answer, turn or sentence held, as a whole text or a sentence, by this many
# distinct prompts of the store's other items (in a seeded sample of STORE_SAMPLE items) is common, not
# evidence. Chosen on tests/fixtures/gate/common_needles.jsonl (scripts/tune_gate.py --common): every
# sentence labelled content is held by at most 2 distinct prompts of the control corpus.
COMMON_NEEDLE_PROMPTS = 3
# Sentences shorter than this say too little to be called common or distinctive (a trivia answer such as
# "new england patriots" recurs across questions).
COMMON_MIN_WORDS = 5

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


@dataclass(frozen=True, slots=True)
class Needle:
    """One text of a held-out member, normalized: what the text matchers look for in a row."""

    set_name: str
    item_id: str
    kind: str  # holdout | eval | benchmark
    text: str  # normalized words, turns joined by spaces
    task_key: str | None = None
    answer: bool = False  # one of the member's answers, not its prompt
    # the member's distinctive sentences (word texts), for the reordered matcher; on the prompt needle only
    parts: tuple[str, ...] = ()

    @property
    def compact(self) -> str:
        """The match-key text."""
        return compact_text(self.text)

    @property
    def words(self) -> int:
        return len(tokens(self.text))

    @property
    def embeddable(self) -> bool:
        # Benchmark items of 13 words or more are found inside longer text by their 13-grams.
        return self.words >= EMBED_MIN_WORDS and not (self.kind == "benchmark" and self.words >= 13)

    @property
    def sentence(self) -> bool:
        return SENTENCE_MIN_WORDS <= self.words < EMBED_MIN_WORDS

    @property
    def fuzzy(self) -> bool:
        return (
            self.kind != "benchmark" and self.task_key is None and text_length(self.text) >= FUZZY_MIN_CHARS
        )


# -- rarity of words and commonness of needles ---------------------------------------------------------


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


@dataclass
class Commonness:
    """Which texts are stock phrases of the store: `holders[text]` is how many distinct prompts of the
    sampled items (not held out) hold it as a whole text or a sentence of one of their texts."""

    holders: dict[str, int] = field(default_factory=dict)
    items: int = 0

    @classmethod
    def of_items(cls, items: Iterable[tuple[str, list[str]]]) -> Commonness:
        """From (prompt key, raw texts of the item: its prompt and answers) pairs."""
        prompts: dict[str, set[str]] = {}
        keyed = list(items)
        texts = [t for _, ts in keyed for t in ts]
        units = sentences_of(texts)
        wholes = word_texts(texts)
        at = 0
        for key, ts in keyed:
            for whole, sents in zip(wholes[at : at + len(ts)], units[at : at + len(ts)]):
                for u in {whole, *sents}:
                    if len(u.split()) >= COMMON_MIN_WORDS:
                        prompts.setdefault(u, set()).add(key)
            at += len(ts)
        return cls({u: len(ks) for u, ks in prompts.items() if len(ks) > 1}, len(keyed))

    def common(self, text: str) -> bool:
        """A normalized text held by COMMON_NEEDLE_PROMPTS distinct prompts or more."""
        return self.holders.get(text, 0) >= COMMON_NEEDLE_PROMPTS

    def common_needle(self, whole: str, sentences: list[str]) -> bool:
        """An answer or turn (its word text and the word texts of its sentences) is common when the whole
        is, or when it has sentences of COMMON_MIN_WORDS words or more and every one of them is."""
        if self.common(whole):
            return True
        long = [s for s in sentences if len(s.split()) >= COMMON_MIN_WORDS]
        return bool(long) and all(self.common(s) for s in long)


# -- tokens and near copies ----------------------------------------------------------------------------


def _unspaced(ch: str) -> bool:
    """A character of a script written without spaces (CJK, kana, Hangul syllables are spaced; Thai, Lao,
    Khmer, Myanmar): each is a token of its own."""
    cp = ord(ch)
    return (
        0x2E80 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF or 0x0E00 <= cp <= 0x109F or 0x1780 <= cp <= 0x17FF
    )


def tokens(text: str) -> list[str]:
    """The words of a normalized text, apostrophes left out ("peru's" and "perus" are one token); a run of
    a script written without spaces, one token per character."""
    out = []
    for w in text.replace(TURN_SEP, " ").replace("'", "").split():
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


def _content(token: str) -> bool:
    """A word that says what a text is about: not a number, not a function word, more than one letter."""
    return not _is_number(token) and (len(token) > 1 or _unspaced(token)) and token not in STOPWORDS


def distinctive(toks: Iterable[str], rarity: Rarity) -> set[str]:
    """What a question is about: its words that are not common in the store (numbers: _number_parts)."""
    return {t for t in toks if _content(t) and not rarity.common(t)}


def similarity(member_text: str, row_text: str) -> float:
    """rapidfuzz similarity of two normalized texts, 0..100: `ratio` (normalized Indel similarity) for a few
    words changed; when the row is longer, `partial_ratio` (the member against the best-aligned window of
    the row) for the member with a sentence added."""
    score = fuzz.ratio(member_text, row_text)
    if len(row_text) > len(member_text):
        score = max(score, fuzz.partial_ratio(member_text, row_text))
    return float(score)


def replaces_content(a: list[str], b: list[str]) -> bool:
    """Somewhere the row (tokens `b`) puts a content word of its own where the member (tokens `a`) has a
    content word the row lacks: the same template with other content ("a dragon who learns to fly" for
    "a robot who learns to dance"), another question however common both words are in the store."""
    count_a, count_b = Counter(a), Counter(b)
    for op in Levenshtein.opcodes(a, b):
        if op.tag != "replace":
            continue
        # counted, not just present: "the earth ... the earth" with one "earth" made "mars" lost one
        lost = any(_content(t) and count_a[t] > count_b[t] for t in a[op.src_start : op.src_end])
        if lost and any(_content(t) and count_b[t] > count_a[t] for t in b[op.dest_start : op.dest_end]):
            return True
    return False


def near_copy(member_text: str, row_text: str, rarity: Rarity | None = None) -> float:
    """The fuzzy score of a row text against a member: its similarity when the distinctive-token rule holds,
    else 0.

    The rule: every distinctive token of the member (numbers, rare content words; `distinctive`) is in
    the row, or the row is the member with its tail cut (the row's own distinctive tokens are all the
    member's, it keeps CUT_TAIL_MIN_SHARE of its words, and what it misses is the member's tail); and no
    content word of the member is replaced by another content word (`replaces_content`). So function
    words changed, numbers written another way (normalized away before) or a cut tail still match, and
    the same template with another number or another content word does not."""
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
    score = similarity(member_text, row_text)
    if score >= FUZZY_THRESHOLD and replaces_content(a, b):
        return 0.0
    return score


def fuzzy_score(member_text: str, row_text: str, rarity: Rarity | None = None) -> float:
    """near_copy with the function words of STOPWORDS as the only common words (no store at hand)."""
    return near_copy(member_text, row_text, rarity)


def embedded_in(needle_text: str, row_text: str) -> bool:
    """The needle's words appear in the row's words, consecutively and whole."""
    return f" {needle_text} " in f" {row_text} "


# -- a row's texts -----------------------------------------------------------------------------------------


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
        return cls.of_rows([(users, others)])[0]

    @classmethod
    def of_rows(cls, rows: list[tuple[list[str], list[str]]]) -> list[RowText]:
        """RowText.of of each (user turns, other texts) row, every text normalized in one batch."""
        flat = [t or "" for users, others in rows for t in [*(users or []), *(others or [])]]
        words = word_texts(flat)
        sents = sentences_of(flat)
        out, at = [], 0
        for users, others in rows:
            nu, no = len(users or []), len(others or [])
            user_words, other = words[at : at + nu], words[at + nu : at + nu + no]
            user = TURN_SEP.join(user_words)
            out.append(
                cls(
                    user,
                    other,
                    " ".join(" ".join([user.replace(TURN_SEP, " "), *other]).split()),
                    {x for s in sents[at : at + nu + no] for x in s},
                    [*user_words, *other] if nu else other,
                )
            )
            at += nu + no
        return out


# -- the text matchers, each of one (needle, row) pair ------------------------------------------------------

TextMatch = Callable[[Needle, RowText, Rarity | None], float | None]


def same_key(needle: Needle, row: RowText, rarity: Rarity | None = None) -> float | None:
    """The row's user turns have the needle's match key (a member's prompt, not its answers)."""
    return 100.0 if not needle.answer and compact_text(row.user) == needle.compact else None


def whole_text(needle: Needle, row: RowText, rarity: Rarity | None = None) -> float | None:
    """The needle is a whole text of the row: a turn of any role, an answer."""
    return 100.0 if needle.compact in {compact_text(t) for t in row.texts if t} else None


def whole_sentence(needle: Needle, row: RowText, rarity: Rarity | None = None) -> float | None:
    """A needle of SENTENCE_MIN_WORDS to EMBED_MIN_WORDS words is a whole sentence or line of a row text,
    greetings and thanks around it left out."""
    return 100.0 if needle.sentence and needle.text in row.sentences else None


def embedded(needle: Needle, row: RowText, rarity: Rarity | None = None) -> float | None:
    """The needle's words (EMBED_MIN_WORDS or more) appear word for word inside the row's texts."""
    return 100.0 if needle.embeddable and embedded_in(needle.text, row.hay) else None


def _held(part: str, row: RowText) -> bool:
    return part in row.sentences or embedded_in(part, row.hay)


def reordered(needle: Needle, row: RowText, rarity: Rarity | None = None) -> float | None:
    """Most of the member's distinctive sentences are in the row, in any order: more than half of them,
    and at least REORDER_MIN_PARTS, each a sentence of the row or word for word inside its texts; and, as
    for a near copy, what the member is about is all there (every number and every distinctive word): a
    sentence the row lacks may be reworded, not given other content. The score is the share held."""
    parts = needle.parts
    if len(parts) < REORDER_MIN_PARTS:
        return None
    held = sum(1 for p in parts if _held(p, row))
    if held < REORDER_MIN_PARTS or 2 * held <= len(parts):
        return None
    if held < len(parts):
        a, b = tokens(needle.text), tokens(row.hay)
        if distinctive(a, rarity or Rarity()) - set(b) or _number_parts(a) - _number_parts(b):
            return None
    return round(100.0 * held / len(parts), 2)


def near(needle: Needle, row: RowText, rarity: Rarity | None = None) -> float | None:
    """A near copy of a long needle (near_copy at FUZZY_THRESHOLD or more) in the user turns, one other text
    or all of them."""
    if not needle.fuzzy:
        return None
    best = 0.0
    for text in {row.user.replace(TURN_SEP, " "), *row.others, row.hay}:
        if text_length(text) >= CUT_TAIL_MIN_SHARE * FUZZY_MIN_CHARS:
            best = max(best, near_copy(needle.text, text, rarity))
    return round(best, 2) if best >= FUZZY_THRESHOLD else None


# The text matchers, strongest first (pairstore.holdout.matching.MATCHERS names them in the gate's order).
TEXT_MATCHERS: tuple[tuple[str, TextMatch], ...] = (
    ("match_key", same_key),
    ("whole_text", whole_text),
    ("sentence", whole_sentence),
    ("embedded", embedded),
    ("reordered", reordered),
    ("fuzzy", near),
)


def match_texts(needle: Needle, row: RowText, rarity: Rarity | None = None) -> tuple[str, float] | None:
    """How one row's texts hold one needle: the first text matcher (strongest first) that finds it, and
    its score; None when none does."""
    if not needle.compact:
        return None
    for name, match in TEXT_MATCHERS:
        score = match(needle, row, rarity)
        if score is not None:
            return name, score
    return None
