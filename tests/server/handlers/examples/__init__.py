"""Example requests, one module per handler: ``examples/<handler module>.py``.

Each module, named as its API's module in kafka_net/server/handlers (and its
row in :data:`kafka_net.server.apis.HANDLERS`), has ``typical(b, version)``: a
request its handler answers with data where it can, and ``failing(b,
version)``: one it answers with errors in the body (unknown topics, groups and
members, bad names: the paths where nulls and defaults lurk).  They run
against the ``rich`` broker of tests/server/conftest.py (topic "t" with two
partitions and data, topic "u", a Stable group "g" with a committed offset),
in tests/server/handlers/test_every_api.py and test_acl_checks.py.

A new API brings its module here; the tests find it through the table.  What
an API answers unlike most is said in its own module too, so that the tests
hold no list of API keys:

* ``typical_error(version)``: the error code its typical request gets (None:
  not checked); without it, NONE;
* ``failing_may_answer_none(version)``: True where its failing request may be
  answered with no error (it filters or lists, or the version has no field to
  refuse with); without it, False;
* ``WITHOUT_ACLS``: what a principal with no ACL gets from its typical request
  (test_acl_checks.py): :data:`UNCHECKED` (Kafka checks nothing, or only
  filters what it shows), :data:`OWN_TESTS` (the ACL APIs, tested in
  test_acl_apis.py), or the top-level error code of an API that refuses by
  something other than an ACL (the token APIs); without it, a refusal with an
  ``*_AUTHORIZATION_FAILED`` code.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS

UNCHECKED = "unchecked"    # WITHOUT_ACLS: Kafka checks nothing, or only filters
OWN_TESTS = "own tests"    # WITHOUT_ACLS: the ACL APIs, tested on their own
REFUSED = "refused"        # the default: an *_AUTHORIZATION_FAILED code


def examples_of(api_key: int) -> ModuleType:
    """The examples module of the API's handler (named as the handler module)."""
    handler = HANDLERS[api_key].module_name.rpartition(".")[2]
    return importlib.import_module(f"{__name__}.{handler}")


def typical_request(b, api_key: int, version: int) -> dict:
    return examples_of(api_key).typical(b, version)


def failing_request(b, api_key: int, version: int) -> dict:
    return examples_of(api_key).failing(b, version)


def typical_error(api_key: int, version: int) -> int | None:
    answer = getattr(examples_of(api_key), "typical_error", None)
    return ErrorCode.NONE if answer is None else answer(version)


def failing_may_answer_none(api_key: int, version: int) -> bool:
    check = getattr(examples_of(api_key), "failing_may_answer_none", None)
    return check is not None and check(version)


def without_acls(api_key: int):
    return getattr(examples_of(api_key), "WITHOUT_ACLS", REFUSED)
