"""The holdout gate at export: every way a held-out item can hide, the exemption path, and the incident."""

from __future__ import annotations

import re
import unicodedata

import pytest
import xxhash

from pairstore.errors import GateRefused
from pairstore.export.run import export_round
from pairstore.holdout.matching import FUZZY_THRESHOLD, candidate_table, find_holdout_hits, fuzzy_score
from pairstore.holdout.sets import add_members, remove_member, sample_holdout
from pairstore.ingest.battles import ingest_battles
from pairstore.keys import match_key, match_text
from pairstore.rounds.recipes import add_round
from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, add_pairs

LONG = (
    "I am planning a trip to Kyoto in late autumn and would like to see the maple leaves at the old "
    "temples. Which three temples would you recommend visiting, and how should I order them in a "
    "single day to avoid the crowds?"
)
OTHER_LONG = (
    "I am planning a trip to Osaka in early summer and want to eat street food at night. Which "
    "three markets would you recommend, and what should I try first at each of them?"
)
TEMPLATE = (
    "How many times does the letter '{l}' appear in the word '{w}'? Count carefully and put the "
    "number on the last line as 'Final answer: N'."
)


def member(item_id, prompt, kind="battle", task_key=None):
    return {
        "item_id": item_id,
        "item_kind": kind,
        "match_key": match_key(prompt),
        "match_text": match_text(prompt),
        "task_key": task_key,
    }


def pair(prompt, i, source="battle", origins=(), task_key=None):
    return Pair(
        prompt=prompt,
        chosen=f"A good answer {i}.",
        rejected=f"A poor answer {i}.",
        source=source,
        task_key=task_key,
        origins=[Origin("battle", o, "vote=win → own chosen") for o in origins],
    )


@pytest.fixture
def gated(store, tmp_path, dpo_recipe):
    """A store with clean pairs, a holdout set `judge` and a registered round per mix source."""
    clean = [
        pair(
            f"Clean question {i}: what is the boiling point of water at altitude {i} km?",
            i,
            origins=[f"c{i}"],
        )
        for i in range(5)
    ]
    clean.append(pair(OTHER_LONG, 99))
    clean.append(
        pair(
            TEMPLATE.format(l="e", w="raspberry"),
            98,
            source="loopfix",
            task_key='letter_count:{"letter":"e","word":"raspberry"}',
        )
    )
    add_pairs(store, clean, miner="test", miner_version="1")
    add_members(
        store,
        "judge",
        [
            member("b01", "What is the capital of Peru, and why is it there?"),
            member("b02", LONG),
            member(
                "t01",
                TEMPLATE.format(l="r", w="strawberry"),
                kind="task",
                task_key='letter_count:{"letter":"r","word":"strawberry"}',
            ),
        ],
    )
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    add_round(store, tmp_path / "base.toml")
    for name, src in (("rb", "battle"), ("rl", "loopfix"), ("ra", "attached")):
        (tmp_path / f"{name}.toml").write_text(dpo_recipe(name, blocks=[f'source = "{src}"']))
        add_round(store, tmp_path / f"{name}.toml")
    return store


def refused(store, tmp_path, round_name="rb"):
    out = tmp_path / "out"
    with pytest.raises(GateRefused) as e:
        export_round(store, round_name, out)
    assert not out.exists(), "nothing is written on a refusal"
    assert store.scalar("SELECT count(*) FROM exports") == 0
    assert store.scalar("SELECT count(*) FROM export_rows") == 0
    return {(h.set_name, h.item_id, h.how) for h in e.value.hits}, str(e.value)


def test_clean_mixture_passes(gated, tmp_path):
    res = export_round(gated, "rb", tmp_path / "o")
    assert res.files["dpo"].rows == 6
    assert res.gate is not None and res.gate.passed and res.gate.members_checked["holdout"] == 3


def test_leak_by_origin_id(gated, tmp_path, run_cli):
    add_pairs(
        gated, [pair("A reworded question about Peru.", 1, origins=["b01"])], miner="t", miner_version="1"
    )
    hits, msg = refused(gated, tmp_path)
    assert hits == {("judge", "b01", "id")}
    assert "judge b01 pair" in msg and "(id)" in msg
    gated.close()
    res = run_cli("export", "--round", "rb", "--out", tmp_path / "cli")
    assert res.exit_code == 3
    assert "refused by the holdout gate" in res.output and "judge b01" in res.output
    assert not (tmp_path / "cli").exists()


