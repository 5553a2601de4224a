"""What the web tests share: an OpenAI chat-completions server over a local bundle, the pairstore web app
on a loopback port, a cookie-keeping HTTP client, and a store with a holdout set both models answered."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from http.cookiejar import CookieJar
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pairstore.holdout.sets import add_from_ids_file
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.generations import ingest_generations

ROOT = Path(__file__).resolve().parent.parent
TINY_BUNDLE = ROOT / "pairstore" / "sample_data" / "so7a"
SAMPLE_BATTLES = ROOT / "pairstore" / "sample_data" / "battles.jsonl"


@contextmanager
def openai_server(chat, *, served_name: str = "tiny"):
    """POST /v1/chat/completions and GET /v1/models over `chat` (complete(messages) -> text); yields
    (base URL, list of request bodies received)."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": served_name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self):
            if self.path != "/v1/chat/completions":
                return self._send(404, {"error": {"message": "not found"}})
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append(body)
            if body.get("model") != served_name or not isinstance(body.get("messages"), list):
                return self._send(400, {"error": {"message": "bad request"}})
            text = chat.complete(body["messages"])
            self._send(200, {
                "id": f"chatcmpl-{len(received)}", "object": "chat.completion", "created": int(time.time()),
                "model": served_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            })  # fmt: skip

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def running(app, *, host: str = "127.0.0.1"):
    """The ASGI app under uvicorn on a free loopback port; yields its base URL."""
    import uvicorn

    # The socket is bound here and handed to uvicorn: a port probed free and bound later could be taken in
    # between by another test process (pytest-xdist workers run these side by side).
    sock = socket.socket()
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the web app did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


class Client:
    """A browser's HTTP side: cookies kept, redirects followed; returns (status, final URL, text)."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def _open(self, req):
        try:
            with self.opener.open(req, timeout=120) as resp:
                return resp.status, resp.geturl(), resp.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            return e.code, e.geturl(), e.read().decode("utf-8")

    def get(self, path: str):
        return self._open(urllib.request.Request(self.base + path))

    def post(self, path: str, data: dict):
        body = urllib.parse.urlencode(data).encode()
        return self._open(urllib.request.Request(self.base + path, data=body))


def csrf_of(html: str) -> str:
    marker = 'name="csrf" value="'
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]


def value_of(html: str, name: str) -> str:
    marker = f'name="{name}" value="'
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]


def judged_store(
    store, tmp_path, *, models=("sm11a", "so7a"), members=6, battles=SAMPLE_BATTLES
) -> list[str]:
    """Sample battles (or those of `battles`), the first `members` held out in judge34, and both models'
    answers to each."""
    ingest_battles(store, battles)
    ids = [
        r[0]
        for r in store.con.execute("SELECT battle_id FROM battles ORDER BY 1 LIMIT ?", [members]).fetchall()
    ]
    ids_file = tmp_path / "judge34.txt"
    ids_file.write_text("\n".join(ids) + "\n")
    add_from_ids_file(store, "judge34", ids_file)
    for k, model in enumerate(models):
        out = tmp_path / f"{model}.jsonl"
        with open(out, "w", encoding="utf-8") as f:
            for i, bid in enumerate(ids):
                prompt = store.one("SELECT prompt FROM battles WHERE battle_id = ?", [bid])[0]
                users = [{"role": "user", "content": m["content"]} for m in prompt if m["role"] == "user"]
                # answers that do not name their model: the page must not either
                answer = f"Answer {i}, take {k}." if (i + k) % 3 else "loop loop loop " * 60
                f.write(
                    json.dumps({"item_kind": "prompt", "item_id": bid, "prompt": users, "output": answer})
                    + "\n"
                )
        ingest_generations(store, out, model=model)
    return ids
