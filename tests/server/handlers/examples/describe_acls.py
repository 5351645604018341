"""DescribeAcls (key 29): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.conftest import Broker
from tests.server.handlers.examples import OWN_TESTS


def typical(b: Broker, version: int) -> dict:
    return dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                principal_filter=None, host_filter=None, operation=1, permission_type=1)


def failing(b: Broker, version: int) -> dict:
    return typical(b, version)   # SECURITY_DISABLED: no authorizer


def typical_error(version: int) -> int:
    return ErrorCode.SECURITY_DISABLED   # the examples' broker has no authorizer


WITHOUT_ACLS = OWN_TESTS   # tests/server/handlers/test_acl_apis.py
