"""Answer extraction for miners.verify: the final answer a model's whole output commits to.

    from miners.verify.extract import extract_answer
    extract_answer("... so 3 + 3 = 6.\\nThe answer is 6.\\n\\nQuestion: Tom has ...", "gsm8k")   # -> "6"
    extract_answer("\\\\boxed{1} and \\\\boxed{2} and \\\\boxed{3}", "math")                      # -> "1, 2, 3"
    extract_answer("<think>...</think> <answer> The positive number is 12. </answer>", "math")  # -> "12"

The final answer is what the output finally commits to (the labelling conventions in
bench/data/README.md):
  1. the turn is cut first: at a chat-template token (<|im_start|>, <|eot_id|>, </s>, ...) or an
     invented "User:"/"Human:" line, and, once an answer has been given, at a hallucinated new
     question ("Question:", "Q:", "Now it's your turn", "New question:", ...);
  2. answer spans: \\\\boxed{} / \\\\fbox{} / \\\\boxed 5 (boxes side by side, joined only by "and",
     commas or spacing, form one answer), <answer>...</answer>, "Final answer: X", "The answer is X"
     (also "the answer (arabic numerals) is" with the value on a later line), "Answer: X", "A: X",
     "#### X", unboxed math right after "Answer" ($ ... $, $$ ... $$, \\\\[ ... \\\\], \\\\( ... \\\\)), and a
     JSON field "answer": "X" (the format some evaluation prompts ask for);
  3. the span that starts last wins (a self-correction, or the answer after a repetition loop);
  4. a span in prose ("The largest $n$ is 34.", "Jake has 7 peaches.", "two hundred four dollars")
     is reduced to its value (miners.verify.prose: bold, else what follows the last "is"/"="/":",
     else the first value);
  5. with no span at all: a short one-line output is its own answer (unless it loops), and a
     concluding last sentence ("Therefore, ..."/"So ..."/"因此...") or a display block after a colon
     is read as in 4.
An empty box, an unclosed one, or an answer tag holding nothing commits to nothing (None).
"""

from __future__ import annotations

import re

from miners.verify.brackets import brace_pairs, walk
from miners.verify.prose import concluding, is_prose, looping, prose_value

# ------------------------------------------------------------------------------------- braces


# ------------------------------------------------------------------------------------- the turn

# A chat-template token ends the assistant's turn wherever it appears.
_TURN_END_RE = re.compile(
    r"<\|(?:im_start|im_end|user|endoftext|eot_id|eom_id|start_header_id|end)\|>|</s>|\[INST\]"
)
# An invented role line: what follows is a conversation the model made up.
_ROLE_RE = re.compile(r"(?m)^[ \t>*_#]*(?:user|human|humanbrain)[ \t*_]*[:：]", re.I)
# A new question the model invents after it has answered. Only cut when an answer precedes it.
_FOLLOWUP_RE = re.compile(
    r"(?im)^[ \t>*_#]*(?:question|q|problem|instruction|exercise|new\s+problem|new\s+question|"
    r"follow[- ]up(?:\s+question)?)[ \t*_]*(?:\d+[ \t]*)?[:：.]"
    r"|\b(?:now\s+(?:it'?s|is)\s+your\s+turn|your\s+turn\s*[:!.]|here\s+is\s+a\s+new\s+question|"
    r"can\s+you\s+now\s+solve|now\s+solve\s+the\s+(?:following\s+)?(?:question|problem)|"
    r"please\s+answer\s+this\s+question)"
)

# words one of which any follow-up marker contains (a cheap test before the regex)
_FOLLOWUP_HINTS = ("question", "\nq", "problem", "instruction", "exercise", "follow", "turn", "solve")

# ------------------------------------------------------------------------------------- spans

