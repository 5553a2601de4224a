"""The family registry: name -> generator, shared by the library and the CLI.

>>> sorted(FAMILIES) == sorted(FAMILY_NAMES)
True
"""

from __future__ import annotations

from collections.abc import Iterable

from generators.arithmetic_chain import ArithmeticChain
from generators.base import Family
from generators.digit_sum import DigitSum
from generators.fraction_expansion import FractionExpansion
from generators.letter_count import LetterCount
from generators.letter_removal import LetterRemoval
from generators.long_division import LongDivision
from generators.short_arithmetic import ShortArithmetic
from generators.word_count import WordCount
from pairstore.errors import BadInput

# Registry order is the order tasks are dealt out in (see generators.tasks.generate_tasks).
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        LetterCount(),
        WordCount(),
        LongDivision(),
        DigitSum(),
        LetterRemoval(),
        ArithmeticChain(),
        FractionExpansion(),
        ShortArithmetic(),
    )
}
FAMILY_NAMES = tuple(FAMILIES)
# What "all families" means when none are named: the loop-fix families. short_arithmetic (the demo's tiny
# model's curriculum) is chosen by name only, so a store's `generate loopfix --seed S --n N` keeps
# giving the tasks it gave before that family existed.
DEFAULT_FAMILIES = tuple(name for name in FAMILY_NAMES if name != ShortArithmetic.name)


def resolve_families(names: Iterable[str] | str | None) -> list[str]:
    """The selected family names in registry order; None = DEFAULT_FAMILIES (the loop-fix families).

    Accepts a list or a comma-separated string. An unknown name raises BadInput naming it.
    """
    if names is None:
        return list(DEFAULT_FAMILIES)
    if isinstance(names, str):
        names = names.split(",")
    wanted = {n.strip() for n in names if n and n.strip()}
    unknown = sorted(wanted - set(FAMILIES))
    if unknown:
        raise BadInput(
            f"unknown task family {', '.join(map(repr, unknown))} (known: {', '.join(FAMILY_NAMES)})",
            field="families",
        )
    if not wanted:
        raise BadInput("no task family selected", field="families")
    return [name for name in FAMILY_NAMES if name in wanted]
