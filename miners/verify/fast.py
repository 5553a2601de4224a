"""The fast path of miners.verify: exact comparisons of an extracted answer with the gold, decided only
when certain.

    from miners.verify.fast import fast_compare, gold_answer
    fast_compare("\\\\frac{10}{4}", "\\\\frac52", "math")   # -> True
    fast_compare("x^2+\\\\sin x", "x^2", "math")           # -> None: undecided, for math-verify
    gold_answer("... so she has 72.\\n#### 72", "gsm8k")    # -> "72"

kind is "gsm8k" (gold is a number), "math" (gold is a MATH-style LaTeX answer) or "task" (gold is the
string a loop-fix generator computed; see _task_equal). Normalization (miners.verify.normalize), then
exact arithmetic, words as words, structures element by element, equations up to a factor,
one-variable relations as intervals, matrix sums and products (miners.verify.compare, .exact, .parse).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from miners.verify.compare import TooLarge, choice_letter, value_verdict
from miners.verify.exact import numeric_equal
from miners.verify.extract import extract_answer, strip_answer
from miners.verify.markers import NUMBER_MARKS, boolean_value
from miners.verify.normalize import normalize, unwrap_text_commands
from miners.verify.parse import REPEATING_RE, TooHard, Unsupported, parse_scalar

_WORD_ONLY_RE = re.compile(r"[^\W\d_]{2,}(?:\s+[^\W\d_]+)*")
_GSM_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+")


def _gsm8k_number(s: str) -> str | None:
    """The number a GSM8K answer span states: the whole span when it is one, else the result
    after the last '=' or its one number ("18 dollars per day" -> 18). A span with several numbers
    and no '=' ("2 hours 30 minutes", "5 apples and 3 oranges") states none of them alone: the
    first would be a guess at which one is the answer, so there is none."""
    if "=" in s:
        s = s.rsplit("=", 1)[1]
    found = _GSM_NUMBER_RE.findall(s)
    if len(found) != 1:
        return None
    return found[0].replace(" ", "")


def _words_and_number(words: str, number: str) -> bool:
    return _WORD_ONLY_RE.fullmatch(words) is not None and re.fullmatch(r"-?\d+(?:\.\d+)?", number) is not None


def word_against_number(pred: str, gold: str) -> bool:
    """Letters and nothing else on one side, a number on the other (both normalized): a word ("ba",
    "on iki", "zwölf") no reader here takes as a number, or a product of symbols; or a number against
    a word gold ("4479" against "No": what the sentence is about, not its answer). Which one is open,
    so no comparison decides it (math-verify reads words as symbols)."""
    return _words_and_number(pred, gold) or _words_and_number(gold, pred)


_INTEGER_RE = re.compile(r"-?[0-9]{1,18}")
_DECIMAL_RE = re.compile(r"-?\d+(?:\.\d+)?")
_LETTER_A_TO_E_RE = re.compile(r"\(?[A-E]\)?")
_CAPITAL_LETTER_RE = re.compile(r"\(?([A-Z])\)?")
_FINAL_ANSWER_RE = re.compile(r"(?i)final answer")
_ANSWER_WORD_RE = re.compile(r"(?i)\banswer\b")


@lru_cache(maxsize=64)  # a verdict compares its answer with the gold, and the second opinion again
def fast_compare(pred_answer: str, gold_text: str, kind: str) -> bool | None:
    """True/False when certain; None hands the spans to math-verify."""
    pred, pred_pct = normalize(pred_answer, kind)
    gold, gold_pct = normalize(gold_text, kind)
    if not gold:
        return None  # a gold that normalizes to nothing: nothing to compare against
    if not pred:
        # the answer normalizes to nothing ("dollars", "\\text{}", "\\quad"): nothing was read to
        # call unequal; math-verify is asked, and cannot read it either
        return None
    if kind == "task":  # before the shortcut: normalization drops trailing words, which task text keeps
        return _task_equal(pred_answer, gold_text, pred, gold, pred_pct, gold_pct)
    if pred == gold and pred_pct == gold_pct:
        return True
    if pred_pct == gold_pct and _INTEGER_RE.fullmatch(pred) and _INTEGER_RE.fullmatch(gold):
        # two integers (most unequal answers): what the comparison below says of them, without it
        # (tests/verify/test_verify_speed.py holds the two equal)
        return int(pred) == int(gold)
    gold_bool = boolean_value(gold_text)
    if gold_bool is not None:
        # a yes/no or true/false gold, in any language listed (miners.verify.markers): "Yes" against
        # "True" says the same; a word that says neither is compared as text below
        pred_bool = boolean_value(pred_answer)
        if pred_bool is not None:
            return pred_bool == gold_bool
    if word_against_number(pred, gold):
        return None
    # multiple choice: a gold that is one letter A-E. An answer that names no letter may be the value
    # of an option (the verifier compares it with the options, where it has them): undecided here.
    if _LETTER_A_TO_E_RE.fullmatch(gold):
        letter = choice_letter(pred)
        return None if letter is None else letter == gold.strip("()")
    if kind == "gsm8k" and _DECIMAL_RE.fullmatch(gold):
        verdict = value_verdict(pred, gold, pred_pct, gold_pct, kind)
        if verdict is not None:
            return verdict
        number = _gsm8k_number(pred)
        if number is None:
            # no numeral against a numeric gold -- a word ("twelve", "zwölf", "no solution") this
            # path cannot read as a number or rule out as one -- or several with none stated alone:
            # undecided, never unequal
            return None
        if number == pred:
            return None
        try:
            return numeric_equal(number, gold, pred_pct, gold_pct)
        except TooHard as exc:
            raise TooLarge(f"{number!r} against {gold!r}") from exc
        except Unsupported:
            return None
    return value_verdict(pred, gold, pred_pct, gold_pct, kind)


# a numeral grouped by dots ("1.000", "12.500.000") or by one comma ("2,500"): thousands in one
# convention, a decimal in the other
_DOT_GROUPS_RE = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![\d.,])")
_ONE_COMMA_GROUP_RE = re.compile(r"(?<![\d.,])\d{1,3},\d{3}(?![\d.,])")


# how a text writes its other numbers: a decimal comma ("12,5", "1.234,5", "1.234.567") or a
# decimal point ("12.5", "1,234.5", "1,234,567", "3.852e3")
_COMMA_DECIMAL_RE = re.compile(
    r"(?<![\d.,])\d+,(?:\d{1,2}|\d{4,})(?![\d,])|\d\.\d{3},\d|(?<![\d.])\d{1,3}(?:\.\d{3}){2,}(?![\d.])"
)
_POINT_DECIMAL_RE = re.compile(
    r"(?<![\d.,])\d+\.(?:\d{1,2}|\d{4,})(?![\d.])|\d,\d{3}\.\d|(?<![\d,])\d{1,3}(?:,\d{3}){2,}(?![\d,])"
    r"|\d\.\d+[eE][+-]?\d"
)


def decimal_mark(text: str) -> str | None:
    """The decimal mark the text's numbers show ("," or "."), or None where they show none or both."""
    comma = _COMMA_DECIMAL_RE.search(text) is not None
    point = _POINT_DECIMAL_RE.search(text) is not None
    return "," if comma and not point else "." if point and not comma else None


