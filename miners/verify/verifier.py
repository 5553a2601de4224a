"""Verifier: an output and its gold in, a Verdict out -- correct, wrong, or unknown with its reason.

    from miners.verify import Verifier
    v = Verifier()
    v.verify("... The answer is \\\\boxed{\\\\dfrac{1}{2}}.", "0.5", "math")
    # Verdict("correct", "compared equal", "\\dfrac{1}{2}", ...)
    v.verify("Let me think about this step by step.", "7", "gsm8k")
    # Verdict("unknown", "no answer found", ...)
    v.stats  # Counter: how verdicts were reached

How a verdict is reached:
  1. extraction (miners.verify.extract over miners.verify.rules): the answer the output finally
     commits to, the rule that found it, and whether that form is strong. No answer: an empty output
     or an empty box is `wrong`; an output that loops (audits.loops) is `wrong`; one certainly cut
     off (inside a box, a code block, a display block, an environment or a brace group, on an
     operator or a word no sentence ends on, or in the middle of stating its answer) before any
     answer, or working that stops mid-sentence against a plain-number gold, is `wrong` only where
     it could not hold the right answer (miners.verify.stated: the gold's value stated nowhere in
     it), else `unknown` ("truncated after a possible answer"); otherwise `unknown`
     ("no answer found", or "ambiguous answer" when two rules of equal standing read differently at
     the same place).
  2. the fast path (miners.verify.fast) compares the answer with the gold when it is certain; when
     it cannot decide, math-verify compares the two spans (time-bounded); if that cannot decide
     either (a timeout, an unparsable expression, an error), `unknown` ("comparison undecided").
  3. a second opinion where the form is weak (a value read out of prose, a concluding sentence with
     no marker and no value set in bold): math-verify reads the whole output itself; where the two
     readings differ the verdict is `unknown` ("verifiers disagree") with both readings kept.
     Where math-verify cannot read the output, the weak reading is unconfirmed and the verdict is
     `unknown` ("weak form unconfirmed"); where its reading compared unequal and the output states
     the gold's value nowhere (a plain-number gold, or an output cut off), rule (b) makes it `wrong`
     (evidence.settle); two unequal readings of different values are `wrong` by rule (b) too.
  Where the verifier finds no committed answer, math-verify is not asked: its reading would be the
  output's last expression, and on the labelled corpora every such "correct" was wrong.
Strong forms the fast path decides never reach math-verify, which keeps throughput high. Each
Verifier counts how its verdicts were reached in `stats` (no module-level counters) and caches the
comparison per (answer, gold, kind), so many samples of one problem pay once per distinct answer.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from typing import NamedTuple

from audits.loops import may_end_in_loop, scan
from miners.verify import symbolic
from miners.verify.brackets import brace_pairs, closing_index
from miners.verify.compare import FormOpen, TooLarge
from miners.verify.evidence import CUT_WORDS, Commitment, gold_stated, numeric_gold, settle
from miners.verify.extract import cut_turn, read_answer
from miners.verify.fast import (
    choice_gold,
    choice_letters,
    choice_set,
    commas_as_thousands,
    dozens_counted,
    fast_compare,
    gold_answer,
    is_bare_option_letter,
    is_comma_grouped,
    is_letter_gold,
    localized,
    named_choice,
    option_value,
    other_grouping,
    word_against_number,
)
from miners.verify.normalize import normalize, split_top
from miners.verify.parse import CACHE_SIZE
from miners.verify.prose import without_closing_rating
from miners.verify.readable import (
    glued_signs,
    is_refusal,
    renamed_constants,
    states_no_value,
    undecidable_forms,
    words_only,
)
from miners.verify.rules import RULES_BY_NAME, option_labels
from miners.verify.types import (
    AMBIGUOUS,
    CORRECT,
    DISAGREE,
    EMPTY_ANSWER,
    EMPTY_OUTPUT,
    EQUAL,
    FAST,
    GOLD_ABSENT,
    GOLD_UNREADABLE,
    LOOPED,
    MATH_VERIFY,
    NO_ANSWER,
    OPTIONS_UNKNOWN,
    RUNAWAY,
    TRUNCATED,
    UNDECIDED,
    UNEQUAL,
    UNKNOWN,
    UNREADABLE,
    WEAK_UNCONFIRMED,
    WRONG,
    Extraction,
    Reading,
    Verdict,
)
from pairstore.errors import BadInput

KINDS = ("gsm8k", "math", "task")
MAX_ANSWER_CHARS = 2000  # longer "answers" are runaways; normalizing them could cost O(n^2)

# "**" that opens or closes bold text (the literal first, so the search looks for it)
_EMPHASIS_RE = re.compile(r"\*\*(?:(?=\S)|(?<=\S\*\*))")
# Extraction rules that read an output with no answer marker at all.
FALLBACK_RULES = ("short_output", "answer_first", "concluding_sentence")
# An output that ends on one of these was cut off mid-expression.
_DANGLING_END = ("+", "-", "*", "/", "=", "(", "[", "{", "^", "_", ",")


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise BadInput(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", field="kind")


# markup that closes what its line opened: "**", "__", "`" (a bold answer line ends on "**")
_CLOSING_MARKUP_RE = re.compile(r"(\*\*|__|\*|_|`)+$")


def _closing_markup_off(body: str) -> str:
    """body less the markup at its end that closes markup its last line opened ("**So 12.**" ends on
    "12.", not on an operator); unpaired markup stays (a lone "*" is a product cut off)."""
    if body.endswith("\n"):  # ("$" matches before a last newline too)
        m = _CLOSING_MARKUP_RE.search(body)
        start = -1 if m is None else m.start()
    else:  # the run of markup signs that ends it: where the regex's match starts, without a scan
        start = len(body.rstrip("*_`"))
        start = -1 if start == len(body) else start
    if start < 0:
        return body
    line = body[body.rfind("\n") + 1 : start]
    closing = body[start:].rstrip("\n")
    if line.count(closing) % 2 == 1 or (closing.startswith("**") and line.count("**") % 2 == 1):
        return body[:start].rstrip()
    return body


@lru_cache(maxsize=8)  # asked by the reading of a cut output and again by its verdict
def cut_point(text: str) -> int | None:
    """Where an output that stops inside something it opened begins its unfinished part, or None.

    Cut off: a \\boxed{ never closed (the cut is at the box), a code block never closed (at its
    opening fence), or a last line ending on an operator or an open bracket (at that line's start).
    Several: the earliest. (A sentence that merely lacks its full stop is not taken for truncation:
    too many finished outputs end that way.)"""
    body = cut_turn(text).rstrip()
    if not body:
        return None
    cuts = []
    last_box = max(body.rfind("\\boxed{"), body.rfind("\\fbox{"))
    if last_box >= 0 and closing_index(body, body.index("{", last_box)) < 0:
        cuts.append(last_box)
    if body.count("```") % 2 == 1:
        cuts.append(body.rfind("```"))
    if _closing_markup_off(body).endswith(_DANGLING_END):
        cuts.append(body.rfind("\n") + 1)
    cuts += _cut_in_tail(body)
    return min(cuts) if cuts else None


# Signs in the text itself that it stops mid-way, each at the end of the output (never a sign
# somewhere in its middle: a finished output may hold an unclosed group and go on to its answer).
# A last line ending on a word no finished sentence ends on (miners.verify.evidence.CUT_WORDS: a
# function word or a copula, "is", "the", "so"), with no full stop, is a sentence cut off mid-way.
# (lowercase words only: a last "A" may be an option letter, "As" a title)
_TAIL_CHARS = 400
_CUT_SENTENCE_WORDS = 3  # "x = a" is an answer; "Therefore, the range of" a sentence cut off
_COMMAND_BEFORE_RE = re.compile(r"\\[A-Za-z]+\s*$")


# a single "$" (not "$$", not an escaped "\\$") that opens math: a letter, a backslash or a bracket
# follows it ("so $Q", "$\\frac"); one before a digit may be a price ("costs $5")
_DOLLAR_RE = re.compile(r"(?<![\\$])\$(?!\$)")
_OPENS_MATH_RE = re.compile(r"[A-Za-z\\({\[]")


def _inline_math_open(body: str, line_start: int) -> list[int]:
    """Where inline math opened on the last line and never closed begins: a "\\(" after the line's
    last "\\)", or the last of an odd number of "$" signs where it opens math ("so $Q")."""
    line = body[line_start:]
    if len(line) > _TAIL_CHARS:
        return []
    opened = line.rfind("\\(")
    if opened > line.rfind("\\)"):
        return [line_start + opened]
    dollars = [m.start() for m in _DOLLAR_RE.finditer(line)]
    if len(dollars) % 2 == 1 and _OPENS_MATH_RE.match(line, dollars[-1] + 1):
        return [line_start + dollars[-1]]
    return []


def _cut_in_tail(body: str) -> list[int]:
    """Where the output's unfinished end begins, for each sign that it was cut off there: a math
    environment, a display block (\\[ or $$), inline math on the last line (\\( or $) or a brace
    group opened near the end and never closed, a last line ending on a word no sentence ends on
    ("Therefore, the range of"), or a character cut in half (U+FFFD)."""
    cuts = []
    tail_start = max(0, len(body) - _TAIL_CHARS)
    line_start = body.rfind("\n") + 1

    def open_to_the_end(opened: int) -> bool:  # opened near the end, no new paragraph after it
        return opened >= tail_start and "\n\n" not in body[opened:]

    begin, end = body.rfind("\\begin{"), body.rfind("\\end{")
    if begin > end and open_to_the_end(begin):
        cuts.append(begin)
    opened, closed = body.rfind("\\["), body.rfind("\\]")
    if opened > closed and open_to_the_end(opened):
        cuts.append(opened)
    if body.count("$$") % 2 == 1 and open_to_the_end(body.rfind("$$")):
        cuts.append(body.rfind("$$"))
    if body.rfind("{") >= line_start and closing_index(body, body.rfind("{")) < 0:
        pairs = brace_pairs(body, line_start)
        first_open = next(
            (i for i in range(line_start, len(body)) if body[i] == "{" and i not in pairs), None
        )
        if first_open is not None:  # (None: the last "{" was an escaped one)
            # (a window: a search from the line's start would try every character of a long line)
            window = max(line_start, first_open - 40)
            command = _COMMAND_BEFORE_RE.search(body, window, first_open)
            cuts.append(command.start() if command else first_open)  # at "\\mathrm{ga", not the line
    cuts += _inline_math_open(body, line_start)
    last_words = body[max(line_start, len(body) - 200) :].split()[-_CUT_SENTENCE_WORDS:]
    last_word = last_words[-1] if last_words else ""
    whole_line = body[line_start:] if len(body) - line_start <= 200 else None
    sentence = whole_line is None or len(whole_line.split()) >= _CUT_SENTENCE_WORDS
    if sentence and last_word in CUT_WORDS or body.endswith("\ufffd"):
        cuts.append(line_start)
    return cuts


def truncated(text: str) -> bool:
    """The output stops inside something it opened (cut_point)."""
    return cut_point(text) is not None


# A last sentence that only announces a check or a program ("Let's confirm this with a simple Python
# code.", "Now, let's write the Python code to confirm this calculation:", "Let's correct the code:").
_CODE_ANNOUNCED_RE = re.compile(
    r"(?i)(?:^|\n|(?<=[.!?:])[ \t]+)[ \t*_#>-]*(?:(?:now|next|finally|then)[ \t]*,?[ \t]*)?"
    r"(?:let'?s|let\s+us|we\s+(?:can|will|could|should)|we'll|i\s+(?:will|can)|i'll)\b"
    r"[^\n.!?]{0,120}\b(?:confirm|verify|double[- ]check|check|code|python|program|script)\b"
    r"[^\n.!?]{0,120}[.!:]?[ \t]*$"
)
_CLOSED_BLOCK_END_RE = re.compile(r"```[^`]*```\s*$")


def before_cut(text: str, cut: int) -> tuple[str, bool]:
    """(the text before the cut that commits to the answer, whether a program or a check of the result
    followed the working there).

    What follows the working and commits to nothing new is dropped from its end, repeatedly: closed
    code blocks (a program and its printed output) and a sentence that announces one or a check
    ("Let's confirm this with Python code."). The answer is then read from what is left, by the
    same rules as a finished output."""
    head = cut_turn(text).rstrip()[:cut].rstrip()
    dropped = False
    for _ in range(8):  # a few program/output/announcement rounds; more is a loop, not working
        m = _CLOSED_BLOCK_END_RE.search(head) if head.endswith("```") else None
        if m is None:
            m = _CODE_ANNOUNCED_RE.search(head, max(0, len(head) - 300))
        if m is None:
            break
        head = head[: m.start()].rstrip()
        dropped = True
    return head, dropped


def looped(text: str) -> bool:
    """The repetition scanner (audits.loops) finds the output ending in a loop or looping without end
    (asked only where a loop may be there: one text's scan costs more than most verdicts)."""
    if not may_end_in_loop(text):
        return False
    report = scan(text)
    return bool(report.tail_loop or report.catastrophic)


class Comparison(NamedTuple):
    """An extracted answer compared with the gold: the label, math-verify's reading of the two spans
    where the fast path could not decide (None where it did), and the gold a second opinion compares
    with (the gold letter's option where the answer was a value against a letter gold; else None)."""

    label: str
    span_reading: Reading | None
    reason: str | None = None  # an unknown's reason where it is not UNDECIDED
    gold_value: str | None = None


Options = tuple[str, ...]


class Verifier:
    """verify(output, gold, kind) -> Verdict; `stats` counts how each verdict was reached."""

    def __init__(self, second_opinion: bool = True):
        self.second_opinion = second_opinion
        self.stats: Counter = Counter()
        self._compared: dict[tuple[str, str, str, Options], Comparison] = {}

    # -- the comparison of an extracted answer, cached ------------------------------------------------

    def compare(self, answer: str, gold: str, kind: str, options: Options = ()) -> Comparison:
        """An extracted answer against a gold answer (cached per (answer, gold, kind, options))."""
        key = (answer, gold, kind, options)
        got = self._compared.get(key)
        if got is None:
            got = self._compare(answer, gold, kind, options)
            if len(self._compared) >= CACHE_SIZE:
                self._compared.clear()
            self._compared[key] = got
        else:
            self.stats["cache hits"] += 1
        return got

    def _compare(self, answer: str, gold: str, kind: str, options: Options) -> Comparison:
        letters = choice_letters(options)
        gold_set = choice_set(gold, letters) if options and kind != "task" else None
        if gold_set is not None:
            # a multiple-select gold ("ACD"): the answer's letters as a set, whatever separates them
            named = named_choice(answer, kind, letters)
            chosen = choice_set(answer, letters) or (frozenset(named) if named else None)
            if chosen is not None:
                self.stats["fast path decided"] += 1
                return Comparison(CORRECT if chosen == gold_set else WRONG, None)
        letter = choice_gold(gold, kind, letters)
        if letter is not None:
            named = named_choice(answer, kind, letters)
            if named is None:
                return self._compare_with_options(answer, letter, kind, options)
            if options:  # a letter among the problem's own
                self.stats["fast path decided"] += 1
                return Comparison(CORRECT if named == letter else WRONG, None)
        elif (
            not options
            and kind != "task"
            and is_bare_option_letter(answer)
            and not is_letter_gold(gold, kind)
        ):
            # "Answer: A" for a question asked without options, against a value: the letter names an
            # option nobody gave, so what it stands for cannot be read -- unequal would be a guess
            self.stats["option letter without options"] += 1
            return Comparison(UNKNOWN, None, OPTIONS_UNKNOWN)
        if kind != "task" and (glued_signs(answer) or glued_signs(gold)):
            # braces lost ("\\beginpmatrix1\\\\2\\endpmatrix", "\\frac125"): any reading is a guess
            self.stats["glued span"] += 1
            return Comparison(UNKNOWN, None, UNREADABLE)
        try:
            fast = fast_compare(answer, gold, kind)
        except FormOpen:
            self.stats["fast path: forms open"] += 1
            return Comparison(UNKNOWN, None)
        except TooLarge:
            self.stats["fast path: too large"] += 1
            return Comparison(UNKNOWN, None)
        except Exception:  # a bug or an input nobody foresaw: undecided and counted, never a silent verdict
            self.stats["fast path exceptions"] += 1
            fast = None
        if fast is False and kind != "task" and self._fast_equal(dozens_counted(answer), gold, kind):
            # "20 dozens" against 240: the things counted, twelve to the dozen (read as 20 dozens, the
            # count, it was unequal); which of the two the question asks for, the answer cannot say
            self.stats["dozens read as the things counted"] += 1
            return Comparison(CORRECT, None)
        if (
            fast is False
            and kind == "math"
            and is_comma_grouped(gold)
            and self._fast_equal(commas_as_thousands(answer), gold, kind)
        ):
            # the gold is a numeral grouped by commas ("3,544"): the task writes thousands so, and
            # the answer's commas before groups of three read the same way ("5,000 - 1,456 = 3,544")
            self.stats["commas group thousands as the gold's do"] += 1
            return Comparison(CORRECT, None)
        if fast is False and kind != "task" and self._other_grouping_equal(answer, gold, kind):
            # "1.000" against 1000, "2,500" against 2.5: equal in the other convention of grouping
            # digits, and nothing in the answer says which one it uses
            self.stats["digit grouping ambiguous"] += 1
            return Comparison(UNKNOWN, None, AMBIGUOUS)
        if fast is False and kind != "task" and states_no_value(gold, answer):
            # "all 1" or "just B" against a matrix: a description against a value, nothing compared
            self.stats["gold in words"] += 1
            return Comparison(UNKNOWN, None, GOLD_UNREADABLE)
        if fast is False and kind != "task" and undecidable_forms(gold, answer):
            # constants named differently: equal under a renaming of them is the same solution; unequal
            # under every one is still open (a general solution may be written with other constants)
            if any(self._fast_equal(renamed, gold, kind) for renamed in renamed_constants(gold, answer)):
                self.stats["equal once constants are renamed"] += 1
                return Comparison(CORRECT, None)
            self.stats["forms compared, not values"] += 1
            return Comparison(UNKNOWN, None, UNDECIDED)
        if fast is not None:
            self.stats["fast path decided"] += 1
            return Comparison(CORRECT if fast else WRONG, None)
        self.stats["fast path undecided"] += 1
        if kind == "task" or word_against_number(normalize(answer, kind)[0], normalize(gold, kind)[0]):
            # task golds are plain strings and numbers: nothing for sympy to add
            return Comparison(UNKNOWN, None)
        if words_only(answer):
            # words against a gold the fast path cannot decide: math-verify would read letters as
            # symbols, a reading refused anyway; it is not asked
            self.stats["unread: words, math-verify not asked"] += 1
            return Comparison(UNKNOWN, None, UNREADABLE)
        span, unread = symbolic.span_compare(answer, gold, self.stats)
        label = UNKNOWN if span is None else CORRECT if span else WRONG
        if label == WRONG and states_no_value(gold, answer):
            return Comparison(UNKNOWN, Reading(MATH_VERIFY, label, answer), GOLD_UNREADABLE)
        return Comparison(label, Reading(MATH_VERIFY, label, answer), UNREADABLE if unread else None)

    def _compare_with_options(self, answer: str, letter: str, kind: str, options: Options) -> Comparison:
        """A value against a letter gold ("18" against "D"): the answer is the option whose value it
        equals. Equal to the gold letter's option (and certainly to no other) is correct; unequal to
        it, or (where that cannot be decided) equal to another option, is wrong; without the options,
        or where no comparison decides, unknown."""
        index = ord(letter) - ord("A")
        if index >= len(options):
            self.stats["choice value without options"] += 1
            return Comparison(UNKNOWN, None, OPTIONS_UNKNOWN)
        values = [option_value(o) for o in options]
        gold_value = values[index]
        if not gold_value:
            return Comparison(UNKNOWN, None, None, gold_value)
        # the gold letter's option first: unequal to it decides, and sympy is asked about the others
        # only where that comparison could not decide (a problem may have ten options)
        own = self.compare(answer, gold_value, kind).label
        if own == WRONG:
            return Comparison(WRONG, None, None, gold_value)
        others = [v for k, v in enumerate(values) if k != index and v]
        if own == CORRECT:
            # another option the answer is certainly equal to as well: which letter it means is open
            if any(self._fast_equal(answer, v, kind) for v in others):
                return Comparison(UNKNOWN, None, OPTIONS_UNKNOWN, gold_value)
            return Comparison(CORRECT, None, None, gold_value)
        if any(self.compare(answer, v, kind).label == CORRECT for v in others):
            return Comparison(WRONG, None, None, gold_value)
        return Comparison(UNKNOWN, None, None, gold_value)

    def _other_grouping_equal(self, answer: str, gold: str, kind: str) -> bool:
        # "5,000 - 1,456 = 3,544" against 3544: unequal as a list, equal with thousands marks
        return self._fast_equal(other_grouping(answer), gold, kind) or (
            kind == "math" and self._fast_equal(commas_as_thousands(answer), gold, kind)
        )

    def _same_statement(self, theirs: str, ours: str, kind: str) -> bool:
        """math-verify's reading is ours, or one value of ours where ours lists several ("19/8" of
        "5/4, 19/8, 19/8": its reading of a list is the last value)."""
        if self._fast_equal(theirs, ours, kind):
            return True
        items = split_top(normalize(ours, kind)[0], (",", ";"))
        return len(items) > 1 and any(self._fast_equal(theirs, item, kind) for item in items)

    def _fast_equal(self, answer: str | None, gold: str, kind: str) -> bool:
        """The fast path says equal; False for no answer (None: a reading that does not apply)."""
        if answer is None:
            return False
        try:
            return fast_compare(answer, gold, kind) is True
        except Exception:
            self.stats["fast path exceptions"] += 1
            return False

    # -- the verdict ----------------------------------------------------------------------------------

    def verify(
        self,
        output: str | None,
        gold: str | None,
        kind: str = "math",
        *,
        looped: bool | None = None,
        options: list[str] | tuple[str, ...] | None = None,
    ) -> Verdict:
        """The verdict on one output. `looped`: the caller's repetition-scanner finding, when it has
        scanned the output already (the miners do); otherwise the scanner runs here when needed.
        `options`: a multiple-choice problem's options in letter order (A first), where known: an
        answer that states an option's value instead of its letter is read as that option.

        What the readings propose, the property grants or turns into unknown
        (miners.verify.evidence.settle): every verdict returned here has passed it."""
        check_kind(kind)
        if gold is None or not str(gold).strip():
            return self._count(Verdict(UNKNOWN, UNDECIDED))
        if output is None:
            output = ""
        opts = tuple(str(o) for o in options or ())
        try:
            gold_text = gold_answer(gold, kind)
        except Exception:  # counted: a gold its reader fails on is no reference to call anything wrong by
            self.stats["gold exceptions"] += 1
            return self._count(Verdict(UNKNOWN, GOLD_UNREADABLE))
        proposed, commitment, gold_value = self._propose(output, gold_text, kind, looped, opts)
        cut_off = proposed.label == UNKNOWN and cut_point(output) is not None
        if gold_value is None and opts:  # a letter gold's option: its value may be what is stated
            letter = choice_gold(gold_text, kind, choice_letters(opts))
            if letter is not None and ord(letter) - ord("A") < len(opts):
                gold_value = option_value(opts[ord(letter) - ord("A")]) or None
        settled = settle(proposed, output, gold_text, kind, commitment, gold_value, cut_off=cut_off)
        if settled.label != proposed.label:
            self.stats[f"property: {proposed.label} -> {settled.label}: {settled.reason}"] += 1
        return self._count(settled)

    def _propose(
        self, output: str, gold_text: str, kind: str, looped: bool | None, opts: Options
    ) -> tuple[Verdict, Commitment | None, str | None]:
        """(the verdict the readings propose, the commitment it rests on, the gold letter's option
        where the answer was a value against a letter gold)."""
        extraction = self._read(output, kind)
        text = output
        after_cut = False
        if (extraction.answer is None and extraction.missing == NO_ANSWER) or (
            extraction.rule in FALLBACK_RULES
        ):
            # Cut off: what the text before the cut committed to is the answer (convention 4); a
            # sentence read past the cut, or nothing at all, is not.
            cut = cut_point(output)
            if cut is not None:
                text, code_followed = before_cut(output, cut)
                extraction = (
                    self._read(text, kind, whole=False)
                    if text.strip()
                    else Extraction(None, missing=NO_ANSWER)
                )
                if extraction.answer is None:
                    if code_followed:  # the working was done and a program followed it: no reading
                        return Verdict(UNKNOWN, NO_ANSWER), None, None
                    return Verdict(WRONG, TRUNCATED), None, None
                self.stats["read before a cut"] += 1
                extraction = replace(extraction, strong=False)  # read from a cut-off text: confirm it
                # read with no marker out of the working the cut broke off (no check or program was
                # announced after a conclusion): the last value written, no final commitment
                after_cut = extraction.rule in FALLBACK_RULES and not code_followed
        if (
            extraction.answer is not None
            and kind != "task"
            and is_refusal(extraction.answer)
            and numeric_gold(gold_text) is not None
        ):
            # "cannot be determined", "I don't know": no value committed (convention 6), so against
            # a number rule (b) decides: wrong where the output never writes the gold
            self.stats["refusal"] += 1
            extraction = Extraction(None, missing=NO_ANSWER)
        if extraction.answer is None:
            return self._without_answer(output, gold_text, kind, extraction, looped), None, None
        answer = extraction.answer
        commitment = Commitment(
            answer, text, extraction.start, extraction.end, extraction.span_text, after_cut=after_cut
        )
        option_gold = None  # the chosen letter's option, where an answer named it by label
        span_text = extraction.span_text
        letter = choice_gold(gold_text, kind, choice_letters(opts)) if span_text else None
        choices, listed = option_labels(span_text) if span_text and letter is not None else ((), False)
        if choices:
            # a letter gold and an answer that names its option by label ("D) 3.85 miles",
            # "closest to option E) $78.20"): the letter is the choice, the value a restatement
            if listed and len(choices) > 1:
                # "(B) and (D)" against one letter: an extra option is not the answer (convention 5)
                fast = Reading(FAST, WRONG, answer)
                return Verdict(WRONG, UNEQUAL, answer, extraction.rule, (fast,)), commitment, None
            if len(choices) > 1:  # several letters in prose: which one is meant is open
                return Verdict(UNKNOWN, AMBIGUOUS, answer, extraction.rule), None, None
            answer = choices[0]
            commitment = replace(commitment, answer=answer)
            if extraction.rule is not None and extraction.rule not in FALLBACK_RULES:
                # a marker's sentence that names one option by label chose nothing out of it: the
                # numbers after the label restate the option ("A)1 hour and 31 minutes")
                extraction = replace(extraction, strong=RULES_BY_NAME[extraction.rule].strong)
            index = ord(answer) - ord("A")
            if index < len(opts):
                option_gold = option_value(opts[index]) or None
        if len(answer) > MAX_ANSWER_CHARS or len(gold_text) > MAX_ANSWER_CHARS:
            return Verdict(UNKNOWN, RUNAWAY, answer[:200], extraction.rule), None, None
        if kind != "task" and extraction.language is not None:
            # a numeral read with the marks of the language whose marker committed to it ("1.234")
            answer = localized(answer, extraction.language, text) or answer
        label, span_reading, unknown_reason, gold_value = self.compare(answer, gold_text, kind, opts)
        fast = Reading(FAST, label if span_reading is None else UNKNOWN, answer)
        readings = (fast,) if span_reading is None else (fast, span_reading)
        if label == UNKNOWN:
            reason = unknown_reason or UNDECIDED
            return Verdict(UNKNOWN, reason, answer, extraction.rule, readings), None, None
        reason = EQUAL if label == CORRECT else UNEQUAL
        if extraction.strong or kind == "task" or not self.second_opinion:
            return Verdict(label, reason, answer, extraction.rule, readings), commitment, gold_value
        # a weak form: math-verify reads the whole output on its own
        mv_gold = gold_value or gold_text
        # (a closing rating of the answer is no part of what it reads: its number would be the last)
        # and its reading of a bold value is not its reading of a value: markdown emphasis is no math
        mv_text = _EMPHASIS_RE.sub("", without_closing_rating(cut_turn(text)))
        mv_label, mv_answer = symbolic.output_reading(mv_text, mv_gold, self.stats, (answer, label), kind)
        if option_gold is not None and mv_label != label:
            # math-verify knows no options: an output that names option E and ends on E's value
            # ("closest to option E) $78.20") agrees with E when that value is what it reads
            by_value = symbolic.output_reading(mv_text, option_gold, self.stats, None, kind)
            if by_value[0] == label == CORRECT:
                mv_label, mv_answer = by_value
        readings = (*readings, Reading(MATH_VERIFY, mv_label, mv_answer))
        if (
            mv_label == label == WRONG
            and not (mv_answer and self._same_statement(mv_answer, option_gold or answer, kind))
            and gold_stated(output, mv_gold, kind)
        ):
            # both unequal to the gold but not the same value: neither confirms the other, and the
            # output states the gold's value somewhere (where it states it nowhere, rule (b) holds)
            self.stats["second opinion read another value"] += 1
            return Verdict(UNKNOWN, DISAGREE, answer, extraction.rule, readings), None, None
        if mv_label == label:
            self.stats["second opinion agreed"] += 1
            return Verdict(label, reason, answer, extraction.rule, readings), commitment, gold_value
        if mv_label == UNKNOWN:
            # nothing confirms a reading that was a choice: "He had seven apples and ate two, so five
            # are left." reads 7 -- either way round a misread would be a training label
            self.stats["second opinion unread"] += 1
            return Verdict(UNKNOWN, WEAK_UNCONFIRMED, answer, extraction.rule, readings), None, None
        self.stats["second opinion disagreed"] += 1
        return Verdict(UNKNOWN, DISAGREE, answer, extraction.rule, readings), None, None

    def _read(self, text: str, kind: str, whole: bool = True) -> Extraction:
        try:
            return read_answer(text, kind, whole)
        except Exception:  # no span: as if none were found, and counted
            self.stats["extraction exceptions"] += 1
            return Extraction(None, missing=NO_ANSWER)

    def verify_answer(
        self, answer: str, gold: str, kind: str = "math", options: list[str] | tuple[str, ...] | None = None
    ) -> Verdict:
        """The verdict on an answer already extracted (no output around it: no second opinion)."""
        check_kind(kind)
        try:
            gold_text = gold_answer(gold, kind)
        except Exception:
            self.stats["gold exceptions"] += 1
            return self._count(Verdict(UNKNOWN, GOLD_UNREADABLE, answer))
        answer = answer or ""
        if not answer.strip():
            return self._count(settle(Verdict(WRONG, EMPTY_ANSWER, answer), answer, gold_text, kind))
        if len(answer) > MAX_ANSWER_CHARS or len(gold_text) > MAX_ANSWER_CHARS:
            return self._count(Verdict(UNKNOWN, RUNAWAY, answer[:200]))
        opts = tuple(str(o) for o in options or ())
        label, span_reading, unknown_reason, gold_value = self.compare(answer, gold_text, kind, opts)
        fast = Reading(FAST, label if span_reading is None else UNKNOWN, answer)
        readings = (fast,) if span_reading is None else (fast, span_reading)
        if label == UNKNOWN:
            reason = unknown_reason or UNDECIDED
        else:
            reason = EQUAL if label == CORRECT else UNEQUAL
        commitment = Commitment(answer, answer, 0, len(answer), answer)
        proposed = Verdict(label, reason, answer, None, readings)
        return self._count(settle(proposed, answer, gold_text, kind, commitment, gold_value))

    def _without_answer(
        self, output: str, gold_text: str, kind: str, extraction: Extraction, loop_seen: bool | None
    ) -> Verdict:
        if extraction.missing == EMPTY_OUTPUT:
            return Verdict(WRONG, EMPTY_OUTPUT)
        if extraction.missing == EMPTY_ANSWER:
            return Verdict(WRONG, EMPTY_ANSWER, "", extraction.rule)
        if extraction.missing == TRUNCATED:  # a statement of the answer cut off, nothing before it
            return Verdict(WRONG, TRUNCATED, None, extraction.rule)
        reason = AMBIGUOUS if extraction.missing == AMBIGUOUS else NO_ANSWER
        if reason == NO_ANSWER and (looped(output) if loop_seen is None else loop_seen):
            return Verdict(WRONG, LOOPED)
        if reason == NO_ANSWER and kind != "task" and numeric_gold(gold_text) is not None:
            # no answer committed, against a plain-number gold: wrong where the output writes that
            # number nowhere (rule (b): no reading of it can hold the right answer), else unknown
            return Verdict(WRONG, GOLD_ABSENT)
        # math-verify is not asked here: with no committed answer its reading is the output's last
        # expression, and on the labelled corpora every "correct" it gave such an output was wrong
        return Verdict(UNKNOWN, reason, None, extraction.rule)

    def _count(self, verdict: Verdict) -> Verdict:
        self.stats[f"{verdict.label}: {verdict.reason}"] += 1
        return verdict

    def clear_cache(self) -> None:
        self._compared.clear()
