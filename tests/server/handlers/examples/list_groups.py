"""ListGroups (key 16): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    return dict()


def failing(b: Broker, version: int) -> dict:
    return dict(states_filter=["Dead"], types_filter=["consumer"])


def failing_may_answer_none(version: int) -> bool:
    return True   # a filter that matches nothing lists nothing


WITHOUT_ACLS = UNCHECKED   # listing shows only the groups one may describe
