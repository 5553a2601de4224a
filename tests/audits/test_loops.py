"""Repetition scanner (audits.loops): degenerate outputs flagged, legitimate texts not,
the loop table and CLI."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.loop_table import loop_table
from audits.loops import (
    CATASTROPHIC_REPEATS,
    SPACES,
    may_end_in_loop,
    scan,
    scan_many,
    tokenize,
    tokenize_spans,
)
from pairstore.errors import NotFound

# ---- degenerate outputs ---------------------------------------------------------

QUESTION = "How many times does the letter r appear in the word strawberry?"


def test_question_echoed_50_times_is_flagged_not_catastrophic():
    r = scan(QUESTION + " " + " ".join([QUESTION] * 49))
    assert r.flagged and not r.catastrophic and not r.empty
    assert r.max_repeat == 50 and r.max_repeat_unit == QUESTION
    assert r.cycle_repeats == 50 and r.ngram6_max == 50
    assert {"ngram6", "cycle"} <= set(r.reasons)
    assert r.n_tokens == 50 * 12


def test_echo_interleaved_with_other_text_is_flagged_by_ngram_count():
    # not one clean cycle: the echo comes back with a different lead-in each time
    leads = [
        "Hmm.",
        "Wait,",
        "Let me see:",
        "Again:",
        "OK so",
        "Right,",
        "Well,",
        "Think:",
        "So",
        "Now,",
        "Once more:",
        "Checking:",
        "Then",
        "Also,",
    ]
    text = " ".join(f"{lead} {QUESTION}" for lead in leads)
    r = scan(text)
    assert r.flagged and "ngram6" in r.reasons and r.ngram6_max == len(leads)


def test_numeric_oscillation_145_minus_0_is_catastrophic():
    r = scan("Subtracting step by step we get 145 " + "145 -0 " * 150)
    assert r.flagged and r.catastrophic and r.tail_loop
    assert r.max_repeat >= 150 and r.max_repeat_unit in ("145 -0", "-0 145")


def test_plus_one_chain_is_catastrophic_when_long_and_flagged_when_medium():
    long = scan("So the total is 1 " + "+ 1 " * 120)
    assert long.flagged and long.catastrophic and long.cycle_repeats >= 120
    medium = scan("So the total is 1 " + "+ 1 " * 40 + "and I keep adding.")
    assert medium.flagged and not medium.catastrophic and "cycle" in medium.reasons


def test_cjk_phrase_loop_is_seen_without_spaces():
    phrase = "春风又绿江南岸，"
    r = scan("好的，这是一首藏头诗：\n" + phrase * 120)
    assert r.flagged and r.catastrophic and r.tail_loop
    assert r.max_repeat == 120 and r.max_repeat_unit == phrase
    shorter = scan("好的，这是一首藏头诗：\n" + phrase * 20 + "\n希望你喜欢。")
    assert shorter.flagged and not shorter.catastrophic


def test_digit_runaway_inside_one_number():
    hundred = scan("1/7 = 0." + "142857" * 100)
    assert hundred.flagged and hundred.catastrophic and hundred.tail_loop
    assert hundred.max_repeat == 100 and hundred.max_repeat_unit == "142857" and "in_token" in hundred.reasons
    fifty = scan("1/7 = 0." + "142857" * 50 + " and so on.")
    assert fifty.flagged and not fifty.catastrophic and not fifty.tail_loop and fifty.max_repeat == 50
    thirds = scan("1/3 = 0." + "3" * 600)
    assert thirds.flagged and thirds.catastrophic and thirds.max_repeat_unit == "3"


def test_word_salad_cycle_without_ngram_threshold():
    # a 3-token unit repeated 14 times: its 6-grams count 13 times at most, the cycle 14
    r = scan("Let me count. " + "so we again " * 14 + "and the answer is 4.")
    assert r.flagged and "cycle" in r.reasons and r.cycle_repeats == 14


def test_tail_loop_cut_off_mid_word():
    sentence = "I need to count the letters in the word carefully and then answer. "
    text = "Let me think about the word strawberry and its letters. " + sentence * 4 + "I need to cou"
    r = scan(text)
    assert r.tail_loop and r.flagged and r.reasons == ("tail",)
    assert r.max_repeat == 4 and r.max_repeat_unit == sentence.strip()
    # the same repeats followed by an answer: not at the end, and too few for any other rule
    ok = scan(
        "Let me think about the word strawberry and its letters. " + sentence * 4 + "\n\nFinal answer: 3"
    )
    assert not ok.tail_loop and not ok.flagged


def test_symbol_runaway_counts_only_when_very_long():
    assert not scan("Results\n" + "=" * 200 + "\nAll good.").flagged
    runaway = scan("Results\n" + "=" * 3000)
    assert runaway.flagged and runaway.catastrophic


# ---- legitimate texts -----------------------------------------------------------


def _not_flagged(text):
    r = scan(text)
    assert not r.flagged and not r.catastrophic and not r.tail_loop, (r, text[:200])
    return r


def test_run_of_one_digit_inside_a_number():
    _not_flagged(
        "We need 12345679 x 900. First 12345679 x 9 = 111111111, then multiply by 100: "
        "111111111 x 100 = 11111111100.\n\nFinal answer: 11111111100"
    )
    _not_flagged("In Python, 0.1 + 0.2 gives 0.30000000000000004 and 1/3 prints as 0.3333333333333333.")
    _not_flagged("A googol is 1" + "0" * 100 + ", that is, a one followed by one hundred zeros.")
    _not_flagged("1/7 = 0.142857142857142857... (the block 142857 repeats forever).")
    _not_flagged("1/3 to 50 decimal places is 0." + "3" * 50 + ".")


def test_multiplication_table():
    lines = [f"{7} x {i} = {7 * i}" for i in range(1, 21)]
    _not_flagged(
        "Here is the 7 times table:\n\n" + "\n".join(lines) + "\n\nEach line adds 7 to the one before."
    )
    header = "| x | " + " | ".join(str(i) for i in range(1, 13)) + " |"
    rows = ["| " + str(a) + " | " + " | ".join(str(a * b) for b in range(1, 13)) + " |" for a in range(1, 13)]
    for separator in ("|" + "---|" * 13, "| " + " | ".join(["---"] * 13) + " |"):
        _not_flagged(
            "The full 12 x 12 table:\n\n"
            + "\n".join([header, separator, *rows])
            + "\n\nRead a product where a row meets a column."
        )


def test_numbered_list():
    steps = [
        "Preheat the oven to 180 degrees and grease a round cake tin.",
        "Sift the flour, baking powder and a pinch of salt into a large bowl.",
        "Cream the butter and sugar until the mixture is pale and fluffy.",
        "Beat in the eggs one at a time, adding a spoonful of flour with each.",
        "Fold in the remaining flour with a metal spoon.",
        "Stir in the milk until the batter drops easily from the spoon.",
        "Spoon the batter into the tin and level the top.",
        "Bake for 25 minutes, until a skewer comes out clean.",
        "Leave the cake in the tin for 10 minutes.",
        "Turn it out onto a wire rack to cool completely.",
        "Whip the cream with the vanilla until it holds soft peaks.",
        "Spread the jam over the cake, then the cream.",
        "Check the cake again before serving.",
        "Check the cream again before serving.",
        "Check the plates again before serving.",
    ]
    _not_flagged("Here is the method:\n\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)))
    states = [
        ("Alabama", "Montgomery"),
        ("Alaska", "Juneau"),
        ("Arizona", "Phoenix"),
        ("Arkansas", "Little Rock"),
        ("California", "Sacramento"),
        ("Colorado", "Denver"),
        ("Connecticut", "Hartford"),
        ("Delaware", "Dover"),
        ("Florida", "Tallahassee"),
        ("Georgia", "Atlanta"),
        ("Hawaii", "Honolulu"),
        ("Idaho", "Boise"),
        ("Illinois", "Springfield"),
        ("Indiana", "Indianapolis"),
        ("Iowa", "Des Moines"),
        ("Kansas", "Topeka"),
        ("Kentucky", "Frankfort"),
        ("Louisiana", "Baton Rouge"),
        ("Maine", "Augusta"),
        ("Maryland", "Annapolis"),
        ("Massachusetts", "Boston"),
        ("Michigan", "Lansing"),
    ]
    _not_flagged(
        "US states and their capitals:\n\n"
        + "\n".join(f"{i}. {s} - the capital is {c}." for i, (s, c) in enumerate(states, 1))
    )


CODE = """Here is a small calculator with tests:

