"""The gate's matchers as one ordered list, and its rules as properties where a rule is general: disguises
found whatever the text (URL encoding, tokenizer dumps), sentences found in any order, a possessive that is
another question, a near neighbour of one template, a stock phrase that is no evidence; bulk holdout add."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from miners.battle import mine_battles
from pairstore.errors import GateRefused
from pairstore.export.run import export_round
from pairstore.holdout import matching
from pairstore.holdout.matching import (
    HOW_ORDER,
    MATCHERS,
    Rarity,
    RowText,
    candidate_table,
    check_candidates,
    match_texts,
    needles_of_text,
)
from pairstore.holdout.needles import distinctive_parts
from pairstore.holdout.sets import add_members
from pairstore.holdout.text_match import Commonness, Needle
from pairstore.ingest.battles import ingest_battles
from pairstore.keys import match_key, match_text
from pairstore.rounds.recipes import add_round
from pairstore.tables.pairs import Pair, add_pairs

# Content words of several kinds, for generated members.
NOUNS = (
    "harbour violin glacier lantern orchard saddle compass meadow tractor kettle ribbon cactus volcano "
    "telescope bicycle pyramid walrus quarry falcon chimney"
).split()
VERBS = (
    "paint measure repair describe compare borrow polish carry design explain sketch weigh fold "
    "gather steer plant sharpen stitch"
).split()
NAMES = "Maria Anna Tomas Keiko Olumide Ingrid Ravi Lucia".split()


@st.composite
def member_texts(draw, sentences_min: int = 1, sentences_max: int = 3) -> list[str]:
    """A member of distinct generated sentences (no word shared between two of them)."""
    pool = list(NOUNS + VERBS)
    out = []
    for _ in range(draw(st.integers(sentences_min, sentences_max))):
        k = draw(st.integers(5, 8))
        words = draw(st.lists(st.sampled_from(pool), min_size=k, max_size=k, unique=True))
        for w in words:
            pool.remove(w)
        out.append(" ".join(words).capitalize() + ".")
    return out


def prompt_needle(text: str, commonness: Commonness | None = None) -> Needle:
    n = needles_of_text("judge", "m1", "holdout", [text])[0]
    parts = distinctive_parts([[text]], commonness or Commonness())[0]
    return Needle(n.set_name, n.item_id, n.kind, n.text, None, False, parts)


def how(text: str, row_user: str, others=(), rarity=None):
    got = match_texts(prompt_needle(text), RowText.of([row_user], list(others)), rarity)
    return None if got is None else got[0]


# -- the list ------------------------------------------------------------------------------------------------


def test_the_matchers_are_one_ordered_list_each_declared_once():
    names = [m.name for m in MATCHERS]
    assert names == list(HOW_ORDER) and len(set(names)) == len(names)
    assert names[:3] == ["id", "match_key", "task_key"] and names[-1] == "benchmark"
    texts = [m.text for m in MATCHERS if m.text is not None]
    assert len(set(texts)) == len(texts)
    assert all(m.rows is not None or m.text is not None for m in MATCHERS)
    assert all(m.finds for m in MATCHERS)


# -- every encoding decoded, tokenizer marks ----------------------------------------------------------------

DUMPS = {
    "percent-encoded": lambda t: quote(t, safe=""),
    "form-encoded": quote_plus,
    "byte-level BPE tokens": lambda t: "Ġ".join(t.split(" ")),
    "byte-level BPE tokens, spaced": lambda t: " Ġ".join(t.split(" ")),
    "SentencePiece tokens": lambda t: "▁" + "▁".join(t.split(" ")),
    "WordPiece tokens": lambda t: " ".join(w[:3] + " ##" + w[3:] if len(w) > 4 else w for w in t.split(" ")),
    "double-encoded": lambda t: quote(quote(t, safe=""), safe=""),
}


@pytest.mark.parametrize("dump", sorted(DUMPS))
@given(member_texts())
def test_an_encoded_or_token_dumped_member_keeps_its_key(dump, sentences_):
    text = " ".join(sentences_)
    assert how(text, DUMPS[dump](text)) == "match_key"


# -- order-insensitive near copies --------------------------------------------------------------------------


@given(member_texts(2, 4), st.randoms(use_true_random=False))
def test_a_member_of_several_sentences_reordered_is_found(sentences_, rng):
    order = list(range(len(sentences_)))
    rng.shuffle(order)
    assume(order != sorted(order))
    text = " ".join(sentences_)
    found = how(text, " ".join(sentences_[i] for i in order))
    assert found == "reordered", found


@given(member_texts(3, 4), st.randoms(use_true_random=False))
def test_most_of_the_sentences_in_any_order_one_reworded_is_found(sentences_, rng):
    """One sentence reworded (its words kept, a function word added) and the others in any order."""
    order = list(range(len(sentences_)))
    rng.shuffle(order)
    rows = [sentences_[i] for i in order]
    first, rest = rows[0].split(" ", 1)
    rows[0] = f"{first} also {rest}"
    assert how(" ".join(sentences_), " ".join(rows)) in ("reordered", "fuzzy")


@given(member_texts(3, 4), st.randoms(use_true_random=False), st.sampled_from(["5", "zeppelin"]))
def test_most_of_the_sentences_with_one_given_other_content_is_another_question(sentences_, rng, new):
    """One sentence with another number or another content word: the rest of the member is there, but not
    what it is about."""
    order = list(range(len(sentences_)))
    rng.shuffle(order)
    rows = [sentences_[i] for i in order]
    first, rest = rows[0].split(" ", 1)
    rows[0] = f"{new.capitalize()} {rest}"
    assert how(" ".join(sentences_), " ".join(rows)) is None


@given(member_texts(2, 4))
def test_one_sentence_of_a_member_alone_is_not_the_member(sentences_):
    assert how(" ".join(sentences_), sentences_[-1]) is None


# -- the possessive -----------------------------------------------------------------------------------------


@given(
    st.lists(st.sampled_from(NOUNS + VERBS), min_size=4, max_size=8, unique=True),
    st.sampled_from(NAMES),
    st.sampled_from(NOUNS),
)
def test_a_name_with_a_possessive_is_another_question(words, name, thing):
    member = f"{' '.join(words).capitalize()} {name}"  # five words or more: found inside longer text
    assert how(member, f"Hi! {member}. Thanks.") in ("sentence", "embedded")  # the member itself
    for apostrophe in ("'", "’"):
        row = f"{member}{apostrophe}s {thing}, and what else should I know?"
        assert how(member, row) is None, row


# -- near neighbours of a template --------------------------------------------------------------------------

TEMPLATE = (
    "Write a short story about a {animal} who learns to {skill} in the {place}, and make it funny and "
    "suitable for children aged five to seven."
)
ANIMALS = "dragon robot walrus falcon tortoise penguin otter badger".split()
SKILLS = "fly dance swim juggle paint whistle skate knit".split()
PLACES = "mountains desert harbour forest city jungle arctic valley".split()


def _template_rarity() -> Rarity:
    """A store where the template is everywhere: every slot word is common (2% of the texts or more)."""
    from pairstore.normalize import word_text

    texts = [
        word_text(TEMPLATE.format(animal=a, skill=s, place=p))
        for a in ANIMALS
        for s in SKILLS
        for p in PLACES[:4]
    ]
    return Rarity.of_texts(texts)


@given(st.sampled_from(ANIMALS), st.sampled_from(SKILLS), st.sampled_from(PLACES), st.data())
def test_the_same_template_with_other_content_words_is_another_question(animal, skill, place, data):
    rarity = _template_rarity()
    member = TEMPLATE.format(animal=animal, skill=skill, place=place)
    other_animal = data.draw(st.sampled_from([a for a in ANIMALS if a != animal]))
    other_skill = data.draw(st.sampled_from([s for s in SKILLS if s != skill]))
    for neighbour in (
        TEMPLATE.format(animal=other_animal, skill=skill, place=place),
        TEMPLATE.format(animal=other_animal, skill=other_skill, place=place),
    ):
        assert how(member, neighbour, rarity=rarity) is None, neighbour
    # the member itself with a function word dropped and a word of politeness added is a near copy
    assert how(member, "Please " + member.replace(" a short", " short"), rarity=rarity) == "fuzzy"


# -- only distinctive needles --------------------------------------------------------------------------------

REFUSAL = "I'm sorry, but I can't help with that request. Is there anything else I can help you with today?"


def test_commonness_counts_distinct_prompts_and_every_sentence():
    items = [(f"k{i}", [f"Question number {i} about something?", REFUSAL]) for i in range(3)]
    items.append(
        ("k0", ["Question number 0 about something?", "A distinctive answer about harbour lanterns."])
    )
    common = Commonness.of_items(items)
    from pairstore.normalize import sentences_of, word_text

    whole, sents = word_text(REFUSAL), sentences_of([REFUSAL], polite=False)[0]
    assert common.common_needle(whole, sents)
    # two distinct prompts are not enough; one prompt many times is one
    assert not Commonness.of_items(items[:2]).common_needle(whole, sents)
    assert not Commonness.of_items([("k", ["q", REFUSAL])] * 5).common_needle(whole, sents)
    # an answer with one stock sentence and one of its own is distinctive
    mixed = (
        "I'm sorry, but I can't help with that request. The harbour lantern was lit at dawn by the keeper."
    )
    assert not common.common_needle(word_text(mixed), sentences_of([mixed], polite=False)[0])


def test_the_common_needle_threshold_is_the_one_chosen_on_the_labelled_sentences():
    from scripts.tune_gate import choose_common_threshold

    assert choose_common_threshold()["chosen"] == matching.COMMON_NEEDLE_PROMPTS


def _battle(bid, prompt, own, other=None):
    other = other or f"Another answer, {bid}."  # under eight words: no needle of its own
    return {"battle_id": bid, "vote": "win", "prompt": prompt, "own_answer": own, "opponent_answer": other}


def test_a_stock_refusal_of_a_held_out_battle_refuses_no_compliance_pair(
    store, tmp_path, write_jsonl, dpo_recipe
):
    """One held-out battle's answer is a standard refusal: the compliance pairs that use it (other prompts,
    the refusal as rejected) pass the gate, and `audit gate` counts the skipped needle; the battle's own
    distinctive answer is still refused."""
    distinctive = "Start at Tofuku-ji before eight, walk to Eikan-do, and end at Kiyomizu-dera for sunset."
    battles = [_battle("h1", "Tell me how to pick a lock on my neighbour's door.", REFUSAL, distinctive)]
    ingest_battles(store, write_jsonl(tmp_path / "b.jsonl", battles))
    add_members(
        store, "judge", [{"item_id": "h1", "item_kind": "battle", "match_key": "k", "match_text": "x"}]
    )
    prompts = [f"How do I {v} a {n} at home?" for v, n in zip(VERBS, NOUNS)][:6]
    add_pairs(
        store,
        [
            Pair(
                prompt=p,
                chosen=f"Here is how to do it: step one for {p}",
                rejected=REFUSAL,
                source="compliance",
            )
            for p in prompts
        ],
        miner="t",
        miner_version="1",
    )
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    add_round(store, tmp_path / "base.toml")
    (tmp_path / "rc.toml").write_text(dpo_recipe("rc", blocks=['source = "compliance"']))
    add_round(store, tmp_path / "rc.toml")
    res = export_round(store, "rc", tmp_path / "out")
    assert res.files["dpo"].rows > 0
    result = check_candidates(
        store, candidate_table((i, None, [], p, None, ["x", REFUSAL]) for i, p in enumerate(prompts))
    )
    assert result.hits == [] and result.skipped_needles == 1 and result.skipped[0]["item_id"] == "h1"
    # the held-out battle's distinctive answer, as chosen of another prompt, is a leak
    leak = check_candidates(store, candidate_table([(0, None, [], "Plan my day.", None, [distinctive])]))
    assert [(h.item_id, h.how) for h in leak.hits] == [("h1", "whole_text")]


def test_a_possessive_battle_is_mined_not_dropped_as_held_out(store, tmp_path, write_jsonl):
    held = "Write a short poem about Maria"
    battles = [
        _battle("h1", held, "Maria, bright as morning, walks the shore and sings."),
        _battle(
            "x1", "Write a short poem about Maria's garden.", "Roses by the fence, and mint by the door."
        ),
    ]
    ingest_battles(store, write_jsonl(tmp_path / "b.jsonl", battles))
    add_members(
        store,
        "judge",
        [
            {
                "item_id": "h1",
                "item_kind": "battle",
                "match_key": match_key(held),
                "match_text": match_text(held),
            }
        ],
    )
    res = mine_battles(store)
    assert res.dropped["holdout"] == 1  # the held-out battle itself
    assert store.rows("SELECT origin_id FROM pair_origins") == [{"origin_id": "x1"}]


def test_a_near_neighbour_of_a_long_member_passes_in_a_store_full_of_its_template(
    store, tmp_path, dpo_recipe
):
    member = TEMPLATE.format(animal="dragon", skill="fly", place="mountains")
    fillers = [(a, s, p) for a in ANIMALS for s in SKILLS for p in PLACES]
    pairs = [
        Pair(
            prompt=TEMPLATE.format(animal=a, skill=s, place=p),
            chosen=f"Once upon a time, a {a}.",
            rejected="No.",
            source="stories",
        )
        for a, s, p in fillers[:300]
        if (a, s, p) != ("dragon", "fly", "mountains")
    ]
    add_pairs(store, pairs, miner="t", miner_version="1")
    add_members(
        store,
        "judge",
        [
            {
                "item_id": "m1",
                "item_kind": "prompt",
                "match_key": match_key(member),
                "match_text": match_text(member),
            }
        ],
    )
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    add_round(store, tmp_path / "base.toml")
    (tmp_path / "rs.toml").write_text(dpo_recipe("rs", blocks=['source = "stories"']))
    add_round(store, tmp_path / "rs.toml")
    assert export_round(store, "rs", tmp_path / "out").files["dpo"].rows > 0
    near = member.replace("a short story", "short story").replace("and make it", "make it")
    add_pairs(
        store,
        [Pair(prompt=near, chosen="A tale.", rejected="No.", source="stories")],
        miner="t",
        miner_version="1",
    )
    with pytest.raises(GateRefused) as e:
        export_round(store, "rs", tmp_path / "out2")
    assert {(h.item_id, h.how) for h in e.value.hits} == {("m1", "fuzzy")}


# -- bulk holdout add ---------------------------------------------------------------------------------------


def test_holdout_add_of_a_texts_file_finds_every_text_in_disguise(run_cli, tmp_path, write_jsonl):
    texts = [
        f"{' '.join(NOUNS[i : i + 5]).capitalize()}: how are they related in story {i}?" for i in range(12)
    ]
    path = write_jsonl(
        tmp_path / "t.jsonl", [{"text": t, **({"id": f"q{i}"} if i % 2 else {})} for i, t in enumerate(texts)]
    )
    res = run_cli("holdout", "add", "bench", "--texts-file", path, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"set": "bench", "added": 12}
    # again: nothing new; one audit-log entry per member
    assert json.loads(run_cli("holdout", "add", "bench", "--texts-file", path, "--json").output)["added"] == 0
    log = json.loads(
        run_cli("sql", "SELECT count(*) AS n FROM audit_log WHERE action = 'holdout.add'", "--json").output
    )
    assert log == [{"n": 12}]
    from pairstore.store.store import open_store

    with open_store(tmp_path / "store.duckdb") as store:
        disguised = [
            quote_plus(t) if i % 3 == 0 else "Ġ".join(t.upper().split()) for i, t in enumerate(texts)
        ]
        hits = check_candidates(
            store, candidate_table((i, None, [], d, None) for i, d in enumerate(disguised))
        ).hits
        assert sorted(h.row_index for h in hits) == list(range(12))
        assert {h.how for h in hits} == {"match_key"}
        assert store.scalar("SELECT count(*) FROM holdout WHERE source_text IS NOT NULL") == 12


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"text": "a prompt", "answer": "x"}', "unknown field 'answer'"),
        ('{"id": "q1"}', "text: expected a non-empty string"),
        ('{"text": ""}', "text: expected a non-empty string"),
        ('{"text": "x", "id": 5}', "id: expected a non-empty string"),
        ("not json", "not JSON"),
        ('["text"]', "expected a JSON object"),
    ],
)
def test_a_texts_file_is_read_whole_or_refused_and_nothing_is_added(run_cli, tmp_path, line, message):
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a first good prompt"}\n' + line + "\n")
    res = run_cli("holdout", "add", "bench", "--texts-file", path)
    assert res.exit_code == 2 and "line 2" in res.output and message in res.output, res.output
    assert "[]" in run_cli("holdout", "list", "--json").output


def test_an_ids_file_with_an_unknown_id_adds_nothing(run_cli, tmp_path, write_jsonl):
    battles = [_battle(f"b{i}", f"Question {i} about {NOUNS[i]}?", f"Answer {i}.") for i in range(5)]
    assert run_cli("ingest", "battles", write_jsonl(tmp_path / "b.jsonl", battles)).exit_code == 0
    (tmp_path / "ids.txt").write_text("b0\nb1\nb1\nnope\nb2\n")
    res = run_cli("holdout", "add", "judge", "--ids-file", tmp_path / "ids.txt")
    assert res.exit_code == 2 and "line 4" in res.output and "'nope'" in res.output
    assert "[]" in run_cli("holdout", "list", "--json").output
    (tmp_path / "ids.txt").write_text("b0\nb1\nb1\nb2\n")
    res = run_cli("holdout", "add", "judge", "--ids-file", tmp_path / "ids.txt", "--json")
    assert json.loads(res.output)["added"] == 3  # an id listed twice is one member
    assert re.search(r"judge\s+3\s+0", run_cli("holdout", "list").output)
