"""The gate measures itself: the store's own held-out members, disguised, through the gate's matcher.

    pairstore audit gate                    # every active member of every set, seed 0
    pairstore audit gate --set judge34 --seed 7 --limit 1000 --json

Each active member's prompt (and its answer, where the store holds one) is disguised by every
transformation of TRANSFORMS: the classes the gate is built against (docs/design.md, "Threat model"),
each applied with a seeded choice where it has one. Each result becomes a candidate row with no
origin id (the id stage would catch them all) and goes through the export gate's own matcher
(pairstore.holdout.matching.check_candidates) against every member, eval item and benchmark. Recall
per transformation = the share of rows in which the matcher finds the member the row disguises.

Near neighbours (MUTATIONS: another number, one or two other content words, a possessive after its last
word) are other questions: a row that the matcher finds to be its source member is a false refusal. A
member a mutation cannot change (no number, no content word) is left out of that mutation's count.

A needle the gate skips as a stock phrase of the store (an answer several distinct prompts of the store's
other items hold: a refusal, a greeting) is counted and shown (`skipped_needles`); a transformation that
plants such an answer is left out of that member's count, as it is no evidence of a leak.

What no transformation here exercises, because string matching cannot decide it, is in UNCAUGHT
(and docs/design.md): the report prints it with the table.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, quote_plus

from pairstore.errors import NotFound
from pairstore.holdout.matching import STOPWORDS, candidate_table, check_candidates
from pairstore.keys import seeded_rank
from pairstore.normalize import TURN_SEP, word_text
from pairstore.progress import current as current_progress

CYRILLIC = str.maketrans("aceopxyiACEHKMOPTXBjs", "асеорхуіАСЕНКМОРТХВјѕ")
GREEK = str.maketrans("ABEHIKMNOPTXYZov", "ΑΒΕΗΙΚΜΝΟΡΤΧΥΖον")
INVISIBLES = "\u200b\u200c\u200d\u2060\u00ad\ufeff\u2062\u200f\u180e\ufe0f\u034f"
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
OTHER_WORDS = ("telescope", "harbour", "violin", "glacier", "lantern", "orchard", "saddle", "compass")


def _users(*turns: str) -> list[dict]:
    return [{"role": "user", "content": t} for t in turns]


def _inside(text: str, rng: random.Random) -> str:
    ch = rng.choice(INVISIBLES)
    words = text.split(" ")
    return " ".join(w[:1] + ch + w[1:] if i % 2 == 0 and len(w) > 1 else w for i, w in enumerate(words))


def _one_cyrillic(text: str, rng: random.Random) -> str:
    spots = [i for i, c in enumerate(text) if c.translate(CYRILLIC) != c]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + text[i].translate(CYRILLIC) + text[i + 1 :]


def _split(text: str) -> tuple[str, str]:
    words = text.split(" ")
    return " ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])


def _thousands(text: str) -> str:
    return re.sub(r"(?<![\d.,])(\d{1,3})(\d{3})(?![\d])", r"\1,\2", text)


def _drop_articles(text: str) -> str:
    return re.sub(r"\b(?:the|a|an) (?=\w)", "", text, count=3, flags=re.IGNORECASE)


def _cut_tail(text: str) -> str:
    words = text.split(" ")
    return " ".join(words[: max(1, len(words) - max(1, len(words) // 8))])


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _reordered(text: str) -> str | None:
    """The member's sentences, last first; None when it has fewer than two sentences of five words."""
    parts = [p for p in _SENTENCE.split(text.strip()) if p]
    if len([p for p in parts if len(p.split()) >= 5]) < 2:
        return None
    return " ".join(reversed(parts))


def _wordpiece(text: str) -> str:
    """A WordPiece dump: a long word split, its tail marked `##`, tokens separated by spaces."""
    return " ".join(w[:3] + " ##" + w[3:] if len(w) > 5 and w.isalpha() else w for w in text.split(" "))