def localized(answer: str, language: str | None, text: str = "") -> str | None:
    """The answer with its one grouped numeral read by its language's marks (markers.NUMBER_MARKS):
    "1.234" as 1234 where a dot groups thousands, "2,500" as 2.5 where a comma is the decimal mark --
    only where the output's other numbers write that decimal mark too (`text`: "12,5"), since a model
    writing that language may still write English numbers ("2.375 cm"). None where the language
    lists no marks, the output's numbers do not show them, or the answer holds no such numeral."""
    marks = NUMBER_MARKS.get(language or "")
    if marks is None or decimal_mark(text) != marks[1]:
        return None
    dots, commas = _DOT_GROUPS_RE.findall(answer), _ONE_COMMA_GROUP_RE.findall(answer)
    if len(dots) + len(commas) != 1:
        return None
    if dots and marks[0] == ".":
        return answer.replace(dots[0], dots[0].replace(".", ""), 1)
    if commas and marks[1] == ",":
        return answer.replace(commas[0], commas[0].replace(",", "."), 1)
    return None


_COMMA_GROUPS_RE = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d.,])")


def commas_as_thousands(answer: str) -> str | None:
    """The answer with every comma-grouped numeral read as thousands ("5,000 - 1,456 = 3,544" ->
    "5000 - 1456 = 3544"), or None where it holds none. In a MATH answer a comma may also separate
    the items of a list, so the reading is one of two."""
    if _COMMA_GROUPS_RE.search(answer) is None:
        return None
    return _COMMA_GROUPS_RE.sub(lambda m: m.group().replace(",", ""), answer)


