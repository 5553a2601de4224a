import platform

import pytest

from pairstore.heap import return_large_blocks


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_glibc_takes_the_fixed_mmap_threshold_and_a_second_call_changes_nothing():
    assert return_large_blocks() is True
    assert return_large_blocks() is True
