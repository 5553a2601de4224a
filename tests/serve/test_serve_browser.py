"""The web app in a real headless Chromium (Debian's chromium and chromedriver, driven by Selenium): a vote
through each page lands in the store with the right side and position, names stay hidden until the
vote, a second submit counts once, tokens guard the pages. Screenshots of each page go to tmp_path, or to
docs/images with PAIRSTORE_SCREENSHOTS=docs/images."""

from __future__ import annotations

import os
import shutil
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pairstore.store.store import open_store
from tests.serve_helpers import judged_store, running

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM and CHROMEDRIVER),
        reason="needs Debian's chromium and chromium-driver "
        "(`apt-get install chromium chromium-driver`; .ci/run does)",
    ),
]
webdriver = pytest.importorskip("selenium.webdriver")
# Names another site would use, resolved by the browser to this machine (a DNS-rebinding attacker's name
# once it points at 127.0.0.1, and a framing page's own site).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--host-resolver-rules=MAP rebind.test 127.0.0.1, MAP attacker.test 127.0.0.1",
         "--window-size=1280,900"]  # fmt: skip


class Echo:
    def __init__(self, text):
        self.text, self.settings = text, {"kind": "echo"}

    def complete(self, messages):
        n = sum(1 for m in messages if m["role"] == "user")
        return f"{self.text} (turn {n}): 12 + 7 = 19."


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _shot(driver, tmp_path, name):
    folder = Path(os.environ.get("PAIRSTORE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"serve-{name}.png"))


def _button(driver, name):
    """The button whose accessible name is exactly `name`."""
    from selenium.webdriver.common.by import By

    found = [b for b in driver.find_elements(By.TAG_NAME, "button") if b.accessible_name == name]
    assert len(found) == 1, f"{len(found)} buttons named {name!r}"
    return found[0]


def _submit(driver, name):
    """Click the button named `name` and wait for the page it leads to."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    button = _button(driver, name)
    button.click()

    def left_the_page(_driver) -> bool:
        # Chromium may answer a question about a node of the page just left with an inspector error
        # ("does not belong to the document") instead of a stale-element one: both mean it is gone.
        try:
            return expected_conditions.staleness_of(button)(_driver)
        except WebDriverException:
            return True

    WebDriverWait(driver, 60).until(left_the_page)


def _app(db, tokens=None, allowed_hosts=None):
    from pairstore.cli.serve.app import LOOPBACK_HOSTS, ServeConfig, create_app

    return create_app(ServeConfig(str(db), {"brook": Echo("Brook says"), "rival": Echo("Rival says")},
                                  "brook", tokens or {}, hold_s=0.0,
                                  allowed_hosts=allowed_hosts or LOOPBACK_HOSTS))  # fmt: skip


def test_arena_vote_in_the_browser(browser, db_path, tmp_path):
    from selenium.webdriver.common.by import By

    with running(_app(db_path)) as base:
        browser.get(base + "/arena")
        browser.find_element(By.ID, "prompt").send_keys("What is 12 + 7?")
        browser.find_element(By.NAME, "category").send_keys("math")
        _shot(browser, tmp_path, "arena-prompt")
        _submit(browser, "Ask both models")
        text = browser.find_element(By.TAG_NAME, "main").text
        assert "brook" not in text and "rival" not in text  # names hidden before the vote
        for name in ("A is better", "B is better", "Tie", "Both are bad"):
            _button(browser, name)
        a_text = browser.find_element(By.CSS_SELECTOR, '[data-side="a"] .answer').text
        own_side = "a" if a_text.startswith("Brook") else "b"
        _shot(browser, tmp_path, "arena")
        _submit(browser, "B is better")
        result = browser.find_element(By.ID, "result").text
        assert "A was" in result and "brook" in result and "rival" in result
        _shot(browser, tmp_path, "arena-voted")
        # the same vote form submitted twice (a double click that beat the button's disabling, a resend)
        browser.get(base + "/arena")
        browser.find_element(By.ID, "prompt").send_keys("Name a prime above 10.")
        _submit(browser, "Ask both models")
        statuses = browser.execute_async_script(
            """const done = arguments[arguments.length - 1];
            const form = document.getElementById("vote-form");
            const body = new URLSearchParams(new FormData(form)); body.set("vote", "tie");
            Promise.all([fetch(form.action, {method: "POST", body}), \
fetch(form.action, {method: "POST", body})])
              .then(rs => done(rs.map(r => r.status)));"""
        )
        assert statuses == [200, 200]
    with open_store(db_path, read_only=True) as s:
        rows = s.rows(
            "SELECT vote, own_position, own_model, opponent_model, category FROM battles ORDER BY voted_at"
        )
    assert len(rows) == 2
    assert rows[0] == {"vote": "win" if own_side == "b" else "loss", "own_position": own_side,
                       "own_model": "brook", "opponent_model": "rival", "category": "math"}  # fmt: skip
    assert rows[1]["vote"] == "tie"


def test_queue_vote_in_the_browser_is_blind_and_keeps_the_shown_order(browser, store, tmp_path, db_path):
    from selenium.webdriver.common.by import By

    judged_store(store, tmp_path)
    outputs = {
        (m, i): o
        for m, i, o in store.con.execute("SELECT model, item_id, output FROM generations").fetchall()
    }
    store.close()
    with running(_app(db_path)) as base:
        browser.get(base + "/queue?set=judge34&a=sm11a&b=so7a")
        main = browser.find_element(By.TAG_NAME, "main")
        item_text = main.find_element(By.ID, "vote-form").text
        assert "sm11a" not in item_text and "so7a" not in item_text
        shown_a = browser.find_element(By.CSS_SELECTOR, '[data-side="a"] .answer').text
        browser.find_element(By.NAME, "flaw_b_fabrication").click()
        _shot(browser, tmp_path, "queue")
        _submit(browser, "A is better")
        assert "1 of 6" in browser.find_element(By.ID, "progress").text
    with open_store(db_path, read_only=True) as s:
        (j,) = s.rows("SELECT battle_id, model_a, winner, flaws_b, heavy_flaw_b, annotator FROM judgments")
    assert outputs[(j["model_a"], j["battle_id"])].strip() == shown_a.strip()
    assert (
        j["winner"] == "a"
        and j["flaws_b"] == ["fabrication"]
        and j["heavy_flaw_b"]
        and j["annotator"] == "local"
    )


def test_browse_in_the_browser_hides_held_out_battles(browser, store, tmp_path, db_path):
    from selenium.webdriver.common.by import By

    ids = judged_store(store, tmp_path)
    store.close()
    with running(_app(db_path)) as base:
        browser.get(base + "/browse")
        _shot(browser, tmp_path, "browse")
        text = browser.find_element(By.TAG_NAME, "main").text
        assert "judge34" in text and ids[0] not in text
        browser.get(base + "/browse/holdout/judge34")
        _shot(browser, tmp_path, "browse-holdout")
        browser.get(base + f"/browse/battle/{ids[0]}")
        assert "shown only on the judging page" in browser.find_element(By.ID, "held-out").text


def test_tokens_in_the_browser_sign_in_and_name_the_voter(browser, db_path, tmp_path):
    from selenium.webdriver.common.by import By

    with running(_app(db_path, {"0123456789abcdef0123": "ann"})) as base:
        browser.delete_all_cookies()
        browser.get(base + "/arena")
        assert browser.current_url.endswith("/login")
        browser.find_element(By.NAME, "token").send_keys("0123456789abcdef0123")
        _submit(browser, "Sign in")
        browser.find_element(By.ID, "prompt").send_keys("What is 2 + 2?")
        _submit(browser, "Ask both models")
        _submit(browser, "Tie")
    with open_store(db_path, read_only=True) as s:
        assert s.rows("SELECT annotator, vote FROM battles") == [{"annotator": "ann", "vote": "tie"}]


@contextmanager
def other_site(pages: dict[str, str]):
    """Another web site on a loopback port: path -> HTML. Yields its port."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = pages.get(self.path, "not here").encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _framed_text(browser, frame_id: str) -> str:
    """The text of the page inside the frame (empty for a frame the browser refused to fill)."""
    from selenium.webdriver.common.by import By

    browser.switch_to.frame(browser.find_element(By.ID, frame_id))
    try:
        return browser.find_element(By.TAG_NAME, "body").text
    finally:
        browser.switch_to.default_content()


def test_another_site_cannot_frame_the_pages(browser, db_path):
    from selenium.webdriver.support.ui import WebDriverWait

    with running(_app(db_path)) as base:
        port = base.rsplit(":", 1)[1]
        page = (f'<iframe id="app" src="http://localhost:{port}/arena"></iframe>'
                '<iframe id="plain" src="/plain"></iframe>')  # fmt: skip
        with other_site({"/": page, "/plain": "<p>an ordinary page, framed</p>"}) as site:
            browser.get(f"http://attacker.test:{site}/")
            WebDriverWait(browser, 30).until(
                lambda d: d.execute_script("return document.readyState") == "complete"
            )
            # the control: this browser does fill a frame whose page allows it
            assert "an ordinary page, framed" in _framed_text(browser, "plain")
            # the Arena's page refuses to be framed (CSP frame-ancestors, X-Frame-Options)
            text = _framed_text(browser, "app")
            assert "Ask both models" not in text and "Arena" not in text


def test_a_dns_rebinding_page_reads_and_posts_nothing(browser, db_path, store, tmp_path):
    ids = judged_store(store, tmp_path)
    store.close()
    script = """const done = arguments[arguments.length - 1];
        Promise.all([fetch("/browse").then(r => r.text().then(t => [r.status, t])),
                     fetch("/arena/start", {method: "POST", body: new URLSearchParams({prompt: "hi"})})
                       .then(r => [r.status, ""])]).then(done);"""
    with running(_app(db_path)) as base:
        port = base.rsplit(":", 1)[1]
        # the attacker's name, now resolving to this machine: its page and its own-origin requests
        browser.get(f"http://rebind.test:{port}/browse")
        assert "judge34" not in browser.page_source and "Invalid host header" in browser.page_source
        (browse, post) = browser.execute_async_script(script)
        assert browse[0] == 400 and "judge34" not in browse[1] and ids[0] not in browse[1]
        assert post[0] == 400
    with open_store(db_path, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM battles WHERE origin = 'serve'") == 0
    # the control: the same page and requests under a name the server was told to answer
    with running(_app(db_path, allowed_hosts=("localhost", "rebind.test"))) as base:
        port = base.rsplit(":", 1)[1]
        browser.get(f"http://rebind.test:{port}/browse")
        assert "judge34" in browser.page_source
        (browse, post) = browser.execute_async_script(script)
        assert browse[0] == 200 and "judge34" in browse[1]
