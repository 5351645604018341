"""CreateAcls (key 30): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples import OWN_TESTS


def typical(b: Broker, version: int) -> dict:
    return dict(creations=[{"resource_type": 2, "resource_name": "t",
                            "resource_pattern_type": 3, "principal": "User:alice",
                            "host": "*", "operation": 3, "permission_type": 3}])


def failing(b: Broker, version: int) -> dict:
    return typical(b, version)   # SECURITY_DISABLED: no authorizer


WITHOUT_ACLS = OWN_TESTS   # tests/server/handlers/test_acl_apis.py
