"""Answer extraction for miners.verify: the final answer a model's whole output commits to.

    from miners.verify.extract import extract_answer
    extract_answer("... so 3 + 3 = 6.\\nThe answer is 6.\\n\\nQuestion: Tom has ...", "gsm8k")   # -> "6"
    extract_answer("\\\\boxed{1} and \\\\boxed{2} and \\\\boxed{3}", "math")  # -> "1, 2, 3"
    extract_answer("<think>...</think> <answer> The positive number is 12. </answer>", "math")  # -> "12"

The final answer is what the output finally commits to (the labelling conventions in
bench/data/README.md):
  1. the turn is cut first: at a chat-template token (<|im_start|>, <|eot_id|>, </s>, ...) or an
     invented "User:"/"Human:" line, and, once an answer has been given, at a hallucinated new
     question ("Question:", "Q:", "Now it's your turn", "New question:", ...); an output that
     closes a reasoning block (</think>) is read after it, where a span rule finds an answer there
     (the block is working: its boxes and questions are no rivals of the reply's answer);
  2. answer spans, each found by a named rule (miners.verify.rules): \\\\boxed{} / \\\\fbox{} /
     \\\\boxed 5 (boxes side by side, joined only by "and", commas or spacing, form one answer),
     <answer>...</answer>, "Final answer: X", "The answer is X" (also "the answer (arabic numerals)
     is" with the value on a later line), "Answer: X", "A: X", "#### X", unboxed math right after
     "Answer" ($ ... $, $$ ... $$, \\\\[ ... \\\\], \\\\( ... \\\\)), a JSON field "answer": "X", "the
     correct option is X", and the answer markers of other languages (miners.verify.markers:
     "【答案】C", "答案是 C", "Ответ: 12", "## Antwort" with the value below);
  3. the span that starts last wins (a self-correction, or the answer after a repetition loop); at
     an equal start the rule of higher priority, and two of equal priority that read differently
     there make the extraction ambiguous. A marker at the very end with nothing after it ("... the
     final answer is") was cut off: it commits to nothing, and the span before it counts (with none
     before it the output was cut before any answer). A loop that repeats one answer statement
     after a different answer leaves which one it commits to open (ambiguous);
  4. a span in prose ("The largest $n$ is 34.", "Jake has 7 peaches.", "two hundred four dollars")
     is reduced to its value (miners.verify.prose: bold, else what follows the last "is"/"="/":",
     else the first value);
  5. with no span at all: a short one-line output is its own answer (unless it loops), and a
     concluding last sentence ("Therefore, ..."/"So ..."/"因此...") or a display block after a colon
     is read as in 4.
An empty box, an unclosed one, or an answer tag holding nothing commits to nothing (None).
read_answer says which rule read the answer, whether that form is strong (a value chosen out of a
sentence that offered several is weak: the verifier asks math-verify), the option letters the
answer names by label ("D) 3.85 miles"), or why there is no answer.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from miners.verify.lowered import lowered
from miners.verify.markers import EXPLANATION_WORDS
from miners.verify.normalize import NUMERAL, ascii_forms, normalize
from miners.verify.prose import (
    PARAGRAPH_BREAK_RE,
    concluding,
    emphasized_value,
    is_prose,
    last_sentences,
    looping,
    number_word_runs,
    prose_value,
    without_closing_rating,
)
from miners.verify.readable import WORD_RE
from miners.verify.rules import RULES_BY_NAME, Span, find_spans, strip_answer
from miners.verify.selfrating import is_self_rating, might_rate
from miners.verify.types import AMBIGUOUS, EMPTY_ANSWER, EMPTY_OUTPUT, NO_ANSWER, TRUNCATED, Extraction

__all__ = ["cut_turn", "extract_answer", "read_answer", "strip_answer"]

# What may stand between boxes that together form one answer: spacing, math delimiters, \text{and},
# punctuation, a label ("y_2 ="), and a few words if a conjunction is among them.
_JOIN_DROP_RE = re.compile(
    r"\\(?:quad|qquad|text|textbf|mathrm|mbox)\b|\\[,;:! ]|\\[()\[\]]|[${}~]|"
    r"[a-zA-Z](?:_\{?\w+\}?)?\s*="
)
_JOIN_WORDS_RE = re.compile(r"[A-Za-z]+")

# ------------------------------------------------------------------------------------- the turn

# A chat-template token ends the assistant's turn wherever it appears.
_TURN_END_RE = re.compile(
    r"<\|(?:im_start|im_end|user|endoftext|eot_id|eom_id|start_header_id|end)\|>|</s>|\[INST\]"
)
# An invented role line: what follows is a conversation the model made up (the user's role, after the
# assistant's own role word too: "Assistant: User: ...").
_ROLE_LINE = (
    r"[ \t>*_#]*(?:(?:assistant|system|model|ai|bot)[ \t*_]*[:：][ \t*_]*)?"
    r"(?:user|human|humanbrain)[ \t*_]*[:：]"
)
_ROLE_RE = re.compile(r"(?m)^" + _ROLE_LINE, re.I)
# the same lines past the first character, found after their newline (a literal the regex engine
# searches for; "^" is tried at every character): the role line starts one past the match
_ROLE_AFTER_NEWLINE_RE = re.compile(r"\n(?i:" + _ROLE_LINE + ")")
# A new question the model invents after it has answered. Only cut when an answer precedes it: a line
# that opens with a question's label, or a phrase that hands the turn over anywhere. Declared once
# here; _FOLLOWUP_RE is the definition, followup_starts the fast path (tests hold them equal).
_FOLLOWUP_LINE = (
    r"[ \t>*_#]*(?:question|q|problem|instruction|exercise|new\s+problem|new\s+question|"
    r"follow[- ]up(?:\s+question)?)[ \t*_]*(?:\d+[ \t]*)?[:：.]"
)
_FOLLOWUP_PHRASES = (
    r"now\s+(?:it'?s|is)\s+your\s+turn",
    r"your\s+turn\s*[:!.]",
    r"here\s+is\s+a\s+new\s+question",
    r"can\s+you\s+now\s+solve",
    r"now\s+solve\s+the\s+(?:following\s+)?(?:question|problem)",
    r"please\s+answer\s+this\s+question",
)
_FOLLOWUP_RE = re.compile(r"(?im)^" + _FOLLOWUP_LINE + r"|\b(?:" + "|".join(_FOLLOWUP_PHRASES) + ")")
# The fast path's two searches, each with a prefix the regex engine scans for instead of trying the
# whole pattern at every character (a long reasoning output paid milliseconds for the one above):
# the line form after its newline, and each phrase from its first letter.
_FOLLOWUP_LINE_RE = re.compile(r"\n(?i:" + _FOLLOWUP_LINE + ")")
_FOLLOWUP_FIRST_LINE_RE = re.compile(r"(?i:" + _FOLLOWUP_LINE + ")")
_FIRST_LETTERS = "".join(sorted({p[0] for p in _FOLLOWUP_PHRASES}))
_FOLLOWUP_PHRASE_RE = re.compile(
    rf"(?i:[{_FIRST_LETTERS}])(?<=\b[{_FIRST_LETTERS}{_FIRST_LETTERS.upper()}])(?:"
    + "|".join(rf"(?<=[{p[0]}{p[0].upper()}])(?i:{p[1:]})" for p in _FOLLOWUP_PHRASES)
    + ")"
)


def _next_line_followup(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of the first line-form follow-up at or after pos (its start is the line's)."""
    if pos == 0:
        m = _FOLLOWUP_FIRST_LINE_RE.match(text)
        if m is not None:
            return m.start(), m.end()
    m = _FOLLOWUP_LINE_RE.search(text, max(0, pos - 1))
    return None if m is None else (m.start() + 1, m.end())


