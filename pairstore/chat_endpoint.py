"""Models that answer chat messages: an OpenAI-compatible endpoint, named on the command line.

    pairstore serve --model so7a=http://127.0.0.1:8000/v1 --model sm11a=runs/sm11a --own-model sm11a
    pairstore judge --set judge34 --a sm11a --b so7a --judge qwen=http://127.0.0.1:8001/v1

ENDPOINT is the base URL of a server speaking the OpenAI chat-completions protocol (what `vllm serve`,
llama.cpp's server and TGI expose: POST {base}/chat/completions) or a local bundle folder
(train.chat.BundleChat runs it with transformers). This module speaks the protocol with the standard
library only, so the store commands need nothing more.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from pairstore.errors import BadInput, PairstoreError


class EndpointError(PairstoreError):
    """A model endpoint did not answer, or answered outside the protocol."""

    exit_code = 1


@dataclass(frozen=True)
class ModelSpec:
    name: str
    endpoint: str  # a base URL or a bundle folder

    @property
    def is_url(self) -> bool:
        return self.endpoint.startswith(("http://", "https://"))


def parse_model_spec(text: str, *, option: str = "model") -> ModelSpec:
    """NAME=ENDPOINT, checked: a URL, or a folder that exists."""
    name, sep, endpoint = text.partition("=")
    name, endpoint = name.strip(), endpoint.strip()
    if not sep or not name or not endpoint:
        raise BadInput(f"expected NAME=ENDPOINT, got {text!r}", field=option)
    spec = ModelSpec(name, endpoint)
    if not spec.is_url and not Path(endpoint).is_dir():
        raise BadInput(f"{endpoint!r} is neither an http(s) base URL nor a bundle folder", field=option)
    return spec


@dataclass
class OpenAIChat:
    """Greedy chat completions from an OpenAI-compatible server. `model` is what the server calls it
    (default: the first model GET {base}/models lists, else the pairstore name)."""

    name: str
    base_url: str
    max_tokens: int = 512
    timeout_s: float = 120.0
    model: str | None = None
    api_key: str | None = None
    settings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self.settings = {"endpoint": self.base_url, "temperature": 0.0, "max_tokens": self.max_tokens}

    def _request(self, path: str, body: dict | None = None) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:200]
            raise EndpointError(f"{self.name} at {self.base_url}{path}: HTTP {e.code} {detail}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise EndpointError(f"{self.name} at {self.base_url}{path}: {e}") from None
        except json.JSONDecodeError:
            raise EndpointError(f"{self.name} at {self.base_url}{path}: the answer is not JSON") from None

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
            raise EndpointError(f"{self.name}: no choices[0].message.content in the answer") from None
        if not isinstance(content, str):
            raise EndpointError(f"{self.name}: choices[0].message.content is not text")
        return content