```python
import argparse
import unittest


def apply(op, a, b):
    if op == "+":
        return a + b
    elif op == "-":
        return a - b
    elif op == "*":
        return a * b
    elif op == "/":
        return a / b
    elif op == "%":
        return a % b
    elif op == "**":
        return a ** b
    raise ValueError(f"unknown operator {op!r}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="A tiny calculator.")
    parser.add_argument("--lr", type=float, default=1e-6, help="learning rate")
    parser.add_argument("--beta", type=float, default=0.1, help="DPO beta")
    parser.add_argument("--alpha", type=float, default=0.5, help="soup weight")
    parser.add_argument("--rank", type=int, default=64, help="LoRA rank")
    parser.add_argument("--steps", type=int, default=250, help="optimizer steps")
    parser.add_argument("--batch", type=int, default=32, help="global batch")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    return parser.parse_args(argv)


class TestApply(unittest.TestCase):
    def test_add(self):
        self.assertEqual(apply("+", 1, 2), 3)

    def test_sub(self):
        self.assertEqual(apply("-", 5, 2), 3)

    def test_mul(self):
        self.assertEqual(apply("*", 4, 2), 8)

    def test_div(self):
        self.assertEqual(apply("/", 9, 3), 3)

    def test_mod(self):
        self.assertEqual(apply("%", 7, 4), 3)

    def test_pow(self):
        self.assertEqual(apply("**", 2, 5), 32)

    def test_unknown(self):
        with self.assertRaises(ValueError):
            apply("?", 1, 2)


if __name__ == "__main__":
    unittest.main()
```