_DOZENS_RE = re.compile(r"(?i)(?<![\d.])(\d+(?:\.\d+)?)\s*dozens?\b")


def dozens_counted(answer: str) -> str | None:
    """The answer with each "N dozen(s)" read as the things counted, 12 N ("20 dozens" -> "240"), or
    None where it holds none. The fast path reads "20 dozens" as 20, the count of dozens; which of
    the two a question asks for, the answer does not say."""
    if _DOZENS_RE.search(answer) is None:
        return None
    return _DOZENS_RE.sub(lambda m: str(Fraction(m.group(1)) * 12), answer)


def is_comma_grouped(text: str) -> bool:
    """text is one numeral grouped by commas and nothing else ("3,544", "-1,250,000")."""
    return _COMMA_GROUPS_RE.fullmatch(text.strip().lstrip("-")) is not None


def other_grouping(answer: str) -> str | None:
    """The answer with its one grouped numeral read the other way -- "1.000" as 1000, "2,500" as
    2.5 -- or None where it holds no such numeral (or several: no single other reading)."""
    dots, commas = _DOT_GROUPS_RE.findall(answer), _ONE_COMMA_GROUP_RE.findall(answer)
    if len(dots) + len(commas) != 1:
        return None
    if dots:
        return answer.replace(dots[0], dots[0].replace(".", ""), 1)
    return answer.replace(commas[0], commas[0].replace(",", "."), 1)


# ---------------------------------------------------------------------------------- task golds

_TASK_NUMBER_RE = re.compile(r"-?\d+(?:/\d+)?")
_QR_GOLD_RE = re.compile(r"(-?\d+) R (\d+)")
_QR_PRED_RE = re.compile(
    r"(?i)(?:the\s+)?(?:quotient\s*(?:is|=|:)?\s*)?(-?\d+)\s*[,;]?\s*(?:and\s+)?(?:the\s+)?"
    r"(?:r|rem\.?|remainder)\s*(?:is|=|:|of)?\s*(\d+)"
)


def _task_equal(
    pred_answer: str, gold_answer: str, pred: str, gold: str, pred_pct: bool, gold_pct: bool
) -> bool | None:
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
        return pm is not None and int(pm.group(1)) == int(m.group(1)) and int(pm.group(2)) == int(m.group(2))
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
            # not a number ("not the gold", "I cannot count."): the task asks for one, and its format
            # is part of the answer (the generator's convention) -- unequal
            return False
        # a number the evaluator reads but cannot compare with the gold: undecided, never unequal
        return value_verdict(pred, gold, pred_pct, gold_pct, "task")
    return _task_text(pred_answer) == _task_text(gold_answer)


def _task_text(s: str) -> str:
    s = unwrap_text_commands(s).strip().strip("*_`$ \t").rstrip(".")
    s = s.strip("\"'“”‘’ ")
    return re.sub(r"\s+", " ", s)


_OPTION_LABEL_RE = re.compile(r"^\s*\(?[A-Z]\s*(?:\)\s*|[.:]\s+)")  # "(B) 17", "E)$78.20", "C. 4"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def choice_letters(options: tuple[str, ...]) -> str:
    """The letters a multiple-choice gold may be: A to E (the usual five), and one per option past
    that (MMLU-Pro has ten). A letter past the last option is a gold the options cannot read."""
    return LETTERS[: max(len(options), 5)]


