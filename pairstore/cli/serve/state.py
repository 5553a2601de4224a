"""What the web app keeps between requests: the store it opens per request, annotator sessions, and the
battles and queue items shown but not yet voted on.

Sharing the file: DuckDB lets one process write, or several read, at a time. The server holds no
connection between requests: each request opens the store (read-only for pages, for writing for a vote),
does one short transaction and closes it, inside one lock (one connection at a time in this process). A
`pairstore` command started beside it therefore finds the file free except during those milliseconds,
and when the command holds the file the server waits for it (StoreBusy retried every 50 ms, up to
`wait_s`) instead of failing the vote.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pairstore.errors import StoreBusy
from pairstore.store.store import open_store

SESSION_COOKIE = "pairstore_session"


class StoreAccess:
    def __init__(self, path, *, wait_s: float = 10.0):
        self.path, self.wait_s = str(path), wait_s
        self._lock = threading.Lock()
        with self._open(read_only=False):  # create and migrate once, so pages can open read-only
            pass

    @contextmanager
    def _open(self, *, read_only: bool):
        deadline = time.monotonic() + self.wait_s
        with self._lock:
            while True:
                try:
                    store = open_store(self.path, read_only=read_only)
                    break
                except StoreBusy:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)
            try:
                yield store
            finally:
                store.close()

    def read(self):
        return self._open(read_only=True)

    def write(self):
        return self._open(read_only=False)


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


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
