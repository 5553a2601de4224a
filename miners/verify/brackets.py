"""The one bracket-depth scanner of the verifier: every "at depth 0", "where does this group close" and
"how deep does it nest" question is answered by walk().

    from miners.verify.brackets import walk, closing_index, brace_pairs, max_depth, encloses, top_level
    closing_index("\\\\boxed{\\\\frac{1}{2}} and", 6)   # -> 19 (just past the brace that closes at 6)
    top_level("(1, 2), 3", ",")                      # -> [6]: the comma outside the parentheses
    encloses("(1, 2]", "([", ")]")                   # -> True: one group spans the whole string

Brackets are ( [ { and the placeholders \\x01 / \\x02 that normalization uses for \\left( ... \\right).
With escapes=True a backslash hides the character after it (\\{ is a literal brace in LaTeX).
closing_index and brace_pairs, which read the braces of whole outputs, find walk()'s brace events
with one regex (tests/verify/test_verify_speed.py holds them to walk()).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

OPEN = "([{\x01"
CLOSE = ")]}\x02"


def walk(
    s: str, opens: str = OPEN, closes: str = CLOSE, *, escapes: bool = False, start: int = 0
) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth) for every character from start: the depth outside the character
    (an opening bracket reports the depth before it, a closing one the depth after it)."""
    depth = 0
    i, n = start, len(s)
    while i < n:
        c = s[i]
        if escapes and c == "\\":
            i += 2
            continue
        if c in opens:
            yield i, c, depth
            depth += 1
        elif c in closes:
            depth -= 1
            yield i, c, depth
        else:
            yield i, c, depth
        i += 1


# walk()'s events for braces with escapes, found by the regex engine instead of a step per character:
# a backslash and the character it hides (skipped, as walk skips them), or a brace
_BRACE_EVENT_RE = re.compile(r"\\.|[{}]", re.S)


def closing_index(s: str, open_at: int, opens: str = "{", closes: str = "}") -> int:
    """Index just past the group that opens at s[open_at], or -1 when it never closes (escapes honoured)."""
    if opens == "{" and closes == "}":  # (the braces of a box, read over whole outputs: the fast way)
        depth = 0
        for m in _BRACE_EVENT_RE.finditer(s, open_at):
            c = m.group()
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return m.end()
        return -1
    for i, c, depth in walk(s, opens, closes, escapes=True, start=open_at):
        if depth == 0 and c in closes:
            return i + 1
    return -1


def brace_pairs(s: str, start: int = 0) -> dict[int, int]:
    """{index of '{': index just past its '}'} for s[start:] in one pass (a loop of unclosed groups
    must not cost a scan to the end per group); a stray '}' closes nothing."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACE_EVENT_RE.finditer(s, start):  # walk(s, "{", "}", escapes=True, start=start)'s braces
        c = m.group()
        if c == "{":
            stack.append(m.start())
        elif c == "}" and stack:
            pairs[stack.pop()] = m.end()
    return pairs


def max_depth(s: str, opens: str = "({[", closes: str = ")}]") -> int:
    """The deepest nesting in s."""
    deepest = 0
    for _i, c, depth in walk(s, opens, closes):
        if c in opens and depth + 1 > deepest:
            deepest = depth + 1
    return deepest


def top_level(s: str, chars: str, opens: str = OPEN, closes: str = CLOSE) -> list[int]:
    """Indices of the characters of `chars` that stand outside every bracket."""
    return [i for i, c, depth in walk(s, opens, closes) if depth == 0 and c in chars]


def depth_zero(s: str, opens: str = OPEN, closes: str = CLOSE) -> list[bool]:
    """For each index of s: whether that character stands outside every bracket (brackets themselves:
    False)."""
    if not any(c in s for c in opens) and not any(c in s for c in closes):
        return [True] * len(s)  # no bracket: every character stands outside (most answers)
    out = [False] * len(s)
    for i, c, depth in walk(s, opens, closes):
        out[i] = depth == 0 and c not in opens and c not in closes
    return out


def encloses(s: str, opens: str = OPEN, closes: str = CLOSE) -> bool:
    """s[0] opens a group that closes exactly at s[-1]."""
    if len(s) < 2 or s[0] not in opens or s[-1] not in closes:
        return False
    last = len(s) - 1
    for i, c, depth in walk(s, opens, closes):
        if depth == 0 and c in closes:
            return i == last
    return False
