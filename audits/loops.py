"""Repetition scanner: is a model output a degenerate loop?

    from audits.loops import may_end_in_loop, scan, scan_many
    report = scan(text)          # LoopReport(flagged=..., catastrophic=..., tail_loop=..., ...)
    reports = scan_many(texts)   # the same, many texts per numpy pass: the fast way for bulk work
    may_end_in_loop(text)        # False only where scan(text) finds no tail or catastrophic loop:
                                 # a check in plain Python that spares one text's scan most times

    pairstore audit loops --model sm11a --suite lf2      # the model card's loop table
    pairstore audit loops --json --rescan                # every model, every output scanned now

The failure this looks for (model card, "Loop analysis"): on format-constrained
requests the model echoes the question phrase over and over, or runs on digit
by digit ("0.142857142857..." for hundreds of digits), or oscillates
("145 -0 145 -0 ...", "+ 1 + 1 + 1 ..."); the one catastrophic loop seen in
real battles was a Chinese phrase. Decoding-time n-gram bans were rejected
because they broke legitimate digit runs (gold 11111111100), so the scanner
must not flag those either.

Tokens
    Whitespace-separated pieces, exactly as written (no case folding: loops
    repeat themselves verbatim, and exactness keeps legitimate text safer).
    Han, kana, CJK punctuation and full-width forms are one token per
    character, so a Chinese or Japanese loop without spaces is seen. Hangul is
    written with spaces and stays word-tokenized. `n_tokens` counts these.

Word n-grams (flag "ngram6" / "ngram10")
    A word 6-gram that occurs at least T6 = max(12, ceil(n_tokens / 200))
    times, or a 10-gram at least T10 = max(8, ceil(n_tokens / 300)) times,
    occurrences counted anywhere in the text (a loop may be interleaved with
    other text). 12 is the threshold of the scanner the model card reports
    ("max repeated n-gram >= 12"), whose 37 flags over 2,198 outputs were all
    genuine failures. A 10-gram is a whole clause, so fewer repeats suffice:
    villanelles and songs repeat a refrain 3 to 6 times, 8 leaves margin. The
    length terms keep a long essay safe: a theme phrase may recur about once a
    paragraph (~200 tokens), never once every few lines like a loop. Only
    n-grams that contain a letter count: numbers and symbols repeat
    legitimately in tables, matrices and rulers ("| --- | --- |"), and their
    loops are consecutive, which the cycle rules below catch.

Cycles (flag "cycle")
    A cycle is a unit of p >= 1 tokens repeated back to back; repeats =
    floor(span / p) where span is the length of the periodic stretch, which
    must be at least 6 tokens longer than the unit (so "very very" or "no no
    no" is not a cycle at all). Flagged: a unit with a letter repeated 12 times
    or more (the n-gram threshold, for units shorter than 6 tokens that the
    6-gram count under-reads); a unit of numbers and symbols repeated 12 times
    or more over at least 64 tokens (a written-out 4x4 zero matrix is 16, a
    12-column table separator 13; the oscillations seen ran to the token limit).

Runs inside one token (flag "in_token")
    A token of 128 characters or more is searched for periodic character runs
    (period 1 to 64). A run counts when it spans at least 128 characters and
    repeats its unit at least 4 times. Legitimate periodic numerals stay below
    that: 11111111100, a float's 0.3333333333333333, a googol's 100 zeros,
    1/7 written to 100 places; a runaway goes on for hundreds of digits. A
    unit without letters or digits (rulers, heading underlines, box drawing,
    which documents draw as wide as they like) counts only from 1024
    characters.

Tail loop (flag "tail")
    The text ends inside a cycle of a unit with a letter or digit, repeated at
    least 3 full times over at least 30 tokens (the last token may be cut off
    mid-word, as a generation that hit its token limit is), or it ends inside a
    counted run of a long token. This catches long units that ran out of
    tokens after a few repeats: a 60-token echo fits 8 times in 512 tokens.

Catastrophic
    Any cycle (tokens, or characters inside a token) repeated consecutively 100
    times or more. Catastrophic outputs are always flagged.

max_repeat / max_repeat_unit
    The largest repeat count seen: the occurrences of the most frequent word
    6-gram (every n-gram, with or without letters), the repeats of the longest
    cycle, or the repeats of a counted run inside a token, whichever is largest
    (a cycle wins a tie: its unit is the whole repeated piece); the unit is
    that 6-gram, cycle unit or run unit as text (cut at 300 characters). It is
    1 for text where nothing repeats and 0 for empty text. `ngram6_max` and
    `cycle_repeats` give the two counts separately; `reasons` names the rules
    that fired. (10-gram counts are only taken for texts that no other rule
    flagged and whose 6-grams repeat at least T10 times, so none is reported.)

Empty
    None, "" or whitespace only: empty, never flagged, n_tokens 0.

Known limits: a cycle is found through the nearest earlier copy of each 6-gram,
so a unit that itself contains one 6-gram twice is measured by its sub-periods.
The scanner does not see the request: a large identity or zero matrix written
out in full, an expansion asked for to well over 100 places, or a list whose
every item repeats the same 6+ words a dozen times reads as the loop it
literally is.

Cost: linear in the text (expected), vectorised with numpy over many texts at
once (`scan_many`; `scan` is a batch of one and pays numpy's per-call overhead).
A batch's texts are joined and cut into tokens on their code points (the twin
of `tokenize`, tested against it); a token's hash is a polynomial of its code
points mod 2**64 with a 64-bit finaliser; a window's hash is
sum(token_hash[k] * M[k]) mod 2**64 plus its text's number times a constant.
Windows are grouped by hash: a bincount over 4 to 8 slots per window keeps
those whose slot is shared, which an LSD radix sort on 16-bit digits orders
(numpy's stable sort of uint16 is a radix sort); the rare windows whose low 32
bits agree but whose hashes differ are sorted by the full hash. Tokens and
n-grams are compared by these 64-bit hashes: two different n-grams of a batch
collide with probability about windows**2 / 2**64 (under 1e-7 for a million
windows). (A polynomial hash mod 2**64 can be forced to collide with crafted
strings thousands of characters long; model outputs are not crafted, and a
collision would only merge two counts.) bench/bench_scanner.py measures the
throughput against a plain 6-gram Counter scan.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

# ---- thresholds (justified in the module docstring) --------------------------
SHORT_N = 6
LONG_N = 10
NGRAM6_MIN_COUNT = 12
NGRAM10_MIN_COUNT = 8
NGRAM6_TOKENS_PER_REPEAT = 200
NGRAM10_TOKENS_PER_REPEAT = 300
CYCLE_MIN_REPEATS = 12
NUMERIC_CYCLE_MIN_SPAN = 64
TAIL_MIN_REPEATS = 3
TAIL_MIN_SPAN = 30
CATASTROPHIC_REPEATS = 100
IN_TOKEN_MIN_SPAN = 128
IN_TOKEN_MIN_REPEATS = 4
IN_TOKEN_MAX_PERIOD = 64
SYMBOL_RUN_MIN_SPAN = 1024
UNIT_TEXT_MAX = 300

# Han, kana, bopomofo, CJK symbols and punctuation (not U+3000, the ideographic
# space, which is whitespace), compatibility forms, full/half-width forms.
_CJK_RANGES = (
    (0x2E80, 0x2FDF),
    (0x3001, 0x303F),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x3190, 0x31FF),
    (0x3200, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
    (0x20000, 0x3FFFF),
)
_CJK = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
# What str.split() and the regex \s treat as whitespace (str.isspace), as code points.
SPACES = (
    *range(0x09, 0x0E),
    *range(0x1C, 0x21),
    0x85,
    0xA0,
    0x1680,
    *range(0x2000, 0x200B),
    0x2028,
    0x2029,
    0x202F,
    0x205F,
    0x3000,
)
_TOKEN = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")
_ALNUM = re.compile(r"[^\W_]")

# Odd 64-bit multipliers, one per n-gram position (window hash = sum of
# token_hash[k] * _MULT[k] mod 2**64, computed by np.correlate).
_MULT = np.array(
    [
        0x9E3779B97F4A7C15,
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0xD6E8FEB86659FD93,
        0xFF51AFD7ED558CCD,
        0xC4CEB9FE1A85EC53,
        0x94D049BB133111EB,
        0xBF58476D1CE4E5B9,
        0x2545F4914F6CDD1D,
        0x9FB21C651E98DF25,
    ],
    dtype=np.uint64,
)
# Added to a window's hash times its text's number, so that scan_many never
# counts the same n-gram of two different texts together.
_TEXT_MULT = np.uint64(0xD1B54A32D192ED03)
_TOKEN_BASE = 0x100000001B3  # polynomial base for a token's characters
_TABLE_BITS_MAX = 22  # the bincount table: 4M slots (32 MB) at most
POWER_TABLE_MAX = 1 << 21  # token hashing keeps B**i and B**-i tables this long at most (16 MB each)
CHUNK_CHARS = 1 << 18  # scan_many works on about this many characters at a time (memory stays small)


@dataclass(slots=True)
class LoopReport:
    """What `scan` found in one text (definitions in the module docstring; a slotted, mutable record)."""

    flagged: bool
    catastrophic: bool
    tail_loop: bool
    max_repeat: int
    max_repeat_unit: str
    empty: bool
    n_tokens: int
    ngram6_max: int = 0  # occurrences of the most frequent word 6-gram (any tokens)
    cycle_repeats: int = 0  # most consecutive repeats of one cycle (tokens or chars in a token)
    reasons: tuple[str, ...] = ()  # rules that fired: ngram6, ngram10, cycle, in_token, tail, catastrophic


def _empty_report() -> LoopReport:
    return LoopReport(
        flagged=False,
        catastrophic=False,
        tail_loop=False,
        max_repeat=0,
        max_repeat_unit="",
        empty=True,
        n_tokens=0,
    )


def tokenize(text: str) -> list[str]:
    """Scanner tokens: whitespace-separated pieces, CJK one per character."""
    if text.isascii():
        return text.split()
    return _TOKEN.findall(text)


def unit_text(tokens) -> str:
    """Tokens joined for display: spaces between words, none next to a CJK character."""
    tokens = tokens[:UNIT_TEXT_MAX]  # no more can show
    text = " ".join(tokens)
    if text.isascii():
        return text if len(text) <= UNIT_TEXT_MAX else text[:UNIT_TEXT_MAX] + "\u2026"
    out: list[str] = []
    prev_cjk = True
    for tok in tokens:
        cjk = len(tok) == 1 and _CJK_CHAR.match(tok) is not None
        if out and not (cjk or prev_cjk):
            out.append(" ")
        out.append(tok)
        prev_cjk = cjk
    text = "".join(out)
    return text if len(text) <= UNIT_TEXT_MAX else text[:UNIT_TEXT_MAX] + "\u2026"


def _has_digit(tokens) -> bool:
    return _DIGIT.search("".join(tokens)) is not None


# ---- grouping windows by hash -----------------------------------------------------


def _group(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The windows whose hash may occur more than once, equal hashes together, earlier windows first.

    Returns (indices into `hashes`, their hashes in that order). Linear: a
    bincount over a table of 4 to 8 slots per window keeps only windows whose
    slot is shared (every repeat, plus a few strangers); those are ordered by
    a least-significant-digit radix sort on the low 32 bits of the hash
    (numpy's stable sort of uint16 is a radix sort). The rare windows whose low
    32 bits match but whose hashes differ are then sorted by the full hash.
    """
    m = hashes.size
    bits = min(max(10, m.bit_length() + 2), _TABLE_BITS_MAX)
    slot = (hashes >> np.uint64(64 - bits)).astype(np.intp)
    idx = np.flatnonzero(np.bincount(slot, minlength=1 << bits)[slot] > 1)
    sub = hashes[idx]
    order = np.argsort((sub & np.uint64(0xFFFF)).astype(np.uint16), kind="stable")
    order = order[
        np.argsort(((sub[order] >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.uint16), kind="stable")
    ]
    ordered = sub[order]
    low = ordered & np.uint64(0xFFFFFFFF)
    same_low = low[1:] == low[:-1]
    clash = same_low & (ordered[1:] != ordered[:-1])
    if clash.any():
        done = -1
        for k in np.flatnonzero(clash).tolist():
            if k <= done:
                continue
            lo, hi = k, k + 2
            while lo > 0 and same_low[lo - 1]:
                lo -= 1
            while hi < order.size and same_low[hi - 1]:
                hi += 1
            block = order[lo:hi]
            order[lo:hi] = block[np.argsort(sub[block], kind="stable")]
            done = hi - 1
        ordered = sub[order]
    return idx[order], ordered


# ---- cycles -----------------------------------------------------------------


@dataclass(frozen=True)
class _Cycle:
    start: int  # first token of the periodic stretch
    period: int  # unit length in tokens
    span: int  # tokens in the stretch

    @property
    def repeats(self) -> int:
        return self.span // self.period

    @property
    def end(self) -> int:
        return self.start + self.span


def _verified(ids: np.ndarray, start: int, span: int, p: int) -> list[_Cycle]:
    """The stretch re-checked token by token (token hashes), split where a
    window-hash collision joined two."""
    end = start + span
    if np.array_equal(ids[start : end - p], ids[start + p : end]):
        return [_Cycle(start, p, span)]
    equal = np.concatenate(([False], ids[start + p : end] == ids[start : end - p], [False]))
    edges = np.flatnonzero(equal[1:] != equal[:-1])
    return [_Cycle(start + a, p, b - a + p) for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist())]