def _next_phrase_followup(text: str, pos: int) -> tuple[int, int] | None:
    m = _FOLLOWUP_PHRASE_RE.search(text, pos)
    return None if m is None else (m.start(), m.end())


def followup_starts(text: str, pos: int = 0) -> list[int]:
    """[m.start() for m in _FOLLOWUP_RE.finditer(text, pos)], found by two prefix searches merged as
    the alternation does: the leftmost match, the line form first where both start at one place, the
    next search from its end."""
    out: list[int] = []
    line, phrase = _next_line_followup(text, pos), _next_phrase_followup(text, pos)
    while line is not None or phrase is not None:
        if line is not None and (phrase is None or line[0] <= phrase[0]):
            start, end = line
        else:
            assert phrase is not None
            start, end = phrase
        out.append(start)
        if line is not None and line[0] < end:
            line = _next_line_followup(text, end)
        if phrase is not None and phrase[0] < end:
            phrase = _next_phrase_followup(text, end)
    return out


# words one of which any follow-up marker contains (a cheap test before the regex)
_FOLLOWUP_HINTS = ("question", "\nq", "problem", "instruction", "exercise", "follow", "turn", "solve")
# a line that opens an answer turn of the few-shot format ("A: ...")
_A_TURN_RE = re.compile(r"(?m)^[ \t]*A[ \t]*:")