_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed\s+([^\s${}\\]+)")
# The patterns below start at a literal word (found at regex speed); where a match must begin a line
# or follow a sentence, the code checks the text before it.
_FINAL_LINE_RE = re.compile(
    r"(?i)(?<![a-z])final[ \t]+answer[ \t*_]*(?:is)?[ \t*_]*[:：][ \t*_]*(?P<ans>[^\n]*)"
)
_ANSWER_IS_RE = re.compile(
    r"(?i)(?<![a-z])answer\s*(?:\([^()\n]{0,40}\)\s*)?"
    r"(?:is|would\s+be|should\s+be|=)\s*[:：]?[ \t]*"
    r"(?=(?P<ans>[^\n]{0,400}))"  # a lookahead: "the answer is 5 ... no, the answer is 6" on one line
)
_ANSWER_LINE_RE = re.compile(r"(?i)(?<![a-z])answer[ \t*_]*[:：][ \t*_]*(?P<ans>[^\n]*)")
_LINE_LEAD_RE = re.compile(r"(?:^|\n)[ \t>*_#-]*$|[.!?] $")  # what may stand before "Answer:"
_A_LINE_RE = re.compile(r"(?m)^A[ \t]*:[ \t]*(?P<ans>[^\n]+)")  # GSM8K's few-shot "A: 18"
_HASHES_RE = re.compile(r"(?m)(?<!#)####(?!#)[ \t]*(?P<ans>[^\n#]+)")
_ANSWER_TAG_RE = re.compile(r"<\s*answer\s*>|\{answer[>}]|\(answer\)", re.I)
_ANSWER_CLOSE_RE = re.compile(r"<\s*/\s*answer", re.I)
# unboxed math right after the word "answer": Answer $ 9 $, the answer is: \[ 9 \]
_ANSWER_MATH_RE = re.compile(
    r"(?i)\banswer\b(?![>_])(?:\s*\([^()\n]{0,40}\))?(?:\s+is\b)?\s*[:：]?\s*(?P<open>\\\[|\$\$|\\\(|\$)"
)
# a JSON (or Python dict) field "answer": "..." or "final_answer": 42 -- the format evaluation prompts
# ask for; the string may hold escapes (\\frac, \") or LaTeX the model did not escape (\frac)
_JSON_ANSWER_RE = re.compile(
    r"""(?P<k>["'])(?:final[_ ]?)?answer(?P=k)\s*:\s*(?:(?P<q>["'])(?P<s>(?:(?!(?P=q))[^\\]|\\.){0,400})(?P=q)|(?P<n>-?\d[\d.,/]*))""",
    re.I | re.S,
)
# the fields after "answer" in the same object ("confidence": 0.9, "notes": "..."): text inside them
# is commentary on the answer field, not a later answer
_JSON_NEXT_FIELD_RE = re.compile(
    r"""\s*,\s*(["'])[^"'\n]{1,40}\1\s*:\s*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[-\w.]+)""", re.S
)
_PRIORITY = {"boxed": 3, "tag": 2, "answer_math": 0}  # at an equal start; the rest are 1
_MATH_CLOSE = {"\\[": "\\]", "$$": "$$", "\\(": "\\)", "$": "$"}
# "I checked that the answer is correct": talk about an answer, not one.
_NOT_AN_ANSWER_RE = re.compile(
    r"(?i)\s*(?:correct|incorrect|right|wrong|not|as\s+follows|below|above|that|this|clear|obvious|"
    r"indeed\s+correct|likely|probably|given|found|shown|simply|in|to|still|also|then|therefore|thus|so|"
    r"because|calculated|computed|consistent|reasonable|the\s+same|same|written\s+in)\b|\s*[,.:]?\s*$"
)
_SENTENCE_END_RE = re.compile(r"[.;!?](?=\s|$)")
_PLACEHOLDER_RE = re.compile(r"^[\s_.:：*-]*$")
# What may stand between boxes that together form one answer: spacing, math delimiters, \text{and},
# punctuation, a label ("y_2 ="), and a few words if a conjunction is among them.
_JOIN_DROP_RE = re.compile(
    r"\\(?:quad|qquad|text|textbf|mathrm|mbox)\b|\\[,;:! ]|\\[()\[\]]|[${}~]|"
    r"[a-zA-Z](?:_\{?\w+\}?)?\s*="
)
_JOIN_WORDS_RE = re.compile(r"[A-Za-z]+")


def _json_string(s: str) -> str:
    """The text of a JSON string as models write it: \\\\ and \\" are escapes, but a backslash before
    a letter is LaTeX left unescaped (\\frac, \\times, \\neq), not a form feed, a tab or a newline."""
    s = s.replace("\\\\", "\x00")
    s = re.sub(r"\\([\"'/])", r"\1", s)
    s = re.sub(r"\\[nrt](?![a-zA-Z])", " ", s)
    return s.replace("\x00", "\\")


def _cut_sentence(span: str) -> str:
    if "$" not in span and "{" not in span:  # the common case, at regex speed
        m = _SENTENCE_END_RE.search(span)
        return span[: m.start()] if m else span
    # keep "$3.5$" and "\frac{1}{2}" intact: only cut outside $...$ and braces
    in_math = False
    for i, c, depth in walk(span, "{", "}"):
        if c == "$":
            in_math = not in_math
        elif not in_math and depth <= 0 and c in ".;!?" and (i + 1 == len(span) or span[i + 1].isspace()):
            if c == "." and i > 0 and span[i - 1].isdigit() and i + 1 < len(span) and span[i + 1].isdigit():
                continue
            return span[:i]
    return span


def _next_line(text: str, pos: int) -> str:
    """The first non-empty line after pos ("The answer (arabic numerals) is\\n\\n8")."""
    for line in text[pos:].split("\n", 4)[1:4]:
        if not _PLACEHOLDER_RE.match(line):
            return line.strip()[:400]
    return ""


