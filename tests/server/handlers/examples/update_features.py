"""UpdateFeatures (key 57): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    return dict(validate_only=True, feature_updates=[
        {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1}])


def failing(b: Broker, version: int) -> dict:
    return dict(feature_updates=[
        {"feature": "no.such.feature", "max_version_level": 1, "upgrade_type": 1}])
