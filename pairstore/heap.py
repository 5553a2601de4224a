"""Large blocks of native memory given back to the system when freed: for the reader that streams a file
larger than memory in batches (`audit leaks`, pairstore.holdout.file_texts).

glibc's malloc raises its mmap threshold each time a large mapped block is freed (up to 32 MiB). After
that, large blocks come from its heaps, and a heap whose free space sits between blocks still in use stays
with the process. Reading a 2,000,000-row mixture in batches, the process held 570 MB of such free memory
at its peak (bench/bench_leaks.py's file). A fixed threshold maps every block of LARGE_BLOCK or more apart,
so freeing it returns it: the peak fell from 1.2-1.3 GB to 1.15-1.19 GB there, for about 1 s more of system
time in 55 s of CPU. Ingest does not call it: a 50,000-row ingest maps and faults in its ten-megabyte
columns again at each batch, which cost it more CPU than its memory gained.

    return_large_blocks()   # once per process; True where the C library took the setting
"""

from __future__ import annotations

import ctypes
import functools
import platform

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
LARGE_BLOCK = 1 << 20


@functools.cache
def return_large_blocks() -> bool:
    """Set glibc's mmap threshold to LARGE_BLOCK (which also stops it moving); elsewhere nothing."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
    except (OSError, AttributeError):  # a C library without mallopt
        return False