# the problem a prompt states after its answer format, as the model echoes the prompt
_PROBLEM_RE = re.compile(r"(?i)[ \t\r\n>*_#]*(?:problem|question|题目|问题|題目|問題)[ \t*_]*[:：]")


# an instruction that asks for a box, up to the box: "put your final answer within \\boxed{}", "write
# the answer in \\boxed{}", "请将最终答案放在\\boxed{}中"
_BOX_INSTRUCTION_RE = re.compile(
    r"(?i)(?:\b(?:put|write|place|present|enclose|give|wrap|format|mark)\b[^\n.]{0,60}?\b(?:with)?in"
    r"|放在|写在|置于|放入)[ \t*_`$]*$"
)


def _echoed_format(text: str, span: Span) -> bool:
    """A span that states nothing and is the prompt's answer format, echoed with the prompt, no answer
    the reply left empty: one right before the problem's heading ("#### <number>\n\nProblem:\n..."),
    or an empty box an instruction asks for ("put your final answer within \\boxed{}")."""
    if strip_answer(span.text):
        return False
    if _PROBLEM_RE.match(text, span.end) is not None:
        return True
    return (
        span.rule == "boxed"
        and _BOX_INSTRUCTION_RE.search(text, max(0, span.start - 100), span.start) is not None
    )


def _invented_turn(text: str, cands: list[Span]) -> int | None:
    """Where a turn the model invents after it committed to an answer begins, or None: a new question
    ("Question:", "Q:", "Now it's your turn", ...), or, in an output whose own turn opens with "A:"
    (the few-shot format), a later line opening with "A:" after a marker, a box or a `####` stated
    the answer ("The answer is 3.\n\nA: If there are 1"). A span that states nothing commits to
    nothing: the prompt's format echoed ("#### <number>") and the problem it goes on with ("Problem:
    ...") are no answer and no invented question."""
    first_end = min(c.end for c in cands)
    low = lowered(text)
    starts: list[tuple[int, bool]] = []  # (where, whether only a marker's answer counts before it)
    if low.startswith("q") or any(h in low for h in _FOLLOWUP_HINTS):
        starts += [(at, False) for at in followup_starts(text, first_end)]
    if _A_TURN_RE.match(text.lstrip()):
        starts += [(m.start(), True) for m in _A_TURN_RE.finditer(text, first_end)]
    for at, marked in sorted(starts):
        if any(c.end <= at and (not marked or c.rule != "a_line") and strip_answer(c.text) for c in cands):
            return at
    return None


def _joins(gap: str) -> bool:
    """Whether the text between two boxes keeps them one answer ("\\quad\\text{and}\\quad", ", ")."""
    rest = _JOIN_DROP_RE.sub(" ", gap)
    if len(rest) > 60 or "\n\n" in gap.strip():
        return False
    words = [w.lower() for w in _JOIN_WORDS_RE.findall(rest)]
    if not words:
        return not re.search(r"[.!?]\s", rest + " ")
    return len(words) <= 5 and bool({"and", "or"} & set(words)) or ("," in rest and len(words) <= 2)