# name -> (class, fn(prompt text, answer or None, rng) -> (prompt messages, answers) or None when the
# transformation does not apply to this member).
Transform = tuple[str, Callable[..., Any]]
TRANSFORMS: dict[str, Transform] = {
    "invisible characters inside words": ("encoding", lambda q, a, r: (_users(_inside(q, r)), [])),
    "one Cyrillic look-alike": ("look-alike", lambda q, a, r: (_users(_one_cyrillic(q, r)), [])),
    "every letter Cyrillic": ("look-alike", lambda q, a, r: (_users(q.translate(CYRILLIC)), [])),
    "Greek capitals": ("look-alike", lambda q, a, r: (_users(q.upper().translate(GREEK)), [])),
    "fullwidth forms": (
        "look-alike",
        lambda q, a, r: (_users("".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in q)), []),
    ),
    "upper case": ("case", lambda q, a, r: (_users(q.upper()), [])),
    "title case": ("case", lambda q, a, r: (_users(q.title()), [])),
    "punctuation added": ("punctuation", lambda q, a, r: (_users(q.replace(" ", ", ", 1) + "!!"), [])),
    "markdown bold": ("punctuation", lambda q, a, r: (_users(f"**{q}**"), [])),
    "whitespace": (
        "punctuation",
        lambda q, a, r: (_users(q.replace(" ", "\t", 2).replace(" ", "  \n ")), []),
    ),
    "HTML entities": (
        "encoding",
        lambda q, a, r: (_users(q.replace(" ", "&nbsp;").replace("'", "&#39;")), []),
    ),
    "double JSON encoding": (
        "encoding",
        lambda q, a, r: (_users(json.dumps(q)[1:-1].replace("\\n", "\\\\n")), []),
    ),
    "ChatML template": (
        "template",
        lambda q, a, r: (_users(f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"), []),
    ),
    "Llama-2 template": ("template", lambda q, a, r: (_users(f"<s>[INST] {q} [/INST]"), [])),
    "Llama-3 template": (
        "template",
        lambda q, a, r: (_users(f"<|start_header_id|>user<|end_header_id|>\n\n{q}<|eot_id|>"), []),
    ),
    "Gemma template": ("template", lambda q, a, r: (_users(f"<start_of_turn>user\n{q}<end_of_turn>\n"), [])),
    "Alpaca format": ("template", lambda q, a, r: (_users(f"### Instruction:\n{q}\n\n### Response:\n"), [])),
    "Question/Answer format": ("template", lambda q, a, r: (_users(f"Question:{q}\nAnswer:"), [])),
    "HTML tags": ("template", lambda q, a, r: (_users(f"<p>{q}</p>"), [])),
    "URL-encoded (form)": ("encoding", lambda q, a, r: (_users(quote_plus(q)), [])),
    "URL-encoded (percent)": ("encoding", lambda q, a, r: (_users(quote(q, safe="")), [])),
    "byte-level BPE token dump": ("tokenizer", lambda q, a, r: (_users("Ġ".join(q.split(" "))), [])),
    "SentencePiece token dump": ("tokenizer", lambda q, a, r: (_users("▁" + "▁".join(q.split(" "))), [])),
    "WordPiece token dump": ("tokenizer", lambda q, a, r: (_users(_wordpiece(q)), [])),
    "split over two user turns": ("turns", lambda q, a, r: (_users(*_split(q)), [])),
    "in the system prompt": (
        "turns",
        lambda q, a, r: ([{"role": "system", "content": q}, *_users("Answer the question above.")], []),
    ),
    "in an assistant turn": (
        "turns",
        lambda q, a, r: (
            [*_users("Give me a question."), {"role": "assistant", "content": q}, *_users("Answer it.")],
            [],
        ),
    ),
    "greeting and thanks around it": (
        "embedding",
        lambda q, a, r: (_users(f"Hi there! {q} Thanks a lot!"), []),
    ),
    "inside a longer prompt": (
        "embedding",
        lambda q, a, r: (
            _users(f"Before you answer, note that I am a teacher. {q} Please answer briefly."),
            [],
        ),
    ),
    "inside a chosen answer": (
        "answers",
        lambda q, a, r: (
            _users("Give me a practice question."),
            [f"Practice question: {q}\nAnswer: it depends."],
        ),
    ),
    "the member's answer as chosen": (
        "answers",
        lambda q, a, r: (_users("Plan my day, please."), [a]) if a and len(a.split()) >= 8 else None,
    ),
    "Arabic-Indic digits": (
        "numbers",
        lambda q, a, r: (_users(q.translate(ARABIC_INDIC)), []) if any(c.isdigit() for c in q) else None,
    ),
    "thousands separators": (
        "numbers",
        lambda q, a, r: (_users(_thousands(q)), []) if re.search(r"\d{4}", q) else None,
    ),
    "function words dropped": (
        "near copy",
        lambda q, a, r: (_users(_drop_articles(q)), []) if _drop_articles(q) != q else None,
    ),
    "tail cut": ("near copy", lambda q, a, r: (_users(_cut_tail(q)), []) if len(q.split()) >= 12 else None),
    "sentences reordered": (
        "order",
        lambda q, a, r: (_users(x), []) if (x := _reordered(q)) is not None else None,
    ),
}
# Transformations that plant the member's answer: a member whose answer is a stock phrase of the store
# is left out of their count (the gate skips such an answer, rightly).
ANSWER_TRANSFORMS = ("the member's answer as chosen",)


def _another_number(q: str, rng: random.Random) -> str | None:
    nums = list(re.finditer(r"\d+", q))
    if not nums:
        return None
    m = rng.choice(nums)
    return q[: m.start()] + str(int(m.group()) + rng.randint(1, 9)) + q[m.end() :]


def _another_word(q: str, rng: random.Random, keep: frozenset[str] = frozenset()) -> str | None:
    words = [
        m
        for m in re.finditer(r"[^\W\d_]{4,}", q)
        if m.group().lower() not in STOPWORDS and m.group().lower() not in keep
    ]
    if not words:
        return None
    m = max(words, key=lambda m: (len(m.group()), -m.start()))  # the longest content word
    new = rng.choice([w for w in OTHER_WORDS if w != m.group().lower()])
    # every occurrence: a word replaced once but kept elsewhere is still what the question is about
    return re.sub(rf"(?<!\w){re.escape(m.group())}(?!\w)", new, q)


def _two_other_words(q: str, rng: random.Random) -> str | None:
    """The two longest content words, each replaced by another word (the same template, other content)."""
    once = _another_word(q, rng)
    twice = None if once is None else _another_word(once, rng, frozenset(OTHER_WORDS))
    return twice if twice is not None and twice != once else None


def _possessive(q: str, rng: random.Random) -> str | None:
    """Another, longer question about something of the member's last word ("... Maria's garden"): the
    member's words are all there, but its last one is a possessive now."""
    stripped = q.rstrip(" ?.!")
    if len(stripped.split()) < 5 or not stripped[-1:].isalpha():
        return None
    return f"{stripped}'s {rng.choice(OTHER_WORDS)}, and what else should I know about it?"


MUTATIONS = {
    "another number": _another_number,
    "another content word": _another_word,
    "two other content words": _two_other_words,
    "a possessive after its last word": _possessive,
}

# What string matching cannot decide: documented, not measured (docs/design.md, "What it cannot catch").
UNCAUGHT = (
    "deep paraphrase: the same question in other words",
    "translation into another language",
    "a short member (under three words) inside a longer sentence",
    "ASCII look-alikes (0/O, 1/l, rn/m): kept apart on purpose",
    "a value rewritten in words or another unit ('12' as 'a dozen', '0.5' as 'half')",
    "a disguise inside a word of an embedded member ('ca pital' inside a longer prompt)",
    "anything written to the DuckDB file outside pairstore's commands",
)


@dataclass
class GateAudit:
    members: int
    seed: int
    recall: list[dict] = field(default_factory=list)  # transform, class, rows, caught, recall
    mutations: list[dict] = field(default_factory=list)  # mutation, rows, refused, false_refusal_rate
    uncaught: tuple = UNCAUGHT
    # needles the gate skipped as stock phrases of the store: how many, and the first few
    skipped_needles: int = 0
    skipped: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "members": self.members,
            "seed": self.seed,
            "recall": self.recall,
            "mutations": self.mutations,
            "uncaught": list(self.uncaught),
            "skipped_needles": {"count": self.skipped_needles, "examples": self.skipped},
        }

    def skipped_line(self) -> str:
        """One line for the table output: the needles skipped as stock phrases, with an example."""
        if not self.skipped_needles:
            return "skipped needles (stock phrases of the store, not evidence): 0"
        first = self.skipped[0]
        return (
            f"skipped needles (stock phrases of the store, not evidence): {self.skipped_needles}, e.g. "
            f"{first['set']}/{first['item_id']}: {first['text'][:80]!r}"
        )


