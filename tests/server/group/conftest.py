"""Fixtures for the GroupCoordinator tests (helpers in support.py)."""

import pytest

from tests.server.group.support import make_coordinator


@pytest.fixture
def coord():
    c = make_coordinator()
    c.start()
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture
def delayed_coord():
    c = make_coordinator(initial_rebalance_delay_ms=400)
    c.start()
    try:
        yield c
    finally:
        c.shutdown()