def _grouped_boxes(text: str, cands: list[Span], last: int) -> str | None:
    """The boxes side by side that end with cands[last], joined as one answer ("1, 2, 3")."""
    group = [cands[last]]
    j = last - 1
    while j >= 0 and cands[j].rule == "boxed":
        prev, cur = cands[j], group[0]
        if prev.end > cur.start or not _joins(text[prev.end : cur.start]):
            break
        group.insert(0, prev)
        j -= 1
    if len(group) == 1:
        return None
    parts = [strip_answer(c.text) for c in group]
    if any(not p for p in parts):
        return None
    if len(set(parts)) == 1:  # the same box repeated ("\boxed{6}. \] \[ \boxed{6}")
        return parts[0]
    return ", ".join(parts)


_PLAIN_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?: \d+/\d+|/\d+)?")
# a scale after a number is no unit: "6 dozen" may be 72 or six dozens (the prose reader decides)
_SCALE_WORD_RE = re.compile(r"(?i)\b(?:dozens?|hundreds?|thousands?|millions?|billions?|k)\b")
# The words of three letters or more that normalize drops from an answer (any case, here): a
# currency's, a percent's, a degree's and its scale's; otherwise it drops only a command after a
# backslash and the units after the number. A word before an ASCII answer's first digit that is none
# of these stays, so the answer normalizes to no plain number: a sentence ("The pet shop had 90
# rodents in total") is not normalized to find that out (tests/verify/test_verify_speed.py).
_DROPPED_WORDS = frozenset(
    "usd dollar dollars cent cents inr eur euro euros yuan percent percentage pct degree degrees "
    "celsius fahrenheit kelvin".split()
)
_DIGIT_RE = re.compile(r"\d")


def a_plain_number(answer: str, kind: str) -> bool:
    """The answer normalizes to a plain number (a unit or a currency aside: "1 001 грн", "$5.50") and
    names no scale it is counted in ("6 dozen")."""
    if answer.isascii():
        first_digit = _DIGIT_RE.search(answer)
        head = answer[: first_digit.start()] if first_digit else answer
        if any(w.lower() not in _DROPPED_WORDS for w in WORD_RE.findall(head)):
            return False
    return bool(_PLAIN_NUMBER_RE.fullmatch(normalize(answer, kind)[0])) and not _SCALE_WORD_RE.search(answer)


# a number as written in prose (thousands separators and decimals kept together)
_NUMERAL_RE = re.compile(NUMERAL)


def _finish(ans: str, how: str, kind: str) -> tuple[str, bool]:
    """(the answer without its wrapping, whether reading it was a choice: a weak form).

    A value read out of prose is weak when the sentence offered a choice: two or more different
    numbers, in numerals or in words ("The answer is 18 dollars." and "... is two hundred four
    dollars." are not weak; "The answer is 18 - 3 = 15 dollars." is). Words with no number at all
    are compared as words: nothing was chosen."""
    stripped = strip_answer(ans)
    stripped = ascii_forms(stripped)  # digits of other scripts, the Arabic decimal mark: one character each
    if kind == "task" or how == "boxed" or not stripped or not is_prose(stripped):
        return stripped, False
    if a_plain_number(stripped, kind):
        return stripped, False  # a number and its unit or currency ("1 001 грн"): no choice was made
    value = prose_value(stripped, kind)
    numerals = set(_NUMERAL_RE.findall(stripped))
    words = number_word_runs(stripped)
    if not numerals and words <= 1:
        return (strip_answer(value) if value is not None else stripped), False
    if value is None or words:
        return (stripped if value is None else strip_answer(value)), True
    value = strip_answer(value)
    return value, not (
        len(numerals) == 1 and value.lstrip("$-").replace(",", "") in {n.replace(",", "") for n in numerals}
    )


