"""short_arithmetic: add or subtract two numbers.

Params: a, b, op (`+` or `-`). A subtraction puts the larger number first, so the
gold is never negative and the task stays short. Gold: the integer result.

This is the shortest task with an exact gold answer, and the one a small model
learns first: the demo's tiny incumbent (train/tiny_chat.py) is trained on it
from scratch, and the demo's held-out suite is made of it.

Difficulty: 1 numbers 0-20; 2 two-digit numbers (10-99); 3 three-digit numbers.
"""

from __future__ import annotations

from generators.base import Family
from generators.registry import register
from generators.rng import HashRng


@register(
    "short_arithmetic",
    version="1",
    order=80,
    summary="add or subtract two numbers",
    phrasings={
        "op": (
            "What is {a} {op} {b}?",
            "Compute {a} {op} {b}.",
            "{a} {op} {b} = ?",
            "Work out {a} {op} {b}.",
            "Calculate {a} {op} {b}.",
        ),
    },
    levels={
        1: "numbers to 20",
        2: "two-digit numbers",
        3: "three-digit numbers",
    },
    gold="an integer: `a + b` or `a - b` (never negative)",
)
class ShortArithmetic(Family):
    LEVELS = {1: (0, 20), 2: (10, 99), 3: (100, 999)}

    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        low, high = self.LEVELS[difficulty]
        a, b = rng.randint(low, high), rng.randint(low, high)
        op = rng.choice("+-")
        if op == "-" and b > a:
            a, b = b, a
        return {"a": a, "b": b, "op": op}

    def solve(self, params: dict) -> str:
        a, b = params["a"], params["b"]
        return str(a + b if params["op"] == "+" else a - b)

    def explain(self, params: dict, gold: str) -> str:
        return f"{params['a']} {params['op']} {params['b']} = {gold}"
