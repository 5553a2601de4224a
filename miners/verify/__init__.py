"""Answer verifier: read the final answer from a model's output and compare it with the gold.

    from miners.verify import extract_answer, is_equivalent, answers_equal
    extract_answer("... so she pays $1,250.\\nFinal answer: $1,250", "gsm8k")   # -> "$1,250"
    is_equivalent("... The answer is \\\\boxed{\\\\dfrac{1}{2}}.", "0.5", "math")   # -> True
    answers_equal("$1,250", "1250", "gsm8k")   # an already extracted answer -> True
    verdict_stats()   # how many verdicts the fast path decided, deferred, and what failed

Benchmark against math-verify on four labelled corpora: `.venv/bin/python bench/bench_verify.py`
(conventions and sources: bench/data/README.md).

kind is "gsm8k" (gold is a number), "math" (gold is a MATH-style LaTeX answer) or "task" (gold is
the string a loop-fix generator computed; see _task_equal: "253 R 9", a decimal to N places whose
digits must match exactly, a repeating expansion "0.1(6)", an integer or fraction, or text).
A gold that is a whole solution ("... #### 72", a boxed MATH solution) is reduced to its answer.

How a verdict is reached (the pieces live in miners/answer_*.py):
  1. extraction (answer_extract, answer_prose): the answer span the output finally commits to,
     after cutting the turn at a chat token, an invented "User:" line or a hallucinated next
     question; an answer stated in prose or in number words is reduced to its value.
  2. normalization (answer_normalize): one canonical string and its structure.
  3. the fast path (answer_compare, answer_exact, answer_parse): decides only when certain -- exact
     arithmetic, words as words, structures element by element, equations up to a factor,
     one-variable relations as intervals, matrix sums and products.
  4. what the fast path cannot decide goes to math-verify on the two extracted spans
     (answer_symbolic), never on the whole output, with a guard and a time bound.
An unexpected exception in steps 2-3 is a deferral to step 4 and is counted; if math-verify also
fails, the verdict is "not equal" and that failure is counted too (verdict_stats()).
Verdicts are cached per (extracted answer, gold, kind) in a bounded LRU, so mining many samples of
one problem pays once per distinct answer.
"""

from __future__ import annotations

import re
from functools import lru_cache

from miners.verify import extract as answer_extract
from miners.verify import symbolic as answer_symbolic
from miners.verify.compare import choice_letter, value_verdict
from miners.verify.exact import numeric_equal
from miners.verify.normalize import normalize, structure, unwrap_text_commands
from miners.verify.parse import REPEATING_RE, TooHard, Unsupported, parse_scalar
from pairstore.errors import BadInput

__all__ = [
    "KINDS",
    "answers_equal",
    "cache_info",
    "clear_cache",
    "extract_answer",
    "is_equivalent",
    "symbolic_calls",
    "verdict_stats",
]

KINDS = ("gsm8k", "math", "task")
CACHE_SIZE = 65536
MAX_ANSWER_CHARS = 2000  # longer "answers" are runaways; normalizing them could cost O(n^2)

# fast: decided by normalization and the exact evaluator; deferred: handed to math-verify as
# undecided; exceptions: an unexpected error in the fast path, handed to math-verify (and counted).
_STATS = {"fast": 0, "deferred": 0, "exceptions": 0}


def verdict_stats() -> dict[str, int]:
    """Verdicts computed (cache misses) since import: decided by the fast path, deferred to
    math-verify, fast-path exceptions (deferred too), and math-verify's own counts: calls, refused
    (too large for its guard), timeouts, failures (each of those three a "not equal")."""
    return {**_STATS, **answer_symbolic.symbolic_stats()}


