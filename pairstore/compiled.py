"""numba's njit as pairstore uses it: compiled code cached beside the module that defines it.

Modules that import this import numba, so they are themselves imported lazily (inside the functions of
the gate and the export that need them): `pairstore --help` and the store commands never load it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from numba import njit as _numba_njit

F = TypeVar("F", bound=Callable[..., Any])


def njit(**options: Any) -> Callable[[F], F]:
    """numba.njit with the compiled code cached beside the calling module (or in the user's cache
    folder); where neither can be written, each process compiles once instead of failing."""

    def compile_later(fn: F) -> F:
        try:
            return cast(F, _numba_njit(cache=True, **options)(fn))
        except RuntimeError:  # numba finds no writable place for its cache
            return cast(F, _numba_njit(cache=False, **options)(fn))

    return compile_later
