"""Reading a stream of lines a block at a time, each block whole lines, so a reader of JSONL holds a
block or two whatever the file's size.

    for block in line_blocks(stream, 16 << 20):
        table = pyarrow.json.read_json(pyarrow.BufferReader(block))

pyarrow's own streaming JSON reader (open_json) is not used for this: it reads ahead without bound (after
its first batch it held the whole of a 368 MB file).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import pyarrow as pa


def line_blocks(stream: IO[bytes] | pa.NativeFile, size: int, head: bytes = b"") -> Iterator[bytes]:
    """The stream's bytes (after `head`, read from it already) in blocks of whole lines of about `size`
    bytes: each ends at the last newline read, a line longer than `size` is read on into one block, the
    last ends where the stream does. Memory is a block or two, whatever the file's size."""
    rest = head
    while True:
        more = stream.read(size)
        data = rest + more
        cut = data.rfind(b"\n") + 1 if more else len(data)
        block, rest = data[:cut], data[cut:]
        if block:
            yield block
        if not more:
            return
