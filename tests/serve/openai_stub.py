"""A local OpenAI chat-completions server that misbehaves on purpose: each request to /chat/completions is
answered by a function of the request (a 429 with Retry-After, a 5xx, a dropped connection, a 401 that
echoes the key, a reply quoting verdicts), so the clients' retries, keys and parsers are tested against
real HTTP on a loopback port (bound to port 0)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict | None
    n: int  # 1 for the first chat request


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the assistant's text (a chat completion) when status is 200
    body: str | None = None  # the raw body otherwise (an error page, a JSON error)
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without an answer


def chat(text: str) -> Reply:
    return Reply(content=text)


def last_user(req: Request) -> str:
    assert req.body is not None
    return [m["content"] for m in req.body["messages"] if m["role"] == "user"][-1]


@contextmanager
def stub_endpoint(answer: Callable[[Request], Reply], *, served_name: str = "stub", key: str | None = None):
    """Yields (base URL, requests received). With `key`, a request without `Authorization: Bearer <key>` gets
    a 401 whose body repeats the header it got (as some providers do), so a test sees whether a client
    shows a server's text unscrubbed."""
    received: list[Request] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, reply: Reply):
            if reply.drop:
                self.close_connection = True
                self.connection.close()
                return
            if reply.status == 200 and reply.content is not None:
                payload = json.dumps({
                    "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                    "model": served_name,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                                 "finish_reason": "stop"}],
                })  # fmt: skip
            else:
                payload = reply.body if reply.body is not None else json.dumps({"error": {"message": "stub"}})
            data = payload.encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if key is None:
                return True
            got = self.headers.get("Authorization", "")
            if got == f"Bearer {key}":
                return True
            self._send(Reply(401, body=json.dumps({"error": {"message": f"bad key in header {got!r}"}})))
            return False

        def do_GET(self):
            if not self._authorized():
                return
            if self.path.split("?")[0].endswith("/models"):
                self._send(Reply(200, body=json.dumps({"data": [{"id": served_name, "object": "model"}]})))
            else:
                self._send(Reply(404))

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            with lock:
                req = Request(self.path, dict(self.headers), body, len(received) + 1)
                received.append(req)
            if not self._authorized():
                return
            if not self.path.split("?")[0].endswith("/chat/completions"):
                return self._send(Reply(404))
            self._send(answer(req))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()
