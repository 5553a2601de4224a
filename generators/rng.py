"""Hash-derived randomness that gives the same stream on every Python version.

`random.choice`, `shuffle` and `sample` changed their streams between Python
releases, so a seed would not name the same tasks everywhere. Every draw here
is instead the xxh3-64 hash of (seed, family, draw index, counter): the n-th
number of a stream depends only on those values and the xxhash algorithm,
which is a fixed specification.

    >>> rng = HashRng(7, "digit_sum", 0)
    >>> rng.randint(1, 6) == HashRng(7, "digit_sum", 0).randint(1, 6)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import xxhash

from pairstore.errors import BadInput

# Separates the key parts so ("a1", "2") and ("a", "12") hash differently.
_SEP = "\x1f"
_TWO64 = 1 << 64


class HashRng:
    """A deterministic stream of 64-bit numbers keyed by `parts` (seed, family, draw index)."""

    def __init__(self, *parts):
        self._prefix = _SEP.join(str(p) for p in parts) + _SEP
        self._counter = 0

    def u64(self) -> int:
        """The next 64-bit number of the stream."""
        value = xxhash.xxh3_64_intdigest((self._prefix + str(self._counter)).encode("utf-8"))
        self._counter += 1
        return value

    def below(self, n: int) -> int:
        """Uniform integer in [0, n): rejection sampling, so no modulo bias."""
        if n <= 0:
            raise BadInput(f"below() needs a positive bound, got {n}")
        limit = _TWO64 - (_TWO64 % n)
        while True:
            value = self.u64()
            if value < limit:
                return value % n

    def randint(self, low: int, high: int) -> int:
        """Uniform integer in [low, high], both ends included."""
        if high < low:
            raise BadInput(f"randint({low}, {high}): empty range")
        return low + self.below(high - low + 1)

    def choice(self, seq: Sequence):
        if not seq:
            raise BadInput("choice() from an empty sequence")
        return seq[self.below(len(seq))]

    def chance(self, numerator: int, denominator: int) -> bool:
        """True with probability numerator/denominator (integers: no float rounding)."""
        return self.below(denominator) < numerator

    def digits(self, count: int, *, leading_nonzero: bool = False) -> str:
        """`count` decimal digits as a string."""
        out = []
        for i in range(count):
            out.append(str(self.randint(1, 9) if (i == 0 and leading_nonzero) else self.below(10)))
        return "".join(out)
