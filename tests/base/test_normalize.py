"""The normalization behind match keys (pairstore.normalize), the equivalences the streaming matcher
relies on (pairstore.holdout.scan), and migration 3, which recomputed every stored key."""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
import unicodedata

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pairstore.holdout.ngrams import words
from pairstore.holdout.scan import loose_hash, loose_hashes, needs_fold_mask
from pairstore.keys import TURN_SEP, match_key, match_text
from pairstore.normalize import compact_text, fold_table, word_text
from pairstore.store.migrations import MIGRATIONS, SCHEMA_VERSION
from pairstore.store.store import open_store

BASE = "What is the capital of Peru?"


@pytest.mark.parametrize(
    "ch",
    [
        "\u200b",
        "\u200c",
        "\u200d",
        "\u2060",
        "\u00ad",
        "\ufeff",
        "\u2062",
        "\u200e",
        "\u202e",
        "\u061c",
        "\u180e",
        "\ufe0f",
        "\u034f",
        "\U000e0041",
        "\x00",
        "\x07",
    ],
)
def test_invisible_and_format_characters_are_removed(ch):
    assert match_key(BASE[:6] + ch + BASE[6:]) == match_key(BASE)
    assert unicodedata.category(ch) in ("Cf", "Mn", "Cc") or ch == "\ufe0f"


@pytest.mark.parametrize(
    "variant",
    [
        "Whаt is the cаpitаl of Peru?",  # Cyrillic а
        "WHAT ІS THE CAPІTAL OF PERU?",  # Cyrillic І (capital I look-alike)
        "What is the capital of Ρeru?",  # Greek capital Rho
        "Ｗｈａｔ ｉｓ ｔｈｅ ｃａｐｉｔａｌ ｏｆ Ｐｅｒｕ？",  # fullwidth
        "𝐖𝐡𝐚𝐭 is the capital of Peru?",  # mathematical bold
        "Whát ís the cápitál of Perú?",  # accents
        "What is the capital of Peru??!!",  # punctuation
        "What, is the capital of Peru",  # a comma inserted
        "What is the cap ital of Peru?",  # a space inside a word
        "  what\tis the\ncapital of peru  ",  # whitespace and case
        "**What is the capital of Peru?**",  # markdown
        "“What is the capital of Peru?”",  # curly quotes
    ],
)
def test_disguises_keep_the_key(variant):
    assert match_key(variant) == match_key(BASE), word_text(variant)


@pytest.mark.parametrize(
    "other",
    [
        "What is the capital of Chile?",
        "What is the capital of Peru's neighbour?",
        "Where is the capital of Peru?",
    ],
)
def test_another_word_is_another_key(other):
    assert match_key(other) != match_key(BASE)


@pytest.mark.parametrize(
    "a, b",
    [
        ("What is 12 + 7?", "What is 12 * 7?"),
        ("What is 12 - 7?", "What is 127?"),
        ("It costs 3.5 dollars.", "It costs 35 dollars."),
        ("x = -5", "x = 5"),
        ("20% of 80", "20 of 80"),
        ("What is 2^10?", "What is 210?"),
        ("1/2 cup", "12 cup"),
    ],
)
def test_arithmetic_signs_next_to_digits_count(a, b):
    assert match_key(a) != match_key(b)


def test_signs_without_digits_and_sentence_dots_do_not_count():
    # punctuation is a word break, never glue: the key (spaces left out) is the same either way
    assert word_text("A well-known fact. Really!") == "a well known fact really"
    assert match_key("A well-known fact. Really!") == match_key("A wellknown fact really")
    assert word_text("I have 5.") == word_text("I have 5") == "i have 5"
    assert word_text("1,000 apples") == "1 000 apples"
    assert match_key("1,000 apples") == match_key("1000 apples")
    assert word_text("What is 12 + 7?") == "what is 12 + 7"
    assert compact_text(word_text("What is 12 + 7?")) == "whatis12+7"