def turn_end(text: str) -> int | None:
    """Where _TURN_END_RE first matches in text, or None: found from its literals ("<|", "</s>",
    "[INST]") with str.find, where the search tried the pattern at every "<" and "[" of a long
    output (its math and its tags), a tenth of that output's verdict."""
    ends = [at for at in (text.find("</s>"), text.find("[INST]")) if at >= 0]
    at = text.find("<|")
    while at >= 0 and (not ends or at < min(ends)):
        if _TURN_END_RE.match(text, at):
            return at
        at = text.find("<|", at + 1)
    return min(ends) if ends else None


@lru_cache(maxsize=8)  # extraction, the cut and the second opinion ask about one output
def cut_turn(text: str) -> str:
    """The output up to where the assistant's turn ends (a chat token or an invented role line)."""
    if "<" in text or "[INST]" in text:
        end = turn_end(text)
        if end is not None:
            text = text[:end]
    # A role line's word ("user", "human") must stand in the lowered text too. That text is the span
    # rules', so it is looked at first: no search where no word. A long output that may close a
    # reasoning block is read in its reply (_after_reasoning) and lowered whole for nothing else: the
    # search first, the words only where it finds a line.
    if len(text) > _LONG_OUTPUT_CHARS and "</" in text:
        m = _ROLE_AFTER_NEWLINE_RE.search(text)
        named = m is not None and _names_a_role(lowered(text))
    else:
        named = _names_a_role(lowered(text))
        m = _ROLE_AFTER_NEWLINE_RE.search(text) if named else None
    return text[: m.start() + 1] if named and m is not None else text


_LONG_OUTPUT_CHARS = 8_000


def _names_a_role(low: str) -> bool:
    return "user" in low or "human" in low


def read_answer(text: str, kind: str = "math", whole: bool = True) -> Extraction:
    """What the output finally commits to (module doc): the answer, the rule, whether the form is
    strong, or why there is none. whole=False: text is the part of an output before it was cut off,
    never a short output that is its own answer ("The total is" before a cut-off box is none)."""
    if not text or not text.strip():
        return Extraction(None, missing=EMPTY_OUTPUT)
    text = cut_turn(text)
    stated_after = _after_reasoning(text, kind)
    if stated_after is not None:
        return stated_after
    cands = [c for c in find_spans(text, kind) if not _echoed_format(text, c)]
    if cands:
        turn_at = _invented_turn(text, cands)
        if turn_at is not None:
            cands = [c for c in cands if c.end <= turn_at]
            text = text[:turn_at]
        # latest start wins; at an equal start the rule of higher priority
        cands.sort(key=lambda c: (c.start, RULES_BY_NAME[c.rule].priority))
        cands = _without_self_ratings(text, cands)
        if cands and might_rate(text):
            # a span inside the closing rating of the answer ("In this case, the answer is
            # straightforward, so I'll give a high confidence level of 90%.") states no answer
            rated_from = len(without_closing_rating(text))
            cands = [c for c in cands if c.start < rated_from]
        if not cands:
            # every span rated the answer: none states one. A closing rating commits to nothing new
            # (miners.verify.prose.without_closing_rating): what the output said before it is read
            # as an output with no span; a rating anywhere else leaves the answer open
            unrated = without_closing_rating(text)
            if unrated.strip() == text.strip() or find_spans(unrated, kind):
                return Extraction(None, missing=NO_ANSWER)
            return _without_spans(unrated, kind, whole=False)
        cut = None
        while cands and _cut_statement(text, cands[-1]):
            cut = cands.pop()  # "... the final answer is" at the very end: cut off, it commits to nothing
        if not cands and cut is not None:
            # the output was certainly cut off (a statement of its answer broken off at the end):
            # what came before commits to an answer, read as before any cut, or nothing does
            before = read_answer(text[: cut.start], kind, whole=False) if text[: cut.start].strip() else None
            if before is not None and before.answer is not None:
                return replace(before, strong=False)
            return Extraction(None, cut.rule, missing=TRUNCATED)
        last = cands[-1]
        rule = RULES_BY_NAME[last.rule]
        rivals = [
            c for c in cands[:-1] if c.start == last.start and RULES_BY_NAME[c.rule].priority == rule.priority
        ]
        answer, weak = _span_answer(text, cands, last, kind)
        for rival in rivals:
            other, _ = _span_answer(text, cands, rival, kind)
            if other != answer:
                return Extraction(None, last.rule, missing=AMBIGUOUS)
        if not answer:
            return Extraction(None, last.rule, missing=EMPTY_ANSWER)
        if last.rule == "boxed" and _rival_boxes(text, cands, answer, kind):
            return Extraction(None, last.rule, missing=AMBIGUOUS)
        if _loops_after_other_answer(text, cands, kind):
            return Extraction(None, last.rule, missing=AMBIGUOUS)
        return Extraction(
            answer,
            last.rule,
            rule.strong and not weak,
            span_text=last.text,
            start=last.start,
            end=last.end,
            language=last.language,
        )
    return _without_spans(text, kind, whole)


