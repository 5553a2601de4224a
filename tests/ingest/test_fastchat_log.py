"""FastChat's raw vote logs: lines in the shape its web server writes, cleaned as its cleaning script does."""

from __future__ import annotations

import json

import pytest

from pairstore.cli import main
from pairstore.errors import BadInput
from pairstore.ingest.battles import ingest_battles


def _state(conv_id, model, turns, offset=0, roles=("USER", "ASSISTANT"), prefix=()):
    messages = [list(m) for m in prefix]
    for user, answer in turns:
        messages += [[roles[0], user], [roles[1], answer]]
    return {
        "template_name": "vicuna_v1.1",
        "system_message": "A chat between a curious user and an artificial intelligence assistant.",
        "roles": list(roles),
        "messages": messages,
        "offset": offset,
        "conv_id": conv_id,
        "model_name": model,
    }


def _vote(kind, models, left, right, tstamp=1714560000.1234):
    return {"tstamp": tstamp, "type": kind, "models": models, "states": [left, right], "ip": "10.0.0.1"}


def _log(tmp_path, lines, name="2024-05-01-conv.json"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _lines():
    q = [("What is 12 times 7?", None)]
    return [
        # anonymous battle, own model on the right, left wins -> a loss for the own model
        _vote("leftvote", ["", ""], _state("c1", "other-7b", [(q[0][0], "84")]),
              _state("c1", "mine", [(q[0][0], "82")])),
        # named battle with a few-shot offset, own model on the left, tie
        _vote(
            "tievote",
            ["mine", "other-7b"],
            _state("c2", "mine", [("Name a prime above 10.", "11"), ("And one above 20?", "23")], offset=2,
                   prefix=[("USER", "example q"), ("ASSISTANT", "example a")]),
            _state("c2", "other-7b", [("Name a prime above 10.", "13"), ("And one above 20?", "29")],
                   offset=2, prefix=[("USER", "example q"), ("ASSISTANT", "example a")]),
        ),
        # both bad
        _vote("bothbad_vote", ["Model A", "Model B"], _state("c3", "mine", [("Sum 1..4?", "11")]),
              _state("c3", "other-7b", [("Sum 1..4?", "12")])),
        # a chat line of the same log, not a vote
        {"tstamp": 1714560001.0, "type": "chat", "model": "mine",
         "state": _state("c9", "mine", [("hi", "hello")])},
        # the model says who it is: FastChat's cleaning drops it
        _vote("rightvote", ["", ""], _state("c4", "other-7b", [("Who are you?", "I am an assistant.")]),
              _state("c4", "mine", [("Who are you?", "I am a model trained by OpenAI.")])),
        # still generating when the vote came
        _vote("rightvote", ["", ""], _state("c5", "other-7b", [("Hi", "Hello")]),
              _state("c5", "mine", [("Hi", None)])),
        # a platform error and the streaming cursor
        _vote("rightvote", ["", ""], _state("c6", "other-7b", [("Hi", "**API REQUEST ERROR** oops")]),
              _state("c6", "mine", [("Hi", "Hello")])),
        _vote("rightvote", ["", ""], _state("c7", "other-7b", [("Hi", "Hel▌")]),
              _state("c7", "mine", [("Hi", "Hello")])),
        # one shown name empty: invalid
        _vote("leftvote", ["mine", ""], _state("c8", "mine", [("Hi", "Hello")]),
              _state("c8", "other-7b", [("Hi", "Hey")])),
        # two other models
        _vote("leftvote", ["", ""], _state("c10", "x", [("Hi", "Hello")]),
              _state("c10", "y", [("Hi", "Hey")])),
    ]  # fmt: skip


def test_votes_land_from_the_own_side_and_cleaning_drops_what_fastchat_drops(store, tmp_path):
    path = _log(tmp_path, _lines())
    r = ingest_battles(store, path, fmt="fastchat-log", own_models=["mine"])
    assert r.read == 10 and r.added == 3
    assert dict(r.skipped) == {
        "not a vote": 1,
        "leaked identity": 1,
        "none message": 1,
        "error": 1,
        "unfinished": 1,
        "invalid": 1,
        "no own model": 1,
    }
    rows = {
        b[0]: b[1:]
        for b in store.con.execute(
            "SELECT battle_id, vote, own_position, opponent_model, anonymous, n_turns, origin, "
            "prompt[-1].content FROM battles ORDER BY 1"
        ).fetchall()
    }
    assert rows["c1"] == ("loss", "b", "other-7b", True, 1, "fastchat-log", "What is 12 times 7?")
    # the offset drops the template's example turns
    assert rows["c2"] == ("tie", "a", "other-7b", False, 2, "fastchat-log", "And one above 20?")
    assert rows["c3"][:2] == ("both_bad", "a") and rows["c3"][3] is True
    own = store.con.execute(
        "SELECT own_answers, opponent_answers FROM battles WHERE battle_id = 'c2'"
    ).fetchone()
    assert own == (["11", "23"], ["13", "29"])
    again = ingest_battles(store, path, fmt="fastchat-log", own_models=["mine"])
    assert again.added == 0 and again.skipped["already present"] == 3


def test_a_folder_reads_every_conv_log_and_a_broken_line_names_file_line_and_field(store, tmp_path):
    lines = _lines()
    _log(tmp_path, lines[:3], "2024-05-01-conv.json")
    broken = dict(lines[0], states=[lines[0]["states"][0]])
    _log(tmp_path, [lines[4], broken], "2024-05-02-conv.json")
    (tmp_path / "notes.json").write_text("{}\n")
    with pytest.raises(BadInput) as e:
        ingest_battles(store, tmp_path, fmt="fastchat-log", own_models=["mine"])
    assert "2024-05-02-conv.json" in str(e.value) and "line 2" in str(e.value) and "states" in str(e.value)
    assert store.scalar("SELECT count(*) FROM battles") == 0
    (tmp_path / "2024-05-02-conv.json").unlink()
    r = ingest_battles(store, tmp_path, fmt="fastchat-log", own_models=["mine"])
    assert r.added == 3


def test_cli_needs_own_model_and_reports_drops(tmp_path, capsys):
    db = str(tmp_path / "s.duckdb")
    path = _log(tmp_path, _lines())
    with pytest.raises(SystemExit) as e:
        main(["--db", db, "ingest", "battles", str(path), "--format", "fastchat-log"])
    assert e.value.code == 2
    assert "--own-model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["--db", db, "ingest", "battles", str(path), "--format", "fastchat-log", "--own-model", "mine"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "added 3" in out and "leaked identity=1" in out