Each operator gets its own branch and its own test."""


def test_code_with_repeated_structure():
    _not_flagged(CODE)
    board = "\n".join(["board = ["] + ["    [0, 0, 0, 0, 0, 0, 0, 0],"] * 8 + ["]"])
    _not_flagged("An empty 8x8 board:\n\n```python\n" + board + "\n```\n\nEvery square starts at zero.")


POEM = """The Lighthouse Keeper

The keeper climbs the winding stair each night,
and no ship founders while the lamp is lit.
He trims the wick and polishes the light.

The gulls are quiet and the sea is white;
the fog comes in as if it owned the place.
The keeper climbs the winding stair each night.

His daughter asks him why he will not write
to those who left him for the southern town;
he trims the wick and polishes the light.

He tells her that the darkness has a bite,
that one lost boat is more than one can bear.
The keeper climbs the winding stair each night.

The winters pass, his beard is growing white,
the lamp burns on although the years are long;
he trims the wick and polishes the light.

And when at last he cannot climb the height,
his daughter takes the key from off the nail.
The keeper climbs the winding stair each night.
He trims the wick and polishes the light.

Chorus (sung after each verse):
Row, row, and bring the boats in home,
the tide is turning and the wind is cold,
row, row, and bring the boats in home,
before the harbour lights are growing old.

Row, row, and bring the boats in home,
the tide is turning and the wind is cold,
row, row, and bring the boats in home,
before the harbour lights are growing old.

