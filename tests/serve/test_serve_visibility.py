"""What the web app shows, checked at request time: every page reachable by following the app's links (and
every battle, pair and Arena page by its address) is crawled as two annotators, before and after a holdout
set takes in battles they can see, and after held-out battles are ingested again under new ids. A held-out
battle's text is shown on the Queue page alone; an Arena vote only to its annotator."""

from __future__ import annotations

import html
import json
import re

import pytest

from pairstore.cli.serve.app import ServeConfig, create_app
from pairstore.holdout.sets import add_from_ids_file
from pairstore.ingest.battles import ingest_battles
from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, add_pairs
from tests.serve.test_serve import sign_in
from tests.serve_helpers import SAMPLE_BATTLES, Client, csrf_of, judged_store, running

pytest.importorskip("starlette")

TOKENS = {"ann-token-0123456789": "ann", "bob-token-0123456789": "bob"}
ANN_TEXT, BOB_TEXT = "Which lighthouse is painted violet", "Where does the amber canal end"
PAIR_CHOSEN = "the chosen answer about the open battle"
LINK = re.compile(r'href="(/[^"#]*)"')


class EchoChat:
    """Answers with the question itself, so an answer on a page carries its battle's text too."""

    def __init__(self, who):
        self.who, self.settings = who, {"kind": "echo"}

    def complete(self, messages):
        return f"{self.who} answers: {messages[-1]['content']}"


def crawl(c: Client, seeds: list[str], limit: int = 400) -> dict[str, str]:
    """Every page the app links to from the seeds (GET only; sign-in, static files and the report pages,
    which show ratings and no text, left out): address -> its text, entities decoded."""
    pages: dict[str, str] = {}
    todo = list(seeds)
    while todo and len(pages) < limit:
        path = todo.pop(0)
        if path in pages:
            continue
        status, url, text = c.get(path)
        assert not url.endswith("/login"), f"{path} asked to sign in again"
        pages[path] = html.unescape(text)
        for link in LINK.findall(text):
            link = html.unescape(link)
            if link not in pages and not link.startswith(("/login", "/static/", "/browse/report")):
                todo.append(link)
    return pages


def shown_on(pages: dict[str, str], text: str) -> set[str]:
    return {path for path, body in pages.items() if text in body}


def _vote(c: Client, prompt: str) -> str:
    _, _, page = c.get("/arena")
    _, url, page = c.post("/arena/start", {"csrf": csrf_of(page), "prompt": prompt})
    path = url[len(c.base) :]
    status, _, _ = c.post(path + "/vote", {"csrf": csrf_of(page), "vote": "a"})
    assert status == 200
    return path.rsplit("/", 1)[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_every_route_as_two_annotators_before_and_after_holdout_add_and_a_new_id(store, tmp_path, db_path):
    # a small store: every battle page is crawled six times
    few = tmp_path / "few.jsonl"
    with open(SAMPLE_BATTLES, encoding="utf-8") as f:
        few.write_text("".join(f.readline() for _ in range(14)))
    judge34 = judged_store(store, tmp_path, battles=few)
    member_texts = {
        bid: store.one("SELECT prompt FROM battles WHERE battle_id = ?", [bid])[0][0]["content"]
        for bid in judge34
    }
    open_id, open_prompt = store.one(
        "SELECT battle_id, prompt[1].content FROM battles "
        "WHERE battle_id NOT IN (SELECT item_id FROM holdout) ORDER BY voted_at DESC LIMIT 1"
    )
    added = add_pairs(
        store,
        [Pair(prompt=[{"role": "user", "content": open_prompt}], chosen=PAIR_CHOSEN, rejected="no",
              source="battle", origins=[Origin("battle", open_id, "vote=win")])],
        miner="test", miner_version="1",
    )  # fmt: skip
    assert added.added == 1
    pair_id = store.scalar("SELECT pair_id FROM pairs")
    store.close()
    config = ServeConfig(str(db_path), {"mine": EchoChat("mine"), "rival": EchoChat("rival")}, "mine", TOKENS)
    with running(create_app(config)) as base:
        ann, bob = Client(base), Client(base)
        sign_in(ann, token="ann-token-0123456789")
        sign_in(bob, token="bob-token-0123456789")
        a_id, b_id = _vote(ann, ANN_TEXT), _vote(bob, BOB_TEXT)

        def crawl_all(c: Client) -> dict[str, str]:
            with open_store(db_path) as s:
                battles = [r[0] for r in s.con.execute("SELECT battle_id FROM battles").fetchall()]
            seeds = ["/arena", "/browse", "/queue", "/queue?set=judge34&a=sm11a&b=so7a", f"/arena/{a_id}",
                     f"/arena/{b_id}", f"/browse/pair/{pair_id}"]  # fmt: skip
            return crawl(c, seeds + [f"/browse/battle/{x}" for x in battles], limit=1000)

        def queue_only(pages: dict[str, str], text: str) -> None:
            where = shown_on(pages, text)
            assert all(p.startswith("/queue") for p in where), f"{text!r} shown on {sorted(where)}"

        # before: each annotator sees their own vote and never the other's; the held-out battles of
        # judge34 only on the Queue page
        before = {name: crawl_all(c) for name, c in (("ann", ann), ("bob", bob))}
        assert {f"/arena/{a_id}", f"/browse/battle/{a_id}"} <= shown_on(before["ann"], ANN_TEXT)
        assert {f"/arena/{b_id}", f"/browse/battle/{b_id}"} <= shown_on(before["bob"], BOB_TEXT)
        assert not shown_on(before["ann"], BOB_TEXT) and not shown_on(before["bob"], ANN_TEXT)
        for pages in before.values():
            assert f"/browse/battle/{open_id}" in shown_on(pages, open_prompt)
            assert f"/browse/pair/{pair_id}" in shown_on(pages, PAIR_CHOSEN)
            for text in member_texts.values():
                queue_only(pages, text)
        assert any(shown_on(before["ann"], t) for t in member_texts.values())  # the Queue does show them

        # a holdout set takes in ann's Arena vote and the open battle, while the server runs
        ids = tmp_path / "late.txt"
        ids.write_text(f"{a_id}\n{open_id}\n")
        with open_store(db_path) as s:
            add_from_ids_file(s, "late", ids)
        after = {name: crawl_all(c) for name, c in (("ann", ann), ("bob", bob))}
        for pages in after.values():
            for text in (ANN_TEXT, open_prompt, PAIR_CHOSEN, *member_texts.values()):
                queue_only(pages, text)
        assert "Held out in late" in after["ann"][f"/arena/{a_id}"]
        assert shown_on(after["bob"], BOB_TEXT)  # bob's own vote is not held

        # held-out battles ingested again under new ids: held by their match key
        again = tmp_path / "again.jsonl"
        with open(SAMPLE_BATTLES, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        again_rows = [
            dict(r, battle_id=f"again-{r['battle_id']}") for r in rows if r["battle_id"] in judge34[:2]
        ]
        again_rows.append({**rows[0], "battle_id": "again-open", "prompt": open_prompt})
        again.write_text("".join(json.dumps(r) + "\n" for r in again_rows))
        with open_store(db_path) as s:
            assert ingest_battles(s, again).added == 3
        renamed = {name: crawl_all(c) for name, c in (("ann", ann), ("bob", bob))}
        for pages in renamed.values():
            assert (
                "/browse/battle/again-open" in pages
                and "Held out in late" in pages["/browse/battle/again-open"]
            )
            for text in (open_prompt, *member_texts.values()):
                queue_only(pages, text)
            assert "again-" not in pages["/browse"]  # Browse lists them by id nowhere either
