"""A local bundle as a chat model: served the way `train sample` serves it (the bundle's system prompt,
chat template and generation settings), greedy, one conversation at a time.

    chat = BundleChat("so7a", "pairstore/sample_data/so7a", max_new_tokens=64)
    chat.complete([{"role": "user", "content": "What is 12 + 7?"}])
"""

from __future__ import annotations

import threading

from train.bundle import check_bundle
from train.sample import GenerationOptions, Item, generate
from train.serving import load_model, load_serving


class BundleChat:
    def __init__(self, name: str, path, *, max_new_tokens: int | None = None):
        self.name, self.path = name, str(path)
        # Checked when named, not at the first question: a server or a judging run refuses a bundle
        # (remote code, damaged headers) before it starts, not halfway.
        check_bundle(self.path)
        self.max_new_tokens = max_new_tokens
        self._serving = self._model = None
        self._lock = threading.Lock()  # one generate at a time per loaded model
        self.settings = {"bundle": self.path, "temperature": 0.0, "max_new_tokens": max_new_tokens}

    def _load(self):
        if self._model is None:
            self._serving = load_serving(self.path)
            self._model = load_model(self.path)
            self._model.eval()
            limit = self.max_new_tokens or self._serving.max_new_tokens
            self.settings.update(
                max_new_tokens=limit, eos_token_id=self._serving.eos_ids, **self._serving.decoding
            )
        return self._serving, self._model

    def complete(self, messages: list[dict]) -> str:
        with self._lock:
            serving, model = self._load()
            item = Item("prompt", "chat", [dict(m) for m in messages], None, "task")
            limit = int(self.settings["max_new_tokens"])  # type: ignore[call-overload]
            options = GenerationOptions(model=self.path, max_new_tokens=limit)
            outputs, _ = generate(serving, [item], options, model=model)
        got = outputs[0]
        return "" if not got else got[0].text
