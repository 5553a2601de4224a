"""Keys and hashes, each for its own job (docs/design.md, "Keys and hashes").

- content id: xxh3-128 of the exact text after Unicode NFC. Ids and dedup;
  `x²` and `x2` stay different.
- match key: xxh3-128 of the *user turns only* (system prompt dropped), each
  normalized by pairstore.normalize.word_text (NFKC, case folding, invisible and
  format characters removed, confusable letters mapped to one prototype,
  punctuation removed), joined with the spaces left out: spacing, punctuation,
  a split over several user turns, case, Unicode form and look-alike letters do
  not change it. The holdout gate and leak audits use it.
- SHA-256 of files, streamed: what evidence and model cards cite.

    >>> match_key("Hello\\r\\n  World!!") == match_key([{"role": "user", "content": "hello, w\u200borld"}])
    True
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import xxhash

from pairstore.errors import BadInput
from pairstore.normalize import TURN_SEP, compact_text, each_through_joined, word_text, word_texts

if TYPE_CHECKING:
    import pyarrow

    from pairstore.files import StrPath

# Ids to rank: strings, or an Arrow string array (chunked or not).
Ids: TypeAlias = "Iterable[str] | pyarrow.Array | pyarrow.ChunkedArray"

ROLES = ("system", "user", "assistant")


def canonical_messages(
    prompt: object, *, where: str = "prompt", path: StrPath | None = None, line: int | None = None
) -> list[dict]:
    """A prompt as a list of {"role", "content"} dicts.

    A plain string is one user message. A list must hold dicts (or (role, content) pairs) with a known
    role and string content. Anything else raises BadInput naming the field (`where`) and, when given,
    the file and line.
    """

    def bad(message: str) -> BadInput:
        return BadInput(message, path=None if path is None else str(path), line=line, field=where)

    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    tolist = getattr(prompt, "tolist", None)
    if callable(tolist):  # numpy / arrow arrays from parquet
        prompt = tolist()
    if not isinstance(prompt, (list, tuple)):
        raise bad(f"{where}: expected a string or a list of messages, got {type(prompt).__name__}")
    if not prompt:
        raise bad(f"{where}: empty message list")
    out = []
    for i, m in enumerate(prompt):
        if isinstance(m, dict):
            role, content = m.get("role"), m.get("content")
        elif isinstance(m, (list, tuple)) and len(m) == 2:
            role, content = m
        else:
            raise bad(f"{where}[{i}]: expected a message object with role and content")
        if role not in ROLES:
            raise bad(f"{where}[{i}].role: unknown role {role!r} (expected one of {', '.join(ROLES)})")
        if not isinstance(content, str):
            raise bad(f"{where}[{i}].content: expected a string, got {type(content).__name__}")
        out.append({"role": role, "content": content})
    return out


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def nfc_many(texts: Sequence[str]) -> list[str]:
    """[nfc(t) for t in texts], without copying a text that is NFC already. An ASCII text is its own NFC
    (str.isascii reads a flag CPython keeps on every string), and unicodedata.normalize returns an NFC
    text itself. Normalizing the texts joined into one string instead copied every text of a batch
    twice when one was not ASCII (17x the time, a batch's text three times over in memory)."""
    normalize = unicodedata.normalize
    return [t if t.isascii() else normalize("NFC", t) for t in texts]


def content_ids(texts: Sequence[str]) -> list[str]:
    """[content_id(t) for t in texts] (each one text)."""
    digest = xxhash.xxh3_128_hexdigest  # xxh128 inlined: a call per text costs a fifth more
    return [digest(t.encode("utf-8")) for t in nfc_many(texts)]


def normalize_for_match(text: str) -> str:
    """One text normalized for matching (pairstore.normalize.word_text)."""
    return word_text(text)


# json.dumps(..., ensure_ascii=False) without building an encoder per call.
_JSON = json.JSONEncoder(ensure_ascii=False).encode


def xxh128(text: str) -> str:
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8"))


def content_id(*parts: str | None) -> str:
    """xxh3-128 of the exact text (NFC only). Several parts are joined unambiguously."""
    if len(parts) == 1 and isinstance(parts[0], str):
        return xxh128(nfc(parts[0]))
    return xxh128(_JSON([None if p is None else nfc(p) for p in parts]))


def messages_content_id(messages: Sequence[dict], *more: str | None) -> str:
    """Content id of a message list plus further texts (e.g. chosen, rejected)."""
    flat = [f"{m['role']}:{m['content']}" for m in messages]
    return xxh128(_JSON([nfc(x) for x in flat] + [None if p is None else nfc(p) for p in more]))


def user_turns(prompt: object) -> list[str]:
    """The user turns of a prompt (string or messages); system and assistant dropped."""
    return [m["content"] for m in canonical_messages(prompt) if m["role"] == "user"]


def match_text(prompt: object) -> str:
    """Normalized user turns joined by TURN_SEP: the text behind the match key and fuzzy matching."""
    return TURN_SEP.join(word_text(t) for t in user_turns(prompt))


def key_of_text(text: str) -> str:
    """The match key of a match text (or of any normalized text): xxh3-128 of it without spaces."""
    return xxh128(compact_text(text))


def keys_of_texts(texts: Sequence[str]) -> list[str]:
    """[key_of_text(t) for t in texts]: compact_text of the texts joined by NUL (it removes only spaces, turn
    breaks and apostrophes), one call per text only for the hash."""
    parts = each_through_joined(texts, compact_text)
    if parts is None:  # a text holds NUL itself
        return [key_of_text(t) for t in texts]
    digest = xxhash.xxh3_128_hexdigest
    return [digest(t.encode("utf-8")) for t in parts]


def match_key(prompt: object) -> str:
    """xxh3-128 of the normalized user turns, spaces and turn breaks left out (see module docstring)."""
    return key_of_text(match_text(prompt))


def match_keys_of_texts(texts: Sequence[str]) -> list[str]:
    """[match_key(t) for t in texts] for prompts that are one user text each, normalized in one batch."""
    return keys_of_texts(word_texts(texts))


def match_keys(prompts: Sequence) -> list[str]:
    """[match_key(p) for p in prompts], every user turn of them normalized in one batch (word_texts)."""
    turns = [user_turns(p) for p in prompts]
    words = word_texts([t for ts in turns for t in ts])
    keys, at = [], 0
    for ts in turns:
        keys.append(key_of_text(TURN_SEP.join(words[at : at + len(ts)])))
        at += len(ts)
    return keys


def seeded_rank(seed: int, *parts: str) -> int:
    """A stable 64-bit rank for a seeded choice: xxh3-64 of the seed and the parts joined by U+001F.

    Every seeded selection (holdout samples, a recipe's limit and partial copies, miners picking among
    samples) sorts by this, so the same seed picks the same items on every machine and Python version."""
    return xxhash.xxh3_64_intdigest("\x1f".join([str(seed), *parts]).encode("utf-8"))


def seeded_ranks(seed: int, ids: Ids, *parts: str) -> np.ndarray:
    """seeded_rank(seed, *parts, id) of each id (a list of strings or an Arrow string array), as uint64.

    The joined texts are built by Arrow in one buffer and hashed slice by slice: a plan's limit ranks
    hundreds of thousands of pair ids."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr: Any = ids if isinstance(ids, (pa.Array, pa.ChunkedArray)) else pa.array(list(ids), pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    if arr.null_count:
        raise BadInput("seeded_ranks: an id is null", field="id")
    prefix = "\x1f".join([str(seed), *parts, ""])
    joined = pc.binary_join_element_wise(
        pa.scalar(prefix, pa.large_string()), arr.cast(pa.large_string()), pa.scalar("", pa.large_string())
    )
    joined = joined.cast(pa.large_string())
    n = len(joined)
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64)[
        joined.offset : joined.offset + n + 1
    ].tolist()
    data = memoryview(joined.buffers()[2]) if n else memoryview(b"")
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter(
        (digest(data[offsets[i] : offsets[i + 1]]) for i in range(n)), dtype=np.uint64, count=n
    )


def seeded_order(seed: int, ids: Ids, *parts: str) -> np.ndarray:
    """Positions of `ids` (strings, or an Arrow string array) sorted by seeded_rank(seed, *parts, id); a
    stable sort, so equal ranks keep the given order. Returns a numpy array of positions."""
    return np.argsort(seeded_ranks(seed, ids, *parts), kind="stable")


def sha256_file(path: StrPath, chunk_size: int = 1 << 20) -> str:
    """SHA-256 of a file, streamed in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            h.update(chunk)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash_rows(rows: Iterable[Sequence]) -> str:
    """Writer-independent hash of ordered rows: SHA-256 over canonical JSON lines.

    Two exports with the same rows in the same order hash the same whatever
    parquet writer, compression or library version made them.
    """
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()