# ---- runs inside one long token ----------------------------------------------


@dataclass(frozen=True)
class _Run:
    token: int  # token index
    start: int  # character offset in the token
    period: int
    span: int
    reaches_end: bool

    @property
    def repeats(self) -> int:
        return self.span // self.period


_SAMPLE = 32  # a stretch of >= 64 equal-at-distance-p characters holds two consecutive samples


def _may_hold_run(tok: str) -> bool:
    """False when `tok` cannot hold a counted run: a cheap exact pre-check.

    A run of period p <= 64 over >= 128 characters starting at s covers the
    32-character block at the first multiple of 32 at or after s, and that
    block occurs again p characters later; so some aligned block recurs
    within the next 64 characters.
    """
    last = len(tok) - _SAMPLE
    for j in range(0, last, _SAMPLE):
        if tok.find(tok[j : j + _SAMPLE], j + 1, j + _SAMPLE + IN_TOKEN_MAX_PERIOD) != -1:
            return True
    return False


def _token_runs(tok: str, index: int) -> list[_Run]:
    """Counted periodic runs (>= IN_TOKEN_MIN_SPAN chars, >= IN_TOKEN_MIN_REPEATS repeats) in one token."""
    if not _may_hold_run(tok):
        return []
    a = np.frombuffer(tok.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    length = a.size
    max_p = min(IN_TOKEN_MAX_PERIOD, length // IN_TOKEN_MIN_REPEATS)
    if max_p < 1:
        return []
    # Cheap pass: compare every 32nd character with the one p further on, for
    # all p at once. A counted run with period p makes a[i] == a[i + p] over
    # at least IN_TOKEN_MIN_SPAN - p >= 64 consecutive i, hence on two
    # consecutive samples; periods without such a pair cannot hold one.
    samples = np.arange(0, length, _SAMPLE)
    padded = np.concatenate((a, np.full(IN_TOKEN_MAX_PERIOD, 0xFFFFFFFF, np.uint32)))
    periods = np.arange(1, max_p + 1)
    hits = a[samples][None, :] == padded[samples[None, :] + periods[:, None]]
    pair = hits[:, 1:] & hits[:, :-1]
    candidates = (np.flatnonzero(pair.any(axis=1)) + 1).tolist()
    runs: list[_Run] = []
    covered = np.zeros(samples.size, bool)  # samples inside a run already found
    for p in candidates:
        if covered[:-1][pair[p - 1]].all() and any(p % r.period == 0 for r in runs):
            continue  # a multiple of a period already found, over the same stretch
        eq = np.concatenate(([False], a[p:] == a[:-p], [False]))
        edges = np.flatnonzero(eq[1:] != eq[:-1])
        for s, e in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            span = e - s + p
            if (
                span >= IN_TOKEN_MIN_SPAN
                and span // p >= IN_TOKEN_MIN_REPEATS
                and (span >= SYMBOL_RUN_MIN_SPAN or _ALNUM.search(tok, s, s + p))
            ):
                runs.append(_Run(index, s, p, span, s + span == length))
                covered[(samples >= s) & (samples < s + span)] = True
    return runs


# ---- the scan -------------------------------------------------------------------


def scan(text: str | None) -> LoopReport:
    """Scan one model output for repetition loops (definitions in the module docstring)."""
    return scan_many([text])[0]


# a tail cycle's periodic stretch [s, e) ends at the text's last token or the one before it (e >= n - 1),
# spans L >= TAIL_MIN_SPAN tokens and L >= TAIL_MIN_REPEATS * p, and token k equals token k - p for
# every k in [s + p, e): L - p >= min over p of max(30 - p, 2p) = 20 tokens, so [n - 20, n - 1) always
_TAIL_PERIODIC_TOKENS = (
    min(max(TAIL_MIN_SPAN - p, (TAIL_MIN_REPEATS - 1) * p) for p in range(1, TAIL_MIN_SPAN + 1)) - 1
)


def may_end_in_loop(text: str | None) -> bool:
    """False only where scan(text) reports neither a tail loop nor a catastrophic one; True where it
    may. One text's scan pays numpy's per-call overhead (about a fifth of a millisecond); this reads
    the text's tokens (tokenize) in Python and asks for what those two flags need: for a tail cycle,
    the tokens before the last one repeating with some period; for a catastrophic cycle, one token a
    hundred times or more; for a run inside a token, a token of IN_TOKEN_MIN_SPAN characters. (Tokens
    are compared as strings, the scan compares their 64-bit hashes: the two differ only where two
    tokens' hashes collide.)"""
    if not text or text.isspace():
        return False
    tokens = tokenize(text)
    n = len(tokens)
    if max(map(len, tokens), default=0) >= IN_TOKEN_MIN_SPAN:
        return True
    if n >= CATASTROPHIC_REPEATS and max(Counter(tokens).values()) >= CATASTROPHIC_REPEATS:
        return True
    if n < TAIL_MIN_SPAN:
        return False
    lo, hi = n - 1 - _TAIL_PERIODIC_TOKENS, n - 1  # the tokens every tail cycle holds periodic
    last = tokens[hi - 1]
    for j in range(hi - 2, -1, -1):
        if tokens[j] == last:
            p = hi - 1 - j
            if p <= lo and all(tokens[k] == tokens[k - p] for k in range(lo, hi)):
                return True
    return False


def scan_many(texts: Iterable[str | None], *, chunk_chars: int = CHUNK_CHARS) -> list[LoopReport]:
    """`scan` of every text, in order; many texts share each numpy pass, so this is the fast way."""
    out: list[LoopReport | None] = []
    pending: dict[bool, tuple[list[int], list[str]]] = {True: ([], []), False: ([], [])}
    size = {True: 0, False: 0}

    def flush(ascii_only: bool) -> None:
        where, batch = pending[ascii_only]
        for i, report in zip(where, _scan_texts(batch, ascii_only)):
            out[i] = report
        pending[ascii_only] = ([], [])
        size[ascii_only] = 0

    for text in texts:
        if not text or text.isspace():
            out.append(_empty_report())
            continue
        ascii_only = text.isascii()
        pending[ascii_only][0].append(len(out))
        pending[ascii_only][1].append(text)
        out.append(None)
        size[ascii_only] += len(text)
        if size[ascii_only] >= chunk_chars:
            flush(ascii_only)
    for ascii_only in (True, False):
        if pending[ascii_only][1]:
            flush(ascii_only)
    return out  # type: ignore[return-value]


class _Tokens:
    """The tokens of a batch, cut from the joined text on demand (only rare paths need strings)."""

    def __init__(self, joined: str, starts: np.ndarray, ends: np.ndarray):
        self.joined, self.starts, self.ends = joined, starts, ends

    def __len__(self) -> int:
        return self.starts.size

    def __getitem__(self, key):
        if isinstance(key, slice):
            lo, hi, _ = key.indices(self.starts.size)
            j = self.joined
            return [j[a:b] for a, b in zip(self.starts[lo:hi].tolist(), self.ends[lo:hi].tolist())]
        return self.joined[int(self.starts[key]) : int(self.ends[key])]

    def unit(self, lo: int, hi: int) -> str:
        """unit_text(self[lo:hi]), cut from the joined text in one piece when it is ASCII."""
        piece = self.joined[int(self.starts[lo]) : int(self.ends[hi - 1])]
        if piece.isascii():
            return unit_text(piece.split())
        return unit_text(self[lo:hi])


_KIND_ASCII = np.zeros(128, np.int8)  # 0: part of a word, 1: whitespace, 2: a CJK character (its own token)
_KIND_ASCII[[c for c in SPACES if c < 128]] = 1
_kind_unicode: np.ndarray | None = None
_powers = np.ones(1, np.uint64)
_inverse_powers = np.ones(1, np.uint64)


def _unicode_kinds() -> np.ndarray:
    global _kind_unicode
    if _kind_unicode is None:
        kinds = np.zeros(0x110000, np.int8)
        for lo, hi in _CJK_RANGES:
            kinds[lo : hi + 1] = 2
        kinds[list(SPACES)] = 1
        _kind_unicode = kinds
    return _kind_unicode


def _token_powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """B ** i and B ** -i mod 2**64 for i < n, B = _TOKEN_BASE (odd, so invertible); grown on demand."""
    global _powers, _inverse_powers
    if _powers.size < n:
        size = max(n, 2 * _powers.size, 1 << 16)
        for base, name in ((_TOKEN_BASE, "_powers"), (pow(_TOKEN_BASE, -1, 1 << 64), "_inverse_powers")):
            steps = np.full(size, base, np.uint64)
            steps[0] = 1
            globals()[name] = np.cumprod(steps, dtype=np.uint64)
    return _powers, _inverse_powers


def tokenize_spans(joined: str, ascii_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token (starts, ends, hashes) of one joined text, the vectorised twin of `tokenize`.

    A token's hash is a polynomial over its code points mod 2**64, mixed with
    its length and a 64-bit finaliser; equal tokens get equal hashes.
    """
    if ascii_only:
        codes = np.frombuffer(joined.encode("ascii"), np.uint8)
        kinds = _KIND_ASCII[codes]
        word = (kinds == 0).view(np.int8)
        edge = np.diff(word, prepend=np.int8(0), append=np.int8(0))
        starts = np.flatnonzero(edge == 1)
        ends = np.flatnonzero(edge == -1)
    else:
        codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
        kinds = _unicode_kinds()[codes]
        in_token = kinds != 1
        cjk = kinds == 2
        before = np.concatenate(([np.int8(1)], kinds[:-1]))
        after = np.concatenate((kinds[1:], [np.int8(1)]))
        starts = np.flatnonzero(in_token & ((before == 1) | cjk | (before == 2)))
        ends = np.flatnonzero(in_token & ((after == 1) | cjk | (after == 2))) + 1
        word = in_token.view(np.int8)
    lengths = ends - starts
    if not starts.size:
        return starts, ends, np.zeros(0, np.uint64)
    chars = codes[word.view(bool)]
    first = np.cumsum(lengths) - lengths  # each token's first character in `chars`
    if chars.size <= POWER_TABLE_MAX:
        # prefix sums of chars[j] * B**j; a token's slice, times B**-first, is its own polynomial
        powers, inverse = _token_powers(chars.size)
        prefix = np.cumsum(chars.astype(np.uint64) * powers[: chars.size], dtype=np.uint64)
    else:  # one huge text: powers by rank inside the token instead of two tables as long as the text
        powers, inverse = _token_powers(int(lengths.max()))
        rank = np.arange(chars.size) - np.repeat(first, lengths)
        prefix = np.cumsum(chars.astype(np.uint64) * powers[rank], dtype=np.uint64)
    h = prefix[first + lengths - 1]
    h[1:] -= prefix[first[1:] - 1]
    if chars.size <= POWER_TABLE_MAX:
        h *= inverse[first]
    h += lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return starts, ends, h


def _scan_texts(texts: list[str], ascii_only: bool) -> list[LoopReport]:
    """Scan non-empty texts that are all ASCII, or all not."""
    joined = "\n".join(texts)
    starts, ends, ids = tokenize_spans(joined, ascii_only)
    k = len(texts)
    text_ends = np.cumsum(np.fromiter(map(len, texts), np.int64, k) + 1) - 1  # the "\n" after each text
    counts = np.diff(np.searchsorted(starts, text_ends), prepend=0)
    long_tokens = np.flatnonzero(ends - starts >= IN_TOKEN_MIN_SPAN).tolist()
    return _scan_batch(_Tokens(joined, starts, ends), ids, counts.tolist(), long_tokens)


@dataclass
class _Found:
    """What one text showed beyond the per-text counts."""

    reasons: set
    catastrophic: bool = False
    tail: bool = False
    cycle_repeats: int = 0
    cycle_unit: str = ""
    run_repeats: int = 0
    run_unit: str = ""


def _groups(order_pos: np.ndarray, same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index in the grouped order, size) of every group of 2 or more equal windows."""
    edge = np.concatenate(([True], ~same, [True]))
    bounds = np.flatnonzero(edge)
    sizes = np.diff(bounds)
    multi = sizes > 1
    return bounds[:-1][multi], sizes[multi]


def _per_text_top(
    k: int, text_of: np.ndarray, sizes: np.ndarray, firsts: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per text: the largest group size (at least `floor`) and the first window of the earliest such group."""
    top = floor.copy()
    np.maximum.at(top, text_of, sizes)
    first = np.full(k, np.iinfo(np.int64).max, np.int64)
    best = sizes == top[text_of]
    np.minimum.at(first, text_of[best], firsts[best])
    return top, first


def _letter_flags(
    letters,
    g: int,
    text_of: np.ndarray,
    sizes: np.ndarray,
    firsts: np.ndarray,
    thresholds: np.ndarray,
    found: dict,
    reason: str,
) -> None:
    """Flag each text with a group of >= its threshold windows that contains a letter."""
    hits = np.flatnonzero(sizes >= thresholds[text_of])
    flagged = set()
    for t, first in zip(text_of[hits].tolist(), firsts[hits].tolist()):
        if t not in flagged and letters.any(first, g):
            flagged.add(t)
            found.setdefault(t, _Found(set())).reasons.add(reason)


def _scan_batch(tokens, ids: np.ndarray, text_lengths: list[int], long_tokens: list[int]) -> list[LoopReport]:
    """Scan texts given as their tokens, token hashes, each text's token count and the long tokens."""
    k = len(text_lengths)
    lengths = np.array(text_lengths, dtype=np.int64)
    total = len(tokens)
    offsets = np.zeros(k + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    text_of_token = np.repeat(np.arange(k, dtype=np.int64), lengths)
    found: dict[int, _Found] = {}
    ngram6 = (lengths >= SHORT_N).astype(np.int64)
    first6 = np.full(k, -1, np.int64)

    # runs inside long tokens
    for i in long_tokens:
        runs = _token_runs(tokens[i], i)
        if not runs:
            continue
        t = int(text_of_token[i])
        f = found.setdefault(t, _Found(set()))
        f.reasons.add("in_token")
        top = max(runs, key=lambda r: (r.repeats, -r.start))
        if top.repeats > f.run_repeats:
            f.run_repeats, f.run_unit = top.repeats, tokens[i][top.start : top.start + top.period]
        if top.repeats >= CATASTROPHIC_REPEATS:
            f.catastrophic = True
        if i == offsets[t + 1] - 1 and any(r.reaches_end for r in runs):
            f.tail = True

    m = total - SHORT_N + 1
    if m > 0:
        h6 = np.correlate(ids, _MULT[:SHORT_N], "valid")
        text_of_window = text_of_token[:m]
        windows = np.flatnonzero(text_of_window == text_of_token[SHORT_N - 1 :])  # inside one text
        if windows.size:
            keyed = h6[windows] + text_of_window[windows].astype(np.uint64) * _TEXT_MULT
            order, ordered = _group(keyed)
            pos = windows[order]
            same = ordered[1:] == ordered[:-1]
            if same.any():
                _analyse(tokens, ids, h6, pos, same, text_of_token, offsets, lengths, found, ngram6, first6)

    reports: list[LoopReport] = []
    no_finding = _Found(set())
    for t, (n, c6, f6) in enumerate(zip(text_lengths, ngram6.tolist(), first6.tolist())):
        f_or_none = found.get(t)
        if f_or_none is None:
            if c6 <= 1:  # the common case: nothing repeats
                reports.append(LoopReport(False, False, False, 1, "", False, n, c6, 0, ()))
                continue
            f = no_finding
        else:
            f = f_or_none
        # evidence (repeats, priority, unit): the largest wins; on ties a cycle, then a run, then an n-gram
        best = (1, 0, "")
        if c6 > 1:
            best = max(best, (c6, 1, tokens.unit(f6, f6 + SHORT_N)))
        if f.run_repeats:
            best = max(best, (f.run_repeats, 2, f.run_unit))
        if f.cycle_repeats >= 2:
            best = max(best, (f.cycle_repeats, 3, f.cycle_unit))
        reasons = tuple(
            r
            for r in _REASON_ORDER
            if r in f.reasons or (r == "tail" and f.tail) or (r == "catastrophic" and f.catastrophic)
        )
        reports.append(
            LoopReport(
                flagged=bool(reasons),
                catastrophic=f.catastrophic,
                tail_loop=f.tail,
                max_repeat=best[0],
                max_repeat_unit=best[2] if best[0] > 1 else "",
                empty=False,
                n_tokens=n,
                ngram6_max=c6,
                cycle_repeats=max(f.cycle_repeats if f.cycle_repeats >= 2 else 0, f.run_repeats),
                reasons=reasons,
            )
        )
    return reports


_REASON_ORDER = ("ngram6", "ngram10", "cycle", "in_token", "tail", "catastrophic")


def _analyse(tokens, ids, h6, pos, same, text_of_token, offsets, lengths, found, ngram6, first6):
    """Counts, n-gram flags and cycles of a batch whose windows repeat somewhere."""
    k = lengths.size
    total = len(tokens)
    letters = _LetterCache(tokens)
    starts, sizes = _groups(pos, same)
    firsts = pos[starts]
    text_of = text_of_token[firsts]
    top6, f6 = _per_text_top(k, text_of, sizes, firsts, ngram6)
    ngram6[:] = top6
    has = f6 < np.iinfo(np.int64).max
    first6[has] = f6[has]
    t6 = np.maximum(NGRAM6_MIN_COUNT, -(-lengths // NGRAM6_TOKENS_PER_REPEAT))
    _letter_flags(letters, SHORT_N, text_of, sizes, firsts, t6, found, "ngram6")

    # cycles: a run of windows [a, b) whose nearest earlier copy is p tokens back means
    # tokens [a - p, b - 1 + 6) repeat with period p (windows across two texts never match)
    m = total - SHORT_N + 1
    d = np.zeros(m + 1, np.int64)
    later, earlier = pos[1:][same], pos[:-1][same]
    d[later] = later - earlier
    change = np.flatnonzero(d[1:] != d[:-1]) + 1
    run_starts = np.concatenate(([0], change[:-1]))
    periods = d[run_starts]
    region = run_starts - periods
    spans = change - 1 + SHORT_N - region
    reps = np.where(periods > 0, spans // np.maximum(periods, 1), 0)
    for r in np.flatnonzero(reps >= 2).tolist():
        p = int(periods[r])
        for cyc in _verified(ids, int(region[r]), int(spans[r]), p):
            if cyc.repeats < 2:
                continue
            t = int(text_of_token[cyc.start])
            f = found.setdefault(t, _Found(set()))
            if cyc.repeats > f.cycle_repeats:
                f.cycle_repeats, f.cycle_unit = (
                    cyc.repeats,
                    tokens.unit(cyc.start, cyc.start + min(p, UNIT_TEXT_MAX)),
                )
            if cyc.repeats >= CATASTROPHIC_REPEATS:
                f.catastrophic = True
            if cyc.repeats < min(CYCLE_MIN_REPEATS, TAIL_MIN_REPEATS):
                continue
            letter = letters.any(cyc.start, p)
            alnum = letter or _has_digit(tokens[cyc.start : cyc.start + p])
            if cyc.repeats >= CYCLE_MIN_REPEATS and (
                letter or (alnum and cyc.span >= NUMERIC_CYCLE_MIN_SPAN)
            ):
                f.reasons.add("cycle")
            if alnum and cyc.repeats >= TAIL_MIN_REPEATS and cyc.span >= TAIL_MIN_SPAN:
                text_end = int(offsets[t + 1])
                if cyc.end == text_end or (
                    cyc.end == text_end - 1 and tokens[text_end - 1 - p].startswith(tokens[text_end - 1])
                ):
                    f.tail = True

    # 10-grams matter only for a text no other rule flagged whose 6-grams repeat often enough
    t10 = np.maximum(NGRAM10_MIN_COUNT, -(-lengths // NGRAM10_TOKENS_PER_REPEAT))
    open_texts = np.zeros(k, bool)
    for t in np.flatnonzero(top6 >= t10).tolist():
        f = found.get(t)
        open_texts[t] = f is None or not (f.reasons or f.catastrophic or f.tail)
    if not open_texts.any():
        return
    # a repeated 10-gram starts with a repeated 6-gram: hash only those windows
    repeated = np.zeros(pos.size, bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    mask = np.zeros(total, bool)
    mask[pos[repeated]] = True
    at = np.flatnonzero(mask[: max(total - LONG_N + 1, 0)])
    at = at[(text_of_token[at] == text_of_token[at + LONG_N - 1]) & open_texts[text_of_token[at]]]
    if at.size < 2:
        return
    h10 = h6[at] + text_of_token[at].astype(np.uint64) * _TEXT_MULT
    for j in range(SHORT_N, LONG_N):
        h10 += ids[at + j] * _MULT[j]
    order10, ordered10 = _group(h10)
    pos10 = at[order10]
    same10 = ordered10[1:] == ordered10[:-1]
    if same10.any():
        s10, z10 = _groups(pos10, same10)
        firsts10 = pos10[s10]
        _letter_flags(letters, LONG_N, text_of_token[firsts10], z10, firsts10, t10, found, "ngram10")


class _LetterCache:
    """Whether token windows hold a letter, remembering each token's answer (loops reuse tokens)."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.known: dict[str, bool] = {}

    def any(self, start: int, length: int) -> bool:
        known = self.known
        for tok in self.tokens[start : start + length]:
            hit = known.get(tok)
            if hit is None:
                hit = known[tok] = _LETTER.search(tok) is not None
            if hit:
                return True
        return False
