"""letter_count: how many times a letter occurs in a word or phrase, or how many letters it has.

Modes: `occurrences` (params text, letter; gold = occurrences of the letter)
and `total` (params text; gold = letters in the text, spaces not counted).
Texts are lower-case words from generators.words, so case never matters.

Difficulty: 1 one word; 2 a word of 9+ letters or a two-word phrase; 3 a
phrase of three to five words. In `occurrences`, one draw in six asks for a
letter the text does not contain (gold 0): the model must not invent one.
"""

from __future__ import annotations

from generators.base import Family, plural
from generators.registry import register
from generators.rng import HashRng
from generators.words import NOUNS, phrase

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
LONG_WORDS = tuple(w for w in NOUNS if len(w) >= 9)


def _spelled(word: str, letter: str | None = None) -> str:
    """'s-t-[r]-a-w': a word spelled out, the asked-for letter bracketed."""
    return "-".join(f"[{c}]" if c == letter else c for c in word)


@register(
    "letter_count",
    version="1",
    order=10,
    summary="count one letter's occurrences in a word or phrase, or count all its letters",
    phrasings={
        "occurrences": (
            'How many times does the letter "{letter}" appear in "{text}"?',
            'Count the occurrences of the letter {letter} in the {kind} "{text}".',
            'In "{text}", how many {letter}\'s are there?',
            'How many "{letter}" characters does the {kind} "{text}" contain?',
            'What is the number of times "{letter}" occurs in "{text}"? Reply with a number.',
            '"{text}": how often does the letter "{letter}" show up?',
        ),
        "total": (
            'How many letters are in the {kind} "{text}"?',
            'Count the letters in "{text}" (spaces do not count).',
            'What is the total number of letters in "{text}"?',
            '"{text}": how many letters does it have, not counting spaces?',
            'Give the letter count of the {kind} "{text}".',
        ),
    },
    levels={
        1: "one word",
        2: "a long word or two-word phrase",
        3: "a phrase of 3-5 words",
    },
    gold="an integer",
    default=True,
)
class LetterCount(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        if difficulty == 1:
            text = rng.choice(NOUNS)
        elif difficulty == 2:
            text = rng.choice(LONG_WORDS) if rng.chance(1, 2) else phrase(rng, 2, 2)
        else:
            text = phrase(rng, 3, 5)
        if rng.chance(1, 4):
            return {"mode": "total", "text": text}
        present = sorted(set(text.replace(" ", "")))
        if rng.chance(1, 6):
            absent = [c for c in ALPHABET if c not in present]
            letter = rng.choice(absent)
        else:
            letter = rng.choice(present)
        return {"mode": "occurrences", "text": text, "letter": letter}

    def fields(self, params: dict) -> dict:
        return {**params, "kind": "phrase" if " " in params["text"] else "word"}

    def solve(self, params: dict) -> str:
        text = params["text"]
        if params["mode"] == "total":
            return str(sum(1 for c in text if c != " "))
        letter = params["letter"]
        return str(sum(1 for c in text if c == letter))

    def explain(self, params: dict, gold: str) -> str:
        words = params["text"].split()
        if params["mode"] == "total":
            if len(words) == 1:
                return f"Spelled out, {_spelled(words[0])} has {gold} letters."
            parts = " + ".join(f"{w} ({len(w)})" for w in words)
            return f"Letters per word: {parts} = {gold} letters."
        letter = params["letter"]
        if gold == "0":
            return f'None of the letters of "{params["text"]}" is "{letter}", so it appears 0 times.'
        if len(words) == 1:
            return (
                f"Spelled out: {_spelled(words[0], letter)}. "
                f'The letter "{letter}" appears {plural(int(gold), "time")}.'
            )
        hits = [(w, w.count(letter)) for w in words if letter in w]
        parts = " + ".join(f"{w} ({k})" for w, k in hits)
        return f'Words containing "{letter}": {parts} = {gold}.'
