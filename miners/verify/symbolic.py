"""The symbolic back end of miners.verify: Hugging Face math-verify on two extracted answer spans.

    from miners.verify.symbolic import symbolic_equal, symbolic_stats
    symbolic_equal("\\\\pm 3", "3, -3")   # -> True (math-verify, about 10 ms once sympy is loaded)

Only the spans the fast path could not decide come here, never a whole model output. The work is
bounded three ways: a size/complexity guard (exponent towers, huge literals, deep nesting never
reach sympy), a wall-clock limit of SYMBOLIC_TIMEOUT_S in the main thread (an interval timer;
math-verify's own timeout uses whole-second signal.alarm and is turned off), and, in other threads,
the guard alone (signals only reach the main thread).

Every call is counted: `calls` (comparisons handed to math-verify), `refused` (too large for the
guard), `timeouts`, `failures` (math-verify raised or could not parse). A refused, timed-out or
failed comparison is "not equal" -- and visible in symbolic_stats(), never silent.
"""

from __future__ import annotations

import re
import signal
import threading

from miners.verify.brackets import max_depth

SYMBOLIC_TIMEOUT_S = 0.8

_TOWER_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\(?[\d.]+\^|\*\*[^*]*\*\*")
_BIG_INT_RE = re.compile(r"\d{16,}")
_FACTORIAL_RE = re.compile(r"(\d+)\s*!")
_SYMBOLIC_SUM_RE = re.compile(r"\\(?:sum|prod)_\{[^{}]*\}\^\{?[^{}$]*[a-zA-Z]")
_POWER_RE = re.compile(r"\^\s*\{?\s*-?(\d+)")

# counters since import (benchmarks and the mining report read them)
_STATS = {"calls": 0, "refused": 0, "timeouts": 0, "failures": 0}
_math_verify = None


class _SymbolicTimeout(BaseException):
    """BaseException so that math-verify's own `except Exception` cannot swallow it."""


def symbolic_stats() -> dict[str, int]:
    """Counts of comparisons handed to math-verify, and of those refused, timed out or failed."""
    return dict(_STATS)


def too_complex(s: str) -> bool:
    """Inputs whose sympy evaluation could run away (exponent towers, huge literals or powers,
    big factorials, deep nesting). These are never handed to sympy."""
    if len(s) > 300 or s.count("^") > 8:
        return True
    if _TOWER_RE.search(s) or _BIG_INT_RE.search(s):
        return True
    if _SYMBOLIC_SUM_RE.search(s):
        return True  # a sum up to n needs symbolic summation: past the time bound, every time
    if any(int(m.group(1)) > 200 for m in _POWER_RE.finditer(s)):
        return True
    if any(int(m.group(1)) > 200 for m in _FACTORIAL_RE.finditer(s)):
        return True
    return max_depth(s) > 12


def _raise_timeout(signum, frame):
    raise _SymbolicTimeout()


def _load_math_verify():
    global _math_verify
    if _math_verify is None:
        import math_verify
        import math_verify.grader
        import math_verify.parser

        # We bound the time ourselves (below); silence its one-time "timeout disabled" warning.
        math_verify.parser.TIMEOUT_WARNING_SHOWN = True
        math_verify.grader.TIMEOUT_WARNING_SHOWN = True
        _math_verify = math_verify
    return _math_verify


def symbolic_equal(pred: str, gold: str) -> bool:
    """math-verify's verdict on two answer spans (LaTeX or plain), bounded; False when refused,
    timed out or failed (each counted)."""
    if too_complex(pred) or too_complex(gold):
        _STATS["refused"] += 1
        return False
    _STATS["calls"] += 1
    mv = _load_math_verify()
    pred_tex, gold_tex = "$" + pred + "$", "$" + gold + "$"

    def run() -> bool:
        cfg = [mv.LatexExtractionConfig(), mv.ExprExtractionConfig()]
        g = mv.parse(gold_tex, extraction_config=cfg, parsing_timeout=None)
        p = mv.parse(pred_tex, extraction_config=cfg, parsing_timeout=None)
        if not g or not p:
            _STATS["failures"] += 1
            return False
        return bool(mv.verify(g, p, timeout_seconds=None))

    if threading.current_thread() is not threading.main_thread():
        try:
            return run()
        except Exception:  # math-verify raised: counted, and the verdict is "not equal"
            _STATS["failures"] += 1
            return False
    old_handler = signal.signal(signal.SIGALRM, _raise_timeout)
    old_timer = signal.setitimer(signal.ITIMER_REAL, SYMBOLIC_TIMEOUT_S)
    try:
        return run()
    except _SymbolicTimeout:
        _STATS["timeouts"] += 1
        return False
    except Exception:
        _STATS["failures"] += 1
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0] > 0:  # somebody else's timer was running: give it back what was left
            signal.setitimer(signal.ITIMER_REAL, max(old_timer[0] - SYMBOLIC_TIMEOUT_S, 0.001), old_timer[1])