def test_split_over_user_turns_keeps_the_key_and_match_text_marks_the_turns():
    split = [
        {"role": "user", "content": "What is the capital"},
        {"role": "assistant", "content": "Go on."},
        {"role": "user", "content": "of Peru?"},
    ]
    assert match_key(split) == match_key(BASE)
    assert match_text(split) == f"what is the capital{TURN_SEP}of peru"


def test_fold_table_values_are_final():
    table = fold_table()
    for cp, value in table.items():
        if value:
            assert value.casefold().translate(table) == value, hex(cp)


@pytest.mark.slow
def test_fold_table_entries_do_not_depend_on_the_order_they_are_first_needed():
    """Entries are computed as texts need them: look-alike chains must resolve the same whichever
    character of a chain comes first."""
    from pairstore.normalize import _SCANNED, _FoldTable

    cps = [cp for lo, hi in _SCANNED for cp in range(lo, hi + 1)]
    forward, backward = _FoldTable(), _FoldTable()
    for cp in cps:
        forward[cp]
    for cp in reversed(cps):
        backward[cp]
    assert dict(forward) == dict(backward)


def test_own_script_letters_are_told_from_latin_look_alikes():
    from pairstore.normalize import own_script_letter

    for ch in "лλ中あ":
        assert own_script_letter(ord(ch)), ch
    for ch in "aAМмΗηé1.":  # Latin, and Cyrillic/Greek letters that look like Latin ones in some case
        assert not own_script_letter(ord(ch)), ch


def _random_ascii(rng: random.Random) -> str:
    alphabet = (
        string.ascii_letters + string.digits + string.punctuation + " \t\n\r\x0b\x0c\x1c\x1e" + "  +-*/.,"
    )
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


def test_for_plain_ascii_the_lm_eval_words_and_loose_hash_equal_those_of_word_text():
    """match_scan reads plain ASCII rows as they are and needles as word_text: both must give one answer."""
    rng = random.Random(13)
    texts = [_random_ascii(rng) for _ in range(3000)] + ["Hello, World!", "a  -  b", "12 + 7 = 19.", "don't"]
    # texts with escapes or markup go through word_text first (needs_fold_mask); the rest must agree
    texts = [t for t, m in zip(texts, needs_fold_mask(pa.array(texts, pa.large_string()))) if not m]
    assert len(texts) > 1000
    raw_words, raw_docs = words(texts)
    norm_words, norm_docs = words([word_text(t) for t in texts])
    assert raw_words.to_pylist() == norm_words.to_pylist() and list(raw_docs) == list(norm_docs)
    assert list(loose_hashes(pa.array(texts))) == [loose_hash(word_text(t)) for t in texts]


def test_word_text_is_idempotent():
    rng = random.Random(7)
    samples = [_random_ascii(rng) for _ in range(2000)]
    samples += [
        "Ηеllо wоrld ІS",
        "Zalgo: Z̷̢a̴l̶g̵o",
        "日本語のテキスト。",
        "Что такое 3×4?",
        "12 ‐ 7",
        "ﬁne ½",
        "İstanbul ß",
    ]
    for t in samples:
        once = word_text(t)
        assert word_text(once) == once, repr(t)


def test_needs_fold_mask_marks_non_ascii_and_controls():
    mask = needs_fold_mask(pa.array(["plain text", "caf\u00e9", "bell\x07", None, "", "tab\tok"]))
    assert mask.tolist() == [False, True, True, False, False, False]


