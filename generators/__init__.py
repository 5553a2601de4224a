"""Synthetic loop-fix task families with gold answers computed by code.

    pairstore generate loopfix --n 700 --seed 11 --suite lf-eval
    pairstore generate loopfix --n 5000 --seed 12 --families digit_sum,long_division
    pairstore generate families

Families (registry `FAMILIES`, name -> generator):

| family | modes | gold |
| --- | --- | --- |
| letter_count | occurrences, total | an integer |
| word_count | words | an integer (words = runs between spaces) |
| long_division | quotient_remainder, decimal | `253 R 9`; or rounded half-up to N places: `253.3103` |
| digit_sum | sum, digital_root | an integer |
| letter_removal | remove | the text without the letter |
| arithmetic_chain | chain | an integer or reduced fraction: `57`, `-53/2` |
| fraction_expansion | repeating, places | `0.1(6)`, `0.375`; or N places: `0.71428571428571428571` |
| short_arithmetic | op | an integer: `a + b` or `a - b` (never negative) |

Long division is one family whose `mode` parameter selects quotient-and-remainder
or decimal expansion; the mode is part of the task key. Each module's docstring
documents its parameters, difficulty levels (1-3) and notation.
"""

from generators.base import FINAL_ANSWER_PREFIX, Family, Task
from generators.registry import FAMILIES, FAMILY_NAMES, resolve_families
from generators.tasks import LoopfixSummary, generate_loopfix, generate_tasks, write_tasks

__all__ = [
    "FAMILIES",
    "FAMILY_NAMES",
    "FINAL_ANSWER_PREFIX",
    "Family",
    "LoopfixSummary",
    "Task",
    "generate_loopfix",
    "generate_tasks",
    "resolve_families",
    "write_tasks",
]
