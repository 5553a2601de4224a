"""long_division: one family, two modes (the mode is a parameter, so it is part of the task key).

- `quotient_remainder` (params dividend, divisor): gold `Q R r`, e.g. `253 R 9`
  for 7346 ÷ 29 (quotient, the letter R, the remainder; remainder 0 is written).
- `decimal` (params dividend, divisor, places): the quotient rounded half-up to
  exactly `places` decimal places, trailing zeros kept, e.g. `253.3103`.

Difficulty: 1 a 3-4 digit dividend by a one-digit divisor (2 places);
2 a 4-6 digit dividend by a two-digit divisor (3-4 places); 3 a 6-9 digit
dividend by a three-digit divisor (5-8 places). Decimal draws avoid divisions
that come out exact, where the question would be trivial.
"""

from __future__ import annotations

from generators.base import Family
from generators.registry import register
from generators.rng import HashRng

# difficulty -> (dividend digits range, divisor range, places range)
LEVELS = {
    1: ((3, 4), (2, 9), (2, 2)),
    2: ((4, 6), (11, 99), (3, 4)),
    3: ((6, 9), (101, 999), (5, 8)),
}


def round_half_up(numerator: int, denominator: int, places: int) -> str:
    """numerator/denominator (both positive) rounded half-up to `places` decimals, exactly."""
    scaled, rest = divmod(numerator * 10**places, denominator)
    if 2 * rest >= denominator:
        scaled += 1
    whole, frac = divmod(scaled, 10**places)
    return f"{whole}.{frac:0{places}d}" if places else str(whole)


def truncated_digits(numerator: int, denominator: int, places: int) -> str:
    """The first `places` decimals of numerator/denominator, cut (not rounded)."""
    whole, rest = divmod(numerator, denominator)
    return f"{whole}.{rest * 10**places // denominator:0{places}d}"


def rounding_note(numerator: int, denominator: int, places: int) -> str:
    """'the next digit is 7, so round up' for the worked answer."""
    cut = truncated_digits(numerator, denominator, places + 1)
    following = cut[-1]
    direction = "up" if int(following) >= 5 else "down"
    return f"{cut}…; the digit after decimal place {places} is {following}, so round {direction}"


@register(
    "long_division",
    version="1",
    order=30,
    summary="integer division: quotient and remainder, or the decimal quotient to N places",
    phrasings={
        "quotient_remainder": (
            "What are the quotient and remainder when {dividend} is divided by {divisor}?",
            "Divide {dividend} by {divisor}. Give the quotient and the remainder.",
            "Use long division to compute {dividend} ÷ {divisor}, with a remainder.",
            "{dividend} divided by {divisor}: what is the whole-number quotient, and what is left over?",
            "Find q and r with {dividend} = {divisor} × q + r and 0 ≤ r < {divisor}.",
            "How many times does {divisor} go into {dividend}, and what is the remainder?",
        ),
        "decimal": (
            "Compute {dividend} ÷ {divisor} to {places} decimal places.",
            "What is {dividend} divided by {divisor}, rounded to {places} decimal places?",
            "Use long division to find {dividend}/{divisor} as a decimal rounded to {places} places.",
            "Divide {dividend} by {divisor} and round the result to {places} decimal places.",
            "Give the value of {dividend} ÷ {divisor} correct to {places} decimal places.",
        ),
    },
    levels={
        1: "3-4 digits ÷ one digit, 2 places",
        2: "4-6 digits ÷ two digits, 3-4 places",
        3: "6-9 digits ÷ three digits, 5-8 places",
    },
    gold="`253 R 9`; or rounded half-up to N places: `253.3103`",
    default=True,
)
class LongDivision(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        (dmin, dmax), (vmin, vmax), (pmin, pmax) = LEVELS[difficulty]
        mode = "decimal" if rng.chance(1, 2) else "quotient_remainder"
        while True:
            digits = rng.randint(dmin, dmax)
            dividend = rng.randint(10 ** (digits - 1), 10**digits - 1)
            divisor = rng.randint(vmin, vmax)
            if mode == "quotient_remainder":
                return {"mode": mode, "dividend": dividend, "divisor": divisor}
            if dividend % divisor:
                return {
                    "mode": mode,
                    "dividend": dividend,
                    "divisor": divisor,
                    "places": rng.randint(pmin, pmax),
                }

    def solve(self, params: dict) -> str:
        dividend, divisor = params["dividend"], params["divisor"]
        if params["mode"] == "quotient_remainder":
            quotient, remainder = divmod(dividend, divisor)
            return f"{quotient} R {remainder}"
        return round_half_up(dividend, divisor, params["places"])

    def explain(self, params: dict, gold: str) -> str:
        dividend, divisor = params["dividend"], params["divisor"]
        quotient, remainder = divmod(dividend, divisor)
        if params["mode"] == "quotient_remainder":
            return (
                f"{divisor} × {quotient} = {divisor * quotient}, and {dividend} - {divisor * quotient} = "
                f"{remainder}, which is less than {divisor}. So the quotient is {quotient} and the "
                f"remainder is {remainder}."
            )
        places = params["places"]
        return (
            f"{dividend} ÷ {divisor} = {quotient} remainder {remainder}; continuing the division gives "
            f"{rounding_note(dividend, divisor, places)}: {gold}."
        )