def test_migration_3_recomputes_stored_keys_and_backfills_evidence_hashes(tmp_path):
    db = tmp_path / "v2.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    for version, fn in enumerate(MIGRATIONS[:2], start=1):
        fn(con)
        con.execute("INSERT INTO schema_version (version, name) VALUES (?, ?)", [version, fn.__name__])
    disguised = "Wh\u200bat is the cаpital of Peru?!"
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": disguised}]
    con.execute(
        "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, match_key, "
        "record_hash) VALUES ('b1', ?, ['a'], ['b'], 1, 'win', 'old', 'h')",
        [msgs],
    )
    con.execute(
        "INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, miner, miner_version, "
        "match_key) VALUES ('p1', 'dpo', ?, 'c', 'r', 'battle', 'm', '1', 'old')",
        [msgs],
    )
    con.execute(
        "INSERT INTO eval_items (suite, item_id, kind, prompt, match_key) VALUES ('v', 'e1', 'x', ?, 'old')",
        [msgs],
    )
    con.execute(
        "INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text) VALUES "
        "('judge', 'b1', 'battle', 'old', 'old text'), ('judge', 'free', 'prompt', 'old', ?)",
        ["what is the  cаpital\x1eof peru?"],
    )
    con.execute(
        "INSERT INTO benchmark_refs (benchmark, item_id, text, match_key, n) VALUES ('b', 'i', ?, 'old', 13)",
        [BASE],
    )
    evidence = {"round": "r", "parquet_sha256": "abc", "rows": 2, "note": "é"}
    con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash, evidence) "
        "VALUES ('e1', 'r', 'export', '/x/out/r.parquet', 'abc', 2, 'h', ?)",
        [json.dumps(evidence, sort_keys=True, ensure_ascii=False)],
    )
    con.close()
    store = open_store(db)
    assert store.schema_version() == SCHEMA_VERSION
    key = match_key(BASE)
    assert store.scalar("SELECT match_key FROM battles") == key
    assert store.scalar("SELECT match_key FROM pairs") == key
    assert store.scalar("SELECT match_key FROM eval_items") == key
    assert store.scalar("SELECT match_key FROM benchmark_refs") == key
    rows = dict(store.con.execute("SELECT item_id, match_key FROM holdout").fetchall())
    assert rows == {"b1": key, "free": key}
    assert (
        store.scalar("SELECT match_text FROM holdout WHERE item_id = 'b1'") == "what is the capital of peru"
    )
    written = json.dumps(evidence, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert store.one("SELECT evidence_path, evidence_sha256 FROM exports") == (
        "/x/out/r.training_evidence.json",
        hashlib.sha256(written.encode()).hexdigest(),
    )
    store.close()


def test_migration_7_recomputes_keys_for_the_normalization_pipeline(tmp_path):
    """A store at version 4 keeps keys of the old normalization; opening it recomputes them for the steps."""
    db = tmp_path / "v4.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    names = [fn.__name__ for fn in MIGRATIONS]
    upto = names.index("m004_public_sources") + 1
    for version, fn in enumerate(MIGRATIONS[:upto], start=1):
        fn(con)
        con.execute("INSERT INTO schema_version (version, name) VALUES (?, ?)", [version, fn.__name__])
    templated = "<|im_start|>user\nWhat&#39;s ١٢ times <b>seven</b>?<|im_end|>"
    msgs = [{"role": "user", "content": templated}]
    for _table, sql in (
        (
            "battles",
            "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, "
            "match_key, record_hash) VALUES ('b1', ?, ['a'], ['b'], 1, 'win', 'old', 'h')",
        ),
        (
            "pairs",
            "INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, miner, miner_version, "
            "match_key) VALUES ('p1', 'dpo', ?, 'c', 'r', 'battle', 'm', '1', 'old')",
        ),
    ):
        con.execute(sql, [msgs])
    con.execute(
        "INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text) VALUES "
        "('judge', 'b1', 'battle', 'old', 'old text')"
    )
    con.close()
    store = open_store(db)
    key = match_key("What's 12 times seven?")
    assert store.scalar("SELECT match_key FROM battles") == key
    assert store.scalar("SELECT match_key FROM pairs") == key
    assert store.one("SELECT match_key, match_text FROM holdout") == (key, "what's 12 times seven")
    store.close()


# -- each step of the pipeline on its own ------------------------------------------------------------------


def test_the_pipeline_is_the_documented_steps_in_order():
    from pairstore.normalize import STEPS

    assert [step.name for step in STEPS] == [
        "decode_escapes",
        "strip_markup",
        "nfkc",
        "ascii_digits",
        "fold",
        "number_forms",
        "punctuation",
        "spaces",
    ]


@pytest.mark.parametrize(
    "raw, decoded",
    [
        ("What&#39;s up", "What's up"),
        ("a&nbsp;b&amp;c", "a\u00a0b&c"),
        ("&amp;#39;", "'"),  # two layers
        ('say \\"hi\\"\\nnow', 'say "hi"\nnow'),
        ("caf\\u00e9", "café"),
        ("line_x000D_end", "line\rend"),
        ("plain text", "plain text"),
    ],
)
def test_decode_escapes(raw, decoded):
    from pairstore.normalize import decode_escapes

    assert decode_escapes(raw) == decoded


@pytest.mark.parametrize(
    "raw",
    [
        "<|im_start|>user\nTell me a joke<|im_end|>\n<|im_start|>assistant\n",
        "<s>[INST] <<SYS>>\n<</SYS>>\nTell me a joke [/INST]",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nTell me a joke<|eot_id|>",
        "<start_of_turn>user\nTell me a joke<end_of_turn>\n<start_of_turn>model\n",
        "### Instruction:\nTell me a joke\n\n### Response:\n",
        "Question: Tell me a joke\nAnswer:",
        "<p>Tell me a <b>joke</b></p>",
    ],
)
def test_strip_markup_leaves_the_words(raw):
    from pairstore.normalize import strip_markup

    assert " ".join(strip_markup(raw).split()) == "Tell me a joke"


def test_nfkc_and_ascii_digits():
    from pairstore.normalize import ascii_digits, nfkc

    assert nfkc("ﬁne ①") == "fine 1"
    assert ascii_digits("٣٤ and ४२ and ๕") == "34 and 42 and 5"


@pytest.mark.parametrize(
    "a, b",
    [
        ("Какая самая высокая гора в Европе?", "КАКАЯ САМАЯ ВЫСОКАЯ ГОРА В ЕВРОПЕ?"),
        ("Какая самая высокая гора в Европе?", "Какая Самая Высокая Гора В Европе?"),
        ("Ποια είναι η πρωτεύουσα της Ελλάδας;", "ΠΟΙΑ ΕΙΝΑΙ Η ΠΡΩΤΕΥΟΥΣΑ ΤΗΣ ΕΛΛΑΔΑΣ;"),
        ("Be brief. Что такое Python?", "BE BRIEF. ЧТО ТАКОЕ PYTHON?"),
        (
            "What is the capital of Peru?",
            "WHAT IS THE CAPITAL OF PERU?".translate(str.maketrans("AEOP", "АЕОР")),
        ),
    ],
)
def test_fold_holds_case_for_every_script(a, b):
    from pairstore.normalize import fold

    assert word_text(a) == word_text(b)
    assert fold("Лондон") == fold("ЛОНДОН") == fold("лондон")


@pytest.mark.parametrize(
    "a, b",
    [
        ("It costs 1,250 dollars", "It costs 1.250 dollars"),
        ("It costs 1,250 dollars", "It costs 1250 dollars"),
        ("It costs 1'250 dollars", "It costs 1 250 dollars"),
        ("Meet at 3.15 pm", "Meet at 3:15 pm"),
        ("Add 1,5 litres", "Add 1.5 litres"),
    ],
)
def test_number_forms_are_comparable(a, b):
    assert match_key(a) == match_key(b)


def test_number_forms_keep_other_numbers_apart():
    assert match_key("It costs 1,250 dollars") != match_key("It costs 1,350 dollars")
    assert match_key("It costs 3.5 dollars") != match_key("It costs 35 dollars")


def test_punctuation_is_a_word_break_never_glue():
    from pairstore.normalize import punctuation

    assert punctuation("Question:What") == "Question What"
    assert punctuation("end.<|im_end|>").split() == ["end", "im", "end"]
    assert word_text("**What is 17 times 23?**") == "what is 17 times 23"
    assert match_key("**What is 17 times 23?**") == match_key("What is 17 times 23?")
    assert word_text("12 + 7 = 19, 2^10, -5, 20%") == "12 + 7 = 19 2^10 -5 20%"


def test_spaces_and_sentences():
    from pairstore.normalize import sentences, spaces

    assert spaces("  a \t b\n c ") == "a b c"
    assert "tell me a joke" in sentences("Hi there! Tell me a joke thanks a lot!")
    assert "tell me a joke" in sentences("Practice question: Tell me a joke Answer: it depends.")
    assert "tell me a joke" not in sentences("Tell me a joke about cats.")


def _punctuation_by_rule(text: str) -> str:
    """Step 7 by its per-character rule (normalize._keep_sign), the way non-ASCII text takes it."""
    from pairstore import normalize as n

    text = text.translate(n.ASCII_TABLE)
    return n._SIGN.sub(lambda m: m.group(0) if n._keep_sign(text, m.start()) else " ", text)


def test_the_ascii_sign_pattern_is_the_per_character_rule_on_every_short_text():
    """The one-pattern ASCII path of step 7 against the rule, on every text of up to 5 characters over
    digits, a letter, a space and the signs, and on random longer ones."""
    import itertools

    from pairstore.normalize import punctuation

    alphabet = "1 a.+-%*'"
    for size in range(1, 6):
        for chars in itertools.product(alphabet, repeat=size):
            text = "".join(chars)
            assert punctuation(text) == _punctuation_by_rule(text), text
    rng = random.Random(7)
    wide = "0123456789 aZ._+-*/=<>^%,:$(\t'"
    for _ in range(20_000):
        text = "".join(rng.choice(wide) for _ in range(rng.randint(1, 24)))
        assert punctuation(text) == _punctuation_by_rule(text), text


# Step 6's patterns as first written (each starting with its lookbehind), run on every text: the
# reference for the digit-first patterns and the check that skips texts without separated digits.
_FIRST_TIME = re.compile(
    r"(?<![\d.:])(\d{1,2})[.:](\d{2})(?=\s*(?:[ap]\.?\s?m\b|h\b|hrs?\b|o'?clock\b))", re.IGNORECASE
)
_FIRST_DECIMAL_COMMA = re.compile(r"(?<![\d,.])(\d+),(\d{1,2})(?![\d]|[.,]\d)")
_FIRST_THOUSANDS = re.compile(r"(?<![\d.,'])(\d{1,3})((?:([,.'])\d{3})(?:\3\d{3})*)(?![\d]|[.,']\d)")


def _number_forms_as_first_written(text: str) -> str:
    text = _FIRST_TIME.sub(r"\1:\2", text)
    text = _FIRST_DECIMAL_COMMA.sub(r"\1.\2", text)
    return _FIRST_THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(m.group(3), " "), text)


