"""The web app: Arena (two models answer a prompt, the annotator votes), Queue (blind judging of stored
answers), Browse (read-only pages over the store). Starlette, served by uvicorn; pages rendered on the
server from Jinja2 templates, with one small script file.

Security:

- The CLI binds 127.0.0.1 unless told otherwise, and any other address needs annotator tokens. With
  tokens, every page but the sign-in needs a session made by a known token, and every vote records that
  token's annotator.
- Every form carries the session's CSRF token, the sign-in form too (a session is made when it is shown),
  and a POST without it is refused (403). The session cookie is HttpOnly and SameSite=Strict.
- The `Host` header must name this server: the loopback names, the bound address and --allowed-host
  (Starlette's TrustedHostMiddleware; 400 otherwise), so a DNS-rebinding page cannot read or post.
- Every response carries a Content-Security-Policy with no inline script or style and
  `frame-ancestors 'none'`, `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff` and
  `Referrer-Policy: no-referrer` (`SecurityHeaders`).
- A vote is keyed by the battle (or queue item) it answers, created when the answers were shown, so a
  second submit of the same form finds it counted and adds nothing.
- What a page shows is checked at request time (pairstore.cli.serve.views): a held-out battle (by id or
  match key) is shown only on the Queue page, and an Arena battle only to its annotator.
- The page never carries SQL: every query is a literal in pairstore.cli.serve.views.
- A report file is a plain name inside the --report folder, opened without following a link.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import secrets
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pairstore.cli.serve.views as views
from pairstore.cli.serve.state import (
    SESSION_COOKIE,
    PendingBattle,
    PendingJudgment,
    ServerState,
    Session,
    StoreAccess,
    VotedBattle,
    VoteWriter,
    check_csrf,
    utc_now,
)
from pairstore.errors import PairstoreError, StoreBusy
from pairstore.ingest.battles import add_battle_records
from pairstore.ingest.judgments import HEAVY_FLAWS, add_judgment_records
from pairstore.keys import seeded_rank
from pairstore.store.lock import StoreTurn
from pairstore.store.store import Store

if TYPE_CHECKING:  # the web stack is the `serve` extra, imported when the app is made
    from starlette.applications import Starlette
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

T = TypeVar("T")
Handler = Callable[["Request", Session], Awaitable["Response"]]

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
ARENA_VOTES = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both are bad"}
FLAW_LABELS = {
    "fabrication": "fabrication",
    "hallucinated_output": "hallucinated output",
    "degenerate_repetition": "degenerate repetition",
    "broken_placeholder": "broken placeholder",
}
# The app's pages: scripts and styles from this server's own files only, nothing inline; no framing.
APP_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
# A report file (written by `pairstore audit report`: inline style, images as data: URLs): no script at
# all, sandboxed, never framed.
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'; sandbox"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": APP_CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
DRAW_TRIES = 20  # prompts drawn before the Arena gives up finding one no holdout set holds


@dataclass
class ServeConfig:
    db: str
    models: dict = field(default_factory=dict)  # name -> chat model (complete(messages) -> str, settings)
    own_model: str | None = None
    tokens: dict = field(default_factory=dict)  # token -> annotator
    seed: int = 0
    prompts: list = field(default_factory=list)  # prompts to draw from
    report_dir: str | None = None
    wait_s: float = 60.0  # how long a page waits for a store another process holds
    hold_s: float = 1.0  # keep the store open this long after a request (0: open per request)
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS  # Host header names the server answers
    vote_wait_s: float = 60.0  # how long a vote's request waits for its vote to be stored


class SecurityHeaders:
    """ASGI middleware: SECURITY_HEADERS on every response, where the response set none of its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import MutableHeaders

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def read_report_file(folder: str, name: str) -> bytes | None:
    """The bytes of `name` in `folder`: a plain name, a regular file reached without a link (O_NOFOLLOW on
    the name, the folder as opened), with one name only (a hard link's second name is refused); None else."""
    if (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or name.startswith(".")
        or not name.endswith((".html", ".png", ".md"))
    ):
        return None
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.ELOOP, errno.EACCES, errno.ENOTDIR, errno.EISDIR):
            raise
        return None
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def _text(value: object) -> str | None:
    """A form field as text (an uploaded file is not text)."""
    return value if isinstance(value, str) else None


