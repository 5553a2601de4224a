"""letter_removal: remove every occurrence of one letter from a word, phrase or sentence.

Params: text (lower-case words, single spaces, no punctuation), letter. Gold:
the text with every occurrence of the letter deleted and the spaces kept. The
letter always occurs in the text, and never makes up a whole word (removing
"a" from "a cat" would leave a double space), so the gold is unambiguous.

Difficulty: 1 one word; 2 a phrase of two to four words; 3 a sentence of one
or two clauses.
"""

from __future__ import annotations

from generators.base import Family, plural
from generators.registry import register
from generators.rng import HashRng
from generators.words import NOUNS, phrase, sentence_words


@register(
    "letter_removal",
    version="1",
    order=50,
    summary="delete every occurrence of a letter from a word, phrase or sentence",
    phrasings={
        "remove": (
            'Remove every "{letter}" from "{text}". What is left?',
            'Delete all occurrences of the letter {letter} in the {kind} "{text}" and write the result.',
            'Rewrite "{text}" without any letter "{letter}".',
            'What does "{text}" become if you take out every "{letter}"?',
            'Strike out each "{letter}" in the following {kind} and give what remains: {text}',
            'If all the {letter}\'s are erased from "{text}", what text do you get?',
        ),
    },
    levels={
        1: "one word",
        2: "a phrase of 2-4 words",
        3: "a sentence of one or two clauses",
    },
    gold="the text without the letter",
    default=True,
)
class LetterRemoval(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        while True:
            if difficulty == 1:
                text = rng.choice(NOUNS)
            elif difficulty == 2:
                text = phrase(rng, 2, 4)
            else:
                text = " ".join(sentence_words(rng, rng.randint(1, 2)))
            words = text.split(" ")
            # A letter that is a whole word ("a") cannot be removed without leaving a double space.
            candidates = sorted({c for c in text if c != " "} - {w for w in words if len(set(w)) == 1})
            if candidates:
                return {"text": text, "letter": rng.choice(candidates)}

    def fields(self, params: dict) -> dict:
        return {**params, "kind": "phrase" if " " in params["text"] else "word"}

    def solve(self, params: dict) -> str:
        letter = params["letter"]
        return "".join(c for c in params["text"] if c != letter)

    def explain(self, params: dict, gold: str) -> str:
        text, letter = params["text"], params["letter"]
        removed = len(text) - len(gold)
        words = text.split(" ")
        if len(words) == 1:
            return f'"{text}" contains "{letter}" {plural(removed, "time")}; without it: {gold}.'
        changed = [f"{w} → {w.replace(letter, '')}" for w in words if letter in w]
        return f'Words with "{letter}": {", ".join(changed)}. The rest stay as they are.'
