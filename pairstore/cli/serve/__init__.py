"""`pairstore serve`: the web app that collects battles and blind judgments (pairstore.cli.serve.app).

Web stack: Starlette on uvicorn, Jinja2 templates (the optional extra `serve`), imported only here.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairstore.chat_endpoint import RetryPolicy, chat_for, parse_model_spec, read_models_file
from pairstore.errors import BadInput
from pairstore.ingest.records import read_records

if TYPE_CHECKING:  # the web stack is the `serve` extra
    from starlette.applications import Starlette

PathLike = str | os.PathLike

MIN_TOKEN_CHARS = 16
HOST_NAME = re.compile(
    r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\]"
)
LOCAL_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_tokens(tokens: Sequence[str] = (), tokens_file: PathLike | None = None) -> dict[str, str]:
    """token -> annotator from --token NAME=TOKEN and a tokens file (one NAME=TOKEN a line, # comments)."""
    entries: list[tuple[str, str, int | None]] = [(t, "--token", None) for t in tokens]
    if tokens_file:
        path = Path(tokens_file)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise BadInput(f"cannot read the tokens file: {e.strerror}", path=str(path)) from None
        entries += [
            (ln.strip(), str(path), i)
            for i, ln in enumerate(lines, 1)
            if ln.strip() and not ln.startswith("#")
        ]
    out: dict[str, str] = {}
    for text, where, line in entries:
        name, sep, token = text.partition("=")
        name, token = name.strip(), token.strip()
        where_path = where if line else None
        if not sep or not name or not token:
            raise BadInput("expected NAME=TOKEN", path=where_path, line=line, field="token")
        if len(token) < MIN_TOKEN_CHARS:
            raise BadInput(f"the token of {name!r} is shorter than {MIN_TOKEN_CHARS} characters",
                           path=where_path, line=line, field="token")  # fmt: skip
        if token in out and out[token] != name:
            raise BadInput(f"one token for two annotators ({out[token]!r}, {name!r})",
                           path=where_path, line=line, field="token")  # fmt: skip
        out[token] = name
    return out


def chat_models(
    specs: Sequence[str] = (), *, max_new_tokens: int, models_file: PathLike | None = None,
    key_env: str | None = None, retry: RetryPolicy | None = None,
) -> dict[str, Any]:  # fmt: skip
    """name -> chat model for NAME=ENDPOINT[@ENVVAR] specs and a models file (one spec a line): a URL is
    an OpenAI-compatible endpoint, its key from the environment (`key_env`, else OPENAI_API_KEY, where the
    spec names no variable); a folder is a local bundle."""
    entries: list[tuple[str, tuple[str, int] | None]] = [(t, None) for t in specs]
    if models_file:
        entries += list(read_models_file(models_file))
    models: dict[str, Any] = {}
    for text, where in entries:
        spec = parse_model_spec(text, key_env=key_env, where=where)
        if spec.name in models:
            raise BadInput(f"model {spec.name!r} given twice", field="model",
                           path=where[0] if where else None, line=where[1] if where else None)  # fmt: skip
        if spec.is_url:
            try:
                models[spec.name] = chat_for(spec, max_tokens=max_new_tokens, retry=retry)
            except BadInput as e:
                if where is None:
                    raise
                raise BadInput(e.reason, path=where[0], line=where[1], field=e.field) from None
        else:
            from train.chat import BundleChat

            models[spec.name] = BundleChat(spec.name, spec.endpoint, max_new_tokens=max_new_tokens)
    return models


def read_prompts(path: PathLike) -> list[str]:
    """Prompts to draw from: JSONL with `prompt` (a string, or messages whose last user turn is taken)."""
    prompts = []
    for line, rec in read_records(path):
        p = rec.get("prompt")
        if isinstance(p, list):
            users = [m.get("content") for m in p if isinstance(m, dict) and m.get("role") == "user"]
            p = users[-1] if users else None
        if not isinstance(p, str) or not p.strip():
            raise BadInput("expected a non-empty prompt", path=str(path), line=line, field="prompt")
        prompts.append(p)
    return prompts


def allowed_hosts(host: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The names the Host header may carry: the loopback names, the bound address (unless it is every
    address) and each --allowed-host (a name, an address, or '*.domain'), checked."""
    from pairstore.cli.serve.app import LOOPBACK_HOSTS

    names: list[str] = list(LOOPBACK_HOSTS)
    bound = host.strip().lower()
    if bound not in ("", "0.0.0.0", "::", "[::]"):
        names.append(f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound)
    for name in extra:
        n = str(name).strip().lower()
        if not HOST_NAME.fullmatch(n):
            raise BadInput(
                f"--allowed-host {name!r}: expected a host name, an address or '*.domain' (no scheme, port "
                "or path; '*' alone would let any site's pages in)",
                field="allowed-host",
            )
        names.append(n)
    return tuple(dict.fromkeys(names))


def build_app(db: PathLike, *, host: str, models: Sequence[str] = (), models_file: PathLike | None = None,
              api_key_env: str | None = None, own_model: str | None = None, tokens: Sequence[str] = (),
              tokens_file: PathLike | None = None, prompts: PathLike | None = None,
              report_dir: PathLike | None = None, seed: int = 0, max_new_tokens: int = 256,
              hold_s: float = 1.0, allowed_hosts_extra: Sequence[str] = ()) -> Starlette:  # fmt: skip
    """The checked configuration as an ASGI app. A bind beyond this machine without tokens is refused."""
    token_map = read_tokens(tokens, tokens_file)
    if not is_loopback(host) and not token_map:
        raise BadInput(
            f"refusing to serve on {host} without annotator tokens: give --token NAME=TOKEN or --tokens-file "
            "(every vote then records whose it is), or bind 127.0.0.1",
            field="host",
        )
    # A person waits on the Arena's answers: a few quick retries, no long waits.
    arena_retry = RetryPolicy(attempts=3, base_s=0.5, max_wait_s=10.0)
    chats = chat_models(models, max_new_tokens=max_new_tokens, models_file=models_file, key_env=api_key_env,
                        retry=arena_retry)  # fmt: skip
    if own_model is not None and own_model not in chats:
        raise BadInput(f"--own-model {own_model!r} is not one of the --model names", field="own-model")
    if chats and own_model is None:
        raise BadInput(
            "--model needs --own-model NAME: the model whose side votes are read from", field="own-model"
        )
    if report_dir is not None and not Path(report_dir).is_dir():
        raise BadInput("no such folder", path=str(report_dir), field="report")
    from pairstore.cli.serve.app import ServeConfig, create_app

    config = ServeConfig(
        str(db), chats, own_model, token_map, seed, read_prompts(prompts) if prompts else [],
        str(report_dir) if report_dir else None, hold_s=hold_s,
        allowed_hosts=allowed_hosts(host, allowed_hosts_extra),
    )  # fmt: skip
    return create_app(config)
