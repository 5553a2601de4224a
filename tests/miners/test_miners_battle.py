"""Battle miner: exact pairs, origins and rules, drops by reason, idempotence, and the holdout incident."""

from __future__ import annotations

import json

from miners.battle import mine_battles
from miners.patterns import names_own_model
from miners.registry import miner_names, run_miner
from pairstore.holdout.sets import add_members, remove_member, sample_holdout
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.pairs import ingest_pairs
from pairstore.keys import match_key, match_text


def battle(bid, vote, prompt, own, opp, **kw):
    rec = {"battle_id": bid, "vote": vote, "prompt": prompt, "own_answer": own, "opponent_answer": opp}
    rec.update(kw)
    return rec


BATTLES = [
    battle("b01", "win", "What is the capital of France?", "Paris.", "Lyon.", category="geo"),
    battle("b02", "loss", "Name a prime above 10.", "Twelve.", "Eleven is prime.", category="math"),
    battle("b03", "tie", "Say hi.", "Hi!", "Hello!"),
    battle("b04", "both_bad", "2+2?", "5", "3"),
    battle("b05", "loss", "Who are you?", "I am Brook.", "As an AI developed by OpenAI, I am here to help."),
    battle("b06", "win", "Who made you?", "A small lab.", "I'm ChatGPT, made by OpenAI."),
    battle("b07", "win", "Write nothing.", "", "ok"),
    battle("b08", "loss", "Same answer?", "Yes.", "Yes."),
    # the same content as b01 under another id: one pair, two origins
    battle("b09", "win", "What is the capital of France?", "Paris.", "Lyon.", category="geo"),
    {
        "battle_id": "m1",
        "vote": "loss",
        "system": "Be brief.",
        "category": "chat",
        "turns": [
            {"user": "Hi there", "own": "Hello.", "opponent": "Hey! How can I help?"},
            {"user": "What is 3*3?", "own": "6", "opponent": "9"},
        ],
    },
    {
        "battle_id": "m2",
        "vote": "loss",
        "turns": [
            {"user": "Your name?", "own": "Brook.", "opponent": "I am Claude."},
            {"user": "And 1+1?", "own": "3", "opponent": "2"},
        ],
    },
    {
        "battle_id": "m3",
        "vote": "win",
        "turns": [
            {"user": "Pick a colour", "own": "Blue.", "opponent": "Red."},
            {"user": "Why?", "own": "It is calm.", "opponent": "Dunno."},
        ],
    },
]


def load(write_jsonl, store, tmp_path, records=BATTLES):
    ingest_battles(store, write_jsonl(tmp_path / "battles.jsonl", records))


def pairs_by_origin(store):
    rows = store.rows("""SELECT o.origin_id, o.origin_kind, o.rule, o.miner, p.prompt, p.chosen, p.rejected,
                                p.source, p.family, p.miner AS pair_miner, p.miner_version, p.kind
                         FROM pair_origins o JOIN pairs p USING (pair_id) ORDER BY o.origin_id""")
    return {r["origin_id"]: r for r in rows}


def test_battle_miner_exact_pairs_origins_and_drops(store, tmp_path, write_jsonl):
    load(write_jsonl, store, tmp_path)
    res = mine_battles(store)
    assert res.miner == "battle" and res.version == "2"
    assert res.kept == 5
    assert dict(res.dropped) == {
        "tie": 1,
        "both_bad": 1,
        "identity": 2,
        "empty side": 1,
        "identical sides": 1,
        "duplicate": 1,
    }
    assert res.stats["battles"] == 12
    got = pairs_by_origin(store)
    assert sorted(got) == ["b01", "b02", "b06", "b09", "m1", "m3"]
    b01 = got["b01"]
    assert (b01["chosen"], b01["rejected"], b01["rule"]) == ("Paris.", "Lyon.", "vote=win → own chosen")
    assert [dict(m) for m in b01["prompt"]] == [{"role": "user", "content": "What is the capital of France?"}]
    assert (
        b01["source"],
        b01["family"],
        b01["pair_miner"],
        b01["miner_version"],
        b01["kind"],
        b01["miner"],
        b01["origin_kind"],
    ) == ("battle", "geo", "battle", "2", "dpo", "battle", "battle")
    assert got["b09"]["chosen"] == "Paris." and got["b09"]["rule"] == "vote=win → own chosen"
    assert store.scalar("SELECT count(*) FROM pair_origins WHERE origin_id IN ('b01', 'b09')") == 2
    assert (
        store.scalar("SELECT count(DISTINCT pair_id) FROM pair_origins WHERE origin_id IN ('b01', 'b09')")
        == 1
    )
    b02 = got["b02"]
    assert (b02["chosen"], b02["rejected"], b02["rule"]) == (
        "Eleven is prime.",
        "Twelve.",
        "vote=loss → opponent chosen",
    )
    # a win keeps an opponent that names itself as the rejected side
    assert (got["b06"]["chosen"], got["b06"]["rejected"]) == ("A small lab.", "I'm ChatGPT, made by OpenAI.")
    # multi-turn loss: user turns interleaved with the opponent's (chosen side's) earlier answers; no system
    m1 = got["m1"]
    assert [dict(m) for m in m1["prompt"]] == [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hey! How can I help?"},
        {"role": "user", "content": "What is 3*3?"},
    ]
    assert (m1["chosen"], m1["rejected"]) == ("9", "6")
    m3 = got["m3"]
    assert [m["content"] for m in m3["prompt"]] == ["Pick a colour", "Blue.", "Why?"]
    assert (m3["chosen"], m3["rejected"]) == ("It is calm.", "Dunno.")
    assert store.scalar("SELECT count(*) FROM pairs") == 5