def _members(
    store, set_name: str | None, limit: int | None, seed: int
) -> list[tuple[str, str, str, str | None]]:
    """(set, item id, prompt text, answer or None) of the active members, a seeded `limit` of them."""
    rows = store.con.execute(
        """
        SELECT h.set_name, h.item_id, h.item_kind,
               coalesce(
                   (SELECT array_to_string(list_transform(list_filter(b.prompt, lambda m: m.role = 'user'),
                                                          lambda m: m.content), chr(10))
                    FROM battles b WHERE h.item_kind = 'battle' AND b.battle_id = h.item_id),
                   (SELECT t.prompt FROM tasks t WHERE h.item_kind = 'task' AND t.task_id = h.item_id),
                   (SELECT p.question FROM problems p WHERE h.item_kind = 'problem' \
AND p.problem_id = h.item_id),
                   h.match_text) AS text,
               (SELECT b.own_answers[len(b.own_answers)] FROM battles b
                 WHERE h.item_kind = 'battle' AND b.battle_id = h.item_id) AS answer
        FROM holdout h WHERE h.removed_at IS NULL AND (? IS NULL OR h.set_name = ?)
        ORDER BY h.set_name, h.item_id""",
        [set_name, set_name],
    ).fetchall()
    out = [(s, i, (t or "").replace(TURN_SEP, " "), a) for s, i, _, t, a in rows if t]
    if limit is not None and len(out) > limit:
        out = sorted(out, key=lambda m: seeded_rank(seed, m[0], m[1]))[:limit]
        out.sort(key=lambda m: (m[0], m[1]))
    return out


