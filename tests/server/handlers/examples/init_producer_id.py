"""InitProducerId (key 22): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(transactional_id=None, transaction_timeout_ms=1000)


def failing(b: Broker, version: int) -> dict:
    return dict(transactional_id="tx")