def symbolic_calls() -> int:
    """How many comparisons reached the math-verify back end in this process."""
    return answer_symbolic.symbolic_stats()["calls"]


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise BadInput(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", field="kind")


def extract_answer(text: str, kind: str = "math") -> str | None:
    """The final answer a model's whole output commits to, or None when it commits to none.

    The span that starts last wins (a self-correction's last answer); a hallucinated follow-up turn
    after an answer is cut off first. A short single-line output is its own answer.
    """
    _check_kind(kind)
    return answer_extract.extract_answer(text, kind)


# ---------------------------------------------------------------------------------- verdicts

_GSM_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+")


def _gsm8k_number(s: str) -> str | None:
    """The number a GSM8K answer span states: the whole span when it is one, else the result
    after the last '=' or the first number ("18 dollars per day" -> 18)."""
    if "=" in s:
        s = s.rsplit("=", 1)[1]
    m = _GSM_NUMBER_RE.search(s)
    return m.group(0).replace(" ", "") if m else None


def _fast_verdict(pred_answer: str, gold_answer: str, kind: str) -> bool | None:
    """True/False when certain; None hands the spans to math-verify."""
    pred, pred_pct = normalize(pred_answer, kind)
    gold, gold_pct = normalize(gold_answer, kind)
    if not pred or not gold:
        return False
    if kind == "task":  # before the shortcut: normalization drops trailing words, which task text keeps
        return _task_equal(pred_answer, gold_answer, pred, gold, pred_pct, gold_pct)
    if pred == gold and pred_pct == gold_pct:
        return True
    # multiple choice: a gold that is one letter A-E
    if re.fullmatch(r"\(?[A-E]\)?", gold):
        letter = choice_letter(pred)
        return letter is not None and letter == gold.strip("()")
    if kind == "gsm8k" and re.fullmatch(r"-?\d+(?:\.\d+)?", gold):
        verdict = value_verdict(pred, gold, pred_pct, gold_pct, kind)
        if verdict is not None:
            return verdict
        number = _gsm8k_number(pred)
        if number is None:
            return False  # no number at all against a numeric gold
        if number == pred:
            return None
        try:
            return numeric_equal(number, gold, pred_pct, gold_pct)
        except (Unsupported, TooHard):
            return False
    return value_verdict(pred, gold, pred_pct, gold_pct, kind)


@lru_cache(maxsize=CACHE_SIZE)
def _verdict(pred_answer: str, gold_answer: str, kind: str) -> bool:
    try:
        verdict = _fast_verdict(pred_answer, gold_answer, kind)
    except Exception:  # a bug or an input nobody foresaw: a counted deferral, never a silent verdict
        _STATS["exceptions"] += 1
        verdict = None
    else:
        _STATS["fast" if verdict is not None else "deferred"] += 1
    if verdict is not None:
        return verdict
    if kind == "task":
        return False  # task golds are plain strings and numbers: nothing for sympy to add
    return answer_symbolic.symbolic_equal(pred_answer, gold_answer)


# ---------------------------------------------------------------------------------- task golds

_TASK_NUMBER_RE = re.compile(r"-?\d+(?:/\d+)?")
_QR_GOLD_RE = re.compile(r"(-?\d+) R (\d+)")
_QR_PRED_RE = re.compile(
    r"(?i)(?:the\s+)?(?:quotient\s*(?:is|=|:)?\s*)?(-?\d+)\s*[,;]?\s*(?:and\s+)?(?:the\s+)?"
    r"(?:r|rem\.?|remainder)\s*(?:is|=|:|of)?\s*(\d+)"
)


def _task_equal(
    pred_answer: str, gold_answer: str, pred: str, gold: str, pred_pct: bool, gold_pct: bool
) -> bool:
    """Loop-fix task golds (generators/): the format is part of the answer where the task asks for one.

    "253 R 9" (quotient and remainder; "253 remainder 9" reads the same); a decimal to N places
    (the digits exactly, trailing zeros kept: 0.1428570000... is a runaway, not the answer); a
    repeating expansion "0.1(6)" (any marked repeating notation of the same value, not "1/6"); an
    integer or fraction (by value); anything else is text (letter removal), exact up to surrounding
    quotes, markup, whitespace and a final period.
    """
    g = gold_answer.strip()
    m = _QR_GOLD_RE.fullmatch(g)
    if m:
        pm = _QR_PRED_RE.fullmatch(_task_text(pred_answer))
        return bool(pm) and int(pm.group(1)) == int(m.group(1)) and int(pm.group(2)) == int(m.group(2))
    if re.fullmatch(r"-?\d*\.\d+", g):
        return pred == gold
    if REPEATING_RE.match(gold):
        if not (REPEATING_RE.match(pred) or re.fullmatch(r"-?\d*\.\d+", pred)):
            return False
        try:
            return numeric_equal(pred, gold, False, False)
        except (Unsupported, TooHard):
            return False
    if _TASK_NUMBER_RE.fullmatch(g):
        try:
            parse_scalar(pred)
        except (Unsupported, TooHard, RecursionError):
            return False
        return value_verdict(pred, gold, pred_pct, gold_pct, "task") is True
    return _task_text(pred_answer) == _task_text(gold_answer)


def _task_text(s: str) -> str:
    s = unwrap_text_commands(s).strip().strip("*_`$ \t").rstrip(".")
    s = s.strip("\"'“”‘’ ")
    return re.sub(r"\s+", " ", s)


# ---------------------------------------------------------------------------------- entry points


def _gold_answer(gold: str, kind: str) -> str:
    """A gold that is a whole solution (GSM8K's '... #### 72', a boxed MATH solution) or a sentence
    that states its answer ("Answer is forty three.") -> its answer."""
    # a task gold is text to compare as written (it may contain the word "answer"), never a sentence to read
    stated = re.search(r"(?i)final answer", gold) or (kind != "task" and re.search(r"(?i)\banswer\b", gold))
    if "####" in gold or "\\boxed" in gold or "\\fbox" in gold or stated:
        ans = answer_extract.extract_answer(gold, kind)
        if ans is not None:
            return ans
        m = re.match(r"\s*\\boxed\s*\{", gold)
        if m:  # a gold box left open: its content is still the reference
            return answer_extract.strip_answer(gold[m.end() :])
    return answer_extract.strip_answer(gold)


def is_equivalent(pred_text: str, gold: str, kind: str = "math") -> bool:
    """Whether the final answer in a model's whole output equals the gold answer.

    Never raises on any text and never hangs: undecidable or pathological comparisons are False.
    """
    _check_kind(kind)
    if pred_text is None or gold is None:
        return False
    try:
        answer = answer_extract.extract_answer(pred_text, kind)
    except Exception:  # no span to compare: math-verify reads the output itself (its guard bounds it)
        _STATS["exceptions"] += 1
        return answer_symbolic.symbolic_equal(pred_text, gold)
    if answer is None:
        return False
    return answers_equal(answer, gold, kind)


def answers_equal(answer: str, gold: str, kind: str = "math") -> bool:
    """Compare an already extracted answer with the gold (cached per (answer, gold, kind))."""
    _check_kind(kind)
    try:
        gold_answer = _gold_answer(gold, kind)
    except Exception:  # counted, and the gold goes to math-verify as written
        _STATS["exceptions"] += 1
        gold_answer = gold
    if len(answer) > MAX_ANSWER_CHARS or len(gold_answer) > MAX_ANSWER_CHARS:
        return False  # a runaway, not an answer; and no giant keys in the cache
    return _verdict(answer, gold_answer, kind)


def clear_cache() -> None:
    """Forget cached verdicts and parses (benchmarks measure cold and warm)."""
    _verdict.cache_clear()
    normalize.cache_clear()
    structure.cache_clear()
    parse_scalar.cache_clear()


def cache_info():
    return _verdict.cache_info()