def audit_gate(store, *, set_name: str | None = None, seed: int = 0, limit: int | None = None) -> GateAudit:
    """Recall per transformation and false refusals per mutation of the store's own active members."""
    if set_name is not None and not store.scalar(
        "SELECT count(*) FROM holdout_sets WHERE set_name = ?", [set_name]
    ):
        raise NotFound(f"no holdout set {set_name!r}")
    members = _members(store, set_name, limit, seed)
    rows: list[tuple] = []
    meta: list[tuple[str, str, str, str]] = []  # (kind "t"|"m", name, set, item id)
    progress = current_progress()
    for s, item, q, a in progress.track(members, "audit gate: disguise members", unit="members"):
        for name, (_, fn) in TRANSFORMS.items():
            rng = random.Random(seeded_rank(seed, s, item, name))
            got = fn(q, a, rng)
            if got is None:
                continue
            prompt, answers = got
            rows.append((len(rows), None, [], prompt, None, [x for x in answers if x]))
            meta.append(("t", name, s, item))
        for name, fn in MUTATIONS.items():
            rng = random.Random(seeded_rank(seed, s, item, name))
            mutated = fn(q, rng)
            if mutated is None or word_text(mutated) == word_text(q):
                continue
            rows.append((len(rows), None, [], _users(mutated), None, []))
            meta.append(("m", name, s, item))
    found: dict[int, set] = defaultdict(set)
    skipped: list[dict] = []
    with progress.stage("audit gate: check disguises", total=len(rows), unit="prompts") as stage:
        if rows:
            result = check_candidates(store, candidate_table(rows))
            for h in result.hits:
                found[h.row_index].add((h.set_name, h.item_id))
            skipped = result.skipped
        stage.advance(len(rows))
    stock_answers = {(x["set"], x["item_id"]) for x in skipped if x["answer"]}
    per: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for i, (kind, name, s, item) in enumerate(meta):
        if name in ANSWER_TRANSFORMS and (s, item) in stock_answers:
            continue  # a stock answer planted in a row is no leak: the gate skips it, and says so
        c = per[(kind, name)]
        c[0] += 1
        c[1] += (s, item) in found.get(i, ())
    out = GateAudit(len(members), seed, skipped_needles=len(skipped), skipped=skipped[:20])
    for name, (cls, _) in TRANSFORMS.items():
        n, caught = per.get(("t", name), (0, 0))
        out.recall.append(
            {
                "transform": name,
                "class": cls,
                "rows": n,
                "caught": caught,
                "recall": round(caught / n, 4) if n else None,
            }
        )
    for name in MUTATIONS:
        n, refused = per.get(("m", name), (0, 0))
        out.mutations.append(
            {
                "mutation": name,
                "rows": n,
                "refused": refused,
                "false_refusal_rate": round(refused / n, 4) if n else None,
            }
        )
    return out


def gate_audit_tables(result: GateAudit) -> tuple[list[str], list[list], list[str], list[list]]:
    """(columns, rows) of the recall table and of the mutation table, for the CLI and the report."""
    recall = [[r["transform"], r["class"], r["rows"], r["caught"], r["recall"]] for r in result.recall]
    muts = [[m["mutation"], m["rows"], m["refused"], m["false_refusal_rate"]] for m in result.mutations]
    return (
        ["transformation", "class", "rows", "caught", "recall"],
        recall,
        ["mutation", "rows", "refused", "false refusal rate"],
        muts,
    )
