"""The Task record and the Family base class every generator family extends.

A family turns (seed, draw index) into one task:

1. `draw_params(rng, difficulty)` picks the problem's parameters (what decides
   the gold answer: the word and letter, the numbers, the mode);
2. `solve(params)` computes the gold answer exactly from the parameters alone
   (integers, `fractions.Fraction`; never floats);
3. one of the mode's phrasings (at least five each) renders the prompt;
4. `explain(params, gold)` writes a short worked answer, and `chosen()` ends it
   with the one line `Final answer: <gold>` that the verifier reads.

The canonical task key is `"<family>:" + canonical JSON of the parameters`, so
two phrasings of the same problem share one key (the holdout gate matches
generated tasks by it), while the task id is the content id of the prompt.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field

from generators.rng import HashRng
from pairstore.keys import content_id

FINAL_ANSWER_PREFIX = "Final answer: "
DIFFICULTIES = (1, 2, 3)


@dataclass(frozen=True)
class Task:
    """One generated task. `params` defines the problem; `phrasing` indexes the mode's templates."""

    task_id: str
    family: str
    task_key: str
    prompt: str
    gold: str
    chosen: str
    params: dict
    phrasing: int
    seed: int
    difficulty: int = field(default=0, compare=False)

    def __hash__(self) -> int:
        # params is a dict (unhashable); equal tasks share a task id, so hashing by it is consistent.
        return hash(self.task_id)

    def to_dict(self) -> dict:
        return asdict(self)


def canonical_json(params: dict) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same parameters always give the same text."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def task_key(family: str, params: dict) -> str:
    return f"{family}:{canonical_json(params)}"


def with_final_answer(body: str, gold: str) -> str:
    """The worked answer followed by exactly one final-answer line."""
    return f"{body.rstrip()}\n{FINAL_ANSWER_PREFIX}{gold}"


def plural(count: int, noun: str) -> str:
    """'1 time', '3 times'."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class Family(ABC):
    """Base class of a task family: the hooks below. Its declaration (generators.registry.register)
    sets `name`, `version`, `description`, `difficulty_help` and `phrasings`."""

    name: str = ""
    version: str = ""
    description: str = ""
    # Difficulty levels and what they change, on one line.
    difficulty_help: str = ""
    # mode -> phrasing templates (str.format with the fields of `fields()`); at least five each.
    phrasings: dict[str, tuple[str, ...]] = {}

    # -- hooks ---------------------------------------------------------------
    @abstractmethod
    def draw_params(self, rng: HashRng, difficulty: int) -> dict:
        """The problem's parameters for one draw at a difficulty level (1 easy .. 3 hard)."""

    @abstractmethod
    def solve(self, params: dict) -> str:
        """The gold answer, computed exactly from the parameters."""

    @abstractmethod
    def explain(self, params: dict, gold: str) -> str:
        """A short worked answer (without the final-answer line)."""

    def fields(self, params: dict) -> dict:
        """Template fields of a prompt; by default the parameters themselves."""
        return dict(params)

    def mode_of(self, params: dict) -> str:
        return params["mode"] if "mode" in params else next(iter(self.phrasings))

    # -- built on the hooks --------------------------------------------------
    def templates(self, params: dict) -> tuple[str, ...]:
        return self.phrasings[self.mode_of(params)]

    def render(self, params: dict, phrasing: int) -> str:
        return self.templates(params)[phrasing].format(**self.fields(params))

    def chosen(self, params: dict, gold: str | None = None) -> str:
        gold = self.solve(params) if gold is None else gold
        return with_final_answer(self.explain(params, gold), gold)

    def task_key(self, params: dict) -> str:
        return task_key(self.name, params)

    def build(self, params: dict, phrasing: int, *, seed: int, difficulty: int = 0) -> Task:
        """The Task for given parameters and phrasing (gold and chosen computed here)."""
        prompt = self.render(params, phrasing)
        gold = self.solve(params)
        return Task(
            task_id=content_id(prompt),
            family=self.name,
            task_key=self.task_key(params),
            prompt=prompt,
            gold=gold,
            chosen=self.chosen(params, gold),
            params=params,
            phrasing=phrasing,
            seed=seed,
            difficulty=difficulty,
        )

    def make(self, seed: int, draw: int, difficulty: int | None = None) -> Task:
        """Draw number `draw` of this family under `seed`: the same inputs give the same task."""
        # The level is drawn from its own stream and then keys the parameter stream, so a fixed
        # difficulty gives the same task as a drawn one that landed on that level.
        level = (
            HashRng(seed, self.name, draw, "level").choice(DIFFICULTIES) if difficulty is None else difficulty
        )
        rng = HashRng(seed, self.name, draw, level)
        params = self.draw_params(rng, level)
        phrasing = rng.below(len(self.templates(params)))
        return self.build(params, phrasing, seed=seed, difficulty=level)
