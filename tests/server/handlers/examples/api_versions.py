"""ApiVersions (key 18): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, batch
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    return dict(client_software_name="tests", client_software_version="1.0")


def failing(b: Broker, version: int) -> dict:
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    return dict(client_software_name="bad name", client_software_version="")


def failing_may_answer_none(version: int) -> bool:
    return version < 3   # no software name to refuse before v3


WITHOUT_ACLS = UNCHECKED   # asked before anything else, of anyone