def test_battle_miner_is_idempotent(store, tmp_path, write_jsonl):
    load(write_jsonl, store, tmp_path)
    first = mine_battles(store)
    before = store.rows("SELECT * FROM pairs ORDER BY pair_id")
    origins = store.scalar("SELECT count(*) FROM pair_origins")
    again = mine_battles(store)
    assert again.kept == 0 and again.new_origins == 0
    assert again.dropped["duplicate"] == first.kept + first.dropped["duplicate"]
    assert again.pair_ids == first.pair_ids
    assert store.rows("SELECT * FROM pairs ORDER BY pair_id") == before
    assert store.scalar("SELECT count(*) FROM pair_origins") == origins


def test_identity_drop_covers_earlier_turns_and_patterns():
    for text in [
        "As an AI developed by OpenAI, I can't.",
        "I am Claude, an assistant.",
        "I'm ChatGPT.",
        "I was trained by Google.",
        "I am a large language model, trained by Google.",
        "As an OpenAI language model I cannot browse.",
        "My name is Gemini.",
        "I’m Qwen, by Alibaba.",
        "I am an OpenAI model.",
        "created by Anthropic",
    ]:
        assert names_own_model(text), text
    for text in [
        "ChatGPT is a chatbot released in 2022.",
        "Paris is the capital of France.",
        "The model was developed by researchers.",
        "I am happy to help.",
        "Google it.",
    ]:
        assert names_own_model(text) is None, text


def test_holdout_battles_skipped_by_id_and_match_key(store, tmp_path, write_jsonl):
    records = BATTLES + [
        battle("h1", "win", "A secret   question?", "own h1", "opp h1"),
        # another form of h1's prompt (CRLF, case, NFKC width, a system prompt): same match key
        battle(
            "h2",
            "loss",
            [
                {"role": "system", "content": "You are kind."},
                {"role": "user", "content": "a ＳＥＣＲＥＴ\r\nquestion?"},
            ],
            "own h2",
            "opp h2",
        ),
    ]
    load(write_jsonl, store, tmp_path, records)
    add_members(
        store,
        "judge",
        [
            {
                "item_id": "h1",
                "item_kind": "battle",
                "match_key": match_key("A secret question?"),
                "match_text": match_text("A secret question?"),
                "task_key": None,
            }
        ],
    )
    res = mine_battles(store)
    assert res.dropped["holdout"] == 2
    assert not store.rows("SELECT * FROM pair_origins WHERE origin_id IN ('h1', 'h2')")
    # a removed member no longer holds its battles out
    remove_member(store, "judge", "h1", reason="published")
    res = mine_battles(store)
    assert "holdout" not in res.dropped and res.kept == 2


