"""Models that answer chat messages: an OpenAI-compatible endpoint, named on the command line.

    pairstore serve --model so7a=http://127.0.0.1:8000/v1 --model sm11a=runs/sm11a --own-model sm11a
    pairstore serve --model gpt=https://api.example.com/v1@EXAMPLE_API_KEY ...
    pairstore judge --set judge34 --a sm11a --b so7a --judge qwen=http://127.0.0.1:8001/v1

ENDPOINT is the base URL of a server speaking the OpenAI chat-completions protocol (what `vllm serve`,
llama.cpp's server and TGI expose: POST {base}/chat/completions) or a local bundle folder
(train.chat.BundleChat runs it with transformers). This module speaks the protocol with the standard
library only, so the store commands need nothing more.

The API key: read from an environment variable, named per endpoint (`NAME=ENDPOINT@ENVVAR`, or
`--api-key-env`; OPENAI_API_KEY when none is named), sent as `Authorization: Bearer`. It is never
printed, logged or stored: the settings stored with a vote hold the endpoint without its query, an
error names the endpoint's host only, and a server's error text has the key blanked out. A URL
carrying a user or password is refused (a key goes in the environment). A key goes over plain http
only to a loopback host: a named variable for another host is refused, the default one is not sent.

Retries: a 429, a 5xx or a dropped connection is asked again, up to `RetryPolicy.attempts` tries, after
the server's Retry-After (seconds or an HTTP date) or else an exponential wait; a wait longer than
`max_wait_s` is not made (the error says what the server asked).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from pairstore.errors import BadInput, PairstoreError

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RETRIED_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class EndpointError(PairstoreError):
    """A model endpoint did not answer, or answered outside the protocol."""

    exit_code = 1


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a failed request is asked again."""

    attempts: int = 5  # tries in all (1: no retry)
    base_s: float = 1.0  # the first wait without Retry-After; doubled per try
    max_wait_s: float = 60.0  # the longest one wait; a server asking for more ends the tries


@dataclass(frozen=True)
class ModelSpec:
    name: str
    endpoint: str  # a base URL or a bundle folder
    key_env: str = DEFAULT_KEY_ENV  # the environment variable holding the API key
    key_env_named: bool = False  # named by the user (a missing variable is then an error)

    @property
    def is_url(self) -> bool:
        return self.endpoint.startswith(("http://", "https://"))


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_of(url: str) -> str:
    """scheme://host[:port] of a URL: what an error may show of an endpoint."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def parse_model_spec(
    text: str, *, option: str = "model", key_env: str | None = None, where: tuple[str, int] | None = None
) -> ModelSpec:
    """NAME=ENDPOINT or NAME=ENDPOINT@ENVVAR, checked: a URL (without a user or password in it), or a
    folder that exists. `key_env`: the variable --api-key-env names, for a spec that names none. The
    message of a bad spec never repeats the endpoint (it may hold a key)."""
    path, line = where if where else (None, None)
    name, sep, endpoint = text.partition("=")
    name, endpoint = name.strip(), endpoint.strip()
    if not sep or not name or not endpoint:
        raise BadInput(
            f"expected NAME=ENDPOINT[@ENVVAR], got {name or 'nothing'}=...",
            field=option,
            path=path,
            line=line,
        )
    env, named = key_env or DEFAULT_KEY_ENV, key_env is not None
    is_url = endpoint.startswith(("http://", "https://"))
    base, at, tail = endpoint.rpartition("@")
    if at and ENV_NAME.fullmatch(tail) and not (not is_url and Path(endpoint).is_dir()):
        if not is_url:
            raise BadInput(
                f"{name!r} is a local bundle: it takes no API key", field=option, path=path, line=line
            )
        endpoint, env, named = base, tail, True
    spec = ModelSpec(name, endpoint, env, named)
    if spec.is_url:
        parts = urllib.parse.urlsplit(endpoint)
        try:
            userinfo = parts.username is not None or parts.password is not None or "@" in parts.netloc
            parts.port  # noqa: B018 (a port that is not a number raises here)
        except ValueError:
            userinfo = True
        if userinfo:
            raise BadInput(
                f"the endpoint of {name!r} is not a plain URL (a user or password in it?); put the API key "
                f"in an environment variable and name it: {name}=URL@ENVVAR",
                field=option, path=path, line=line,
            )  # fmt: skip
        if not parts.hostname:
            raise BadInput(f"the endpoint of {name!r} has no host", field=option, path=path, line=line)
    elif not Path(endpoint).is_dir():
        raise BadInput(
            f"the endpoint of {name!r} is neither an http(s) base URL nor a bundle folder",
            field=option, path=path, line=line,
        )  # fmt: skip
    return spec


def read_models_file(path: str | os.PathLike[str]) -> list[tuple[str, tuple[str, int]]]:
    """The specs of a models file: one NAME=ENDPOINT[@ENVVAR] a line, blank lines and # comments skipped;
    each with (file, line) for its errors."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise BadInput(f"cannot read the models file: {e.strerror}", path=str(path)) from None
    except UnicodeDecodeError:
        raise BadInput("bytes that are not UTF-8", path=str(path)) from None
    return [
        (ln.strip(), (str(path), i))
        for i, ln in enumerate(lines, 1)
        if ln.strip() and not ln.strip().startswith("#")
    ]