def test_number_forms_equal_the_patterns_as_first_written_on_every_short_text():
    import itertools

    from pairstore.normalize import number_forms

    for size in range(1, 6):
        for chars in itertools.product("12,.' :", repeat=size):
            text = "".join(chars)
            assert number_forms(text) == _number_forms_as_first_written(text), text
    rng = random.Random(11)
    wide = "0123456789,.':  pmhr\u0663\u00b2"
    for _ in range(20_000):
        text = "".join(rng.choice(wide) for _ in range(rng.randint(1, 24)))
        text += rng.choice(["", " pm", " a.m.", " h", " hrs", " o'clock", " PM"])
        assert number_forms(text) == _number_forms_as_first_written(text), text


# Pieces that steps 1-7 read across: numbers and their separators, times, role markers at a line start,
# signs, escapes, markup, controls, non-ASCII letters and digits.
_PIECES = [
    "1", "25", "1,250", "3.15", " pm", "pm", "h", ",5", ".", ":", "-", "+", "%", "=", "*", " ", "\n", "\t",
    "\r", "\x1e", "\x00", "\x01", "Question:", "answer :", "### Response:", "q:", "A:", "user", "What",
    "x", "&amp;", "&#39;", "\\n", "_x000D_", "<b>", "</p>", "[INST]", "<|im_end|>", "\u0663", "Ж", "é",
    "\u200b", "\uff11",
]  # fmt: skip