@pytest.mark.parametrize(
    "variant",
    [
        "What is the capital of Peru, and why is it there?\r\n",
        "What  is the capital\tof Peru,\nand why is it there?   ",
        "WHAT IS THE CAPITAL OF PERU, AND WHY IS IT THERE?",
        unicodedata.normalize("NFKD", "What is the capital of Peru, and why is it there?").replace("a", "ａ"),
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of Peru, and why is it there? "},
        ],
    ],
)
def test_leak_by_whitespace_unicode_or_system_prompt_variant(gated, tmp_path, variant):
    add_pairs(gated, [pair(variant, 1)], miner="t", miner_version="1")
    hits, _ = refused(gated, tmp_path)
    assert hits == {("judge", "b01", "match_key")}


@pytest.mark.parametrize(
    "neighbour",
    [
        # another time of year, another number, another word: another question
        LONG.replace("three", "two")
        .replace("late autumn", "early November")
        .replace("the crowds", "tourists"),
        LONG.replace("Kyoto", "Nara"),
        LONG.replace("three", "four"),
    ],
)
def test_near_neighbours_of_a_long_member_pass(gated, tmp_path, neighbour):
    assert fuzzy_score(match_text(LONG), match_text(neighbour)) == 0.0
    add_pairs(gated, [pair(neighbour, 1)], miner="t", miner_version="1")
    assert export_round(gated, "rb", tmp_path / "o").files["dpo"].rows >= 1


@pytest.mark.parametrize(
    "paraphrase, how",
    [
        (LONG + " Please also tell me the opening hours.", "embedded"),  # a sentence added
        ("Quick question. " + LONG, "embedded"),  # a sentence in front
        # function words changed and the tail cut: the same question
        (
            LONG.replace("I am planning", "Planning").replace(" the old", " old").rsplit(" to avoid", 1)[0],
            "fuzzy",
        ),
        (
            LONG.replace("would you recommend", "do you recommend").replace("in a single", "in the single"),
            "fuzzy",
        ),
    ],
)
def test_leak_by_paraphrase(gated, tmp_path, paraphrase, how):
    assert fuzzy_score(match_text(LONG), match_text(paraphrase)) >= FUZZY_THRESHOLD
    add_pairs(gated, [pair(paraphrase, 1)], miner="t", miner_version="1")
    hits, msg = refused(gated, tmp_path)
    assert hits == {("judge", "b02", how)}
    assert f"({how}" in msg


def test_leak_by_task_key_and_templates_of_other_tasks_pass(gated, tmp_path):
    # the same task asked in other words: caught by its canonical task key
    add_pairs(
        gated,
        [
            pair(
                "Count the r's in strawberry.",
                1,
                source="loopfix",
                task_key='letter_count:{"letter":"r","word":"strawberry"}',
            )
        ],
        miner="t",
        miner_version="1",
    )
    hits, _ = refused(gated, tmp_path, "rl")
    assert hits == {("judge", "t01", "task_key")}


def test_different_tasks_of_one_template_are_not_leaks(gated, tmp_path):
    # raspberry/e differs from the held strawberry/r task by two words: another task, found by task key only
    res = export_round(gated, "rl", tmp_path / "o")
    assert res.files["dpo"].rows == 1 and res.gate is not None and res.gate.exempted == []
    # and a different long prompt on a similar subject is not a paraphrase of the held one
    assert fuzzy_score(match_text(LONG), match_text(OTHER_LONG)) < FUZZY_THRESHOLD


def test_leak_of_an_eval_item(gated, tmp_path):
    prompt = [{"role": "user", "content": "Evaluate: what is 17 * 23, and show the steps in full please?"}]
    gated.con.execute(
        "INSERT INTO eval_items (suite, item_id, kind, prompt, gold, match_key) "
        "VALUES ('v2', 'v2-001', 'task', ?, '391', ?)",
        [prompt, match_key(prompt)],
    )
    add_pairs(gated, [pair(prompt[0]["content"].upper(), 1)], miner="t", miner_version="1")
    hits, _ = refused(gated, tmp_path)
    assert hits == {("eval:v2", "v2-001", "match_key")}


def test_leak_by_benchmark_13_gram(gated, tmp_path):
    ngrams = pytest.importorskip(
        "pairstore.holdout.ngrams", reason="benchmark n-grams (audits engineer's module) missing"
    )
    item = (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?"
    )
    ngrams.register_benchmark(gated, "gsm8k-test", [("gsm8k-test-0", item)])
    leak = "Here is a puzzle for you: " + item[:120] + " Answer quickly."
    add_pairs(gated, [pair(leak, 1)], miner="t", miner_version="1")
    hits, _ = refused(gated, tmp_path)
    assert ("benchmark:gsm8k-test", "gsm8k-test-0", "benchmark") in hits