def test_incident_no_pair_from_any_of_34_holdout_battles(store, tmp_path, write_jsonl):
    """The incident: 13 of 34 held-out battles reached a round's pair file. Here a 34-battle holdout is
    drawn, an external pair file holding 13 of them (CRLF, trailing spaces, NFKD, a system prompt) is
    ingested, and `mine battle` produces no pair from any held-out battle and counts each as 'holdout'."""
    votes = ["win", "loss", "tie", "both_bad"]
    records = [
        battle(
            f"a{i:03d}",
            votes[i % 4],
            f"Arena question {i}: explain topic {i * 7 % 31}.",
            f"own answer {i}",
            f"opponent answer {i}",
            category=["math", "code", "chat"][i % 3],
        )
        for i in range(120)
    ]
    load(write_jsonl, store, tmp_path, records)
    held = sample_holdout(store, "judge34", n=34, seed=263)
    assert len(held) == 34
    by_id = {r["battle_id"]: r for r in records}
    fullwidth = str.maketrans("0123456789", "０１２３４５６７８９")
    variants = [
        lambda t: t.replace(" ", "\r\n", 1),
        lambda t: t + "   ",
        lambda t: t.upper(),
        lambda t: t.translate(fullwidth),
    ]
    external = []
    for k, bid in enumerate(held[:13]):
        prompt = variants[k % 4](by_id[bid]["prompt"])
        if k % 3 == 0:
            prompt = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": prompt}]
        external.append(
            {"prompt": prompt, "chosen": by_id[bid]["own_answer"], "rejected": by_id[bid]["opponent_answer"]}
        )
    ingest_pairs(store, write_jsonl(tmp_path / "external.jsonl", external), source="battle_external")

    res = mine_battles(store)
    assert res.dropped["holdout"] == 34
    mined = {
        r["origin_id"]
        for r in store.rows(
            "SELECT origin_id FROM pair_origins WHERE miner = 'battle' AND origin_kind = 'battle'"
        )
    }
    assert mined and not mined & set(held)
    held_keys = {r["match_key"] for r in store.rows("SELECT match_key FROM holdout")}
    # the external file's 13 rows are held-out battles in other forms: the export gate's job (part b)
    external_keys = [
        r["match_key"] for r in store.rows("SELECT match_key FROM pairs WHERE source = 'battle_external'")
    ]
    assert len(external_keys) == 13 and set(external_keys) <= held_keys
    assert not store.rows(
        "SELECT pair_id FROM pairs WHERE miner = 'battle' AND list_contains(?, match_key)",
        [sorted(held_keys)],
    )
    wins_losses = sum(1 for r in records if r["battle_id"] not in held and r["vote"] in ("win", "loss"))
    assert res.kept == wins_losses


def test_registry_and_cli_mine_battle(run_cli, store, tmp_path, write_jsonl):
    assert {"battle", "self_repair", "loopfix", "style"} <= set(miner_names())
    load(write_jsonl, store, tmp_path)
    store.close()
    r = run_cli("mine", "battle")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "battle v2: kept 5 new pairs (6 produced, 6 new origins)"
    assert lines[2] == (
        "dropped: both_bad=1, duplicate=1, empty side=1, identical sides=1, identity=2, tie=1"
    )
    r = run_cli("mine", "battle", "--json")
    out = json.loads(r.output)
    assert out["kept"] == 0 and out["dropped"]["duplicate"] == 6
    r = run_cli("mine", "list")
    assert r.exit_code == 0 and "self_repair" in r.output and "self_repair, gold_repair" in r.output
    r = run_cli("mine", "battle", "--where", "category = 'geo'")
    assert r.exit_code == 0 and "kept 0 new pairs (2 produced" in r.output
    r = run_cli("mine", "battle", "--where", "no_such_column = 1")
    assert r.exit_code == 2 and r.output.startswith("error: field 'where': bad SQL condition")


def test_run_miner_by_name(store, tmp_path, write_jsonl):
    load(write_jsonl, store, tmp_path)
    assert run_miner(store, "battle").kept == 5


def test_a_held_out_battle_under_a_new_id_with_a_templated_prompt_is_not_mined(store, tmp_path, write_jsonl):
    held = "Which three temples in Kyoto would you visit in late autumn to see the maple leaves?"
    answer = "Tofuku-ji, Eikan-do and Kiyomizu-dera, in that order, starting before eight in the morning."
    records = BATTLES + [
        battle("h1", "win", held, answer, "Any temple will do, they are all the same really."),
        # the same battle re-exported under new ids: the prompt as a rendered chat template, HTML-escaped
        battle(
            "x1",
            "win",
            f"<|im_start|>user\n{held.replace(' ', '&nbsp;')}<|im_end|>\n<|im_start|>assistant\n",
            "A fresh answer.",
            "Another answer.",
        ),
        # another prompt, but the held-out battle's own answer
        battle("x2", "win", "Plan my autumn temple day, please.", answer, "No idea."),
    ]
    load(write_jsonl, store, tmp_path, records)
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
    assert res.dropped["holdout"] == 3
    assert not store.rows("SELECT * FROM pair_origins WHERE origin_id IN ('h1', 'x1', 'x2')")
