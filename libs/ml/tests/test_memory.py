"""The allocator setting for long-running processes."""

from __future__ import annotations

import sys

import pytest

from peertrain.ml.memory import return_freed_tensors_to_os


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_allocator_setting_takes_on_linux():
    assert return_freed_tensors_to_os() is True