def test_exemption_lets_one_pair_through_and_is_recorded(gated, tmp_path, run_cli):
    leak = pair(LONG + " Please also tell me the opening hours.", 1)
    add_pairs(gated, [leak], miner="t", miner_version="1")
    gated.close()
    res = run_cli("holdout", "exempt", "judge", "b02", leak.pair_id)
    assert res.exit_code == 2 and "--reason" in res.output
    res = run_cli("holdout", "exempt", "judge", "nope", leak.pair_id, "--reason", "x")
    assert res.exit_code == 2 and "not a member" in res.output
    res = run_cli("holdout", "exempt", "judge", "b02", leak.pair_id, "--reason", "rewritten from scratch")
    assert res.exit_code == 0 and "exempted" in res.output
    res = run_cli("export", "--round", "rb", "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    assert "1 exempted hit" in res.output
    store = open_store(tmp_path / "store.duckdb")
    import json

    ev = json.loads((tmp_path / "o" / "rb.training_evidence.json").read_text())
    [ex] = ev["gate"]["exempted"]
    assert (ex["set"], ex["item_id"], ex["pair_id"], ex["how"], ex["reason"]) == (
        "judge",
        "b02",
        leak.pair_id,
        "embedded",
        "rewritten from scratch",
    )
    log = store.rows(
        "SELECT action, detail FROM audit_log WHERE action IN ('holdout.exempt', 'export') ORDER BY seq"
    )
    assert [r["action"] for r in log] == ["holdout.exempt", "export"]
    assert json.loads(log[1]["detail"])["exempted"][0]["reason"] == "rewritten from scratch"
    # the exemption covers that pair only: another leak of the same member is refused
    add_pairs(store, [pair(LONG + " And where should I eat?", 2)], miner="t", miner_version="1")
    hits, _ = refused_again(store, tmp_path)
    assert hits == {("judge", "b02", "embedded")}
    store.close()


def refused_again(store, tmp_path):
    with pytest.raises(GateRefused) as e:
        export_round(store, "rb", tmp_path / "o2")
    assert not (tmp_path / "o2").exists()
    return {(h.set_name, h.item_id, h.how) for h in e.value.hits}, str(e.value)


def test_removing_the_member_lets_the_export_pass(gated, tmp_path):
    add_pairs(
        gated, [pair("WHAT IS THE CAPITAL OF PERU, AND WHY IS IT THERE?", 1)], miner="t", miner_version="1"
    )
    refused(gated, tmp_path)
    remove_member(gated, "judge", "b01", reason="published in a blog post")
    assert export_round(gated, "rb", tmp_path / "o").files["dpo"].rows == 7


def test_matching_api_on_candidate_rows(gated):
    rows = [
        (0, None, ["b01"], "anything", None),
        (
            1,
            "p1",
            [],
            [{"role": "user", "content": "what is the capital of PERU, and why is it there?"}],
            None,
        ),
        (
            2,
            "p2",
            [],
            "Something else entirely, nothing to do with the held-out questions at all here.",
            None,
        ),
    ]
    hits = find_holdout_hits(gated, candidate_table(rows), set_name="judge")
    assert [(h.item_id, h.row_index, h.how) for h in hits] == [("b01", 0, "id"), ("b01", 1, "match_key")]
    assert find_holdout_hits(gated, candidate_table(rows), set_name="other") == []


# -- the incident (13 of 34 held-out battles) --------------------------------------------------------

VOCAB = (
    "river mountain budget recipe violin python kernel garden tax poem orbit glacier novel engine protein "
    "camera ladder harbor piano lantern marathon vaccine satellite pottery compiler desert ferry honey "
    "tunnel quartz meadow cathedral battery origami volcano saxophone reef canyon bakery telescope "
    "mortgage sonnet turbine yeast lighthouse carpet falcon magnet compass"
).split()


def arena_prompt(i: int) -> str:
    words = [VOCAB[xxhash.xxh64_intdigest(f"{i}:{j}".encode()) % len(VOCAB)] for j in range(12)]
    return f"Question {i} for the café in Zürich: tell me about " + " ".join(words) + "."


def test_incident_13_of_34_holdout_battles_in_an_external_pair_file_are_refused(
    store, tmp_path, run_cli, write_jsonl, dpo_recipe
):
    votes = ["win", "loss", "tie", "both_bad"]
    battles = [
        {
            "battle_id": f"a{i:03d}",
            "vote": votes[i % 4],
            "prompt": arena_prompt(i),
            "own_answer": f"Own answer {i}.",
            "opponent_answer": f"Opponent answer {i}.",
            "category": ["math", "code", "chat"][i % 3],
        }
        for i in range(120)
    ]
    ingest_battles(store, write_jsonl(tmp_path / "battles.jsonl", battles))
    held = sample_holdout(store, "judge34", n=34, seed=263)
    assert len(held) == 34
    by_id = {b["battle_id"]: b for b in battles}
    variants = [
        lambda t: t.replace(" ", "\r\n"),  # CRLF line breaks
        lambda t: t + "   \t",  # trailing spaces
        lambda t: unicodedata.normalize("NFKD", t),  # another Unicode form
        lambda t: [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": t},
        ],
    ]  # a system prompt in front
    leaked = sorted(held)[::2][:13]
    external = [
        {
            "prompt": variants[k % 4](by_id[bid]["prompt"]),
            "chosen": by_id[bid]["own_answer"],
            "rejected": by_id[bid]["opponent_answer"],
        }
        for k, bid in enumerate(leaked)
    ]
    # plus clean rows of battles that were never held out
    clean = [b for b in battles if b["battle_id"] not in held][:20]
    external += [
        {"prompt": b["prompt"], "chosen": b["own_answer"], "rejected": b["opponent_answer"]} for b in clean
    ]
    path = write_jsonl(tmp_path / "s2_pairs_lf1.jsonl", external)
    assert sum(unicodedata.normalize("NFKD", by_id[b]["prompt"]) != by_id[b]["prompt"] for b in leaked) == 13
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    (tmp_path / "m11x.toml").write_text(dpo_recipe("m11x", blocks=['source = "attached"']))
    store.close()
    assert run_cli("round", "add", tmp_path / "base.toml", tmp_path / "m11x.toml").exit_code == 0
    # history: attaching the old pair file records it, leaks included (attach is not gated)
    res = run_cli("round", "attach", "m11x", path)
    assert res.exit_code == 0 and "33 rows" in res.output and "new pairs=33" in res.output
    # an export whose recipe takes those rows is refused, naming exactly the 13 held-out battles
    res = run_cli("export", "--round", "m11x", "--out", tmp_path / "mix")
    assert res.exit_code == 3
    named = set(re.findall(r"judge34 (a\d{3}) pair", res.output))
    assert named == set(leaked)
    assert "13 held-out item(s)" in res.output
    assert not (tmp_path / "mix").exists()
    store = open_store(tmp_path / "store.duckdb")
    assert store.scalar("SELECT count(*) FROM exports WHERE kind = 'export'") == 0
    assert store.scalar("SELECT count(*) FROM exports WHERE kind = 'attached'") == 1
    store.close()


def test_a_member_without_words_is_still_found_by_origin_id(gated, tmp_path):
    add_members(gated, "judge", [member("b99", "??? !!!")])
    add_pairs(
        gated,
        [pair("Something else entirely about rivers and their deltas.", 1, origins=["b99"])],
        miner="t",
        miner_version="1",
    )
    hits, _ = refused(gated, tmp_path)
    assert hits == {("judge", "b99", "id")}


def test_benchmark_items_are_found_in_disguise_and_short_ones_embedded(gated, tmp_path):
    from pairstore.holdout.ngrams import register_benchmark

    item = (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?"
    )
    short = "Which planet has the most moons today?"  # 7 words: no 13-gram, found embedded
    register_benchmark(gated, "bench", [("long", item), ("short", short)])
    cyrillic = str.maketrans("aceopxy", "асеорху")
    add_pairs(
        gated,
        [
            pair("Puzzle: " + item.translate(cyrillic) + " Answer fast.", 1),
            pair("Quick one. " + short.replace(" ", " \u200b") + " Thanks.", 2),
        ],
        miner="t",
        miner_version="1",
    )
    hits, _ = refused(gated, tmp_path)
    assert {(s, i) for s, i, _ in hits} == {("benchmark:bench", "long"), ("benchmark:bench", "short")}


def test_gram_lookup_answers_what_np_isin_answers():
    """The bit table only passes grams on to the sorted array: hashes that share its low bits with a
    needle's (all of them here, half the time) must still be told apart."""
    import numpy as np

    from pairstore.holdout.scan import GramLookup

    rng = np.random.default_rng(9)
    needles = np.unique(rng.integers(0, 2**64, 500, dtype=np.uint64))
    lookup = GramLookup(needles)
    same_low_bits = (rng.integers(0, 2**40, 2000, dtype=np.uint64) << np.uint64(24)) | (
        needles[rng.integers(0, len(needles), 2000)] & lookup.mask
    )
    grams = np.concatenate([needles, same_low_bits, rng.integers(0, 2**64, 5000, dtype=np.uint64)])
    assert (lookup.contains(grams) == np.isin(grams, needles)).all()
    assert not GramLookup(np.array([], np.uint64)).contains(grams).any()
