"""Example requests, one module per handler: ``examples/<handler module>.py``.

Each module, named as its API's module in kafka_net/server/handlers (and its
row in :data:`kafka_net.server.apis.HANDLERS`), has ``typical(b, version)``: a
request its handler answers with data where it can, and ``failing(b,
version)``: one it answers with errors in the body (unknown topics, groups and
members, bad names: the paths where nulls and defaults lurk).  They run
against the ``rich`` broker of tests/server/conftest.py (topic "t" with two
partitions and data, topic "u", a Stable group "g" with a committed offset),
in tests/server/handlers/test_every_api.py and test_acl_checks.py.

A new API brings its module here; the tests find it through the table.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kafka_net.server.apis import HANDLERS


def examples_of(api_key: int) -> ModuleType:
    """The examples module of the API's handler (named as the handler module)."""
    handler = HANDLERS[api_key].module_name.rpartition(".")[2]
    return importlib.import_module(f"{__name__}.{handler}")


def typical_request(b, api_key: int, version: int) -> dict:
    return examples_of(api_key).typical(b, version)


def failing_request(b, api_key: int, version: int) -> dict:
    return examples_of(api_key).failing(b, version)
