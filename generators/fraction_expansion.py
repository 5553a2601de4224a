"""fraction_expansion: a fraction as a decimal, the repeating part marked, or to N places.

Notation of the `repeating` mode: the exact decimal expansion with the
repeating block (the shortest one, starting as early as possible) in
parentheses after the digits that do not repeat:

    1/6 = 0.1(6)    1/7 = 0.(142857)    22/7 = 3.(142857)    3/8 = 0.375 (ends: no parentheses)

Modes: `repeating` (params numerator, denominator) and `places` (params
numerator, denominator, places; gold rounded half-up to exactly that many
decimals, trailing zeros kept). Fractions are in lowest terms and never whole
numbers; `places` draws use denominators whose expansion does not end, the
case where a model runs on digit after digit for hundreds of tokens.

Difficulty: 1 denominators 3-12 (proper fractions; 4-8 places); 2 denominators
13-60 (10-20 places); 3 denominators 61-150, numerators up to three times the
denominator, repeating blocks up to 60 digits (25-50 places).
"""

from __future__ import annotations

from math import gcd

from generators.base import Family, plural
from generators.long_division import round_half_up, rounding_note
from generators.registry import register
from generators.rng import HashRng

# difficulty -> (denominator range, numerator upper bound as a multiple of the denominator, places range)
LEVELS = {1: ((3, 12), 1, (4, 8)), 2: ((13, 60), 1, (10, 20)), 3: ((61, 150), 3, (25, 50))}
MAX_PERIOD = 60


def expansion(numerator: int, denominator: int) -> tuple[str, str, str]:
    """(integer part, non-repeating digits, repeating digits) by long division, tracking remainders.

    The first remainder seen twice marks where the cycle starts; remainder 0 means the expansion ends.
    """
    whole, rest = divmod(numerator, denominator)
    digits: list[str] = []
    seen: dict[int, int] = {}
    while rest and rest not in seen:
        seen[rest] = len(digits)
        digit, rest = divmod(rest * 10, denominator)
        digits.append(str(digit))
    if not rest:
        return str(whole), "".join(digits), ""
    start = seen[rest]
    return str(whole), "".join(digits[:start]), "".join(digits[start:])


def repeating_notation(numerator: int, denominator: int) -> str:
    whole, fixed, cycle = expansion(numerator, denominator)
    if not fixed and not cycle:
        return whole
    return f"{whole}.{fixed}({cycle})" if cycle else f"{whole}.{fixed}"


def _terminates(denominator: int) -> bool:
    for p in (2, 5):
        while denominator % p == 0:
            denominator //= p
    return denominator == 1


@register(
    "fraction_expansion",
    version="1",
    order=70,
    summary="a fraction as a decimal: exact with the repeating block in parentheses, or to N places",
    phrasings={
        "repeating": (
            "Write {numerator}/{denominator} as a decimal. Put the repeating part in parentheses, "
            "e.g. 1/6 = 0.1(6).",
            "Express the fraction {numerator}/{denominator} as a decimal, marking the repeating block "
            "with parentheses (like 0.(3) for 1/3).",
            "What is the exact decimal expansion of {numerator}/{denominator}? Show the repeating digits "
            "once, in parentheses, as in 0.1(6).",
            "Convert {numerator}/{denominator} to a decimal. If it repeats, enclose the repeating digits "
            "in parentheses (1/6 = 0.1(6)); if it ends, just write it out.",
            "Give {numerator} ÷ {denominator} as an exact decimal, with the repetend in parentheses "
            "(for example 2/11 = 0.(18)).",
        ),
        "places": (
            "Write {numerator}/{denominator} as a decimal to {places} decimal places.",
            "What is {numerator}/{denominator} rounded to {places} decimal places?",
            "Expand the fraction {numerator}/{denominator} as a decimal, correct to {places} places.",
            "Give the decimal value of {numerator} ÷ {denominator}, rounded to {places} decimal places.",
            "Convert {numerator}/{denominator} into a decimal number with exactly {places} digits after "
            "the decimal point (rounded).",
        ),
    },
    levels={
        1: "denominators 3-12, 4-8 places",
        2: "denominators 13-60, 10-20 places",
        3: "denominators 61-150, improper fractions, 25-50 places",
    },
    gold="`0.1(6)`, `0.375`; or N places: `0.71428571428571428571`",
    default=True,
)
class FractionExpansion(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        (dmin, dmax), multiple, (pmin, pmax) = LEVELS[difficulty]
        mode = "places" if rng.chance(1, 2) else "repeating"
        while True:
            denominator = rng.randint(dmin, dmax)
            numerator = rng.randint(1, denominator * multiple - 1)
            if gcd(numerator, denominator) != 1 or numerator % denominator == 0:
                continue
            if mode == "places":
                if _terminates(denominator):
                    continue
                return {
                    "mode": mode,
                    "numerator": numerator,
                    "denominator": denominator,
                    "places": rng.randint(pmin, pmax),
                }
            if len(expansion(numerator, denominator)[2]) <= MAX_PERIOD:
                return {"mode": mode, "numerator": numerator, "denominator": denominator}

    def solve(self, params: dict) -> str:
        numerator, denominator = params["numerator"], params["denominator"]
        if params["mode"] == "places":
            return round_half_up(numerator, denominator, params["places"])
        return repeating_notation(numerator, denominator)

    def explain(self, params: dict, gold: str) -> str:
        numerator, denominator = params["numerator"], params["denominator"]
        if params["mode"] == "places":
            return (
                f"Long division of {numerator} by {denominator} gives "
                f"{rounding_note(numerator, denominator, params['places'])}: {gold}."
            )
        whole, fixed, cycle = expansion(numerator, denominator)
        if not cycle:
            return (
                f"{denominator} has no prime factors other than 2 and 5, so the division ends: "
                f"{numerator}/{denominator} = {gold}."
            )
        if fixed:
            verb = "does" if len(fixed) == 1 else "do"
            start = f"the first {plural(len(fixed), 'decimal digit')} ({fixed}) {verb} not repeat, then"
        else:
            start = "from the first decimal on,"
        return (
            f"Long division of {numerator} by {denominator}: the integer part is {whole}; {start} the "
            f"remainders recur every {plural(len(cycle), 'digit')}, so the block {cycle} repeats forever. "
            f"Written once: {gold}."
        )