def _without_self_ratings(text: str, cands: list[Span]) -> list[Span]:
    """The candidates (sorted by start) less the model's ratings of its own answer ("my confidence
    level is \\boxed{99\\%}": miners.verify.selfrating): a rating is never an answer."""
    if not might_rate(text):
        return cands
    kept: list[Span] = []
    rated: list[Span] = []
    for c in cands:
        # a box before it in the same clause ends that clause ("\\boxed{5} and my confidence is 90%")
        floor = max((o.end for o in cands if o.rule == "boxed" and o.end <= c.start), default=0)
        (rated if is_self_rating(text, c.start, c.end, c.text, floor) else kept).append(c)
    # a statement whose only box is a rating ("Confidence in this answer is at a \\boxed{100\\%}
    # level") states the rating, not an answer
    boxes = [c for c in rated if c.rule == "boxed"]
    return [
        c
        for c in kept
        if c.rule == "boxed"
        or not any(c.start <= b.start < c.end for b in boxes)
        or any(o.rule == "boxed" and c.start <= o.start < c.end for o in kept)
    ]


# a reasoning block's end, and what a model writes after it that says nothing (special tokens,
# punctuation runs): an answer given only inside the block is what the output committed to
_REASONING_END_RE = re.compile(r"</(?:think|thinking|reasoning|thought)>", re.I)
_REASONING_START_RE = re.compile(r"<(?:think|thinking|reasoning|thought)>", re.I)
_TOKEN_RE = re.compile(r"<\|[^|<>]{0,60}\|>|</?[A-Za-z_]{1,20}>")
# the first paragraph an answer stated first ("42" over "Explanation: ...") is followed by
_EXPLANATION_RE = re.compile(
    r"(?i)^[ \t*_#>]*(?:" + "|".join(re.escape(w) for w in EXPLANATION_WORDS) + r")(?![A-Za-z])"
)


def _last_reasoning_end(text: str) -> re.Match[str] | None:
    """The last reasoning block's closing tag in text, found back from the end by its literal "</"."""
    at = text.rfind("</")
    while at >= 0:
        end = _REASONING_END_RE.match(text, at)
        if end is not None:
            return end
        at = text.rfind("</", 0, at)
    return None


def _after_reasoning(text: str, kind: str) -> Extraction | None:
    """What an output that closes a reasoning block commits to after it, where a span rule reads an
    answer there (positions in text), else None: the block is working, what follows it is the reply.
    (A long reasoning output is then read in its reply, not in every line of its working.)"""
    end = _last_reasoning_end(text)
    if end is None:
        return None
    start = end.end()
    after = read_answer(text[start:], kind, whole=False)
    if after.answer is None or after.rule not in RULES_BY_NAME:
        return None
    return replace(after, start=after.start + start, end=after.end + start)


def _reasoning_only(text: str) -> str:
    """text less a reasoning block's tags where nothing after the block says anything: its garbage
    ("</think> ;;;; ,,,,", special tokens, a loop of one word) commits to nothing new."""
    end = _last_reasoning_end(text)
    if end is None:
        return text
    after = _TOKEN_RE.sub(" ", text[end.end() :])
    if re.search(r"\d", after) or (re.search(r"[^\W\d_]{2,}", after) and not looping(after)):
        return text
    # (the opening tag blanked, not removed: positions in the text stay those of the output)
    return _REASONING_START_RE.sub(lambda m: " " * len(m.group(0)), text[: end.start()], count=1)


