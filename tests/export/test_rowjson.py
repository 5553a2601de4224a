"""The compiled row JSON (pairstore.export.rowjson) writes, byte for byte, what Python's json writes for a
row (pairstore.export.writer.row_json), whatever the text holds and however the Arrow arrays are laid out;
the export's content hash is therefore the one recomputed from the file's rows."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

from pairstore.export.rowjson import rows_json
from pairstore.export.writer import _chunk_digests, row_digest, row_json

MSG = pa.struct([("role", pa.string()), ("content", pa.string())])
# every byte below 0x20 (the short escapes and the \u00xx ones), the two that json escapes above it,
# DEL, non-ASCII of two, three and four bytes, the line separators json leaves alone, a lone "u00"
ALPHABET = [chr(i) for i in range(0x20)] + list('"\\/ abcXYZ019{}[],:u') + [
    "\x7f", "é", "ж", "北", "😀", "\u2028", "\u2029", "\u00a0", "\ufeff", "\\u00", "</script>",
]  # fmt: skip


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.choice([0, 1, 2, 7, 40, 300])))


def random_rows(seed: int, count: int, sft: bool = False):
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        prompt = [
            {
                "role": rng.choice(["user", "system", "assistant", random_text(rng)]),
                "content": random_text(rng),
            }
            for _ in range(rng.choice([0, 1, 1, 2, 5]))
        ]
        rows.append((prompt, random_text(rng), None if sft else random_text(rng)))
    return rows


def arrays(rows):
    prompt = pa.array([r[0] for r in rows], type=pa.list_(MSG))
    chosen = pa.array([r[1] for r in rows], type=pa.string())
    rejected = pa.array([r[2] for r in rows], type=pa.string())
    return prompt, chosen, rejected


def texts_of(data: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    raw = data.tobytes()
    return [raw[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


@pytest.mark.parametrize("seed", range(4))
def test_every_row_is_json_dumps_byte_for_byte(seed):
    rows = random_rows(seed, 400, sft=seed == 3)
    data, offsets, flagged = rows_json(*arrays(rows))
    assert not flagged.any()
    got = texts_of(data, offsets)
    assert got == [row_json(*r).encode("utf-8") for r in rows]
    # and each is the JSON of the row, read back
    assert [json.loads(g) for g in got[:50]] == [
        {"chosen": c, "prompt": p, "rejected": r} for p, c, r in rows[:50]
    ]


def test_sliced_and_large_string_arrays_give_the_same_bytes():
    rows = random_rows(11, 300)
    prompt, chosen, rejected = arrays(rows)
    sl = slice(17, 251)
    want = [row_json(*r).encode() for r in rows[sl]]
    data, offsets, _ = rows_json(prompt[sl], chosen[sl], rejected[sl])
    assert texts_of(data, offsets) == want
    data, offsets, _ = rows_json(
        prompt[sl], chosen[sl].cast(pa.large_string()), rejected[sl].cast(pa.large_string())
    )
    assert texts_of(data, offsets) == want


def test_a_text_of_escapes_only_grows_the_buffer_and_stays_exact():
    # every byte of these texts takes six bytes of JSON: more than the room the first buffer leaves
    rows = [([{"role": "user", "content": "\x01" * 5000}], "\x02" * 70_000, "\x1f" * 3)] * 40
    data, offsets, _ = rows_json(*arrays(rows))
    assert texts_of(data, offsets) == [row_json(*r).encode() for r in rows]


def test_rows_with_a_null_inside_the_prompt_are_flagged_and_digested_by_python():
    rows = [
        ([{"role": "user", "content": "a"}], "x", "y"),
        ([{"role": "user", "content": None}], "x", "y"),
        ([{"role": None, "content": "b"}, {"role": "user", "content": "c"}], "x", None),
        ([], "x", "y"),
    ]
    prompt, chosen, rejected = arrays(rows)
    _, _, flagged = rows_json(prompt, chosen, rejected)
    assert flagged.tolist() == [False, True, True, False]
    table = pa.table({"_prompt": prompt, "chosen": chosen, "rejected": rejected})
    assert _chunk_digests(table, "dpo") == [row_digest(*r) for r in rows]
    # an NLL-only row's digest has rejected null, whatever the column holds
    assert _chunk_digests(table, "sft") == [row_digest(p, c, None) for p, c, _ in rows]
