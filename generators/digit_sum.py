"""digit_sum: the sum of the digits of a large number, once or iterated down to one digit.

Modes: `sum` (gold = the digit sum) and `digital_root` (sum the digits again
until one digit is left). Params: number (a decimal string, so big numbers
stay exact in JSON), mode.

Difficulty: 1 6-12 digits; 2 13-30 digits; 3 31-80 digits. Numbers are built
from random digits and, one segment in four, runs of one repeated digit
(like 11111111100): exactly where a model slips into digit-by-digit loops.
"""

from __future__ import annotations

from generators.base import Family
from generators.registry import register
from generators.rng import HashRng

LEVELS = {1: (6, 12), 2: (13, 30), 3: (31, 80)}
GROUP = 5


def draw_number(rng: HashRng, length: int) -> str:
    digits = str(rng.randint(1, 9))
    while len(digits) < length:
        room = length - len(digits)
        if rng.chance(1, 4):
            digits += str(rng.below(10)) * min(room, rng.randint(3, 10))
        else:
            digits += rng.digits(min(room, rng.randint(1, 8)))
    return digits


def digit_total(digits: str) -> int:
    return sum(int(c) for c in digits)


@register(
    "digit_sum",
    version="1",
    order=40,
    summary="sum of the digits of a large number; or iterated to a single digit",
    phrasings={
        "sum": (
            "What is the sum of the digits of {number}?",
            "Add up all the digits of the number {number}.",
            "Compute the digit sum of {number}.",
            "Take the number {number} and add its digits together. What do you get?",
            "Find the total of the digits in {number}.",
        ),
        "digital_root": (
            "Repeatedly sum the digits of {number} until a single digit remains. What is it?",
            "What is the digital root of {number}?",
            "Add the digits of {number}, then add the digits of the result, and keep going until one "
            "digit is left. Which digit is it?",
            "Reduce {number} to a single digit by summing its digits over and over. What digit do you reach?",
            "Find the single digit you get by iterating the digit sum starting from {number}.",
        ),
    },
    levels={
        1: "6-12 digits",
        2: "13-30 digits",
        3: "31-80 digits",
    },
    gold="an integer",
    default=True,
)
class DigitSum(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        low, high = LEVELS[difficulty]
        number = draw_number(rng, rng.randint(low, high))
        return {"mode": "digital_root" if rng.chance(1, 2) else "sum", "number": number}

    def solve(self, params: dict) -> str:
        total = digit_total(params["number"])
        if params["mode"] == "digital_root":
            while total >= 10:
                total = digit_total(str(total))
        return str(total)

    def explain(self, params: dict, gold: str) -> str:
        number = params["number"]
        groups = [number[i : i + GROUP] for i in range(0, len(number), GROUP)]
        sums = [digit_total(g) for g in groups]
        total = sum(sums)
        if len(groups) == 1:
            text = f"{' + '.join(number)} = {total}."
        else:
            per_group = ", ".join(f"{g} → {s}" for g, s in zip(groups, sums))
            text = (
                f"Digit sums in groups of {GROUP}: {per_group}. "
                f"Total: {' + '.join(map(str, sums))} = {total}."
            )
        if params["mode"] == "digital_root":
            chain = []
            value = total
            while value >= 10:
                nxt = digit_total(str(value))
                chain.append(f"{' + '.join(str(value))} = {nxt}")
                value = nxt
            text += " Then " + ", then ".join(chain) + "." if chain else " That is already one digit."
            text += f" The single digit is {gold}."
        return text
