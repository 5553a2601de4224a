"""The web app over HTTP: Arena votes become battles through the ingest checks, the Queue judges blind,
Browse hides held-out battles, forms need the session's CSRF token, a resubmit counts once, tokens guard
any bind beyond loopback, and other pairstore commands run while it serves."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pairstore.cli.serve import build_app, read_tokens
from pairstore.errors import BadInput
from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, add_pairs
from tests.serve_helpers import (
    SAMPLE_BATTLES,
    TINY_BUNDLE,
    Client,
    csrf_of,
    judged_store,
    openai_server,
    running,
    value_of,
)

PAIRSTORE = str(Path(sys.executable).with_name("pairstore"))

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


class EchoChat:
    """A model for the HTTP tests that need no weights: it answers with its own fixed text per turn."""

    def __init__(self, text):
        self.text, self.settings = text, {"kind": "echo"}

    def complete(self, messages):
        return f"{self.text} #{sum(1 for m in messages if m['role'] == 'user')}"


def _app(db, **kw):
    kw.setdefault("host", "127.0.0.1")
    kw.setdefault("hold_s", 0.0)  # these tests read the store in this process while it serves
    return build_app(db, **kw)


def _arena_app(db, **kw):
    from pairstore.cli.serve.app import ServeConfig, create_app

    kw.setdefault("hold_s", 0.0)
    models = {"mine": EchoChat("Own answer"), "rival": EchoChat("Rival answer")}
    return create_app(ServeConfig(str(db), models, "mine", **kw))


def sign_in(c, **fields):
    """The sign-in form as a browser sends it: shown first (its CSRF token), then posted."""
    _, _, html = c.get("/login")
    return c.post("/login", {"csrf": csrf_of(html), **fields})


def _battles(db):
    with open_store(db, read_only=True) as s:
        return s.rows(
            "SELECT battle_id, vote, own_position, own_model, opponent_model, annotator, origin, n_turns, "
            "own_answers, opponent_answers, decoding, shown_at, voted_at FROM battles WHERE origin = 'serve'"
        )


def _start_battle(c, prompt="What is 12 + 7?"):
    status, url, html = c.get("/arena")
    assert status == 200
    status, url, html = c.post("/arena/start", {"csrf": csrf_of(html), "prompt": prompt, "category": "math"})
    assert status == 200 and "/arena/serve-" in url
    return url[len(c.base) :], html


def _shown(html, side):
    marker = f'data-side="{side}"'
    chunk = html[html.rindex(marker) :]  # the last turn
    start = chunk.index('class="answer">') + len('class="answer">')
    return chunk[start : chunk.index("</pre>", start)]


def test_an_arena_vote_lands_from_the_own_side_with_its_position_once(db_path):
    with running(_arena_app(db_path)) as base:
        c = Client(base)
        path, html = _start_battle(c)
        assert "mine" not in html and "rival" not in html  # names hidden before the vote
        own_side = "a" if _shown(html, "a").startswith("Own") else "b"
        # a second turn continues both conversations
        status, _, html = c.post(path + "/turn", {"csrf": csrf_of(html), "prompt": "And 13 + 8?"})
        assert status == 200 and "#2" in _shown(html, "a") and "#2" in _shown(html, "b")
        form = {"csrf": csrf_of(html), "vote": "a"}
        status, _, html = c.post(path + "/vote", form)
        assert status == 200 and "A was" in html and ("mine" in html and "rival" in html)
        again, _, _ = c.post(path + "/vote", form)  # the same form submitted twice
        assert again == 200
    (b,) = _battles(db_path)
    assert b["battle_id"] == path.rsplit("/", 1)[1]
    assert b["own_position"] == own_side and b["vote"] == ("win" if own_side == "a" else "loss")
    assert (b["own_model"], b["opponent_model"], b["annotator"], b["n_turns"]) == (
        "mine",
        "rival",
        "local",
        2,
    )
    assert b["own_answers"] == ["Own answer #1", "Own answer #2"]
    assert json.loads(b["decoding"]) == {"mine": {"kind": "echo"}, "rival": {"kind": "echo"}}
    assert b["shown_at"] <= b["voted_at"]


def test_every_form_needs_the_sessions_csrf_token(db_path):
    with running(_arena_app(db_path)) as base:
        c = Client(base)
        path, html = _start_battle(c)
        assert c.post(path + "/vote", {"vote": "a"})[0] == 403
        assert c.post(path + "/vote", {"vote": "a", "csrf": "x" * 32})[0] == 403
        other = Client(base)
        _, _, other_html = other.get("/arena")
        # another session's token is not this session's
        assert c.post(path + "/vote", {"vote": "a", "csrf": csrf_of(other_html)})[0] == 403
        assert other.post(path + "/vote", {"vote": "a", "csrf": csrf_of(other_html)})[0] == 404
        assert c.post("/arena/start", {"prompt": "hi"})[0] == 403
    assert _battles(db_path) == []


def test_the_queue_judges_blind_and_stores_the_shown_order_flaws_and_annotator(store, tmp_path, db_path):
    ids = judged_store(store, tmp_path)
    answers = dict(
        ((m, i), o)
        for m, i, o in store.con.execute("SELECT model, item_id, output FROM generations").fetchall()
    )
    store.close()
    with running(_app(db_path)) as base:
        c = Client(base)
        sign_in(c, name="ann")
        q = "/queue?set=judge34&a=sm11a&b=so7a"
        status, _, html = c.get(q)
        assert status == 200 and "0 of 6" in html
        sid = value_of(html, "submission_id")
        shown_a = _shown(html, "a")
        form = {"csrf": csrf_of(html), "submission_id": sid, "vote": "b", "flaw_a_degenerate_repetition": "1"}
        status, _, html = c.post(q.replace("/queue", "/queue/vote"), form)
        assert status == 200 and "1 of 6" in html
        c.post(q.replace("/queue", "/queue/vote"), form)  # resubmitted: counted once
        with open_store(db_path, read_only=True) as s:
            (j,) = s.rows("SELECT * FROM judgments")
        assert j["battle_id"] in ids and j["item_kind"] == "battle" and j["annotator"] == "ann"
        assert answers[(j["model_a"], j["battle_id"])].replace("&#39;", "'") == shown_a.replace("&#39;", "'")
        assert j["winner"] == "b" and j["heavy_flaw_a"] and j["flaws_a"] == ["degenerate_repetition"]
        assert not j["heavy_flaw_b"] and j["origin"] == "serve" and j["judge"] == "human:ann"
        # a second annotator sees the same item again; the first one's next item is another
        assert value_of(c.get(q)[2], "submission_id") != sid


def test_browse_shows_a_battle_its_pairs_and_hides_held_out_ones(store, tmp_path, db_path):
    ids = judged_store(store, tmp_path)
    open_id = store.scalar(
        "SELECT battle_id FROM battles WHERE battle_id NOT IN (SELECT item_id FROM holdout)"
    )
    prompt = store.one("SELECT prompt FROM battles WHERE battle_id = ?", [ids[0]])[0]
    held_text = [m["content"] for m in prompt if m["role"] == "user"][0]
    got = add_pairs(
        store,
        [
            Pair(prompt=[{"role": "user", "content": held_text}], chosen="x1", rejected="y1", source="battle",
                 origins=[Origin("battle", ids[0], "vote=win")]),
            Pair(prompt=[{"role": "user", "content": "open question"}], chosen="x2", rejected="y2",
                 source="battle", origins=[Origin("battle", open_id, "vote=win")]),
        ],
        miner="test", miner_version="1",
    )  # fmt: skip
    assert got.added == 2
    held_pair, open_pair = (
        store.scalar("SELECT pair_id FROM pair_origins WHERE origin_id = ?", [x]) for x in (ids[0], open_id)
    )
    store.close()
    with running(_app(db_path)) as base:
        c = Client(base)
        status, _, html = c.get("/browse")
        assert status == 200 and "judge34" in html and open_id in html and ids[0] not in html
        status, _, html = c.get(f"/browse/battle/{open_id}")
        assert status == 200 and open_pair in html
        status, _, html = c.get(f"/browse/battle/{ids[0]}")
        assert "held-out" in html and held_text not in html
        status, _, html = c.get(f"/browse/pair/{held_pair}")
        assert "held-out" in html and "x1" not in html
        status, _, html = c.get(f"/browse/pair/{open_pair}")
        assert "x2" in html and open_id in html
        status, _, html = c.get("/browse/holdout/judge34")
        assert status == 200 and all(i in html for i in ids) and held_text not in html
        assert c.get("/browse/report")[0] == 200
        assert c.get("/browse/report/..%2Fstore.duckdb")[0] == 404
        assert c.get("/browse/battle/nope")[0] == 404


@pytest.mark.slow
def test_a_bind_beyond_loopback_needs_tokens_and_tokens_name_the_annotator(db_path, tmp_path):
    with pytest.raises(BadInput, match="without annotator tokens"):
        _app(db_path, host="0.0.0.0")
    got = subprocess.run(
        [PAIRSTORE, "--db", str(db_path), "serve", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert got.returncode == 2 and "without annotator tokens" in got.stderr
    with pytest.raises(BadInput, match="shorter"):
        read_tokens(["ann=short"])
    tokens = tmp_path / "tokens.txt"
    tokens.write_text("# annotators\nann=0123456789abcdef0123\nbob=fedcba9876543210fedc\n")
    assert read_tokens(tokens_file=tokens) == {"0123456789abcdef0123": "ann", "fedcba9876543210fedc": "bob"}
    from pairstore.cli.serve.app import ServeConfig, create_app

    app = create_app(ServeConfig(str(db_path), {"mine": EchoChat("Own"), "rival": EchoChat("Rival")}, "mine",
                                 read_tokens(tokens_file=tokens), hold_s=0.0))  # fmt: skip
    with running(app) as base:
        c = Client(base)
        status, url, _ = c.get("/arena")
        assert url.endswith("/login")
        assert sign_in(c, token="not-a-token-at-all")[0] == 403
        assert c.get("/browse")[1].endswith("/login")
        # the sign-in form needs its CSRF token too: a page elsewhere cannot sign a browser in
        assert c.post("/login", {"token": "fedcba9876543210fedc"})[0] == 403
        assert Client(base).post("/login", {"token": "fedcba9876543210fedc", "csrf": "x" * 32})[0] == 403
        status, url, _ = sign_in(c, token="fedcba9876543210fedc")
        assert status == 200 and url.endswith("/arena")
        path, html = _start_battle(c)
        c.post(path + "/vote", {"csrf": csrf_of(html), "vote": "tie"})
    (b,) = _battles(db_path)
    assert b["annotator"] == "bob" and b["vote"] == "tie"


@pytest.mark.slow
def test_other_commands_run_while_it_serves_and_a_vote_waits_for_a_busy_store(db_path, tmp_path):
    cli = [PAIRSTORE, "--db", str(db_path)]
    with running(_arena_app(db_path, hold_s=1.0)) as base:  # the shipped default
        c = Client(base)
        path, html = _start_battle(c)
        got = subprocess.run([*cli, "ingest", "battles", str(SAMPLE_BATTLES)], capture_output=True, text=True)
        assert got.returncode == 0, got.stderr
        got = subprocess.run(
            [*cli, "sql", "SELECT count(*) AS n FROM battles"], capture_output=True, text=True
        )
        assert got.returncode == 0 and "120" in got.stdout
        # another process holds the file for writing for 2 s: the vote waits for it, then lands
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, time; from pairstore.store.store import open_store; s = open_store(sys.argv[1]); "
             "print('held', flush=True); time.sleep(2); s.close()", str(db_path)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        status, _, html = c.post(path + "/vote", {"csrf": csrf_of(html), "vote": "both_bad"})
        waited = time.monotonic() - t0
        holder.wait(30)
        assert status == 200 and "A was" in html and waited > 0.5
        assert c.get("/browse")[0] == 200
    assert [b["vote"] for b in _battles(db_path)] == ["both_bad"]


@pytest.mark.slow
@pytest.mark.timeout(300)  # loads the tiny model twice; minutes on a loaded machine
def test_arena_models_from_an_openai_endpoint_and_a_local_bundle(db_path):
    """The shipped tiny model, once behind the OpenAI protocol on a loopback port and once as a bundle."""
    from train.chat import BundleChat

    with openai_server(BundleChat("tiny", TINY_BUNDLE, max_new_tokens=24)) as (url, received):
        app = _app(db_path, models=[f"remote={url}", f"local={TINY_BUNDLE}"], own_model="local",
                   max_new_tokens=24)  # fmt: skip
        with running(app) as base:
            c = Client(base)
            path, html = _start_battle(c, "What is 12 + 7?")
            c.post(path + "/vote", {"csrf": csrf_of(html), "vote": "b"})
    assert received and received[0]["messages"][-1] == {"role": "user", "content": "What is 12 + 7?"}
    assert received[0]["temperature"] == 0.0 and received[0]["max_tokens"] == 24
    (b,) = _battles(db_path)
    assert (b["own_model"], b["opponent_model"]) == ("local", "remote")
    assert b["vote"] == ("win" if b["own_position"] == "b" else "loss")
    decoding = json.loads(b["decoding"])
    assert decoding["remote"]["endpoint"] == url and decoding["remote"]["served_model"] == "tiny"
    assert decoding["local"]["max_new_tokens"] == 24 and decoding["local"]["temperature"] == 0.0


def test_arena_models_behind_keyed_endpoints_send_their_own_key_and_store_none(
    db_path, tmp_path, monkeypatch
):
    from tests.serve.openai_stub import chat, last_user, stub_endpoint

    own_key, rival_key = "sk-own-0123456789abcdef", "sk-rival-0123456789abcdef"
    monkeypatch.setenv("OWN_KEY", own_key)
    monkeypatch.setenv("RIVAL_KEY", rival_key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with (
        stub_endpoint(lambda r: chat(f"own: {last_user(r)}"), key=own_key) as (own_url, own_got),
        stub_endpoint(lambda r: chat(f"rival: {last_user(r)}"), key=rival_key) as (rival_url, rival_got),
    ):
        models_file = tmp_path / "models.txt"
        models_file.write_text(
            f"# the rival, its key named per endpoint\nrival={rival_url}?tenant=QUERYSECRET@RIVAL_KEY\n"
        )
        app = _app(db_path, models=[f"own={own_url}@OWN_KEY"], models_file=models_file, own_model="own")
        with running(app) as base:
            c = Client(base)
            path, html = _start_battle(c, "What is 3 + 4?")
            assert "own: What is 3 + 4?" in html and "rival: What is 3 + 4?" in html
            c.post(path + "/vote", {"csrf": csrf_of(html), "vote": "a"})
    assert {r.headers["Authorization"] for r in own_got} == {f"Bearer {own_key}"}
    assert {r.headers["Authorization"] for r in rival_got} == {f"Bearer {rival_key}"}
    (b,) = _battles(db_path)
    assert own_key not in str(b) and rival_key not in str(b) and "QUERYSECRET" not in str(b)
    assert json.loads(b["decoding"])["rival"]["endpoint"] == rival_url
    # a models file line that names a variable not set: one line naming the file, line and variable
    models_file.write_text(f"rival={rival_url}@NOT_SET_ANYWHERE\n")
    with pytest.raises(BadInput, match=r"models.txt, line 1, field 'api-key-env': .*NOT_SET_ANYWHERE"):
        _app(db_path, models=[f"own={own_url}"], models_file=models_file, own_model="own")


def _raw_get(base: str, path: str, host: str):
    """GET with a Host header of our choosing (what a DNS-rebinding page's requests carry)."""
    import http.client
    import urllib.parse

    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", path, headers={"Host": host})
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, resp.headers, body


def test_only_the_allowed_host_names_are_answered_and_every_answer_carries_the_browser_defences(db_path):
    app = _app(db_path, allowed_hosts_extra=["votes.team.example", "*.lab.example"])
    with running(app) as base:
        port = base.rsplit(":", 1)[1]
        for host in ("127.0.0.1", "localhost", "[::1]", "votes.team.example", "a.lab.example"):
            status, headers, body = _raw_get(base, "/browse", f"{host}:{port}")
            assert status == 200, host
        for host in ("rebind.attacker.example", "team.example", "lab.example.attacker.example", "0.0.0.0"):
            status, headers, body = _raw_get(base, "/browse", f"{host}:{port}")
            assert status == 400 and "judge34" not in body, host
            assert headers["X-Frame-Options"] == "DENY"  # the refusal carries the headers too
        for path in ("/arena", "/browse", "/queue", "/login", "/static/app.js", "/nope"):
            status, headers, body = _raw_get(base, path, f"localhost:{port}")
            csp = dict(d.strip().split(" ", 1) for d in headers["Content-Security-Policy"].split(";"))
            assert csp["script-src"] == "'self'" and csp["frame-ancestors"] == "'none'", path
            assert csp["style-src"] == "'self'" and "unsafe" not in headers["Content-Security-Policy"]
            assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"
            assert headers["Referrer-Policy"] == "no-referrer"
            if path != "/static/app.js":  # no inline script, handler or style for the policy to block
                assert not re.search(r"<script(?![^>]*\bsrc=)|\son[a-z]+=|\sstyle=|<style", body), path
    for bad in ("*", "http://x.example", "x.example:80", "a/b"):
        with pytest.raises(BadInput, match="allowed-host"):
            _app(db_path, allowed_hosts_extra=[bad])


def test_report_files_are_plain_names_in_the_folder_never_links_out_of_it(db_path, tmp_path):
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "report.html").write_text("<html><body><style>p{}</style><p>the report</p></body></html>")
    secret = tmp_path / "secret.html"
    secret.write_text("outside the report folder")
    (folder / "leak.html").symlink_to(secret)
    other = tmp_path / "other.html"
    other.write_text("outside the report folder, hard-linked in")
    os.link(other, folder / "hard.html")
    (folder / "sub").mkdir()
    (folder / "sub" / "x.html").write_text("in a sub folder")
    with running(_app(db_path, report_dir=folder)) as base:
        c = Client(base)
        status, _, body = c.get("/browse/report/report.html")
        assert status == 200 and "the report" in body
        _, headers, _ = _raw_get(base, "/browse/report/report.html", "localhost")
        assert (
            "sandbox" in headers["Content-Security-Policy"]
            and "script-src" not in headers["Content-Security-Policy"]
        )
        for name in (
            "leak.html",
            "hard.html",
            "sub%2Fx.html",
            "..%2Fsecret.html",
            ".hidden.html",
            "report.txt",
        ):
            status, _, body = c.get(f"/browse/report/{name}")
            assert status == 404 and "outside the report folder" not in body, name
    # the report folder's own page is found only as a plain file too
    (folder / "report.html").unlink()
    (folder / "report.html").symlink_to(secret)
    with running(_app(db_path, report_dir=folder)) as base:
        status, _, body = Client(base).get("/browse/report")
        assert status == 200 and "/browse/report/report.html" not in body


