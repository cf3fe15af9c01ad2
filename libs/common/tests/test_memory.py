"""The allocator setting for long-running processes."""

from __future__ import annotations

import sys

import pytest

from peertrain.common.memory import return_freed_memory_to_os


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_allocator_settings_take_on_linux():
    assert return_freed_memory_to_os() is True
    assert return_freed_memory_to_os(1 << 20, arena_max=4) is True
