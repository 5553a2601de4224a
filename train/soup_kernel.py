"""The soup's arithmetic: out = a + alpha*(b - a) on raw tensor bytes, exactly as the definition says.

    kernel = SoupKernel(0.5)
    kernel.apply("BF16", a_bytes, b_bytes, out_bytes)
    soup_reference("BF16", a_bytes, b_bytes, 0.5)      # the slow whole-array definition tests compare with

For 0 < alpha < 1 every element is computed in float32 as `(1 - alpha) * a + alpha * b` (three IEEE
float32 operations, no fused multiply-add; the weights are float32(1 - alpha) and float32(alpha)) and
rounded once to the stored dtype with round-to-nearest-even; float64 tensors in float64. bf16 goes
through a small C kernel (train/_soup_kernel.c, built at install where a C compiler is present);
numpy computes the same bits where it is not built, at about a third of the speed. One freedom is
IEEE 754's: where a and b are both NaNs, the result is a NaN with either one's payload (the compiler
and numpy's loops may swap the operands of the sum; tests/train/test_soup_kernel_property.py).
"""

from __future__ import annotations

import numpy as np

from pairstore.errors import PairstoreError

try:  # the bf16 kernel in C (train/_soup_kernel.c), built at install where a C compiler is present
    from train import _soup_kernel as _native  # type: ignore[attr-defined]  # a C extension, no stub
except ImportError:  # the numpy kernel below gives the same bits, at about a third of the speed
    _native = None

# Elements per compute block: three 1 MB temporaries stay in cache, and numpy's per-call cost is amortized.
BLOCK_ELEMENTS = 1 << 18
FLOAT_DTYPES = {"BF16", "F16", "F32", "F64"}
ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}
_NP_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "BF16": np.uint16}


def native_available() -> bool:
    """Whether the compiled bf16 kernel is built here."""
    return _native is not None


