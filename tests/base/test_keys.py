import hashlib
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pairstore.errors import BadInput
from pairstore.keys import (
    canonical_messages,
    content_hash_rows,
    content_id,
    match_key,
    match_text,
    sha256_file,
)


def test_canonical_messages_from_string_and_list():
    assert canonical_messages("hi") == [{"role": "user", "content": "hi"}]
    msgs = [{"role": "system", "content": "be nice"}, {"role": "user", "content": "hi"}]
    assert canonical_messages(msgs) == msgs
    assert canonical_messages([("user", "hi")]) == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    "bad, needle",
    [
        ([{"role": "robot", "content": "x"}], "unknown role 'robot'"),
        ([{"role": "user", "content": 3}], "expected a string"),
        ([], "empty message list"),
        (42, "expected a string or a list"),
    ],
)
def test_canonical_messages_rejects(bad, needle):
    with pytest.raises(BadInput, match=needle):
        canonical_messages(bad)


def test_content_id_is_exact_after_nfc_only():
    assert content_id("x²") != content_id("x2")
    assert content_id("Hello") != content_id("hello")
    assert content_id(unicodedata.normalize("NFD", "café")) == content_id("café")
    assert len(content_id("a")) == 32


def test_match_key_ignores_system_prompt_case_whitespace_and_unicode_form():
    base = match_key("How many primes are there below 100?")
    variants = [
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "How many primes are there below 100?"},
        ],
        "How many primes are there below 100?\r\n",
        "  how MANY primes\tare there below 100?  ",
        unicodedata.normalize("NFKD", "How many primes are there below 100?"),
        "Ｈｏｗ many primes are there below １００?",  # fullwidth forms fold under NFKC
    ]
    for v in variants:
        assert match_key(v) == base, v
    assert match_key("How many primes are there below 1000?") != base


def test_match_key_uses_user_turns_only():
    a = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    b = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "other answer"},
        {"role": "user", "content": "q2"},
    ]
    assert match_key(a) == match_key(b)
    assert match_text(a) == "q1\x1eq2"


def test_sha256_file_streams(tmp_path):
    p = tmp_path / "f.bin"
    data = b"x" * (3 * 1024 * 1024 + 7)
    p.write_bytes(data)
    assert sha256_file(p) == hashlib.sha256(data).hexdigest()


def test_content_hash_rows_depends_on_order_and_content():
    rows = [("a", 1), ("b", 2)]
    assert content_hash_rows(rows) == content_hash_rows([("a", 1), ("b", 2)])
    assert content_hash_rows(rows) != content_hash_rows(list(reversed(rows)))


def test_match_keys_of_many_prompts_equal_match_key_of_each():
    from pairstore.keys import match_keys, match_keys_of_texts

    prompts = [
        "What is 12 + 7?",
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Question: 3.15 pm?"}],
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Ж 1,250"},
        ],
        "<|im_start|>user\nWhat&#39;s up?<|im_end|>",
        "",
    ]  # fmt: skip
    assert match_keys(prompts) == [match_key(p) for p in prompts]
    texts = [p for p in prompts if isinstance(p, str)]
    assert match_keys_of_texts(texts) == [match_key(t) for t in texts]


def test_nfc_of_many_texts_at_once_equals_nfc_of_each():
    """Combining marks, Hangul jamo and starters that compose with what follows, at the ends of texts
    where a join would put them next to each other."""
    import random

    from pairstore.keys import content_ids, nfc, nfc_many

    pieces = ["e", "\u0301", "\u0327", "\u0308", "a", "\u1100", "\u1161", "\u11a8", "\u0b47", "\u0b3e", " ",
              "\x00", "\u00e9", "\u212b", "\u0344", "x", "\u0f73", "\u0300\u0315"]  # fmt: skip
    rng = random.Random(5)
    for _ in range(3000):
        texts = [
            "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(1, 6))
        ]
        assert nfc_many(texts) == [nfc(t) for t in texts], texts
        assert content_ids(texts) == [content_id(t) for t in texts]
    assert nfc_many(["ascii", "only"]) == ["ascii", "only"]


def test_seeded_ranks_are_seeded_rank_of_each_id_whatever_the_container():
    import random

    import pyarrow as pa
    import xxhash

    from pairstore.keys import seeded_order, seeded_rank, seeded_ranks

    rng = random.Random(3)
    ids = ["", "a", "é\x1f", "x" * 300] + [f"p{rng.random()}" for _ in range(500)]
    want = [seeded_rank(12076, "limit", i) for i in ids]
    # the documented rank, written out: xxh3-64 of seed, parts and id joined by U+001F
    assert want[1] == xxhash.xxh3_64_intdigest(b"12076\x1flimit\x1fa")
    assert seeded_ranks(12076, ids, "limit").tolist() == want
    chunked = pa.chunked_array([pa.array(ids[:100]), pa.array(ids[100:])])
    assert seeded_ranks(12076, chunked, "limit").tolist() == want
    assert seeded_order(12076, chunked, "limit").tolist() == sorted(range(len(ids)), key=lambda k: want[k])
    with pytest.raises(BadInput):
        seeded_ranks(1, pa.array(["a", None]))


@given(
    st.lists(
        st.text(alphabet=st.sampled_from(["a", " ", "'", "\x1e", "\x00", "é", "1"]), max_size=8), max_size=8
    )
)
def test_keys_of_many_texts_equal_key_of_each(texts):
    """The joined compact pass (NUL between texts, and texts that hold a NUL or a turn break themselves)."""
    from pairstore.keys import key_of_text, keys_of_texts

    assert keys_of_texts(texts) == [key_of_text(t) for t in texts]
