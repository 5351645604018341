"""Fetch (key 1): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, fetch_fields


def typical(b: Broker, version: int) -> dict:
    return fetch_fields(b, partitions=[("t", 0, 0), ("t", 1, 0)])


def failing(b: Broker, version: int) -> dict:
    return fetch_fields(b, partitions=[("missing", 0, 0), ("t", 0, 99)])