class SoupKernel:
    """out = wa*a + wb*b computed in float32 and rounded once, written to the `out` bytes.

    `wa`, `wb` are float32(1 - alpha) and float32(alpha). bf16 goes through the compiled kernel when it
    is built and `native` is not False; otherwise, and for the other dtypes, numpy computes in blocks of
    BLOCK_ELEMENTS with work arrays allocated once, so the temporaries stay in cache.
    """

    def __init__(self, alpha: float, native: bool | None = None):
        if native and _native is None:
            raise PairstoreError("the compiled soup kernel (train/_soup_kernel.c) is not built here")
        self.native = _native is not None if native is None else native
        self.alpha = float(alpha)
        self.wa32, self.wb32 = np.float32(1.0 - self.alpha), np.float32(self.alpha)
        self.wa64, self.wb64 = np.float64(1.0 - self.alpha), np.float64(self.alpha)
        self._x = np.empty(BLOCK_ELEMENTS, np.uint32)
        self._y = np.empty(BLOCK_ELEMENTS, np.uint32)
        self._t = np.empty(BLOCK_ELEMENTS, np.uint32)
        self._y64 = np.empty(BLOCK_ELEMENTS // 2, np.float64)

    def apply(self, dtype: str, a, b, out=None) -> None:
        """Soup the raw bytes `a` and `b` (same length, whole elements) into `out` (default: into `a`)."""
        out = a if out is None else out
        np_dtype = _NP_DTYPES.get(dtype)
        if np_dtype is None:
            raise PairstoreError(f"no soup kernel for dtype {dtype}")
        if dtype == "BF16" and self.native:
            _native.bf16(a, b, out, float(self.wa32), float(self.wb32))  # releases the GIL
            return
        a, b, out = (np.frombuffer(x, np_dtype) for x in (a, b, out))
        # Overflow to inf and inf - inf = nan are the IEEE results the definition asks for, not errors.
        with np.errstate(over="ignore", invalid="ignore"):
            {"BF16": self._bf16, "F16": self._f16, "F32": self._f32, "F64": self._f64}[dtype](a, b, out)

    def _bf16(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa32, self.wb32
        for s in range(0, a.size, BLOCK_ELEMENTS):
            e = min(a.size, s + BLOCK_ELEMENTS)
            n = e - s
            u, v, t = self._x[:n], self._y[:n], self._t[:n]
            # bf16 -> f32 is exact: the bf16 bits are the high half of the f32 bits.
            np.copyto(u, a[s:e])
            np.left_shift(u, 16, out=u)
            np.copyto(v, b[s:e])
            np.left_shift(v, 16, out=v)
            x, y = u.view(np.float32), v.view(np.float32)
            np.multiply(x, wa, out=x)
            np.multiply(y, wb, out=y)
            np.add(x, y, out=x)
            # Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, keep the high half.
            # NaNs computed from bf16 inputs have zero low halves, so they stay NaN (no carry).
            np.right_shift(u, 16, out=t)
            np.bitwise_and(t, 1, out=t)
            np.add(t, 0x7FFF, out=t)
            np.add(u, t, out=u)
            np.right_shift(u, 16, out=u)
            np.copyto(out[s:e], u, casting="unsafe")

    def _f16(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa32, self.wb32
        for s in range(0, a.size, BLOCK_ELEMENTS):
            e = min(a.size, s + BLOCK_ELEMENTS)
            n = e - s
            x = self._x[:n].view(np.float32)
            y = self._y[:n].view(np.float32)
            np.copyto(x, a[s:e])
            np.copyto(y, b[s:e])
            np.multiply(x, wa, out=x)
            np.multiply(y, wb, out=y)
            np.add(x, y, out=x)
            np.copyto(out[s:e], x, casting="same_kind")  # numpy rounds f32 -> f16 to nearest even

    def _f32(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa32, self.wb32
        for s in range(0, a.size, BLOCK_ELEMENTS):
            e = min(a.size, s + BLOCK_ELEMENTS)
            y = self._y[: e - s].view(np.float32)
            np.multiply(b[s:e], wb, out=y)
            np.multiply(a[s:e], wa, out=out[s:e])
            np.add(out[s:e], y, out=out[s:e])

    def _f64(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa64, self.wb64
        step = BLOCK_ELEMENTS // 2
        for s in range(0, a.size, step):
            e = min(a.size, s + step)
            y = self._y64[: e - s]
            np.multiply(b[s:e], wb, out=y)
            np.multiply(a[s:e], wa, out=out[s:e])
            np.add(out[s:e], y, out=out[s:e])


def soup_reference(dtype: str, a_bytes: bytes, b_bytes: bytes, alpha: float) -> bytes:
    """The definition, whole-array and slow: float32 (float64 for F64) compute, one rounding.
    Tests check the streaming kernels against this; bf16 rounding here goes through float64 division
    of the bit pattern, an independent formulation of round-to-nearest-even."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _reference(dtype, a_bytes, b_bytes, alpha)


def _reference(dtype: str, a_bytes: bytes, b_bytes: bytes, alpha: float) -> bytes:
    if alpha == 0:
        return bytes(a_bytes)
    if alpha == 1:
        return bytes(b_bytes)
    if dtype == "F64":
        a = np.frombuffer(a_bytes, np.float64)
        b = np.frombuffer(b_bytes, np.float64)
        return (np.float64(1.0 - alpha) * a + np.float64(alpha) * b).tobytes()
    if dtype == "BF16":
        a = (np.frombuffer(a_bytes, np.uint16).astype(np.uint32) << 16).view(np.float32)
        b = (np.frombuffer(b_bytes, np.uint16).astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.frombuffer(a_bytes, _NP_DTYPES[dtype]).astype(np.float32)
        b = np.frombuffer(b_bytes, _NP_DTYPES[dtype]).astype(np.float32)
    out = np.float32(1.0 - alpha) * a + np.float32(alpha) * b
    if dtype == "BF16":
        bits = out.view(np.uint32).astype(np.uint64)
        high, low = bits >> 16, bits & 0xFFFF
        round_up = (low > 0x8000) | ((low == 0x8000) & (high & 1 == 1))
        rounded = (high + round_up).astype(np.uint16)
        nan = np.isnan(out)
        rounded[nan] = (bits[nan] >> 16).astype(np.uint16) | 0x0040
        return rounded.tobytes()
    return out.astype(_NP_DTYPES[dtype]).tobytes()


def widen(dtype: str, raw) -> np.ndarray:
    """A float tensor's raw bytes as float32 (float64 for F64): exact for every dtype here."""
    if dtype == "BF16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
    if dtype == "F64":
        return np.frombuffer(raw, np.float64).copy()
    return np.frombuffer(raw, _NP_DTYPES[dtype]).astype(np.float32)


def narrow(dtype: str, values: np.ndarray) -> bytes:
    """float32 (float64 for F64) values rounded once to `dtype` with round-to-nearest-even, as raw bytes;
    a NaN stays a NaN."""
    if dtype == "BF16":
        bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
        rounded = ((bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16).astype(np.uint16)
        nan = np.isnan(values)
        rounded[nan] = (bits[nan] >> 16).astype(np.uint16) | 0x0040
        return rounded.tobytes()
    return np.ascontiguousarray(values).astype(_NP_DTYPES[dtype]).tobytes()
