"""The gate against someone trying to get past it (the threat model of docs/design.md): every disguise of
held-out prompts of every size, through `pairstore export` (exit 3 listing every member) and `pairstore audit
leaks --json` (the same members); and a control corpus of more than 5,000 prompts that are not members, near
neighbours included, with no hit at all."""

from __future__ import annotations

import json
import re
from importlib import resources
from urllib.parse import quote, quote_plus

import pytest

from pairstore.holdout.matching import EMBED_MIN_WORDS
from tests.tiers import fast_share

# Members: real-looking prompts of every size (two are the shipped sample battles sb0000 and sb0001).
TINY = "Explain quantum tunneling simply."  # < EMBED_MIN_WORDS words
SHORT = "What is 63 times 31? Show the work briefly."  # < 64 characters
MEDIUM = "A shop sells pencils at 31 cents each. How much do 84 pencils cost, in cents?"
LONG = (
    "I am planning a trip to Kyoto in late autumn and would like to see the maple leaves at the old "
    "temples. Which three temples would you recommend visiting, and how should I order them in a "
    "single day to avoid the crowds?"
)
MULTI = [
    "Write a short poem about autumn leaves falling on the old temples of Kyoto.",
    "Now make it rhyme and give it a title.",
]
MEMBERS = {"h-tiny": [TINY], "h-short": [SHORT], "h-medium": [MEDIUM], "h-long": [LONG], "h-multi": MULTI}
EMBEDDABLE = {k for k, turns in MEMBERS.items() if len(" ".join(turns).split()) >= EMBED_MIN_WORDS}

INVISIBLES = {
    "zero-width space": "\u200b",
    "zero-width non-joiner": "\u200c",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "soft hyphen": "\u00ad",
    "byte order mark": "\ufeff",
    "invisible times": "\u2062",
    "right-to-left mark": "\u200f",
    "Mongolian vowel separator": "\u180e",
    "variation selector": "\ufe0f",
    "combining grapheme joiner": "\u034f",
}
CYRILLIC = str.maketrans("aceopxyiACEHKMOPTXBjs", "асеорхуіАСЕНКМОРТХВјѕ")
GREEK = str.maketrans("ABEHIKMNOPTXYZov", "ΑΒΕΗΙΚΜΝΟΡΤΧΥΖον")


def _inside(text: str, ch: str) -> str:
    """`ch` after the first letter of every other word (a careless script would add it
    once; once is enough)."""
    words = text.split(" ")
    return " ".join(w[:1] + ch + w[1:] if i % 2 == 0 and len(w) > 1 else w for i, w in enumerate(words))


def _one_letter(text: str, table) -> str:
    i = next(i for i, c in enumerate(text) if c.translate(table) != c)
    return text[:i] + text[i].translate(table) + text[i + 1 :]


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _split(text: str) -> list[str]:
    words = text.split(" ")
    return [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])]


def users(turns: list[str], answers=("Sure.",)) -> list[dict]:
    """User turns with an assistant answer between them."""
    out = []
    for i, t in enumerate(turns):
        if i:
            out.append({"role": "assistant", "content": answers[0]})
        out.append({"role": "user", "content": t})
    return out


# Each disguise: turns -> prompt of the leaking row. Text disguises apply to every user turn.
def text_disguise(f):
    return lambda turns: users([f(t) for t in turns])


DISGUISES = {
    **{f"{name} inside": text_disguise(lambda t, c=ch: _inside(t, c)) for name, ch in INVISIBLES.items()},
    "one Cyrillic letter": text_disguise(lambda t: _one_letter(t, CYRILLIC)),
    "every letter Cyrillic": text_disguise(lambda t: t.translate(CYRILLIC)),
    "Greek capitals and omicron": text_disguise(lambda t: t.upper().translate(GREEK)),
    "fullwidth forms": text_disguise(_fullwidth),
    "'!!' appended": text_disguise(lambda t: t + "!!"),
    "', ' inserted": text_disguise(lambda t: t.replace(" ", ", ", 1)),
    "markdown bold and quotes": text_disguise(lambda t: f'**"{t}"**'),
    "whitespace: tabs, newlines, doubled": text_disguise(
        lambda t: t.replace(" ", "\t", 2).replace(" ", "  \n ")
    ),
    "a space inside a word": text_disguise(lambda t: t[:3] + " " + t[3:]),
    "URL-encoded (form)": text_disguise(quote_plus),
    "URL-encoded (percent)": text_disguise(lambda t: quote(t, safe="")),
    "byte-level BPE token dump": text_disguise(lambda t: "Ġ".join(t.split(" "))),
    "SentencePiece token dump": text_disguise(lambda t: "▁" + "▁".join(t.split(" "))),
    "case and NFKD": text_disguise(lambda t: t.swapcase()),
    "split over two user turns": lambda turns: [
        {"role": "user", "content": p} for t in turns for p in _split(t)
    ],
    "split with an assistant turn between": lambda turns: users([p for t in turns for p in _split(t)]),
    "in the system prompt": lambda turns: [
        {"role": "system", "content": " ".join(turns)},
        {"role": "user", "content": "Answer the question above."},
    ],
    "in an assistant turn": lambda turns: [
        {"role": "user", "content": "Give me a question to answer."},
        {"role": "assistant", "content": " ".join(turns)},
        {"role": "user", "content": "Answer it yourself."},
    ],
}
# Found only for members of EMBED_MIN_WORDS words or more: a short phrase inside longer
# text is another request.
EMBEDDINGS = {
    "embedded in a longer prompt": text_disguise(
        lambda t: f"Before you answer, note that I am a teacher. {t} Please answer in two sentences."
    ),
    "embedded, disguised and split": lambda turns: users(
        _split(
            "My colleague asked: "
            + " ".join(turns).translate(CYRILLIC).replace(" ", " \u200b", 3)
            + " Thoughts?"
        )
    ),
}


