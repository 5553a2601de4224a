"""What the web app keeps between requests: the store it opens per request, the votes waiting to be written,
annotator sessions, and the battles and queue items shown but not yet voted on.

Sharing the file: DuckDB lets one process write, or several read, at a time. The server takes its turn
at the store like every pairstore command (pairstore.store.lock) and keeps a connection only while
requests come: opened on a request, closed once none has come for `hold_s` seconds (default 1), after
5 s held, and at once when another process waits in line for the store; with hold_s 0 every request
opens and closes the store itself. So a command started beside it gets the file at the server's next
pause (the request in hand), and the server's next open waits until the command is done.

Votes go through one writer thread, in the order they came (`VoteWriter`): it writes every vote waiting
in one transaction per kind, so votes that came while a command held the store land together, in order,
as soon as it lets go. A vote's request answers once its vote is stored.
"""

from __future__ import annotations

import hmac
import os
import queue
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pairstore.errors import PairstoreError, StoreBusy
from pairstore.store.lock import StoreTurn
from pairstore.store.store import Store, open_store

SESSION_COOKIE = "pairstore_session"
WHAT = "pairstore serve"


class StoreAccess:
    """The store as the server uses it. hold_s > 0: one read-write connection, opened on the first request
    and closed once no request has come for hold_s seconds, after HOLD_MAX_S held without a pause, or as
    soon as another process waits in line for the store. hold_s = 0: opened per request (read-only for
    pages) and closed after it. Every open waits for the server's turn at the store (up to wait_s)."""

    HOLD_MAX_S = 5.0
    CHECK_S = 0.05  # how often the holding server looks for a waiting process

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        wait_s: float = 60.0,
        hold_s: float = 0.0,
        tell: Callable[[str], None] | None = None,
    ) -> None:
        self.path, self.wait_s, self.hold_s = str(path), wait_s, hold_s
        self.tell = tell or _tell_stderr
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._turn: StoreTurn | None = None
        self._opened = self._last = 0.0
        self._closed = threading.Event()
        with self._open(read_only=False):  # create and migrate once, so pages can open read-only
            pass
        if hold_s > 0:
            threading.Thread(
                target=self._release_when_idle, name="pairstore-store-release", daemon=True
            ).start()

    def _connect(self, read_only: bool) -> tuple[Store, StoreTurn]:
        """The store in the server's turn, then past DuckDB's own lock (a process outside the turns)."""
        turn = StoreTurn(self.path)
        started = time.monotonic()
        turn.acquire(shared=read_only, wait_s=self.wait_s, what=WHAT, on_wait=self.tell)
        try:
            while True:
                try:
                    store = open_store(self.path, read_only=read_only)
                    return store, turn
                except StoreBusy:
                    if time.monotonic() - started >= self.wait_s:
                        raise
                    time.sleep(0.05)
        except BaseException:
            turn.release()
            raise

    def _let_go(self) -> None:
        """Close the held connection and give up the turn (with self._lock held)."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._turn is not None:
            self._turn.release()
            self._turn = None

    def _release_when_idle(self) -> None:
        while not self._closed.is_set():
            time.sleep(min(self.CHECK_S, self.hold_s))
            with self._lock:
                now = time.monotonic()
                if self._store is not None and (
                    now - self._last >= self.hold_s
                    or now - self._opened >= self.HOLD_MAX_S
                    or (self._turn is not None and self._turn.someone_waits())
                ):
                    self._let_go()

    @contextmanager
    def _open(self, *, read_only: bool) -> Iterator[Store]:
        with self._lock:
            if self.hold_s > 0:
                if self._store is None:
                    self._store, self._turn = self._connect(False)
                    self._opened = time.monotonic()
                try:
                    yield self._store
                finally:
                    self._last = time.monotonic()
                    # Another process waits in line: let go now, not at the next check.
                    if self._turn is not None and self._turn.someone_waits():
                        self._let_go()
                return
            store, turn = self._connect(read_only)
            try:
                yield store
            finally:
                store.close()
                turn.release()

    def close(self) -> None:
        """Let the file go now (the server's shutdown)."""
        self._closed.set()
        with self._lock:
            self._let_go()

    def read(self) -> AbstractContextManager[Store]:
        return self._open(read_only=True)

    def write(self) -> AbstractContextManager[Store]:
        return self._open(read_only=False)


def _tell_stderr(holder: str) -> None:
    print(f"pairstore serve: waiting for the store: held by {holder}", file=sys.stderr, flush=True)


@dataclass
class Vote:
    """One vote waiting to be written: `write(store, records)` writes a batch of this kind of vote."""

    kind: str  # battle or judgment
    record: dict
    done: Future = field(default_factory=Future)


class VoteWriter:
    """One thread that writes the votes in the order they came. It takes every vote waiting, writes each run
    of one kind in one call (one transaction), and answers each vote's Future with that call's result; a
    batch refused by the ingest checks is written vote by vote, so one bad vote fails alone. A store held
    by another process is waited for (in turn) for as long as it takes: the votes stay queued, in order."""

    def __init__(self, access: StoreAccess, writers: dict[str, Callable[[Store, list[dict]], Any]]) -> None:
        self.access, self.writers = access, writers
        self._queue: queue.Queue[Vote | None] = queue.Queue()
        self.batches: list[int] = []  # the size of every batch written (tests read it)
        self._thread = threading.Thread(target=self._run, name="pairstore-vote-writer", daemon=True)
        self._thread.start()

    def submit(self, kind: str, record: dict) -> Future:
        vote = Vote(kind, record)
        self._queue.put(vote)
        return vote.done

    def close(self, timeout: float = 30.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)

    def _take_waiting(self, batch: list[Vote]) -> bool:
        """Add every vote waiting now to the batch, in order; False once the writer was told to stop."""
        while True:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                return True
            if more is None:
                return False
            batch.append(more)

    def _run(self) -> None:
        going = True
        while going:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while True:
                try:
                    with self.access.write() as store:
                        # the votes that came while the store was waited for go in this write too
                        going = self._take_waiting(batch) and going
                        for run in _runs(batch):
                            self._write_run(store, run)
                    self.batches.append(len(batch))
                    break
                except StoreBusy:
                    continue  # the store is still held: wait in line again, the votes keep their order
                except Exception as e:  # the store failed: every vote not yet answered gets the error
                    for vote in batch:
                        if not vote.done.done():
                            vote.done.set_exception(e)
                    break

    def _write_run(self, store: Store, run: list[Vote]) -> None:
        write = self.writers[run[0].kind]
        try:
            result = write(store, [v.record for v in run])
        except PairstoreError:  # the ingest checks refused one: each vote alone, so it fails alone
            for v in run:
                try:
                    v.done.set_result(write(store, [v.record]))
                except PairstoreError as e:
                    v.done.set_exception(e)
            return
        for v in run:
            v.done.set_result(result)


def _runs(batch: list[Vote]) -> list[list[Vote]]:
    """The batch as runs of one kind of vote, in order."""
    runs: list[list[Vote]] = []
    for vote in batch:
        if runs and runs[-1][0].kind == vote.kind:
            runs[-1].append(vote)
        else:
            runs.append([vote])
    return runs


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass
class Session:
    session_id: str
    annotator: str | None  # None: not signed in yet (a sign-in form was shown)
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
    annotator: str | None = None
    vote: Future | None = None  # the vote on its way to the store
    vote_label: str = ""  # the vote as the page names it

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
    vote: Future | None = None


@dataclass
class VotedBattle:
    """What an Arena battle's page shows after the vote, and whose it is."""

    view: dict
    vote: str
    a: str
    b: str
    annotator: str | None
    users: list[str]


class ServerState:
    """Sessions and pending items (in memory: a restart forgets unvoted battles, never stored votes)."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self.tokens = tokens  # token -> annotator
        self.sessions: dict[str, Session] = {}
        self.battles: dict[str, PendingBattle] = {}
        self.judgments: dict[str, PendingJudgment] = {}
        self.voted: dict[str, VotedBattle] = {}  # battle id -> what its page shows
        self.judged: set[str] = set()  # submission ids stored
        self.lock = threading.Lock()  # votes: check-and-queue as one step

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
