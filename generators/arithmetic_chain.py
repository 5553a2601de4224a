"""arithmetic_chain: a start value and a chain of + − × ÷ steps on integers, evaluated exactly.

Params: start (int), steps (list of [op, operand], op one of "+", "-", "*",
"/", operands positive integers). The chain is applied left to right; the
expression phrasings write the same chain with the parentheses that order
needs. Division that does not divide stays exact through fractions.Fraction.
Gold: an integer ("57", "-12") or a reduced fraction ("53/2", "-7/3").

Difficulty: 1 two or three steps on numbers up to 12; 2 three to five steps
up to 50; 3 five to seven steps up to 99 from a start up to 999. Three
divisions in four pick a divisor that divides exactly when one exists.
"""

from __future__ import annotations

from fractions import Fraction

from generators.base import Family
from generators.registry import register
from generators.rng import HashRng

# difficulty -> (steps range, start range, operand range)
LEVELS = {1: ((2, 3), (1, 20), (1, 12)), 2: ((3, 5), (1, 100), (2, 50)), 3: ((5, 7), (10, 999), (2, 99))}
PRETTY = {"+": "+", "-": "−", "*": "×", "/": "÷"}
VERBS = {"+": "add {n}", "-": "subtract {n}", "*": "multiply by {n}", "/": "divide by {n}"}


def fmt(value: Fraction) -> str:
    """'57', '-12', '53/2' or '-7/3'."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def apply(value: Fraction, op: str, operand: int) -> Fraction:
    if op == "+":
        return value + operand
    if op == "-":
        return value - operand
    if op == "*":
        return value * operand
    return value / operand


def evaluate(start: int, steps) -> Fraction:
    value = Fraction(start)
    for op, operand in steps:
        value = apply(value, op, operand)
    return value


def expression(start: int, steps, symbols: dict[str, str]) -> str:
    """The chain as one infix expression, parenthesized only where order needs it."""
    text, top = str(start), None
    for op, operand in steps:
        if op in "*/" and top in ("+", "-"):
            text = f"({text})"
        text = f"{text} {symbols[op]} {operand}"
        top = op
    return text


@register(
    "arithmetic_chain",
    version="1",
    order=60,
    summary="a chain of + − × ÷ steps on integers, exact (fractions where division does not divide)",
    phrasings={
        "chain": (
            "Start with {start}. {instructions}. What number do you end with?",
            "Evaluate exactly: {expression}",
            "Compute {ascii_expression}. Give an exact answer (a fraction if it is not a whole number).",
            "Take {start}, then {instructions_lower}. What is the result?",
            "What is the value of {expression}? If it is not an integer, answer with a reduced fraction.",
            "I begin with the number {start}. Step by step I {instructions_lower}. Where do I end up?",
        ),
    },
    levels={
        1: "2-3 steps, numbers to 12",
        2: "3-5 steps, to 50",
        3: "5-7 steps, to 99, start to 999",
    },
    gold="an integer or reduced fraction: `57`, `-53/2`",
    default=True,
)
class ArithmeticChain(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        (smin, smax), (amin, amax), (omin, omax) = LEVELS[difficulty]
        start = rng.randint(amin, amax)
        value = Fraction(start)
        steps = []
        for _ in range(rng.randint(smin, smax)):
            op = rng.choice("+-*/")
            if op == "/":
                exact = [
                    d
                    for d in range(max(2, omin), omax + 1)
                    if value.denominator == 1 and value.numerator % d == 0
                ]
                operand = rng.choice(exact) if exact and rng.chance(3, 4) else rng.randint(max(2, omin), omax)
            elif op == "*":
                operand = rng.randint(max(2, omin), omax)
            else:
                operand = rng.randint(omin, omax)
            steps.append([op, operand])
            value = apply(value, op, operand)
        return {"start": start, "steps": steps}

    def fields(self, params: dict) -> dict:
        parts = [VERBS[op].format(n=n) for op, n in params["steps"]]
        listed = ", ".join(parts[:-1]) + f", then {parts[-1]}" if len(parts) > 1 else parts[0]
        return {
            "start": params["start"],
            "instructions": listed[0].upper() + listed[1:],
            "instructions_lower": listed,
            "expression": expression(params["start"], params["steps"], PRETTY),
            "ascii_expression": expression(params["start"], params["steps"], {o: o for o in "+-*/"}),
        }

    def solve(self, params: dict) -> str:
        return fmt(evaluate(params["start"], params["steps"]))

    def explain(self, params: dict, gold: str) -> str:
        value = Fraction(params["start"])
        lines = []
        for op, operand in params["steps"]:
            nxt = apply(value, op, operand)
            shown = fmt(value)
            if value < 0 or value.denominator != 1:
                shown = f"({shown})"
            lines.append(f"{shown} {PRETTY[op]} {operand} = {fmt(nxt)}")
            value = nxt
        return "\n".join(lines)