COMMAND = """import sys
from pairstore.store.lock import open_in_turn
store = open_in_turn(sys.argv[1], what="pairstore ingest battles", wait_s=60)
print("holding", flush=True)
sys.stdin.readline()
store.close()
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_votes_that_come_while_a_command_writes_wait_and_land_in_order_and_the_command_gets_its_turn(
    db_path, tmp_path
):
    app = _arena_app(db_path, hold_s=1.0)  # the shipped default: the store held between requests
    with running(app) as base:
        writer = app.state.writer
        voters = [Client(base) for _ in range(4)]
        shown = [_start_battle(c, f"Question {i}: what is {i} + {i}?") for i, c in enumerate(voters)]
        # a command takes its turn while the server holds the store: the server lets go at once
        holder = subprocess.Popen([sys.executable, "-c", COMMAND, str(db_path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert holder.stdout.readline().strip() == "holding"
        # votes come while it writes: they wait in the server, in the order they came
        answers: dict[int, int] = {}

        def vote(i: int) -> None:
            path, html = shown[i]
            answers[i] = voters[i].post(path + "/vote", {"csrf": csrf_of(html), "vote": "a"})[0]

        threads = []
        for i in range(4):
            threads.append(threading.Thread(target=vote, args=(i,)))
            threads[-1].start()
            time.sleep(0.3)  # one after another
        assert not answers  # none stored (nor answered) while the command holds the store
        holder.stdin.write("done\n")
        holder.stdin.close()
        holder.wait(30)
        for t in threads:
            t.join(60)
        assert answers == dict.fromkeys(range(4), 200)
        assert writer.batches[-1] == 4  # they landed together, as soon as the command let go
    with open_store(db_path, read_only=True) as s:
        landed = [r[0] for r in s.con.execute("SELECT battle_id FROM battles ORDER BY rowid").fetchall()]
    assert landed == [path.rsplit("/", 1)[1] for path, _ in shown]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_command_beside_steady_voting_gets_the_store_in_turn_and_no_vote_is_lost(db_path):
    cli = [PAIRSTORE, "--db", str(db_path)]
    app = _arena_app(db_path, hold_s=1.0)
    stop = threading.Event()
    stored: list[str] = []
    errors: list[int] = []
    with running(app) as base:

        def voter() -> None:
            c = Client(base)
            while not stop.is_set():
                path, html = _start_battle(c)
                status = c.post(path + "/vote", {"csrf": csrf_of(html), "vote": "tie"})[0]
                (stored if status == 200 else errors).append(path.rsplit("/", 1)[1])

        threads = [threading.Thread(target=voter) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        got = subprocess.run([*cli, "ingest", "battles", str(SAMPLE_BATTLES)], capture_output=True, text=True,
                             env={**os.environ, "PAIRSTORE_BUSY_WAIT": "10"}, timeout=120)  # fmt: skip
        during = len(stored)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(60)
    assert got.returncode == 0, got.stderr
    assert not errors and len(stored) > during > 0  # votes flowed before, during and after
    with open_store(db_path, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM battles WHERE origin IS DISTINCT FROM 'serve'") == 120
        landed = {
            r[0] for r in s.con.execute("SELECT battle_id FROM battles WHERE origin = 'serve'").fetchall()
        }
    assert landed == set(stored)