Row, row, and bring the boats in home,
the tide is turning and the wind is cold,
row, row, and bring the boats in home,
before the harbour lights are growing old.
"""


def test_poem_with_a_refrain():
    r = _not_flagged(POEM)
    assert r.max_repeat >= 4  # the refrains do repeat; just not like a loop


ESSAY_SENTENCES = [
    "The invention of the printing press in the fifteenth century changed the way ideas moved "
    "through Europe.",
    "Before the printing press, a book was copied by hand, and a single copy could take a scribe "
    "many months.",
    "Books were therefore rare, expensive and mostly kept in monasteries, universities and "
    "the houses of the rich.",
    "When Johannes Gutenberg combined movable metal type with an oil-based ink and a screw press, "
    "the cost of a page fell sharply.",
    "Within fifty years there were presses in more than two hundred cities, and millions of books were in "
    "circulation.",
    "The effect of the printing press on the spread of knowledge is hard to overstate.",
    "Scholars could compare the same text in different cities and be sure that they were reading "
    "the same words.",
    "Errors that had crept into manuscripts over centuries could be found and corrected in a new edition.",
    "Maps, tables and diagrams could be reproduced exactly, which mattered a great deal to navigators and "
    "astronomers.",
    "At the same time, the printing press made it possible to spread pamphlets, rumours and propaganda.",
    "Martin Luther understood this better than most of his opponents, and his writings were printed in great "
    "numbers.",
    "Religious and political authorities responded with licences, censorship and lists of forbidden books.",
    "It is worth asking whether the printing press caused these changes or simply made them faster.",
    "Many historians argue that literacy was already rising when the first presses appeared.",
    "Merchants needed to read contracts, and towns needed clerks who could keep accounts.",
    "The printing press met a demand that already existed, and in meeting it, it created new demand.",
    "Cheap almanacs, ballads and prayer books reached people who had never owned a book before.",
    "Over time, the habit of reading in private changed how people thought about themselves and "
    "their beliefs.",
    "The spread of knowledge also changed science, because results could be published, checked and "
    "built upon.",
    "A discovery made in Padua could be read in London within a few months, and argued about in letters.",
    "Journals appeared in the seventeenth century, and with them the idea that claims should be tested "
    "in public.",
    "None of this happened overnight, and none of it happened in the same way in every country.",
    "In some places the printing press was welcomed, and in others it was controlled for generations.",
    "The lesson for our own time is not that every new technology is good or bad.",
    "It is that the way a technology is used depends on the institutions and the people around it.",
    "The internet, like the printing press, lowered the cost of copying words to almost nothing.",
    "It too has spread knowledge and nonsense at the same time, and it too has provoked calls for control.",
    "If the history of the printing press teaches anything, it is that the results take decades to "
    "become clear.",
    "Those who lived through the first century of print could not know what the world of books would become.",
    "We should be equally modest about our predictions for the technologies of today.",
    "What we can do is keep the spread of knowledge open, and keep the tools for checking it in "
    "public hands.",
    "That, more than any single invention, is what allowed the printing press to change the world "
    "for the better.",
]


def test_long_essay_common_words():
    paragraphs = [" ".join(ESSAY_SENTENCES[i : i + 4]) for i in range(0, len(ESSAY_SENTENCES), 4)]
    essay = "\n\n".join(paragraphs)
    r = _not_flagged(essay)
    assert r.n_tokens > 500 and tokenize(essay.lower()).count("the") > 40  # common words galore
    # an answer that quotes all of it (essay, poem, code) is still one legitimate text
    _not_flagged("\n\n".join([essay, POEM, CODE, essay.upper()]))


def test_ngram_threshold_grows_with_length():
    # a theme phrase 15 times in about 6,000 tokens of otherwise varied text: T6 there is 30, not 12
    phrase = "the history of the printing press"
    filler = [f"word{i}" for i in range(6000)]
    parts = []
    for k in range(15):
        parts.append(" ".join(filler[k * 400 : (k + 1) * 400]))
        parts.append(phrase)
    r = scan(" ".join(parts))
    assert r.ngram6_max == 15 and not r.flagged
    # the same 15 repeats in a short answer are a loop
    short = scan(" ".join(f"{f} {phrase}" for f in filler[:15]))
    assert short.ngram6_max == 15 and short.flagged and "ngram6" in short.reasons


# ---- empty, batches, tokenizer ------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t ", None, "\u3000\u00a0"])
def test_empty_output(text):
    r = scan(text)
    assert r.empty and not r.flagged and r.n_tokens == 0 and r.max_repeat == 0 and r.max_repeat_unit == ""


def test_short_and_plain_text():
    r = scan("42")
    assert not r.empty and not r.flagged and r.n_tokens == 1 and r.max_repeat == 1


def test_scan_many_matches_scan_and_keeps_order():
    texts = [
        QUESTION * 3,
        "",
        "好的" * 80,
        "1/7 = 0." + "142857" * 60,
        CODE,
        None,
        POEM,
        "+ 1 " * 150,
        "中文和 English 混合的句子。",
        "plain answer: 7",
    ]
    one_by_one = [scan(t) for t in texts]
    assert scan_many(texts) == one_by_one
    assert scan_many(texts, chunk_chars=64) == one_by_one  # many small batches


def test_vectorised_tokenizer_matches_tokenize():
    samples = [
        "a\u3000b c\u00a0d\te\nf",
        "中文abc中 x\u2028y",
        "\x1cq\x1fr  s",
        "ｆｕｌｌ　ｗｉｄｔｈ。ok",
        "ascii only, with punctuation!",
        "émigré café naïve",
        "한국어 문장 입니다",
    ]
    for text in samples:
        starts, ends, _ = tokenize_spans(text, text.isascii())
        assert [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())] == tokenize(text)
    assert tokenize("我爱你") == ["我", "爱", "你"]
    assert sorted(c for c in range(0x110000) if chr(c).isspace()) == sorted(SPACES)


def test_equal_tokens_get_equal_hashes():
    text = " ".join(["alpha", "beta", "alpha", "gamma", "beta", "alpha"] * 3)
    starts, ends, ids = tokenize_spans(text, True)
    by_token = {}
    for a, b, h in zip(starts.tolist(), ends.tolist(), ids.tolist()):
        by_token.setdefault(text[a:b], set()).add(h)
    assert all(len(v) == 1 for v in by_token.values())
    assert len({next(iter(v)) for v in by_token.values()}) == 3


def test_huge_text_hashing_path_gives_the_same_reports(monkeypatch):
    import audits.loops as loops

    texts = [
        " ".join(["alpha", "beta", "中文", "gamma", "x" * 40] * 30),
        "loop again " * 120,
        "Count: " + " ".join(str(i) for i in range(300)) + " 7 7 7 7 7 7 7 7 7 7 7 7 7",
    ]
    before = [scan(t) for t in texts]
    monkeypatch.setattr(loops, "POWER_TABLE_MAX", 16)  # as if every text were too long for the tables
    assert [scan(t) for t in texts] == before
    assert scan(texts[0] + " " + "loop again " * 120).catastrophic


# ---- loop table and CLI -----------------------------------------------------------

LOOP = "So the answer is " + "the answer is " * 30
NORMAL = "Count the r's: s-t-r-a-w-b-e-r-r-y has three.\n\nFinal answer: 3"


def _add(store, gen_id, model, suite, output, flagged=None, catastrophic=None, n_tokens=None):
    store.con.execute(
        "INSERT INTO generations (gen_id, model, item_kind, suite, prompt, output, loop_flagged, "
        "loop_catastrophic, n_tokens) VALUES (?, ?, 'prompt', ?, ?, ?, ?, ?, ?)",
        [
            gen_id,
            model,
            suite,
            [{"role": "user", "content": "How many r's are in strawberry?"}],
            output,
            flagged,
            catastrophic,
            n_tokens,
        ],
    )


def _fill(store):
    _add(store, "g1", "so7a", "lf2", LOOP)  # scanned now: flagged
    _add(store, "g2", "so7a", "lf2", NORMAL)  # scanned now: clean
    _add(store, "g3", "so7a", "lf2", "   ")  # empty
    _add(store, "g4", "so7a", "lf2", NORMAL, True, False, 300)  # stored flag (trusted unless --rescan)
    _add(store, "g5", "so7a", "lf2", "+ 1 " * 150, True, True, 400)
    _add(store, "g6", "sm11a", "lf2", NORMAL, False, False, 20)
    _add(store, "g7", "sm11a", None, LOOP)


def test_loop_table_counts(store):
    _fill(store)
    rows = loop_table(store)
    assert [(r["model"], r["suite"]) for r in rows] == [("sm11a", "lf2"), ("sm11a", None), ("so7a", "lf2")]
    so7a = rows[2]
    loop_tokens, normal_tokens = len(LOOP.split()), len(NORMAL.split())
    assert so7a == {
        "model": "so7a",
        "suite": "lf2",
        "outputs": 5,
        "scannable": 4,
        "flagged": 3,
        "catastrophic": 1,
        "empty": 1,
        "avg_len": round((loop_tokens + normal_tokens + 0 + 300 + 400) / 5, 1),
        "rescanned": 3,
    }
    rescanned = loop_table(store, model="so7a", rescan=True)
    assert len(rescanned) == 1
    assert (
        rescanned[0]["flagged"] == 2 and rescanned[0]["catastrophic"] == 1 and rescanned[0]["rescanned"] == 5
    )
    assert rescanned[0]["avg_len"] == so7a["avg_len"]  # stored lengths are kept (model tokenizer)
    only = loop_table(store, model="sm11a", suite="lf2")
    assert only == [
        {
            "model": "sm11a",
            "suite": "lf2",
            "outputs": 1,
            "scannable": 1,
            "flagged": 0,
            "catastrophic": 0,
            "empty": 0,
            "avg_len": 20.0,
            "rescanned": 0,
        }
    ]
    assert [r["model"] for r in loop_table(store, suite="lf2")] == ["sm11a", "so7a"]
    with pytest.raises(NotFound, match="zzz"):
        loop_table(store, model="zzz")


def test_loop_table_empty_store(store):
    assert loop_table(store) == []


def test_cli_audit_loops(store, run_cli):
    _fill(store)
    store.close()
    res = run_cli("audit", "loops", "--model", "so7a", "--suite", "lf2")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split() == [
        "model",
        "suite",
        "outputs",
        "scannable",
        "flagged",
        "catastrophic",
        "empty",
        "avg_len",
        "rescanned",
    ]
    assert lines[2].split()[:7] == ["so7a", "lf2", "5", "4", "3", "1", "1"]
    res = run_cli("audit", "loops", "--json", "--rescan")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert {(r["model"], r["suite"], r["flagged"]) for r in rows} == {
        ("so7a", "lf2", 2),
        ("sm11a", "lf2", 0),
        ("sm11a", None, 1),
    }
    res = run_cli("audit", "loops", "--model", "nobody")
    assert res.exit_code == 2 and "no generations for model 'nobody'" in res.output


def test_cli_audit_loops_without_generations(store, run_cli):
    store.close()
    res = run_cli("audit", "loops")
    assert res.exit_code == 0 and "no generations" in res.output


def test_catastrophic_threshold_is_100_consecutive_repeats():
    assert scan("ok " + "la di da " * (CATASTROPHIC_REPEATS - 1)).catastrophic is False
    assert scan("ok " + "la di da " * CATASTROPHIC_REPEATS).catastrophic is True


# ---- against brute force -------------------------------------------------------------


def _draws(seed: int, n: int, below: int) -> list[int]:
    import xxhash

    return [xxhash.xxh3_64_intdigest(f"{seed}:{i}".encode()) % below for i in range(n)]


def _brute_ngram_max(tokens, g=6):
    from collections import Counter

    grams = Counter(tuple(tokens[i : i + g]) for i in range(len(tokens) - g + 1))
    return max(grams.values(), default=0)


def _brute_cycle_max(tokens):
    best = 0
    n = len(tokens)
    for p in range(1, n // 2 + 1):
        j = p
        while j < n:
            if tokens[j] != tokens[j - p]:
                j += 1
                continue
            k = j
            while k < n and tokens[k] == tokens[k - p]:
                k += 1
            span = k - (j - p)
            if span >= p + 6:
                best = max(best, span // p)
            j = k
    return best


def test_ngram_counts_match_brute_force_on_random_texts():
    vocab = ["a", "b", "c", "d", "x1", "y2", "中", "文"]
    texts = []
    for seed in range(60):
        picks = _draws(seed, 20 + seed * 3, len(vocab) if seed % 3 else 3)
        texts.append(" ".join(vocab[i] for i in picks))
    for text, report in zip(texts, scan_many(texts, chunk_chars=200)):
        tokens = tokenize(text)
        assert report.ngram6_max == _brute_ngram_max(tokens), text
        assert report.cycle_repeats <= _brute_cycle_max(tokens), text  # never over-counts


def test_clean_loops_inside_random_text_are_measured_exactly():
    vocab = [f"w{i}" for i in range(50)]
    for seed in range(40):
        d = _draws(seed, 200, 50)
        unit = [vocab[i] for i in dict.fromkeys(d[: 1 + seed % 9])]  # distinct tokens: no inner repeat
        repeats = 2 + d[10] % 30
        prefix, suffix = [vocab[i] + "p" for i in d[20 : 20 + d[11] % 15]], [vocab[i] + "s" for i in d[40:45]]
        tokens = prefix + unit * repeats + suffix
        if len(unit) * repeats < len(unit) + 6:
            continue  # too short to be a cycle by definition
        r = scan(" ".join(tokens))
        assert r.cycle_repeats == repeats == _brute_cycle_max(tokens), (unit, repeats)


# ---- the precheck the verifier asks first (may_end_in_loop) ----------------------

_WORDS = st.sampled_from(
    ["the", "answer", "is", "7", "+", "1", "=", "x", "so", "×", "=", "apples", "数字", "ответ"]
)
_LONG_TOKENS = st.sampled_from(["a" * 130, "ab" * 70, "7" * 200])


@st.composite
def _tails(draw) -> str:
    """Working, then a unit repeated some number of times (perhaps cut mid-token, perhaps followed by a
    few other tokens): texts near each side of the tail-loop and catastrophic thresholds. A unit of
    ten tokens three times spans the fewest periodic tokens a tail loop has."""
    words = st.one_of(_WORDS, _LONG_TOKENS) if draw(st.integers(0, 5)) == 0 else _WORDS
    head = draw(st.lists(words, max_size=40))
    size = draw(st.one_of(st.just(10), st.integers(1, 12)))
    unit = draw(st.lists(words, min_size=size, max_size=size))
    repeats = draw(st.one_of(st.integers(2, 5), st.integers(0, 110)))
    body = head + unit * repeats
    if body and draw(st.booleans()):
        body[-1] = body[-1][: draw(st.integers(1, max(1, len(body[-1]))))]  # cut off mid-token
    body += draw(st.lists(words, max_size=2))
    sep = draw(st.sampled_from([" ", "\n", " \t", "\x1c", "\u3000", "\xa0"]))
    return sep.join(body)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_tails())
def test_the_precheck_never_misses_a_loop_the_scan_reports(text):
    report = scan(text)
    if report.tail_loop or report.catastrophic:
        assert may_end_in_loop(text)


def test_the_precheck_clears_plain_working_and_flags_a_tail_loop():
    working = " ".join(
        f"On day {d} she picks {d + 3} apples and gives away {d} of them, which leaves 3 more."
        for d in range(9)
    )
    assert not may_end_in_loop(working)
    looping = working + "The answer is 5. " * 12
    assert scan(looping).tail_loop and may_end_in_loop(looping)
    assert may_end_in_loop("数字" * 200)  # other scripts: left to the scan