def _math_block(text: str, open_at: int, opener: str) -> tuple[int, str] | None:
    """(end, content) of the math block that opens at text[open_at] with `opener`, or None."""
    start = open_at + len(opener)
    closer = _MATH_CLOSE[opener]
    i = start
    limit = min(len(text), start + 400)
    while i < limit:
        j = text.find(closer, i, limit)
        if j < 0:
            return None
        if closer == "$" and j > 0 and text[j - 1] == "\\":  # \$ is a dollar sign, not a delimiter
            i = j + 1
            continue
        return j + len(closer), text[start:j]
    return None


def _matches(regex: re.Pattern, text: str, low: str, word: str):
    """regex's matches, tried only where `word` occurs (the patterns start with it): a find per
    occurrence instead of a case-insensitive scan of the whole text."""
    if len(low) != len(text):  # lower() changed the length (some non-ASCII letters): scan
        yield from regex.finditer(text)
        return
    pos = low.find(word)
    while pos >= 0:
        m = regex.match(text, pos)
        if m:
            yield m
        pos = low.find(word, pos + 1)


def _candidates(text: str, kind: str = "math") -> list[tuple[int, int, str, str]]:
    """Every answer span as (start, end, answer, how)."""
    found: list[tuple[int, int, str, str]] = []
    low = text.lower()
    if "boxed" in text or "fbox" in text:
        closing = None
        for m in _BOXED_RE.finditer(text):
            if m.group(1) is not None:
                if closing is None:
                    closing = brace_pairs(text, m.start())  # braces before the first box do not matter
                end = closing.get(m.start(1), -1)
                if end < 0:
                    continue
                found.append((m.start(), end, text[m.start(1) + 1 : end - 1], "boxed"))
            else:
                found.append((m.start(), m.end(), m.group(2), "boxed"))
    if "answer" in low:
        for regex, how in (
            (_FINAL_LINE_RE, "final"),
            (_ANSWER_IS_RE, "answer_is"),
            (_ANSWER_LINE_RE, "answer"),
        ):
            for m in _matches(regex, text, low, "final" if how == "final" else "answer"):
                if how == "answer" and not _LINE_LEAD_RE.search(text, max(0, m.start() - 40), m.start()):
                    continue
                ans = m.group("ans")
                if how == "answer_is":
                    ans = _cut_sentence(ans)
                    if _NOT_AN_ANSWER_RE.match(ans) and not _PLACEHOLDER_RE.match(ans):
                        continue
                end = m.start("ans") + len(ans)
                if _PLACEHOLDER_RE.match(ans):  # "the answer is\n\n8", "Answer: _____."
                    ans = _next_line(text, m.start("ans"))
                    if how == "answer_is":
                        ans = _cut_sentence(ans)
                found.append((m.start(), end, ans, how))
        for m in _matches(_ANSWER_MATH_RE, text, low, "answer") if ("$" in text or "\\" in text) else ():
            if m.group("open") == "$" and (kind == "gsm8k" or text[m.end() : m.end() + 1].isdigit()):
                continue  # "$880" is money
            block = _math_block(text, m.start("open"), m.group("open"))
            if block is not None and not block[1].rstrip().endswith(("+", "-", "=")):
                found.append((m.start(), block[0], block[1], "answer_math"))
        if 'answer"' in low or "answer'" in low:
            for m in _JSON_ANSWER_RE.finditer(text):
                value = _json_string(m.group("s")) if m.group("n") is None else m.group("n")
                found.append((m.start(), m.end(), value, "json"))
        tags = (
            list(_ANSWER_TAG_RE.finditer(text))
            if ("answer>" in low or "answer}" in low or "(answer)" in low)
            else []
        )
        for k in range(len(tags) - 1, -1, -1):  # the last tag that holds something
            m = tags[k]
            close = _ANSWER_CLOSE_RE.search(text, m.end())
            end = min(
                close.start() if close else len(text), tags[k + 1].start() if k + 1 < len(tags) else len(text)
            )
            if strip_answer(text[m.end() : end]) or k == 0:
                found.append((m.start(), end, text[m.end() : end], "tag"))
                break
    if "A:" in text:
        for m in _A_LINE_RE.finditer(text):
            found.append((m.start(), m.end(), m.group("ans"), "answer"))
    if "####" in text:
        for m in _HASHES_RE.finditer(text):
            found.append((m.start(), m.end(), m.group("ans"), "hashes"))
    objects = [(c[1], _json_fields_end(text, c[1])) for c in found if c[3] == "json"]
    if objects:
        found = [c for c in found if c[3] == "json" or not any(a <= c[0] < b for a, b in objects)]
    return found