def held_out_store(run_cli, tmp_path, write_jsonl):
    battles = []
    for bid, turns in MEMBERS.items():
        if len(turns) == 1:
            battles.append(
                {
                    "battle_id": bid,
                    "prompt": turns[0],
                    "own_answer": "Own.",
                    "opponent_answer": "Other.",
                    "vote": "win",
                }
            )
        else:
            battles.append(
                {
                    "battle_id": bid,
                    "vote": "win",
                    "turns": [
                        {"user": t, "own": f"Own {i}.", "opponent": f"Other {i}."}
                        for i, t in enumerate(turns)
                    ],
                }
            )
    assert run_cli("ingest", "battles", write_jsonl(tmp_path / "battles.jsonl", battles)).exit_code == 0
    (tmp_path / "ids.txt").write_text("\n".join(MEMBERS) + "\n")
    res = run_cli("holdout", "add", "judge", "--ids-file", tmp_path / "ids.txt")
    assert res.exit_code == 0, res.output
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    assert run_cli("round", "add", tmp_path / "base.toml").exit_code == 0


def leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records, *, name="leak", system=None):
    path = write_jsonl(tmp_path / f"{name}.jsonl", records)
    res = run_cli("ingest", "pairs", path, "--source", "arena")
    assert res.exit_code == 0, res.output
    recipe = dpo_recipe(
        name, blocks=['source = "arena"'], system=f"system_prompt = {json.dumps(system)}" if system else ""
    )
    (tmp_path / f"{name}.toml").write_text(recipe)
    assert run_cli("round", "add", tmp_path / f"{name}.toml").exit_code == 0
    return path


