"""AlterClientQuotas (key 49): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(entries=[{"entity": [{"entity_type": "client-id", "entity_name": None}],
                          "ops": [{"key": "request_percentage", "value": 50.0}]}])


def failing(b: Broker, version: int) -> dict:
    return dict(entries=[{"entity": [{"entity_type": "user", "entity_name": ""}],
                          "ops": [{"key": "producer_byte_rate", "value": 1.0}]}])