def _json_fields_end(text: str, pos: int) -> int:
    """Where the fields that follow a JSON value at pos end (pos itself when none follow)."""
    while True:
        m = _JSON_NEXT_FIELD_RE.match(text, pos)
        if not m:
            return pos
        pos = m.end()


def strip_answer(ans: str) -> str:
    """Markdown, quotes, outer math delimiters and trailing punctuation around an answer."""
    s = ans.strip().replace('\\"', '"').strip('*_` \t"“”')
    if s.startswith(":"):
        s = s[1:].strip()
    s = s.rstrip(" .;,")
    for lo, hi in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)")):
        if s.startswith(lo) and s.endswith(hi) and len(s) >= len(lo) + len(hi):
            s = s[len(lo) : len(s) - len(hi)].strip()
    if len(s) >= 2 and s[0] == "$" and s[-1] == "$" and s.count("$") == 2:
        s = s[1:-1].strip()
    return s.rstrip(" .;,").strip('*_` \t"“”')


def _joins(gap: str) -> bool:
    """Whether the text between two boxes keeps them one answer ("\\quad\\text{and}\\quad", ", ")."""
    rest = _JOIN_DROP_RE.sub(" ", gap)
    if len(rest) > 60 or "\n\n" in gap.strip():
        return False
    words = [w.lower() for w in _JOIN_WORDS_RE.findall(rest)]
    if not words:
        return not re.search(r"[.!?]\s", rest + " ")
    return len(words) <= 5 and bool({"and", "or"} & set(words)) or ("," in rest and len(words) <= 2)


def _grouped_boxes(text: str, cands: list, last: int) -> str | None:
    """The boxes side by side that end with cands[last], joined as one answer ("1, 2, 3")."""
    group = [cands[last]]
    j = last - 1
    while j >= 0 and cands[j][3] == "boxed":
        prev, cur = cands[j], group[0]
        if prev[1] > cur[0] or not _joins(text[prev[1] : cur[0]]):
            break
        group.insert(0, prev)
        j -= 1
    if len(group) == 1:
        return None
    parts = [strip_answer(c[2]) for c in group]
    if any(not p for p in parts):
        return None
    if len(set(parts)) == 1:  # the same box repeated ("\boxed{6}. \] \[ \boxed{6}")
        return parts[0]
    return ", ".join(parts)


def _finish(ans: str, how: str, kind: str) -> str:
    stripped = strip_answer(ans)
    if kind == "task" or how == "boxed" or not stripped or not is_prose(stripped):
        return stripped
    value = prose_value(stripped, kind)
    return strip_answer(value) if value is not None else stripped


def cut_turn(text: str) -> str:
    """The output up to where the assistant's turn ends (a chat token or an invented role line)."""
    if "<" in text or "[INST]" in text:
        m = _TURN_END_RE.search(text)
        if m:
            text = text[: m.start()]
    low = text.lower()
    if "user" in low or "human" in low:
        m = _ROLE_RE.search(text, 1)
        if m:
            text = text[: m.start()]
    return text


def extract_answer(text: str, kind: str = "math") -> str | None:
    """The final answer a model's whole output commits to, or None when it commits to none."""
    if not text or not text.strip():
        return None
    text = cut_turn(text)
    cands = _candidates(text, kind)
    if cands:
        first_end = min(c[1] for c in cands)
        low = text.lower()
        hints = low.startswith("q") or any(h in low for h in _FOLLOWUP_HINTS)
        for m in _FOLLOWUP_RE.finditer(text, first_end) if hints else ():
            kept = [c for c in cands if c[1] <= m.start()]
            if kept:
                cands = kept
                text = text[: m.start()]
                break
        # latest start wins; at an equal start prefer the most specific form
        cands.sort(key=lambda c: (c[0], _PRIORITY.get(c[3], 1)))
        last = len(cands) - 1
        start, _end, ans, how = cands[last]
        if how in ("tag", "json"):
            inner = extract_answer(ans, kind) if ("boxed" in ans or "fbox" in ans) else None
            return inner if inner is not None else (_finish(ans, how, kind) or None)
        if how == "boxed":
            grouped = _grouped_boxes(
                text,
                [c for c in cands if c[3] == "boxed"],
                [c for c in cands if c[3] == "boxed"].index(cands[last]),
            )
            if grouped is not None:
                return grouped
        return _finish(ans, how, kind) or None
    stripped = text.strip()
    # a short one-line output is its own answer, unless it is a box the model never closed
    if "\n" not in stripped and len(stripped) <= 80 and "\\boxed" not in stripped and not looping(stripped):
        return _finish(stripped, "short", kind) or None
    if kind == "task":
        return None
    value = concluding(stripped, kind)
    return strip_answer(value) if value else None
