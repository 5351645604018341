"""AlterUserScramCredentials (key 51): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(deletions=[], upsertions=[{"name": "alice", "mechanism": 1,
                                           "iterations": 4096, "salt": b"salt",
                                           "salted_password": bytes(32)}])


def failing(b: Broker, version: int) -> dict:
    return dict(deletions=[{"name": "nobody", "mechanism": 1}], upsertions=[])
