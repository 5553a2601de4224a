"""The fast loop's share of a parametrized matrix: a few cases of it, spread over the list, run in `make
test-fast`; the rest carry the slow marker and run in `make test` (CI) with them."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pytest


def fast_share(cases: Iterable, keep: int = 3) -> list:
    """`cases` for @pytest.mark.parametrize: every ceil(n/keep)-th one as it is, the others marked slow."""
    cases = list(cases)
    step = max(1, math.ceil(len(cases) / keep))
    return [
        case
        if i % step == 0
        else pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=pytest.mark.slow)
        for i, case in enumerate(cases)
    ]