def test_word_texts_of_a_batch_equal_word_text_of_each():
    """Texts built to interact with their neighbours once joined: a time cut before its "pm", a number cut
    before its separator, a role marker at a text's start, a sign at its end, NUL and non-ASCII texts
    between plain ones."""
    from pairstore.normalize import word_texts

    rng = random.Random(3)
    for _ in range(3000):
        texts = [
            "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 8))
        ]
        assert word_texts(texts) == [word_text(t) for t in texts], texts
    assert word_texts([]) == []


# -- one-text and many-texts methods of every step ----------------------------------------------------

_MORE_PIECES = [
    "%20", "%2B", "%C3%A9", "%FF", "%", "+", "a+b", "What+is", "\u0120", "\u010a", "\u2581", "##", "'",
    "\u2019", "John's", "don't", "\u20ac", "\U0001f600", "\ue000", "\u0378", "\u2260", "<|eot_id|>",
    "Human:", "\u00a0", "12", " + ", "3:15 pm", "1'250",
]  # fmt: skip
_TEXT = st.one_of(
    st.text(max_size=24),
    st.lists(st.sampled_from(_PIECES + _MORE_PIECES), max_size=8).map("".join),
)
_TEXTS = st.lists(_TEXT, max_size=10)


@given(_TEXTS)
def test_each_steps_many_texts_method_equals_its_one_text_method(texts):
    """On generated texts, and on what the earlier steps make of them (what each step reads in the
    pipeline): step.many(texts) == [step.one(t) for t in texts], and word_texts == word_text of each."""
    from pairstore.normalize import STEPS, word_texts

    staged = list(texts)
    for step in STEPS:
        for inputs in (texts, staged):
            assert step.many(inputs) == [step.one(t) for t in inputs], step.name
        staged = [step.one(t) for t in staged]
    assert word_texts(texts) == [word_text(t) for t in texts]


