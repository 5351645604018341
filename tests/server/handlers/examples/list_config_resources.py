"""ListConfigResources (key 74): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(resource_types=[])


def failing(b: Broker, version: int) -> dict:
    return dict(resource_types=[1])   # v1: not a type v1 lists


def failing_may_answer_none(version: int) -> bool:
    return version == 0   # v0 lists subscriptions: only an authorizer could refuse it
