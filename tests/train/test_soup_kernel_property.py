"""The soup's fast paths are its definition, bit for bit, on any input: the C bf16 kernel
(train/_soup_kernel.c) and the numpy kernels (train.soup_kernel.SoupKernel) equal soup_reference on every
bit pattern (NaNs of any payload, infinities, subnormals, both zeros), any tensor size (empty, odd, past a
compute block) and any weight; and bf16 rounding (narrow, soup_reference) equals round-to-nearest-even
written out on integers.

One freedom, IEEE 754's: where both inputs are NaNs, the output is a NaN carrying either one's payload.
x86 returns the first operand's, and the C compiler and numpy's loops may swap the operands of a sum
(it commutes): a property first found the C kernel, then numpy's float16 loop, giving b's payload where
soup_reference gave a's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from train.soup_kernel import BLOCK_ELEMENTS, SoupKernel, narrow, native_available, soup_reference

KERNELS = [
    pytest.param(False, id="numpy"),
    pytest.param(
        True, id="native", marks=pytest.mark.skipif(not native_available(), reason="C kernel not built")
    ),
]
BITS = {"BF16": 16, "F16": 16, "F32": 32, "F64": 64}
UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}

# Weights: any finite alpha but the two the merge copies instead of computing (0 and 1), with those that
# round to a float32 subnormal, to zero or to infinity, and the ones next to 0 and 1.
ALPHAS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, 0.25, 1e-45, -1e-45, 1e-50, 5e-324, 1 - 2**-53, 1 + 2**-52, 1e39, -1e39, 3.4e38]),
).filter(lambda alpha: alpha not in (0.0, 1.0))


# Per dtype: both zeros, both infinities, signalling and quiet NaNs of both signs and other payloads, the
# smallest and largest subnormals, the smallest normal, the largest finite numbers, 1 and the number after.
SPECIAL = {
    "BF16": [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0x7FFF, 0xFFC1, 0x0001, 0x007F, 0x8001, 0x0080,
             0x7F7F, 0xFF7F, 0x3F80, 0x3F81],
    "F16": [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0x7FFF, 0xFE01, 0x0001, 0x03FF, 0x8001, 0x0400,
            0x7BFF, 0xFBFF, 0x3C00, 0x3C01],
    "F32": [0, 1 << 31, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0xFFC00001, 1, 0x007FFFFF,
            (1 << 31) | 1, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0x3F800001],
    "F64": [0, 1 << 63, 0x7FF << 52, 0xFFF << 52, (0x7FF << 52) | 1, 0x7FF8 << 48, (1 << 63) - 1,
            (0xFFF8 << 48) | 1, 1, (1 << 52) - 1, (1 << 63) | 1, 1 << 52, (0x7FF << 52) - 1,
            (0xFFF << 52) - 1, 0x3FF << 52, (0x3FF << 52) | 1],
}  # fmt: skip


def patterns(dtype: str, size: int):
    """`size` bit patterns of `dtype`: special ones half the time, the rest any pattern at all."""
    one = st.one_of(st.integers(0, (1 << BITS[dtype]) - 1), st.sampled_from(SPECIAL[dtype]))
    return st.lists(one, min_size=size, max_size=size)


def as_bytes(bits: int, values: list[int]) -> bytes:
    return np.array(values, dtype=UINT[bits]).tobytes()


@st.composite
def soup_inputs(draw):
    dtype = draw(st.sampled_from(sorted(BITS)))
    size = draw(st.one_of(st.integers(0, 70), st.sampled_from([1, 2, 3, 127, 129, 1023])))
    a = as_bytes(BITS[dtype], draw(patterns(dtype, size)))
    b = as_bytes(BITS[dtype], draw(patterns(dtype, size)))
    return dtype, a, b, draw(ALPHAS)


def kernel_soup(dtype: str, a: bytes, b: bytes, alpha: float, native: bool) -> bytes:
    work = bytearray(a)
    SoupKernel(alpha, native=native and dtype == "BF16").apply(dtype, memoryview(work), memoryview(b))
    return bytes(work)


def is_nan(dtype: str, raw: bytes) -> np.ndarray:
    bits = BITS[dtype]
    u = np.frombuffer(raw, UINT[bits]).astype(np.uint64)
    exponent = {"BF16": 8, "F16": 5, "F32": 8, "F64": 11}[dtype]
    fraction = bits - 1 - exponent
    magnitude = u & np.uint64((1 << (bits - 1)) - 1)
    return magnitude > np.uint64(((1 << exponent) - 1) << fraction)


def assert_same_soup(dtype: str, a: bytes, b: bytes, got: bytes, want: bytes) -> None:
    """Bit for bit, but where both inputs are NaNs: there a NaN, of either payload."""
    assert len(got) == len(want)
    both = is_nan(dtype, a) & is_nan(dtype, b)
    g, w = np.frombuffer(got, UINT[BITS[dtype]]), np.frombuffer(want, UINT[BITS[dtype]])
    assert g[~both].tobytes() == w[~both].tobytes()
    assert is_nan(dtype, got)[both].all() and is_nan(dtype, want)[both].all()


@pytest.mark.parametrize("native", KERNELS)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # alpha > float32 max
@settings(max_examples=200)
@given(soup_inputs())
@example(("BF16", b"", b"", 0.5))
@example(("BF16", as_bytes(16, [0x7F81, 0xFF80]), as_bytes(16, [0x7FC1, 0x0001]), 0.5))
# two NaNs of other payloads: the C kernel and numpy's float16 loop gave b's, the definition a's
@example(("BF16", as_bytes(16, [0x7F81, 0]), as_bytes(16, [0x7F82, 0]), 2.0))
@example(("F16", as_bytes(16, [0x7C01]), as_bytes(16, [0x7C02]), 2.0))
@example(("F16", as_bytes(16, [0x7C01, 0xFE00, 0x0001]), as_bytes(16, [0x7E01, 0x7C00, 0x8001]), 0.3))
@example(("F32", as_bytes(32, [0x7F800001, 0x00000001]), as_bytes(32, [0xFFC00001, 0x80000000]), 1e-45))
def test_the_kernels_are_the_definition_bit_for_bit(native, case):
    dtype, a, b, alpha = case
    assert_same_soup(dtype, a, b, kernel_soup(dtype, a, b, alpha, native), soup_reference(dtype, a, b, alpha))


@pytest.mark.parametrize("native", KERNELS)
@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
def test_tensors_past_a_compute_block_are_the_definition_bit_for_bit(native, dtype):
    """A size just past one compute block and odd: the second block's ragged tail. Every bit pattern of
    the 16-bit types appears (a full cycle of them), the wide ones drawn at random."""
    n = BLOCK_ELEMENTS + 4099
    bits = BITS[dtype]
    rng = np.random.default_rng(11)
    if bits == 16:
        a = np.resize(np.arange(1 << 16, dtype=np.uint16), n)
        b = rng.permutation(a)
    else:
        a = rng.integers(0, 1 << bits, n, dtype=UINT[bits])
        a[: len(SPECIAL[dtype])] = SPECIAL[dtype]
        b = rng.permutation(a)
    for alpha in (0.3, -0.25, 1.5):
        got = kernel_soup(dtype, a.tobytes(), b.tobytes(), alpha, native)
        assert_same_soup(
            dtype, a.tobytes(), b.tobytes(), got, soup_reference(dtype, a.tobytes(), b.tobytes(), alpha)
        )


def bf16_round_definition(f32_bits: int) -> int:
    """Round a float32 (its bits) to bf16 to nearest, ties to even; a NaN keeps its sign and its high
    payload bits and is made quiet."""
    high, low = f32_bits >> 16, f32_bits & 0xFFFF
    if (f32_bits >> 23) & 0xFF == 0xFF and f32_bits & 0x7FFFFF:
        return high | 0x0040
    return high + (low > 0x8000 or (low == 0x8000 and high & 1))


@settings(max_examples=300)
@given(st.lists(st.one_of(st.integers(0, (1 << 32) - 1), st.sampled_from(
    [0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7F7F8000, 0xFF7F8000, 0x00008000, 0x00018000, 0x7F800001,
     0xFF800001, 0x7FC00000, 0x7F80FFFF, 0x80000000, 0x7F800000]
)), max_size=50))  # fmt: skip
def test_bf16_rounding_is_round_to_nearest_even(values):
    """narrow (the ties merge's rounding) and soup_reference's rounding give the definition's bits; the
    soup's own kernels round sums of bf16 values, which the test above covers."""
    f32 = np.array(values, dtype=np.uint32).view(np.float32)
    want = [bf16_round_definition(v) for v in values]
    assert np.frombuffer(narrow("BF16", f32), np.uint16).tolist() == want
