"""The shared test harness's own guarantees (tests/support.py)."""

from __future__ import annotations

from tests.support import wait_until


def test_wait_until_helper_is_bounded():
    assert wait_until(lambda: True)
    assert not wait_until(lambda: False, timeout=0.01)
