"""Every API at every served version, through KafkaApis.build_response with real
encoding: a typical request, a failing one, every error response, and a handler
that raises.

Each request is encoded as a client would send it, parsed as the Processor
parses it, handled, and its response bytes decoded again, so a body that
does not fit the schema at some version (a null in a non-nullable field, a
missing array) fails here rather than as a closed connection in production.
The requests are in examples/<handler module>.py, found through HANDLERS; a new
API brings its own (test_every_handler_has_its_examples says which is missing).
"""

from __future__ import annotations

import pkgutil

import pytest

from kafka_net.network.request_channel import SendResponse
from kafka_net.protocol import encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS
from kafka_net.server.handlers import CLOSE_CONNECTION, DEFERRED, NO_RESPONSE
from tests.server.conftest import Deferred, all_served, request_body
from tests.server.handlers import examples
from tests.server.handlers.examples import (
    failing_may_answer_none, failing_request, typical_error, typical_request)


def test_every_handler_has_its_examples():
    """One examples module per row of the table, each with both requests, and no
    module of examples for an API not served."""
    for key, row in HANDLERS.items():
        module = examples.examples_of(key)
        assert callable(module.typical) and callable(module.failing), row
    handlers = {row.module_name.rpartition(".")[2] for row in HANDLERS.values()}
    found = {info.name for info in pkgutil.iter_modules(examples.__path__)}
    assert found - {"support"} == handlers


@pytest.mark.parametrize("api_key,version", all_served())
def test_every_handler_answers_and_encodes_at_every_served_version(rich, api_key, version):
    body = request_body(api_key, version, **typical_request(rich, api_key, version))
    request, response = rich.respond(api_key, version, body)
    if isinstance(response, Deferred):
        decoded = response.body()
    else:
        assert isinstance(response, SendResponse), response
        decoded = rich.decode(request, response)
    assert isinstance(decoded, dict)
    expected = typical_error(api_key, version)   # NONE unless its examples say otherwise
    if "error_code" in decoded and expected is not None:
        assert decoded["error_code"] == expected, decoded


@pytest.mark.parametrize("api_key,version", all_served())
def test_every_handler_error_path_encodes_at_every_served_version(rich, api_key, version):
    body = request_body(api_key, version, **failing_request(rich, api_key, version))
    request, response = rich.respond(api_key, version, body)
    assert isinstance(response, SendResponse), response
    decoded = rich.decode(request, response)
    codes = _all_error_codes(decoded)
    assert codes - {ErrorCode.NONE} or failing_may_answer_none(api_key, version), decoded


@pytest.mark.parametrize("api_key,version", all_served())
def test_every_error_response_encodes_at_every_served_version(rich, api_key, version):
    body = request_body(api_key, version, **typical_request(rich, api_key, version))
    request = rich.make_request(api_key, version, body)
    module = HANDLERS[api_key]
    for code in (ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NOT_COORDINATOR,
                 ErrorCode.INVALID_REQUEST):
        answer = module.error_response(request.body, version, code)
        if answer is CLOSE_CONNECTION:
            continue
        encode_response(api_key, version, 1, answer)


class _Raises:
    """A handler module whose handle() raises: KafkaApis must fall back to the
    module's error_response, encoded, not a closed connection."""

    def __init__(self, module):
        self.API_KEY, self.VERSIONS = module.API_KEY, module.VERSIONS
        self.error_response = module.error_response

    @staticmethod
    def handle(ctx, request):
        raise RuntimeError("handler bug")


@pytest.mark.parametrize("api_key,version", all_served())
def test_handler_exception_gives_the_error_response_at_every_version(rich, api_key, version):
    """The error must reach the client: where a version has no top-level error
    code (Fetch v4-v6, OffsetFetch v1), Kafka's getErrorResponse puts it in
    every requested partition instead."""
    rich.apis.set_handlers({**HANDLERS, api_key: _Raises(HANDLERS[api_key])})
    body = request_body(api_key, version, **typical_request(rich, api_key, version))
    request, response = rich.respond(api_key, version, body)
    assert isinstance(response, SendResponse), response
    decoded = rich.decode(request, response)
    codes = _all_error_codes(decoded)
    if api_key == ApiKey.DESCRIBE_LOG_DIRS and version < 3:
        # Kafka's getErrorResponse sets only the top-level code, which v1-v2 lack:
        # the client sees no log dirs.
        assert decoded["results"] == [], decoded
        return
    assert ErrorCode.UNKNOWN_SERVER_ERROR in codes or not codes, decoded


def _all_error_codes(value) -> set:
    found = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "error_code" or k.endswith("_error_code"):   # partition_error_code
                found.add(v)
            else:
                found |= _all_error_codes(v)
    elif isinstance(value, list):
        for v in value:
            found |= _all_error_codes(v)
    return found



def test_markers_are_distinct():
    assert len({id(CLOSE_CONNECTION), id(DEFERRED), id(NO_RESPONSE)}) == 3
    assert repr(DEFERRED) == "DEFERRED"


def test_every_handler_module_has_the_documented_shape():
    for key, module in HANDLERS.items():
        assert module.API_KEY == key
        assert callable(module.handle) and callable(module.error_response)
        loaded = module.load()   # the row's module, imported
        # The versions live in the row only: a module's own would go unread.
        assert not hasattr(loaded, "VERSIONS") and not hasattr(loaded, "LEGACY_LOW"), loaded
        doc = loaded.__doc__
        assert doc and f"API key {int(key)}" in doc
        assert f"v{module.VERSIONS.low}-v{module.VERSIONS.high}" in doc, module
