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
from generators.word_count import WordCount
from pairstore.errors import BadInput

# Registry order is the order tasks are dealt out in (see generators.tasks.generate_tasks).
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (LetterCount(), WordCount(), LongDivision(), DigitSum(), LetterRemoval(),
                   ArithmeticChain(), FractionExpansion())
}
FAMILY_NAMES = tuple(FAMILIES)


def resolve_families(names: Iterable[str] | str | None) -> list[str]:
    """The selected family names in registry order; None = all.

    Accepts a list or a comma-separated string. An unknown name raises BadInput naming it.
    """
    if names is None:
        return list(FAMILY_NAMES)
    if isinstance(names, str):
        names = names.split(",")
    wanted = {n.strip() for n in names if n and n.strip()}
    unknown = sorted(wanted - set(FAMILIES))
    if unknown:
        raise BadInput(f"unknown task family {', '.join(map(repr, unknown))} "
                       f"(known: {', '.join(FAMILY_NAMES)})", field="families")
    if not wanted:
        raise BadInput("no task family selected", field="families")
    return [name for name in FAMILY_NAMES if name in wanted]