@given(_TEXT)
def test_word_text_is_idempotent_on_generated_text(text):
    once = word_text(text)
    assert word_text(once) == once


# -- every encoding decoded ---------------------------------------------------------------------------

# Text with nothing of its own for step 1 to decode (no entity, backslash, percent sign, "_x" or "+"),
# so one layer of URL encoding is all there is to take away.
_PLAIN = st.text(
    st.characters(blacklist_characters="&\\%+_", blacklist_categories=("Cs",)), min_size=1, max_size=40
)


@given(_PLAIN)
def test_url_encoding_is_decoded_like_any_other_escape(text):
    from urllib.parse import quote, quote_plus

    assert word_text(quote(text, safe="")) == word_text(text)
    assert word_text(quote(text)) == word_text(text)
    if re.search(r"[^\W\d_] +[^\W\d_]", text) or quote_plus(text) != text.replace(" ", "+"):
        # a form-encoded text says so: a percent escape or a "+" between two letters
        assert word_text(quote_plus(text)) == word_text(text)


@pytest.mark.parametrize(
    "encoded",
    [
        "What%20is%20the%20capital%20of%20Peru%3F",
        "What+is+the+capital+of+Peru%3F",
        "What+is+the+capital+of+Peru?",
        "What%2520is%2520the%2520capital%2520of%2520Peru%253F",  # two layers
        "What is the capital of %50eru?",
    ],
)
def test_a_url_encoded_prompt_keeps_its_key(encoded):
    assert match_key(encoded) == match_key(BASE), word_text(encoded)


def test_url_decoding_keeps_arithmetic_and_bytes_that_are_no_character():
    from pairstore.normalize import decode_escapes

    assert word_text("12+7") == "12+7"  # no letters around the "+", no escape: arithmetic, not a form
    assert word_text("What is 12+7?") == "what is 12+7"
    assert decode_escapes("caf%C3%A9%FF") == "café%FF"
    assert decode_escapes("a%2Bb+c") == "a+b c"  # form-encoded: "+" a space, "%2B" a plus