def value_only(line: str, kind: str) -> str | None:
    """The value a line holds where it holds nothing else (markup, a unit or a currency aside):
    "**42**", "$\\frac{3}{4}$", "1 001 грн", "４２"; None for a sentence or a line without a value."""
    stripped = strip_answer(line)
    stripped = ascii_forms(stripped)
    if not stripped or len(stripped) > 40 or not re.search(r"\d", stripped):
        return None
    if is_prose(stripped) and not a_plain_number(stripped, kind):
        return None
    return stripped


_SIGNS_ONLY_RE = re.compile(r"[\s$#*_`~=.:|>\-]*")


def _without_spans(text: str, kind: str, whole: bool) -> Extraction:
    """The answer of an output no span rule read: a short one-line output is its own answer; an
    answer stated first in a paragraph of its own, an explanation after it ("42" over "Explanation:
    ..."); else a concluding sentence or a last line holding only a value. An answer inside a
    reasoning block that nothing but garbage follows is read inside the block."""
    text = _reasoning_only(text)
    stripped = text.strip()
    # a short one-line output is its own answer, unless it is a box the model never closed
    if (
        whole
        and "\n" not in stripped
        and len(stripped) <= 80
        and "\\boxed" not in stripped
        and not looping(stripped)
    ):
        answer, weak = _finish(stripped, "short", kind)
        # marker and markup signs alone ("$####", "**") are a format echoed with nothing in it
        if answer and not _SIGNS_ONLY_RE.fullmatch(answer):
            # a bare value ("18", "\\frac12") is its own answer; a sentence read for its value is weak
            return Extraction(answer, "short_output", not weak, start=0, end=len(text.rstrip()))
        return Extraction(None, missing=NO_ANSWER)
    if kind == "task":
        return Extraction(None, missing=NO_ANSWER)
    paragraphs = PARAGRAPH_BREAK_RE.split(stripped, maxsplit=1)
    if len(paragraphs) == 2 and _EXPLANATION_RE.match(paragraphs[1]):
        first = value_only(paragraphs[0], kind)
        if first is not None and "\n" not in paragraphs[0].strip():
            start = text.find(paragraphs[0])
            return Extraction(
                first,
                "answer_first",
                False,
                span_text=paragraphs[0],
                start=start,
                end=start + len(paragraphs[0]),
            )
    value = concluding(stripped, kind, whole)
    if value and strip_answer(value):
        last = last_sentences(stripped, 1)[-1]
        # a value the concluding sentence sets in bold is one the output marked as its answer: strong
        # (settle still asks a WRONG for a complete answer its statement confirms)
        marked = emphasized_value(last)
        return Extraction(
            strip_answer(value),
            "concluding_sentence",
            marked is not None and strip_answer(marked) == strip_answer(value),
            span_text=last,
            start=max(0, text.rfind(last)),
            end=len(text.rstrip()),
        )
    return Extraction(None, missing=NO_ANSWER)


# Rules whose span is a marker and what follows it: a marker with nothing after it at the very end of
# an output was cut off (tags and boxes say "empty" on their own: an empty box commits to nothing).
_MARKER_RULES = frozenset(RULES_BY_NAME) - {"boxed", "answer_tag", "json_field"}
_DANGLING = ("+", "-", "*", "/", "=", "(", "[", "{", "^", "_", ",", "\\")
# an output that stops on one of these stopped mid-expression ("_" may be a blank the model wrote)
_OPERATORS = "+-/=([{^,\\"
# what strip_answer may take off an answer's end (or unwrap there), and the dangling operators
_STRIPPED_OR_DANGLING = frozenset(' \t\r\n.;,。．*_`"“”>$])' + "".join(_DANGLING))