def _own_vote(vote: str, own_position: str) -> str:
    """The vote as the annotator gave it (a, b, tie, both_bad) from the own model's side."""
    if vote in ("tie", "both_bad"):
        return vote
    return "win" if vote == own_position else "loss"


def create_app(config: ServeConfig) -> Starlette:
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    static = {
        p.name: (p.read_bytes(), STATIC_TYPES[p.suffix]) for p in STATIC.iterdir() if p.suffix in STATIC_TYPES
    }
    access = StoreAccess(config.db, wait_s=config.wait_s, hold_s=config.hold_s)
    writer = VoteWriter(
        access,
        {
            "battle": lambda store, records: add_battle_records(store, records, source="pairstore serve"),
            "judgment": lambda store, records: add_judgment_records(store, records, source="pairstore serve"),
        },
    )
    state = ServerState(config.tokens)
    needs_token = bool(config.tokens)

    def page(request: Request, template: str, status: int = 200, session: Session | None = None,
             **values: Any) -> Response:  # fmt: skip
        session = (
            session
            or getattr(request.state, "session", None)
            or state.session(request.cookies.get(SESSION_COOKIE))
        )
        body = env.get_template(template).render(
            session=session,
            csrf=session.csrf if session else "",
            needs_token=needs_token,
            votes=ARENA_VOTES,
            flaws=FLAW_LABELS,
            **values,
        )
        return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})

    def session_of(request: Request) -> Session | None:
        """The request's session; without tokens a new one is made for the local annotator."""
        session = state.session(request.cookies.get(SESSION_COOKIE))
        if session is None and not needs_token:
            session = state.new_session("local")
        return session

    def with_cookie(response: Response, session: Session) -> Response:
        response.set_cookie(SESSION_COOKIE, session.session_id, httponly=True, samesite="strict")
        return response

    async def form_of(request: Request, session: Session) -> FormData | None:
        """The POSTed form, or None when its CSRF token is not this session's."""
        form = await request.form()
        if not check_csrf(session, _text(form.get("csrf"))):
            return None
        return form

    async def reading(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """fn(store, ...) on a read-only store, off the event loop (the open may wait for a busy file)."""

        def run() -> T:
            with access.read() as store:
                return fn(store, *args, **kwargs)

        return await run_in_threadpool(run)

    def refuse(request: Request, message: str, status: int) -> Response:
        return page(request, "message.html", status=status, title="Refused", message=message)

    def held_page(request: Request, sets: list[str]) -> Response:
        return page(request, "message.html", status=403, title="Held out",
                    message=f"Held out in {', '.join(sets)}: shown only on the judging page.")  # fmt: skip

    def guard(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Sign-in first where tokens are required."""

        async def wrapped(request: Request) -> Response:
            session = session_of(request)
            if session is None or session.annotator is None:
                return RedirectResponse("/login", status_code=303)
            request.state.session = session
            response = await handler(request, session)
            return with_cookie(response, session)

        return wrapped

    async def awaited(future: Future, wait_s: float) -> Any:
        """The result of a vote's Future, waited for without holding a thread; TimeoutError past wait_s."""
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), wait_s)

    def still_queued(request: Request) -> Response:
        who = StoreTurn(access.path).holder() or "another process"
        return refuse(
            request,
            f"the store is held by {who}: your vote waits in this server's queue and is stored, in order, "
            "when the store is free (sending the form again counts it once)",
            503,
        )

    # ------------------------------------------------------------------ sign-in

    async def login(request: Request) -> Response:
        session = state.session(request.cookies.get(SESSION_COOKIE))
        if request.method == "GET":
            # A session for the form's CSRF token (not signed in where tokens are needed).
            if session is None:
                session = state.new_session(None if needs_token else "local")
            return with_cookie(page(request, "login.html", title="Sign in", session=session), session)
        form = await request.form()
        if not check_csrf(session, _text(form.get("csrf"))):
            return refuse(request, "the sign-in form's CSRF token is missing or not this session's", 403)
        if needs_token:
            annotator = state.annotator_for(str(form.get("token") or ""))
            if annotator is None:
                return page(request, "login.html", status=403, title="Sign in", error="unknown token")
        else:
            annotator = str(form.get("name") or "").strip()[:64] or "local"
        assert session is not None
        state.sessions.pop(session.session_id, None)  # a new session id at every sign-in
        signed_in = state.new_session(annotator)
        return with_cookie(RedirectResponse("/arena", status_code=303), signed_in)

    # ------------------------------------------------------------------ arena

    def opponent_for(battle_id: str) -> str | None:
        others = sorted(m for m in config.models if m != config.own_model)
        if not others:
            return None
        return min(others, key=lambda m: (seeded_rank(config.seed, battle_id, m), m))

    def draw_prompt(store: Store) -> str:
        """A prompt from the list that no holdout set holds ('' when none was found)."""
        for _ in range(DRAW_TRIES):
            prompt = config.prompts[secrets.randbelow(len(config.prompts))]
            if not views.prompt_held(store, [prompt]):
                return prompt
        return ""

    async def arena(request: Request, session: Session) -> Response:
        prompt = ""
        if request.query_params.get("draw") and config.prompts:
            prompt = await reading(draw_prompt)
        ready = config.own_model in config.models and opponent_for("x") is not None
        return page(request, "arena.html", title="Arena", ready=ready, prompt=prompt, battle=None,
                    can_draw=bool(config.prompts))  # fmt: skip

    def answer_all(pending: PendingBattle) -> None:
        for model in (pending.own_model, pending.opponent):
            chat = config.models[model]
            messages = []
            for i, user in enumerate(pending.users):
                messages.append({"role": "user", "content": user})
                if i < len(pending.answers[model]):
                    messages.append({"role": "assistant", "content": pending.answers[model][i]})
            pending.answers[model].append(chat.complete(messages))

    def battle_view(pending: PendingBattle) -> dict:
        turns = []
        for i, user in enumerate(pending.users):
            turns.append({"user": user, "a": pending.answers[pending.shown("a")][i],
                          "b": pending.answers[pending.shown("b")][i]})  # fmt: skip
        return {"battle_id": pending.battle_id, "turns": turns, "category": pending.category}

    async def arena_start(request: Request, session: Session) -> Response:
        form = await form_of(request, session)
        if form is None:
            return refuse(request, "the form's CSRF token is missing or not this session's", 403)
        text = str(form.get("prompt") or "").strip()
        if not text:
            return page(request, "arena.html", status=400, title="Arena", ready=True, prompt="", battle=None,
                        error="write a prompt first", can_draw=bool(config.prompts))  # fmt: skip
        battle_id = f"serve-{secrets.token_urlsafe(12)}"
        opponent = opponent_for(battle_id)
        if config.own_model not in config.models or opponent is None:
            return refuse(request, "the Arena needs --own-model and at least one other --model", 400)
        held = await reading(views.prompt_held, [text])
        if held:
            return held_page(request, held)
        assert config.own_model is not None
        pending = PendingBattle(
            battle_id, config.own_model, opponent, "ab"[secrets.randbelow(2)],
            (str(form.get("category") or "").strip() or None), users=[text],
            answers={config.own_model: [], opponent: []}, session_id=session.session_id,
            annotator=session.annotator,
        )  # fmt: skip
        try:
            await run_in_threadpool(answer_all, pending)
        except PairstoreError as e:
            return refuse(request, f"a model did not answer: {e}", 502)
        state.battles[battle_id] = pending
        return RedirectResponse(f"/arena/{battle_id}", status_code=303)

    async def arena_battle(request: Request, session: Session) -> Response:
        battle_id = request.path_params["battle_id"]
        done = state.voted.get(battle_id)
        if done is not None:
            if done.annotator != session.annotator:
                return refuse(request, "no such battle of yours", 404)
            held = await reading(views.prompt_held, done.users, battle_id)
            if held:
                return held_page(request, held)
            result = {"vote": done.vote, "a": done.a, "b": done.b}
            return page(request, "arena.html", title="Arena", ready=True, battle=done.view, result=result,
                        prompt="")  # fmt: skip
        pending = state.battles.get(battle_id)
        if pending is None or pending.session_id != session.session_id:
            return refuse(request, "no such battle in this session", 404)
        held = await reading(views.prompt_held, pending.users)
        if held:
            return held_page(request, held)
        return page(request, "arena.html", title="Arena", ready=True, battle=battle_view(pending), prompt="")

    async def arena_turn(request: Request, session: Session) -> Response:
        form = await form_of(request, session)
        if form is None:
            return refuse(request, "the form's CSRF token is missing or not this session's", 403)
        pending = state.battles.get(request.path_params["battle_id"])
        if pending is None or pending.session_id != session.session_id or pending.vote is not None:
            return refuse(request, "no such battle in this session (already voted?)", 404)
        text = str(form.get("prompt") or "").strip()
        if text:
            held = await reading(views.prompt_held, [*pending.users, text])
            if held:
                return held_page(request, held)
            pending.users.append(text)
            try:
                await run_in_threadpool(answer_all, pending)
            except PairstoreError as e:
                pending.users.pop()
                return refuse(request, f"a model did not answer: {e}", 502)
        return RedirectResponse(f"/arena/{pending.battle_id}", status_code=303)

    def battle_landed(battle_id: str, future: Future) -> None:
        """The writer stored (or failed) a battle's vote: its page shows the result from now on."""
        with state.lock:
            pending = state.battles.get(battle_id)
            if pending is None:
                return
            if future.exception() is not None:
                pending.vote = None  # not stored: the form may be sent again
                return
            state.voted[battle_id] = VotedBattle(
                battle_view(pending), pending.vote_label, pending.shown("a"), pending.shown("b"),
                pending.annotator, list(pending.users),
            )  # fmt: skip
            del state.battles[battle_id]

    async def arena_vote(request: Request, session: Session) -> Response:
        form = await form_of(request, session)
        if form is None:
            return refuse(request, "the form's CSRF token is missing or not this session's", 403)
        battle_id = request.path_params["battle_id"]
        vote = str(form.get("vote") or "")
        if vote not in ARENA_VOTES:
            return refuse(request, f"unknown vote {vote!r}", 400)
        with state.lock:
            if battle_id in state.voted:  # the second submit of one form
                return RedirectResponse(f"/arena/{battle_id}", status_code=303)
            pending = state.battles.get(battle_id)
            if pending is None or pending.session_id != session.session_id:
                return refuse(request, "no such battle in this session", 404)
            if pending.vote is None:
                record = {
                    "battle_id": battle_id,
                    "turns": [{"user": u, "own": o, "opponent": p} for u, o, p in
                              zip(pending.users, pending.answers[pending.own_model],
                                  pending.answers[pending.opponent])],
                    "vote": _own_vote(vote, pending.own_position),
                    "own_model": pending.own_model,
                    "opponent_model": pending.opponent,
                    "voted_at": utc_now().isoformat(),
                    "shown_at": pending.shown_at.isoformat(),
                    "annotator": session.annotator,
                    "own_position": pending.own_position,
                    "origin": "serve",
                    "decoding": {m: config.models[m].settings for m in (pending.own_model, pending.opponent)},
                }  # fmt: skip
                if pending.category:
                    record["category"] = pending.category
                pending.vote_label = ARENA_VOTES[vote]
                pending.vote = writer.submit("battle", record)
                pending.vote.add_done_callback(functools.partial(battle_landed, battle_id))
            future = pending.vote
        try:
            await awaited(future, config.vote_wait_s)
        except TimeoutError:
            return still_queued(request)
        except PairstoreError as e:
            return refuse(request, f"the vote was not stored: {e}", 400 if e.exit_code == 2 else 503)
        return RedirectResponse(f"/arena/{battle_id}", status_code=303)

    # ------------------------------------------------------------------ queue

    def queue_args(request: Request) -> tuple[str | None, str | None, tuple[str, str]]:
        q = request.query_params
        set_name, suite = q.get("set") or None, q.get("suite") or None
        models = (q.get("a") or "", q.get("b") or "")
        return set_name, suite, models

    async def queue(request: Request, session: Session) -> Response:
        set_name, suite, models = queue_args(request)
        chosen = bool((set_name or suite) and all(models) and models[0] != models[1])

        def look(store: Store) -> tuple:
            sources, known = views.queue_sources(store), views.queue_models(store)
            if not chosen:
                return sources, known, None, 0, 0
            found = views.next_item(
                store, set_name=set_name, suite=suite, models=models, annotator=session.annotator
            )
            return (sources, known, *found)

        sources, known, item, done, total = await reading(look)
        if not chosen:
            return page(request, "queue.html", title="Queue", sources=sources, models=known, item=None,
                        chosen=False, query={})  # fmt: skip
        query = {"set": set_name or "", "suite": suite or "", "a": models[0], "b": models[1]}
        if item is None:
            return page(request, "queue.html", title="Queue", sources=sources, models=known, item=None,
                        chosen=True, done=done, total=total, query=query)  # fmt: skip
        first = "ab"[secrets.randbelow(2)]  # which of the two is shown as A
        shown_a, shown_b = (models[0], models[1]) if first == "a" else (models[1], models[0])
        pending = PendingJudgment(f"queue-{secrets.token_urlsafe(12)}", item.item_id, item.item_kind, shown_a,
                                  shown_b, session.session_id)  # fmt: skip
        state.judgments[pending.submission_id] = pending
        users = [m["content"] for m in item.prompt if m["role"] == "user"]
        return page(request, "queue.html", title="Queue", sources=sources, models=known, chosen=True,
                    item={"submission_id": pending.submission_id, "users": users,
                          "a": item.answers[shown_a], "b": item.answers[shown_b]},
                    done=done, total=total, query=query)  # fmt: skip

    def judgment_landed(submission_id: str, future: Future) -> None:
        with state.lock:
            pending = state.judgments.get(submission_id)
            if pending is None:
                return
            if future.exception() is not None:
                pending.vote = None
                return
            state.judged.add(submission_id)
            del state.judgments[submission_id]

    async def queue_vote(request: Request, session: Session) -> Response:
        form = await form_of(request, session)
        if form is None:
            return refuse(request, "the form's CSRF token is missing or not this session's", 403)
        submission_id = str(form.get("submission_id") or "")
        vote = str(form.get("vote") or "")
        if vote not in ARENA_VOTES:
            return refuse(request, f"unknown vote {vote!r}", 400)
        from urllib.parse import urlencode

        back = "/queue?" + urlencode({k: request.query_params.get(k, "") for k in ("set", "suite", "a", "b")})
        with state.lock:
            if submission_id in state.judged:
                return RedirectResponse(back, status_code=303)
            pending = state.judgments.get(submission_id)
            if pending is None or pending.session_id != session.session_id:
                return refuse(request, "no such queue item in this session", 404)
            if pending.vote is None:
                flaws = {s: sorted(f for f in HEAVY_FLAWS if form.get(f"flaw_{s}_{f}")) for s in ("a", "b")}
                if vote == "both_bad":  # both bad: a tie where both answers are flawed
                    winner, flawed = "tie", {"a": True, "b": True}
                else:
                    winner, flawed = vote, {s: bool(flaws[s]) for s in ("a", "b")}
                record = {
                    "battle_id": pending.item_id,
                    "item_kind": pending.item_kind,
                    "model_a": pending.model_a,
                    "model_b": pending.model_b,
                    "winner": winner,
                    "heavy_flaw_a": flawed["a"],
                    "heavy_flaw_b": flawed["b"],
                    "flaws_a": flaws["a"],
                    "flaws_b": flaws["b"],
                    "judge": f"human:{session.annotator}",
                    "annotator": session.annotator,
                    "origin": "serve",
                    "submission_id": submission_id,
                }
                if vote == "both_bad":
                    record["notes"] = "both are bad"
                pending.vote = writer.submit("judgment", record)
                pending.vote.add_done_callback(functools.partial(judgment_landed, submission_id))
            future = pending.vote
        try:
            await awaited(future, config.vote_wait_s)
        except TimeoutError:
            return still_queued(request)
        except PairstoreError as e:
            return refuse(request, f"the vote was not stored: {e}", 400 if e.exit_code == 2 else 503)
        return RedirectResponse(back, status_code=303)

    # ------------------------------------------------------------------ browse

    async def browse(request: Request, session: Session) -> Response:
        data = await reading(views.index, session.annotator)
        return page(request, "browse.html", title="Browse", data=data)

    async def browse_battle(request: Request, session: Session) -> Response:
        b = await reading(views.battle, request.path_params["battle_id"], session.annotator)
        if b is None:
            return refuse(request, "no such battle", 404)
        return page(request, "browse_battle.html", title=f"Battle {b['battle_id']}", b=b)

    async def browse_pair(request: Request, session: Session) -> Response:
        p = await reading(views.pair, request.path_params["pair_id"], session.annotator)
        if p is None:
            return refuse(request, "no such pair", 404)
        return page(request, "browse_pair.html", title=f"Pair {p['pair_id']}", p=p)

    async def browse_holdout(request: Request, session: Session) -> Response:
        s = await reading(views.holdout_set, request.path_params["name"])
        if s is None:
            return refuse(request, "no such holdout set", 404)
        return page(request, "browse_holdout.html", title=f"Holdout set {s['set_name']}", s=s)

    async def browse_round(request: Request, session: Session) -> Response:
        name = request.path_params["name"]
        exports = await reading(views.round_exports, name)
        return page(request, "browse_round.html", title=f"Round {name}", name=name, exports=exports)

    async def browse_report(request: Request, session: Session) -> Response:
        from audits.ratings import audit_ratings

        rep = await reading(audit_ratings, bootstrap=200)
        files = []
        if config.report_dir and read_report_file(config.report_dir, "report.html") is not None:
            files = ["report.html"]
        return page(request, "browse_report.html", title="Report", rep=rep, files=files)

    async def report_file(request: Request, session: Session) -> Response:
        name = request.path_params["name"]
        data = read_report_file(config.report_dir, name) if config.report_dir else None
        if data is None:
            return refuse(request, "no such report file", 404)
        kind = {"html": "text/html", "png": "image/png", "md": "text/markdown"}[name.rsplit(".", 1)[1]]
        return Response(data, media_type=kind, headers={"Content-Security-Policy": REPORT_CSP})

    async def static_file(request: Request) -> Response:
        found = static.get(request.path_params["name"])
        if found is None:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(found[0], media_type=found[1], headers={"Cache-Control": "no-cache"})

    async def home(request: Request) -> Response:
        return RedirectResponse("/arena", status_code=303)

    routes = [
        Route("/", home),
        Route("/static/{name}", static_file),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/arena", guard(arena)),
        Route("/arena/start", guard(arena_start), methods=["POST"]),
        Route("/arena/{battle_id}", guard(arena_battle)),
        Route("/arena/{battle_id}/turn", guard(arena_turn), methods=["POST"]),
        Route("/arena/{battle_id}/vote", guard(arena_vote), methods=["POST"]),
        Route("/queue", guard(queue)),
        Route("/queue/vote", guard(queue_vote), methods=["POST"]),
        Route("/browse", guard(browse)),
        Route("/browse/battle/{battle_id}", guard(browse_battle)),
        Route("/browse/pair/{pair_id}", guard(browse_pair)),
        Route("/browse/holdout/{name}", guard(browse_holdout)),
        Route("/browse/round/{name}", guard(browse_round)),
        Route("/browse/report", guard(browse_report)),
        Route("/browse/report/{name}", guard(report_file)),
    ]

    async def store_error(request: Request, exc: Exception) -> Response:
        code = getattr(exc, "exit_code", 1)
        status = 503 if isinstance(exc, StoreBusy) else 400 if code == 2 else 500
        return refuse(request, str(exc), status)

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(writer.close)
        access.close()

    middleware = [
        Middleware(SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(config.allowed_hosts), www_redirect=False),
    ]
    app = Starlette(routes=routes, exception_handlers={PairstoreError: store_error}, lifespan=lifespan,
                    middleware=middleware)  # fmt: skip
    app.state.serve = state
    app.state.access = access
    app.state.writer = writer
    return app
