"""What the web app keeps between requests: the store it opens per request, annotator sessions, and the
battles and queue items shown but not yet voted on.

Sharing the file: DuckDB lets one process write, or several read, at a time. The server keeps a
connection only while requests come: opened on a request, closed once none has come for `hold_s`
seconds (default 1) and at the latest after 5 s held, all inside one lock (one connection at a time in
this process); with hold_s 0 every request opens and closes the store itself. A `pairstore` command
started beside it finds the file free whenever the server is idle, and waits for it otherwise
(pairstore.cli.base.open_db retries a busy store); when a command holds the file the server waits for it
(StoreBusy retried every 50 ms, up to `wait_s`) instead of failing the vote.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pairstore.errors import StoreBusy
from pairstore.store.store import open_store

SESSION_COOKIE = "pairstore_session"


class StoreAccess:
    """The store as the server uses it. hold_s > 0: one read-write connection, opened on the first request and
    closed once no request has come for hold_s seconds (or after it has been held HOLD_MAX_S without a
    pause, so a waiting command gets its turn). hold_s = 0: opened per request (read-only for pages) and
    closed after it."""

    HOLD_MAX_S = 5.0

    def __init__(self, path, *, wait_s: float = 10.0, hold_s: float = 0.0):
        self.path, self.wait_s, self.hold_s = str(path), wait_s, hold_s
        self._lock = threading.Lock()
        self._store = None
        self._opened = self._last = 0.0
        with self._open(read_only=False):  # create and migrate once, so pages can open read-only
            pass
        if hold_s > 0:
            threading.Thread(target=self._release_when_idle, daemon=True).start()

    def _connect(self, read_only: bool):
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                return open_store(self.path, read_only=read_only)
            except StoreBusy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def _release_when_idle(self):
        while True:
            time.sleep(min(0.1, self.hold_s))
            with self._lock:
                now = time.monotonic()
                if self._store is not None and (
                    now - self._last >= self.hold_s or now - self._opened >= self.HOLD_MAX_S
                ):
                    self._store.close()
                    self._store = None

    @contextmanager
    def _open(self, *, read_only: bool):
        with self._lock:
            if self.hold_s > 0:
                if self._store is None:
                    self._store, self._opened = self._connect(False), time.monotonic()
                try:
                    yield self._store
                finally:
                    self._last = time.monotonic()
                return
            store = self._connect(read_only)
            try:
                yield store
            finally:
                store.close()

    def close(self) -> None:
        """Let the file go now (the server's shutdown)."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def read(self):
        return self._open(read_only=True)

    def write(self):
        return self._open(read_only=False)


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass
class Session:
    session_id: str
    annotator: str | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))


@dataclass
class PendingBattle:
    """An Arena battle on screen: the conversations so far, the own model's side, who voted."""

    battle_id: str
    own_model: str
    opponent: str
    own_position: str  # a or b: where the own model's answers are shown
    category: str | None
    users: list[str] = field(default_factory=list)
    answers: dict[str, list[str]] = field(default_factory=dict)  # model -> answers
    shown_at: datetime = field(default_factory=utc_now)
    session_id: str = ""

    def shown(self, position: str) -> str:
        """The model shown at position a or b."""
        return self.own_model if position == self.own_position else self.opponent


@dataclass
class PendingJudgment:
    submission_id: str
    item_id: str  # battle id, or <suite>/<item id>
    item_kind: str  # battle or eval_item
    model_a: str
    model_b: str
    session_id: str = ""


class ServerState:
    """Sessions and pending items (in memory: a restart forgets unvoted battles, never stored votes)."""

    def __init__(self, tokens: dict[str, str]):
        self.tokens = tokens  # token -> annotator
        self.sessions: dict[str, Session] = {}
        self.battles: dict[str, PendingBattle] = {}
        self.judgments: dict[str, PendingJudgment] = {}
        self.voted: dict[str, dict] = {}  # battle or submission id -> what the vote page showed
        self.lock = threading.Lock()  # votes: check-and-write as one step

    def session(self, session_id: str | None) -> Session | None:
        return self.sessions.get(session_id) if session_id else None

    def new_session(self, annotator: str | None) -> Session:
        s = Session(secrets.token_urlsafe(24), annotator)
        self.sessions[s.session_id] = s
        return s

    def annotator_for(self, token: str) -> str | None:
        for known, name in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return name
        return None


def check_csrf(session: Session | None, sent: str | None) -> bool:
    return bool(session and sent and hmac.compare_digest(session.csrf.encode(), sent.encode()))