# -- tokenizer word marks, apostrophes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "dump",
    [
        "WhatĠisĠtheĠcapitalĠofĠPeru?",  # byte-level BPE tokens, joined
        "What Ġis Ġthe Ġcap ital Ġof ĠPer u ?",  # the same, each token separated by a space
        "▁What▁is▁the▁capital▁of▁Peru?",  # SentencePiece
        "what is the cap ##ital of peru ?",  # WordPiece
        "WhatĠisĠtheĠcapitalĠofĠPeru?ĊĊ",
    ],
)
def test_a_decoded_token_dump_keeps_the_key(dump):
    assert match_key(dump) == match_key(BASE), word_text(dump)


def test_tokenizer_marks_are_word_breaks_in_any_script():
    assert word_text("ЧтоĠтакоеĠPython") == word_text("Что такое Python")
    assert word_text("▁Что▁такое") == word_text("Что такое")


def test_possessive_and_contraction_apostrophes_stay_inside_the_word():
    assert word_text("Tell me about John's dog") == "tell me about john's dog"
    assert word_text("Peru’s capital") == word_text("Peru's capital") == "peru's capital"
    assert word_text("I don't know") == "i don't know"
    assert word_text("'quoted' words'") == "quoted words"  # quotes at a word's edge: breaks
    assert word_text("the 90's") == "the 90 s"  # not between two letters
    # the key does not read the apostrophe: a dropped one is the same text
    assert match_key("Tell me about Johns dog") == match_key("Tell me about John’s dog")


# -- every character decided ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ch, cls",
    [
        ("a", "letter"),
        ("é", "letter"),
        ("л", "letter"),
        ("中", "letter"),
        ("٣", "digit"),
        ("½", "digit"),
        ("'", "mark"),
        ("’", "mark"),
        ("\u093e", "mark"),  # Devanagari vowel sign aa, a spacing mark
        ("\u200b", "removed"),
        ("\u0301", "removed"),
        ("\x07", "removed"),
        (" ", "break"),
        ("-", "break"),
        ("\u0120", "break"),
        ("\u010a", "break"),
        ("\u2581", "break"),
        ("#", "break"),
        ("\U0001f600", "break"),
        ("\u2260", "break"),
        ("\ue000", "break"),
        ("\U000f0000", "break"),
        ("\u0378", "break"),  # unassigned
    ],
)
def test_char_class(ch, cls):
    from pairstore.normalize import char_class

    assert char_class(ch) == cls


@given(st.characters(blacklist_categories=()))
def test_any_character_is_decided(ch):
    from pairstore.normalize import CHAR_CLASSES, char_class

    assert char_class(ch) in CHAR_CLASSES


@pytest.mark.slow
def test_every_code_point_of_unicode_is_decided():
    """Each code point, between two letters, is a letter, a digit, a mark, a word break or removed: none is
    left as a symbol, punctuation, a control or an unassigned code point gluing two words together."""
    from pairstore.normalize import _SCANNED, CHAR_CLASSES, char_classes

    assigned = [chr(cp) for lo, hi in _SCANNED for cp in range(lo, hi + 1)]
    classes = char_classes(assigned)
    assert [hex(ord(c)) for c, k in zip(assigned, classes) if k is None] == []
    assert set(classes) == set(CHAR_CLASSES)
    # beyond the scanned ranges, every code point is unassigned or private use: each a word break
    scanned = {ord(c) for c in assigned}
    rest = [chr(cp) for cp in range(0x110000) if cp not in scanned]
    assert {unicodedata.category(c) for c in rest} == {"Cn", "Co"}
    assert word_text("".join(f"x{c}y " for c in rest)) == " ".join(["x y"] * len(rest))


def test_the_normalization_version_names_every_step_and_changes_with_one():
    from pairstore import normalize

    version = normalize.normalization_version()
    for step in normalize.STEPS:
        assert f"{step.name}/{step.version}" in version
    assert f"unicode/{unicodedata.unidata_version}" in version
    bumped = normalize.Step("fold", 99, normalize.fold)
    steps = tuple(bumped if s.name == "fold" else s for s in normalize.STEPS)
    old = normalize.STEPS
    try:
        normalize.STEPS = steps
        assert normalize.normalization_version() != version
    finally:
        normalize.STEPS = old