def assert_refused_and_audited(run_cli, tmp_path, path, expected: set[str], name="leak"):
    res = run_cli("export", "--round", name, "--out", tmp_path / "out")
    assert res.exit_code == 3, res.output
    listed = re.search(r"held-out items: (.*)", res.output).group(1)
    assert set(listed.split(", ")) == {f"judge/{m}" for m in expected}, res.output
    assert not (tmp_path / "out").exists()
    res = run_cli("audit", "leaks", "--holdout", "judge", path, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    [f] = report["files"]
    assert set(f["leaked_ids"]) | set(f["near_ids"]) == expected
    assert report["holdout"]["leaked"] == len(expected)


def record(prompt, i):
    return {"prompt": prompt, "chosen": f"A careful answer {i}.", "rejected": f"A sloppy answer {i}."}


@pytest.mark.parametrize("disguise", fast_share(sorted(DISGUISES)))
def test_every_disguise_of_every_member_is_refused_and_audited(
    disguise, run_cli, tmp_path, write_jsonl, dpo_recipe
):
    held_out_store(run_cli, tmp_path, write_jsonl)
    records = [record(DISGUISES[disguise](turns), i) for i, turns in enumerate(MEMBERS.values())]
    records.append(record("An ordinary question about baking bread at high altitude, nothing held out.", 99))
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert_refused_and_audited(run_cli, tmp_path, path, set(MEMBERS))


@pytest.mark.parametrize("embedding", sorted(EMBEDDINGS))
def test_members_embedded_in_longer_text_are_refused_and_audited(
    embedding, run_cli, tmp_path, write_jsonl, dpo_recipe
):
    held_out_store(run_cli, tmp_path, write_jsonl)
    records = [record(EMBEDDINGS[embedding](turns), i) for i, turns in enumerate(MEMBERS.values())]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    # a whole sentence of the row counts for members of SENTENCE_MIN_WORDS words or more (the tiny one)
    expected = set(MEMBERS) if embedding == "embedded in a longer prompt" else EMBEDDABLE
    assert_refused_and_audited(run_cli, tmp_path, path, expected)


def test_members_of_several_sentences_reordered_are_refused_and_audited(
    run_cli, tmp_path, write_jsonl, dpo_recipe
):
    """The medium and long members hold two sentences of five words or more: last first, each is found."""
    held_out_store(run_cli, tmp_path, write_jsonl)
    reordered = {
        "h-medium": "How much do 84 pencils cost, in cents? A shop sells pencils at 31 cents each.",
        "h-long": LONG.split(". ")[1] + " " + LONG.split(". ")[0] + ".",
    }
    path = leak_round(
        run_cli, tmp_path, write_jsonl, dpo_recipe, [record(t, i) for i, t in enumerate(reordered.values())]
    )
    assert_refused_and_audited(run_cli, tmp_path, path, set(reordered))


def test_first_turn_of_a_multi_turn_member_alone(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out_store(run_cli, tmp_path, write_jsonl)
    records = [record(MULTI[0], 0), record(MULTI[0].upper().replace(" ", "\u200b ") + "!!", 1)]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert_refused_and_audited(run_cli, tmp_path, path, {"h-multi"})


def test_recipe_system_prompt_holding_members_is_refused(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out_store(run_cli, tmp_path, write_jsonl)
    leak_round(
        run_cli,
        tmp_path,
        write_jsonl,
        dpo_recipe,
        [record("A harmless question about tea.", 0)],
        system="You are Brook. Keep these examples in mind: "
        + " ".join(" ".join(t).translate(CYRILLIC) for t in MEMBERS.values()),
    )
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "out")
    assert res.exit_code == 3, res.output
    assert "the round's system prompt" in res.output
    listed = set(re.search(r"held-out items: (.*)", res.output).group(1).split(", "))
    # each member is a whole sentence of the system prompt: the tiny one (four words) counts too
    assert listed == {f"judge/{m}" for m in MEMBERS}
    # a system prompt that is exactly a tiny member, disguised
    leak_round(
        run_cli,
        tmp_path,
        write_jsonl,
        dpo_recipe,
        [record("Another harmless question.", 1)],
        name="leak2",
        system=_inside(TINY, "\u200b").upper(),
    )
    res = run_cli("export", "--round", "leak2", "--out", tmp_path / "out2")
    assert res.exit_code == 3 and "held-out items: judge/h-tiny" in res.output, res.output


def test_a_task_key_on_an_ingested_pair_spares_nothing(run_cli, tmp_path, write_jsonl, dpo_recipe):
    held_out_store(run_cli, tmp_path, write_jsonl)
    near = LONG.replace("I am planning", "Planning").replace("would you", "do you")  # a near copy
    records = [
        {**record(p, i), "task_key": "x"}
        for i, p in enumerate(
            [
                near,
                "Prefix words here. " + SHORT,
                MEDIUM + " Thanks!",
                _inside(TINY, "\u200d"),
                " ".join(MULTI),
            ]
        )
    ]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    assert_refused_and_audited(run_cli, tmp_path, path, set(MEMBERS))


# -- the control corpus: no hit at all ------------------------------------------------------------

CITIES = "Osaka Nara Lisbon Porto Seville Krakow Hanoi Quito Tbilisi Oslo Bergen Cusco Dakar Perth".split()
TOPICS = (
    "sourdough starters",
    "the French revolution",
    "black holes",
    "tax brackets",
    "marathon training",
    "houseplants",
    "compound interest",
    "the immune system",
    "jazz harmony",
    "volcanoes",
    "chess openings",
    "solar panels",
    "the Roman empire",
    "sleep hygiene",
    "coral reefs",
    "machine learning",
    "beekeeping",
    "medieval castles",
    "electric cars",
    "the stock market",
)
FORMS = (
    "a haiku",
    "a limerick",
    "a short story",
    "a product description",
    "a cover letter",
    "a tweet",
    "an email to my landlord",
    "a wedding toast",
    "a sonnet",
    "a bedtime story",
)
ITEMS = ("erasers", "notebooks", "apples", "stamps", "candles", "rulers", "markers", "lemons")


def control_prompts() -> list[str]:
    out = []
    # the same templates as the members, other numbers
    out += [
        f"What is {a} times {b}? Show the work briefly."
        for a in range(11, 99)
        for b in range(12, 60, 2)
        if (a, b) != (63, 31)
    ]
    # (Another noun with the same numbers, 31 and 84, is a near copy of the medium member: the same
    # arithmetic and the same answer. The fuzzy check calls it one, as it should.)
    out += [
        f"A shop sells {item} at {p} cents each. How much do {n} {item} cost, in cents?"
        for item in ITEMS
        for p in (12, 25, 31, 47)
        for n in (7, 84, 90, 13)
        if (p, n) != (31, 84)
    ]
    out += [
        f"A shop sells pencils at {p} cents each. How much do {n} pencils cost, in cents?"
        for p in range(20, 45)
        for n in range(80, 90)
        if (p, n) != (31, 84)
    ]
    # short prompts with another key word
    out += [
        "Explain quantum entanglement simply.",
        "Explain quantum tunneling in detail.",
        "Explain classical tunneling simply.",
        "What is 63 times 31? Show the work in full.",
        "What is 63 plus 31? Show the work briefly.",
        "What is 63 times 13? Show the work briefly.",
    ]
    out += [f"Explain {t} simply." for t in TOPICS]
    # different questions that share an opening with a member
    out += [f"I am planning a trip to Kyoto in late autumn. What should I pack for {t}?" for t in TOPICS]
    out += [
        f"I am planning a trip to {c} in late autumn and would like to know about {t} there."
        for c in CITIES
        for t in TOPICS[:6]
    ]
    out += [f"Write a short poem about {t}." for t in TOPICS] + [
        f"Now make it rhyme and add {f}." for f in FORMS
    ]
    out += [
        f"What is {a} times {b}? Explain why multiplication is commutative."
        for a in (63, 12)
        for b in (31, 7)
    ]
    # ordinary prompts
    out += [
        f"Write {f} about {t}{a}."
        for f in FORMS
        for t in TOPICS
        for a in ("", " for children", " for a retirement party", " in the style of a pirate")
    ]
    out += [
        f"{name} has {a} {item} and buys {b} more packs of {c}. How many {item} does {name} have now?"
        for name in ("Maya", "Tom", "Aiko", "Luis")
        for item in ITEMS
        for a in (3, 12, 25)
        for b in (2, 5)
        for c in (4, 10)
    ]
    out += [
        f"How do I {verb} {obj} in {lang}?"
        for verb in ("sort", "reverse", "parse", "deduplicate", "merge")
        for obj in ("a list", "a dictionary", "a CSV file", "a JSON string", "two arrays")
        for lang in ("Python", "Rust", "Go", "JavaScript", "SQL", "Bash")
    ]
    out += [
        f"Summarize the main arguments for and against {t} in {n} bullet points."
        for t in TOPICS
        for n in (3, 4, 5, 6, 7)
    ]
    out += [
        f"My {rel} is visiting {c} next week. What are {n} things to do there with a small budget?"
        for rel in ("sister", "friend", "boss", "grandmother")
        for c in CITIES
        for n in (3, 5)
    ]
    out += [
        f"Natalia sold clips to {a} of her friends in April, and then she sold half as many clips in May. "
        f"How many clips did Natalia sell altogether in April and May? (variant {a})"
        for a in range(2, 400, 2)
    ]
    out += [
        f"Compare {t} and {u} for a {who}."
        for t in TOPICS
        for u in TOPICS
        if t < u
        for who in ("beginner", "high-school student", "busy manager", "retired engineer")
    ]
    # the project's own sample data: battles (but the two that are members), GSM8K, MATH, UltraFeedback
    data = resources.files("pairstore") / "sample_data"
    for name, field in (
        ("battles.jsonl", "prompt"),
        ("gsm8k-train.jsonl", "question"),
        ("gsm8k-test.jsonl", "question"),
        ("math-train.jsonl", "problem"),
        ("ultrafeedback-train_prefs.jsonl", "prompt"),
    ):
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            value = json.loads(line).get(field)
            if isinstance(value, str) and value not in (SHORT, MEDIUM):
                out.append(value)
    return sorted(set(out))


@pytest.mark.slow
def test_control_corpus_of_5000_prompts_has_no_hit(run_cli, tmp_path, write_jsonl, dpo_recipe):
    prompts = control_prompts()
    assert len(prompts) >= 5000
    held_out_store(run_cli, tmp_path, write_jsonl)
    records = [record(p, i) for i, p in enumerate(prompts)]
    records += [record(users([t, "Now make it rhyme and add a title, please."]), -1) for t in TOPICS]
    path = leak_round(run_cli, tmp_path, write_jsonl, dpo_recipe, records)
    res = run_cli("export", "--round", "leak", "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output[-3000:]
    res = run_cli("audit", "leaks", "--holdout", "judge", path, "--json")
    report = json.loads(res.output)
    assert report["holdout"]["leaked"] == 0 and report["files"][0]["rows"] == len(records)