def _cut_statement(text: str, span: Span) -> bool:
    """A marker at the very end whose statement was cut off: "Now, considering all the above, the
    final answer is", "The answer is -" (nothing, or a dangling operator, and nothing after it)."""
    if span.rule not in _MARKER_RULES or text[span.end :].strip(" \t\r\n*_:："):
        return False
    # the common case, an answer at the end: its last character is one strip_answer keeps and no
    # operator, so the stripped answer ends on it too (no need to strip it)
    if span.text and span.text[-1] not in _STRIPPED_OR_DANGLING:
        return False
    answer = strip_answer(span.text)
    if answer and not answer.endswith(_DANGLING):
        return False
    # "The answer is: ..." or "Answer: ___" ends on a blank the model wrote (an empty answer, not a
    # cut): a cut output stops on the marker itself, its colon or an operator
    last = text.rstrip(" \t\r\n*")[-1:]
    return last.isalpha() or last in ":：" or last in _OPERATORS


_LOOP_MIN_REPEATS = 3


def _loops_after_other_answer(text: str, cands: list[Span], kind: str) -> bool:
    """The output ends by repeating one answer statement (the same span, the same text between each
    repeat: a loop) after it had stated a different answer: which one it commits to is open
    ("The answer is True." then "Therefore, the answer is False." in a code block, forty times)."""
    last = cands[-1]
    run = 1
    gap = None
    while run < len(cands):
        prev, nxt = cands[-run - 1], cands[-run]
        if prev.rule != last.rule or prev.text != last.text:
            break
        between = text[prev.end : nxt.start]
        if gap is None:
            gap = between
        elif between != gap:
            break
        run += 1
    if run < _LOOP_MIN_REPEATS or run == len(cands):
        return False
    looped_answer, _ = _span_answer(text, cands, last, kind)
    return any(_span_answer(text, cands, c, kind)[0] != looped_answer for c in cands[: len(cands) - run])


_CONCLUDES_RE = re.compile(
    r"(?i)\b(?:final|answer|therefore|thus|hence|so|in\s+conclusion|consequently|overall|altogether|"
    r"result|solution|total)\b|因此|所以|综上|答案|故|∴"
)


def _rival_boxes(text: str, cands: list[Span], answer: str, kind: str) -> bool:
    """Two boxes that state different values, and nothing in the output saying the last is final:
    the last box wins ("\\boxed{6} per hour ... total \\boxed{42}") only where the output marks
    it -- a marker span holds it or a concluding word ("final", "answer", "therefore", "so") stands
    before it in its sentence -- or it stands on the last line."""
    boxes = [c for c in cands if c.rule == "boxed"]
    last = boxes[-1]
    others = {_span_answer(text, cands, b, kind)[0] for b in boxes[:-1] if b.end <= last.start}
    others -= {answer, "", *answer.split(", ")}  # the boxes of a group ("1, 2") are one answer
    if not others:
        return False
    if any(c.rule != "boxed" and c.start <= last.start <= c.end + 2 for c in cands):
        return False  # "The final answer is \\boxed{42}": a marker says it
    if not text[last.end :].strip(" \t\r\n.$)]}\\*"):
        return False  # the last thing the output says
    start = max(text.rfind(". ", 0, last.start), text.rfind("\n\n", 0, last.start), 0)
    return _CONCLUDES_RE.search(text, start, last.start) is None


def _span_answer(text: str, cands: list[Span], span: Span, kind: str) -> tuple[str, bool]:
    """(the answer a span states, whether it was read out of prose)."""
    if span.rule in ("answer_tag", "json_field"):
        if "boxed" in span.text or "fbox" in span.text:
            inner = read_answer(span.text, kind)
            if inner.answer is not None:
                return inner.answer, not inner.strong
        return _finish(span.text, span.rule, kind)
    if span.rule == "boxed":
        boxes = [c for c in cands if c.rule == "boxed"]
        grouped = _grouped_boxes(text, boxes, boxes.index(span))
        if grouped is not None:
            return grouped, False
    return _finish(span.text, span.rule, kind)


def extract_answer(text: str, kind: str = "math") -> str | None:
    """The final answer a model's whole output commits to, or None when it commits to none."""
    return read_answer(text, kind).answer