def api_key_for(spec: ModelSpec, environ: dict[str, str] | None = None) -> str | None:
    """The key to send to the spec's endpoint, or None. A variable the user named must be set; a key goes
    over plain http only to a loopback host."""
    env = os.environ if environ is None else environ
    key = env.get(spec.key_env) or None
    if key is None:
        if spec.key_env_named:
            raise BadInput(
                f"the environment variable {spec.key_env} (the API key of {spec.name!r}) is not set",
                field="api-key-env",
            )
        return None
    parts = urllib.parse.urlsplit(spec.endpoint)
    if parts.scheme != "https" and not is_loopback_host(parts.hostname or ""):
        if spec.key_env_named:
            raise BadInput(
                f"refusing to send the key in {spec.key_env} to {host_of(spec.endpoint)} over plain http; "
                "use https",
                field="api-key-env",
            )
        return None
    return key


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds to wait (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass
class OpenAIChat:
    """Greedy chat completions from an OpenAI-compatible server. `model` is what the server calls it
    (default: the first model GET {base}/models lists, else the pairstore name)."""

    name: str
    base_url: str
    max_tokens: int = 512
    timeout_s: float = 120.0
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    settings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        parts = urllib.parse.urlsplit(self.base_url)
        # What is stored with a vote and shown: the endpoint without its query (which may carry a key).
        self.endpoint = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
        self.host = host_of(self.base_url)
        self.settings = {"endpoint": self.endpoint, "temperature": 0.0, "max_tokens": self.max_tokens}

    def _url(self, path: str) -> str:
        parts = urllib.parse.urlsplit(self.base_url)
        return urllib.parse.urlunsplit(
            (parts.scheme, parts.netloc, parts.path.rstrip("/") + path, parts.query, "")
        )

    def _scrub(self, text: str) -> str:
        """A server's text with the key (and the URL's query) blanked out."""
        for secret in (self.api_key, urllib.parse.urlsplit(self.base_url).query):
            if secret:
                text = text.replace(secret, "***")
        return " ".join(text.split())[:200]

    def _fail(self, what: str) -> EndpointError:
        return EndpointError(f"{self.name} at {self.host}: {what}")

    def _request_once(self, path: str, body: dict | None) -> tuple[dict | None, float | None, str]:
        """(the answer, None, "") or (None, seconds the server asked to wait or None, what failed) for a
        failure worth another try; raises for one that is not."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self._url(path), data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = self._scrub(e.read().decode("utf-8", "replace"))
            what = f"HTTP {e.code}" + (f" {detail}" if detail else "")
            if e.code in RETRIED_STATUS:
                return None, retry_after_s(e.headers.get("Retry-After")), what
            raise self._fail(what) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            reason = getattr(e, "reason", e)
            return None, None, self._scrub(f"no answer ({reason})")
        except (OSError, ValueError) as e:
            raise self._fail(self._scrub(f"cannot connect ({type(e).__name__})")) from None
        try:
            got = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise self._fail("the answer is not JSON") from None
        if not isinstance(got, dict):
            raise self._fail("the answer is not a JSON object")
        return got, None, ""

    def _request(self, path: str, body: dict | None = None) -> dict:
        policy = self.retry
        for attempt in range(1, max(1, policy.attempts) + 1):
            got, asked, what = self._request_once(path, body)
            if got is not None:
                return got
            if attempt >= policy.attempts:
                raise self._fail(f"{what}; gave up after {attempt} tries")
            wait = asked if asked is not None else policy.base_s * 2 ** (attempt - 1)
            if wait > policy.max_wait_s:
                if asked is not None:
                    raise self._fail(
                        f"{what}; the server asks to wait {asked:.0f} s, more than the "
                        f"{policy.max_wait_s:g} s allowed (--max-wait-s)"
                    )
                wait = policy.max_wait_s
            self.sleep(wait)
        raise AssertionError("unreachable")

    def served_model(self) -> str:
        if self.model is None:
            try:
                listed = self._request("/models").get("data") or []
                self.model = listed[0]["id"] if listed and isinstance(listed[0], dict) else self.name
            except EndpointError:
                self.model = self.name
            self.settings["served_model"] = self.model
        return self.model

    def complete(self, messages: list[dict]) -> str:
        body = {
            "model": self.served_model(),
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
        }
        got = self._request("/chat/completions", body)
        try:
            content = got["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._fail("no choices[0].message.content in the answer") from None
        if not isinstance(content, str):
            raise self._fail("choices[0].message.content is not text")
        return content


def chat_for(spec: ModelSpec, *, max_tokens: int, retry: RetryPolicy | None = None) -> OpenAIChat:
    """The endpoint client of a URL spec, with its key from the environment."""
    return OpenAIChat(
        spec.name,
        spec.endpoint,
        max_tokens=max_tokens,
        api_key=api_key_for(spec),
        retry=retry or RetryPolicy(),
    )