@lru_cache(maxsize=64)  # asked about one gold by each reading of its verdict
def choice_gold(gold_text: str, kind: str, letters: str = "ABCDE") -> str | None:
    """The letter of a multiple-choice gold ("C", "(C)") among `letters`, or None."""
    if kind == "task":
        return None
    m = _CAPITAL_LETTER_RE.fullmatch(normalize(gold_text, kind)[0])
    return m.group(1) if m and m.group(1) in letters else None


# between the letters of a multiple-select answer: commas and semicolons (ASCII and CJK), the CJK
# enumeration comma, a slash, "&", "and", 和/与/及, or just spaces
_CHOICE_SEPARATOR_RE = re.compile(r"\s*(?:[,;，；、/&]|\band\b|和|与|及)\s*|\s+")


def choice_set(text: str, letters: str) -> frozenset[str] | None:
    """The option letters a multiple-select answer or gold names, as a set: "ACD", "A, C, D", "A、C 和 D",
    "(B), (C)", "\\text{B, C}", all among `letters`; None where it is not two or more distinct letters
    and nothing else (one letter is a single choice: choice_gold and named_choice read it)."""
    t = unwrap_text_commands(text).strip().strip("$*`.。 ")
    parts = [p.strip("()（） ") for p in _CHOICE_SEPARATOR_RE.split(t) if p.strip()]
    if len(parts) == 1 and re.fullmatch(r"[A-Z]{2,}", parts[0]):
        parts = list(parts[0])
    if len(parts) < 2 or any(len(p) != 1 or p not in letters for p in parts) or len(set(parts)) < len(parts):
        return None
    return frozenset(parts)


def named_choice(pred_answer: str, kind: str, letters: str = "ABCDE") -> str | None:
    """The option letter an answer names ("C", "(C)", "Option C: 12") among `letters`, or None."""
    return choice_letter(normalize(pred_answer, kind)[0], letters)


_BARE_OPTION_LETTER_RE = re.compile(r"(?:(?i:option|choice)\s*)?[({\[]?\s*[A-E]\s*[)}\]]?\.?")


def is_bare_option_letter(answer: str) -> bool:
    """An answer that is an option letter and nothing else: "A", "(B)", "C.", "Option D", "\\text{E}"
    (a capital A-E; a lower-case letter may be a variable or e)."""
    text = unwrap_text_commands(answer).strip().strip("$*` ")
    return _BARE_OPTION_LETTER_RE.fullmatch(text) is not None


def is_letter_gold(gold_text: str, kind: str) -> bool:
    """A gold that is one letter of either case ("C", "(d)"): a choice, or a name, never a value."""
    return re.fullmatch(r"\(?[A-Za-z]\)?", normalize(gold_text, kind)[0]) is not None


def option_value(option: str) -> str:
    """An option as a value to compare with: "$10 \\pi$" -> "10 \\pi", "(B) 17" -> "17"."""
    return strip_answer(_OPTION_LABEL_RE.sub("", option, count=1))


@lru_cache(maxsize=256)  # many outputs share a problem's gold
def gold_answer(gold: str, kind: str) -> str:
    """A gold that is a whole solution (GSM8K's '... #### 72', a boxed MATH solution) or a sentence
    that states its answer ("Answer is forty three.") -> its answer."""
    # a task gold is text to compare as written (it may contain the word "answer"), never a sentence to read
    stated = _FINAL_ANSWER_RE.search(gold) or (kind != "task" and _ANSWER_WORD_RE.search(gold))
    if "####" in gold or "\\boxed" in gold or "\\fbox" in gold or stated:
        ans = extract_answer(gold, kind)
        if ans is not None:
            return ans
        m = re.match(r"\s*\\boxed\s*\{", gold)
        if m:  # a gold box left open: its content is still the reference
            return strip_answer(gold[m.end() :])
    return strip_answer(gold)
