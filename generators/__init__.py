"""Synthetic loop-fix task families with gold answers computed by code.

    pairstore generate loopfix --n 700 --seed 11 --suite lf-eval
    pairstore generate loopfix --n 5000 --seed 12 --families digit_sum,long_division
    pairstore generate families

A family is one module of this package, declared once with generators.registry.register (its name,
version, dealing order, phrasings per mode, difficulty levels 1-3 and the form of its gold answers).
Each module's docstring documents its parameters and notation. A mode is a parameter, so it is part
of the task key (long division's quotient-and-remainder and decimal modes are one family).

Families, in dealing order (built from the declarations; `pairstore generate families` prints the
same table; "by name": left out when no family is named):

"""

from generators.base import FINAL_ANSWER_PREFIX, Family, Task
from generators.registry import FAMILIES, FAMILY_NAMES, family_table, resolve_families
from generators.tasks import LoopfixSummary, generate_loopfix, generate_tasks, write_tasks

__doc__ = (__doc__ or "") + family_table()

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
