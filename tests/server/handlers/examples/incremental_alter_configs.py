"""IncrementalAlterConfigs (key 44): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(resources=[{"resource_type": 2, "resource_name": "t", "configs": [
        {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}])


def failing(b: Broker, version: int) -> dict:
    configs = [{"name": "cleanup.policy", "value": "nonsense", "config_operation": 0}]
    return dict(resources=[
        {"resource_type": 2, "resource_name": "t", "configs": configs},
        {"resource_type": 4, "resource_name": "1", "configs": configs},
        {"resource_type": 2, "resource_name": "missing", "configs": []}])
