"""word_count: how many words a sentence has.

Params: sentence. A word is a run of characters between spaces (punctuation
sticks to its word); sentences come from generators.words and contain no
hyphens, digits or stray symbols, so the count is unambiguous.

Difficulty: 1 one clause (about 4-10 words); 2 two clauses; 3 three to four
clauses (up to ~40 words).
"""

from __future__ import annotations

from generators.base import Family
from generators.registry import register
from generators.rng import HashRng
from generators.words import sentence

GROUP = 5


@register(
    "word_count",
    version="1",
    order=20,
    summary="count the words in an invented sentence",
    phrasings={
        "words": (
            'How many words are in this sentence? "{sentence}"',
            "Count the words in the following sentence: {sentence}",
            'What is the word count of "{sentence}"?',
            'Sentence: "{sentence}"\nHow many words does it contain?',
            "Tell me how many words there are in: {sentence}",
            'Please count the number of words in the sentence "{sentence}".',
        ),
    },
    levels={
        1: "one clause",
        2: "two clauses",
        3: "three or four clauses",
    },
    gold="an integer (words = runs between spaces)",
    default=True,
)
class WordCount(Family):
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        clauses = {1: 1, 2: 2}.get(difficulty) or rng.randint(3, 4)
        return {"sentence": sentence(rng, clauses)}

    def solve(self, params: dict) -> str:
        return str(len(params["sentence"].split(" ")))

    def explain(self, params: dict, gold: str) -> str:
        words = params["sentence"].split(" ")
        if len(words) <= GROUP:
            return f"The words are {', '.join(words)}: {gold} words."
        groups = []
        for start in range(0, len(words), GROUP):
            chunk = words[start : start + GROUP]
            groups.append(f'"{" ".join(chunk)}" ({start + len(chunk)})')
        return f"Counting in fives: {', '.join(groups)}. The sentence has {gold} words."
