"""KafkaApis: the dispatch table, build_response, response kinds, RequestContext."""

from __future__ import annotations

import pkgutil
import types

import pytest

from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import (
    CloseConnectionResponse, NoOpResponse, Request, SendResponse)
from kafka_net.protocol import decode_response, encode_request
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.codec import encode_response
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.framing import encode_frame
from kafka_net.protocol.headers import RequestHeader, encode_request_header
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.schema import Versions
from kafka_net.server import apis as apis_module
from kafka_net.server import handlers as handlers_package
from kafka_net.server.apis import HANDLERS, KafkaApis, RequestContext
from kafka_net.server.handlers import (
    CLOSE_CONNECTION, DEFERRED, NO_RESPONSE, api_versions, heartbeat, metadata)
from kafka_net.server.metadata_cache import MetadataCache
from tests.server.conftest import ADVERTISED, Broker, FakeChannel, request_body


def fake_module(api_key, versions, handle, error_response=None):
    module = types.SimpleNamespace(API_KEY=api_key, VERSIONS=versions, handle=handle)
    module.error_response = error_response or (
        lambda request, version, code: {"error_code": code})
    return module


# -- the dispatch table -----------------------------------------------------------------


def test_handlers_table_is_keyed_by_each_modules_api_key_in_order():
    assert list(HANDLERS) == sorted(HANDLERS)
    for key, module in HANDLERS.items():
        assert module.API_KEY == key
        assert isinstance(module.VERSIONS, Versions) and module.VERSIONS.high is not None
        # Every served version is one the codec can read and write.
        message = MESSAGES[key]
        for v in range(module.VERSIONS.low, module.VERSIONS.high + 1):
            assert v in message.request.valid and v in message.response.valid, (key, v)


def test_every_handler_module_has_one_row_and_every_row_a_module():
    """The table is the one list of served APIs: a handler module nobody routes to,
    or a row naming no module, fails here (what is served follows from the rows)."""
    modules = {info.name for info in pkgutil.iter_modules(handlers_package.__path__)}
    rows = [row.module_name.rpartition(".")[2] for row in HANDLERS.values()]
    assert len(rows) == len(set(rows))
    assert set(rows) == modules


def test_supported_versions_come_from_the_table():
    apis = KafkaApis(ServerConfig(), MetadataCache(1, "c"))
    assert apis.supported_versions() == {k: m.VERSIONS for k, m in HANDLERS.items()}


def test_set_handlers_replaces_the_table_and_what_is_advertised():
    b = Broker()
    before = b.apis.supported_versions()
    b.apis.set_handlers({k: HANDLERS[k] for k in (ApiKey.API_VERSIONS, ApiKey.HEARTBEAT)})
    after = b.apis.supported_versions()
    assert after == {ApiKey.API_VERSIONS: HANDLERS[ApiKey.API_VERSIONS].VERSIONS,
                     ApiKey.HEARTBEAT: HANDLERS[ApiKey.HEARTBEAT].VERSIONS}
    assert before is not after and ApiKey.METADATA in before  # swapped, not mutated
    body = b.call(ApiKey.API_VERSIONS, 3, client_software_name="a", client_software_version="1")
    assert [(e["api_key"], e["min_version"], e["max_version"]) for e in body["api_keys"]] == [
        (12, 0, 4), (18, 0, 4)]
    # The Processor's parse now refuses an API that left the table.
    frame = encode_request(ApiKey.METADATA, 9, 1, request_body(ApiKey.METADATA, 9))
    with pytest.raises(InvalidRequestError, match="not enabled"):
        b.apis.parse_request(frame[4:])


def test_set_handlers_copies_the_mapping():
    b = Broker()
    table = {ApiKey.API_VERSIONS: HANDLERS[ApiKey.API_VERSIONS]}
    b.apis.set_handlers(table)
    table[ApiKey.METADATA] = metadata
    assert ApiKey.METADATA not in b.apis.supported_versions()


def test_set_handlers_can_narrow_a_version_range():
    b = Broker()
    narrow = fake_module(ApiKey.METADATA, Versions(1, 4), metadata.handle, metadata.error_response)
    b.apis.set_handlers({**HANDLERS, ApiKey.METADATA: narrow})
    body = b.call(ApiKey.API_VERSIONS, 0)
    entry = next(e for e in body["api_keys"] if e["api_key"] == ApiKey.METADATA)
    assert (entry["min_version"], entry["max_version"]) == (1, 4)
    frame = encode_request(ApiKey.METADATA, 9, 1, request_body(ApiKey.METADATA, 9))
    with pytest.raises(InvalidRequestError):
        b.apis.parse_request(frame[4:])
    assert b.call(ApiKey.METADATA, 4, topics=[])["topics"] == []


# -- ApiVersions special cases ------------------------------------------------------------


def _too_new_api_versions_frame(version: int, correlation_id: int) -> bytes:
    header = RequestHeader(ApiKey.API_VERSIONS, version, correlation_id, "future-client", 2)
    return encode_frame(encode_request_header(header) + b"\x07whatever\x00")


@pytest.mark.parametrize("version", [5, 17, 32767])
def test_too_new_api_versions_is_answered_at_v0_with_unsupported_version(version):
    b = Broker()
    parsed = b.apis.parse_request(_too_new_api_versions_frame(version, 77)[4:])
    assert parsed.unsupported_version and parsed.body is None
    request = Request.from_parsed(0, "c", "PLAINTEXT", ("1.2.3.4", 5), parsed)
    response = b.apis.build_response(request)
    assert isinstance(response, SendResponse)
    correlation, body = decode_response(ApiKey.API_VERSIONS, 0, response.data[4:])
    assert correlation == 77
    assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert [(e["api_key"], e["min_version"], e["max_version"]) for e in body["api_keys"]] == [
        (18, 0, 4)]


@pytest.mark.parametrize("version", [3, 4])
def test_flexible_api_versions_response_uses_header_v0(version):
    """KIP-511: the ApiVersions response header never has tagged fields."""
    b = Broker()
    request, response = b.respond(ApiKey.API_VERSIONS, version, request_body(
        ApiKey.API_VERSIONS, version, client_software_name="n", client_software_version="1"))
    payload = response.data[4:]
    assert int.from_bytes(payload[:4], "big") == request.header.correlation_id
    # Header v0 is the correlation id alone; the body (error_code 0) follows at once.
    assert payload[4:6] == b"\x00\x00"


# -- build_response and the response kinds ------------------------------------------------


def test_no_response_marker_becomes_a_noop_response():
    b = Broker()
    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), lambda ctx, req: NO_RESPONSE)})
    request, response = b.respond(ApiKey.HEARTBEAT, 1, request_body(ApiKey.HEARTBEAT, 1))
    assert isinstance(response, NoOpResponse) and response.request is request


def test_close_connection_marker_becomes_a_close_connection_response():
    b = Broker()
    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), lambda ctx, req: CLOSE_CONNECTION)})
    _, response = b.respond(ApiKey.HEARTBEAT, 1, request_body(ApiKey.HEARTBEAT, 1))
    assert isinstance(response, CloseConnectionResponse)


def test_deferred_answer_is_sent_later_through_the_request_channel():
    b = Broker()
    parked = []

    def handle(ctx, req):
        parked.append(ctx)
        return DEFERRED

    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), handle)})
    request, deferred = b.respond(ApiKey.HEARTBEAT, 4, request_body(ApiKey.HEARTBEAT, 4))
    assert not deferred.done and b.channel.responses == []
    [ctx] = parked
    assert isinstance(ctx, RequestContext) and ctx.request is request
    ctx.complete({"throttle_time_ms": 0, "error_code": ErrorCode.REBALANCE_IN_PROGRESS})
    assert deferred.body()["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS


def test_handle_sends_the_response_and_stamps_local_completion():
    b = Broker()
    request = b.make_request(ApiKey.API_VERSIONS, 0, {})
    assert request.api_local_complete_time_ns == 0
    b.apis.handle(request)
    [response] = b.channel.responses
    assert isinstance(response, SendResponse) and response.request is request
    assert request.api_local_complete_time_ns > 0


def test_handle_sends_nothing_for_a_parked_request():
    b = Broker()
    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), lambda ctx, req: DEFERRED)})
    b.apis.handle(b.make_request(ApiKey.HEARTBEAT, 0, request_body(ApiKey.HEARTBEAT, 0)))
    assert b.channel.responses == []


def test_handler_exception_gives_unknown_server_error():
    b = Broker()

    def boom(ctx, req):
        raise KeyError("bug")

    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), boom, heartbeat.error_response)})
    body = b.call(ApiKey.HEARTBEAT, 2)
    assert body["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR


def test_error_response_that_raises_closes_the_connection():
    b = Broker()

    def boom(*args):
        raise KeyError("bug")

    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), boom, boom)})
    assert isinstance(b.call(ApiKey.HEARTBEAT, 2), CloseConnectionResponse)


def test_body_that_cannot_be_encoded_closes_the_connection():
    b = Broker()
    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), lambda ctx, req: {"error_code": "not a number"})})
    assert isinstance(b.call(ApiKey.HEARTBEAT, 2), CloseConnectionResponse)


def test_produce_acks_zero_handler_exception_closes_the_connection():
    b = Broker()
    b.create_topic("t")

    def boom(ctx, req):
        raise RuntimeError("bug")

    from kafka_net.server.handlers import produce
    b.apis.set_handlers({**HANDLERS, ApiKey.PRODUCE: fake_module(
        ApiKey.PRODUCE, HANDLERS[ApiKey.PRODUCE].VERSIONS, boom, produce.error_response)})
    body = dict(acks=0, timeout_ms=1, topic_data=[{"name": "t", "partition_data": [
        {"index": 0, "records": None}]}])
    assert isinstance(b.call(ApiKey.PRODUCE, 9, **body), CloseConnectionResponse)
    body["acks"] = 1
    answer = b.call(ApiKey.PRODUCE, 9, **body)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.UNKNOWN_SERVER_ERROR


def test_every_response_echoes_the_correlation_id():
    b = Broker()
    for version in range(0, 13):
        request, response = b.respond(ApiKey.METADATA, version,
                                      request_body(ApiKey.METADATA, version, topics=[]))
        assert b.decode(request, response) is not None  # decode checks the correlation id


def test_a_read_only_answer_is_encoded_once_and_carries_each_correlation_id():
    """ApiVersions returns a read-only body; its cached frame must still be exactly
    what encoding it afresh gives, with each request's own correlation id, and must
    follow a new dispatch table."""
    b = Broker()
    for table in (HANDLERS, {k: HANDLERS[k] for k in (ApiKey.API_VERSIONS, ApiKey.HEARTBEAT)}):
        b.apis.set_handlers(table)
        for version in range(0, 5):
            for _ in range(2):
                request, response = b.respond(ApiKey.API_VERSIONS, version, request_body(
                    ApiKey.API_VERSIONS, version, client_software_name="n",
                    client_software_version="1"))
                body = dict(api_versions.handle(RequestContext(request, b.apis), request.body))
                assert bytes(response.data) == encode_response(
                    ApiKey.API_VERSIONS, version, request.header.correlation_id, body)
        # Less the two telemetry APIs: this broker exports no client metrics.
        assert len(b.decode(request, response)["api_keys"]) == len(
            set(table) - {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY})


def test_metrics_count_requests_and_top_level_errors():
    b = Broker()
    b.call(ApiKey.API_VERSIONS, 0)
    b.call(ApiKey.API_VERSIONS, 3, client_software_name="bad name", client_software_version="1")
    b.call(ApiKey.HEARTBEAT, 0, group_id="nope")
    assert b.apis.metrics.requests_seen(ApiKey.API_VERSIONS) == [0, 3]
    assert b.apis.metrics.errors[(ApiKey.API_VERSIONS, ErrorCode.INVALID_REQUEST)] == 1
    assert b.apis.metrics.errors[(ApiKey.HEARTBEAT, ErrorCode.UNKNOWN_MEMBER_ID)] == 1


# -- RequestContext and broker wiring -------------------------------------------------------


def test_request_context_exposes_the_request_and_the_broker():
    b = Broker()
    seen = {}

    def handle(ctx, req):
        seen.update(version=ctx.api_version, listener=ctx.listener_name,
                    unsupported=ctx.unsupported_version, config=ctx.config,
                    cache=ctx.metadata_cache, supported=ctx.supported_versions)
        return {"error_code": 0}

    b.apis.set_handlers({**HANDLERS, ApiKey.HEARTBEAT: fake_module(
        ApiKey.HEARTBEAT, Versions(0, 4), handle)})
    b.call(ApiKey.HEARTBEAT, 3)
    assert seen == {"version": 3, "listener": "PLAINTEXT", "unsupported": False,
                    "config": b.config, "cache": b.metadata_cache,
                    "supported": b.apis.supported_versions()}


def test_request_context_create_topic_creates_partitions_once():
    b = Broker()
    request = b.make_request(ApiKey.METADATA, 9, request_body(ApiKey.METADATA, 9))
    ctx = RequestContext(request, b.apis)
    first = ctx.create_topic("auto", 2)
    again = ctx.create_topic("auto", 5)
    assert first == again and first.num_partitions == 2
    assert b.replica_manager.partition("auto", 1) is not None
    assert b.replica_manager.partition("auto", 2) is None


def test_producer_ids_are_never_reused():
    b = Broker()
    ids = [b.apis.allocate_producer_id() for _ in range(100)]
    assert len(set(ids)) == 100 and all(i >= 0 for i in ids)


def test_delete_topic_without_a_group_coordinator():
    apis = KafkaApis(ServerConfig(), MetadataCache(1, "c"))
    apis.create_topic("t", 1)
    assert apis.delete_topic("t") is True
    assert apis.delete_topic("t") is False
    assert apis.replica_manager.partition("t", 0) is None


def test_apis_without_a_replica_manager_builds_its_own():
    apis = KafkaApis(ServerConfig(), MetadataCache(1, "c"), FakeChannel())
    assert apis.replica_manager is not None and apis.group_coordinator is None


def test_metadata_uses_the_listener_the_request_came_in_on():
    b = Broker()
    request = b.make_request(ApiKey.METADATA, 9, request_body(ApiKey.METADATA, 9, topics=[]))
    request.listener_name = "OTHER"
    body = b.decode(request, b.apis.build_response(request))
    assert body["brokers"] == []  # no advertised endpoint for that listener
    request = b.make_request(ApiKey.METADATA, 9, request_body(ApiKey.METADATA, 9, topics=[]))
    body = b.decode(request, b.apis.build_response(request))
    assert [(x["host"], x["port"]) for x in body["brokers"]] == [(ADVERTISED.host,
                                                                   ADVERTISED.port)]


def test_top_error_helper():
    assert apis_module._top_error({"error_code": 5}) == 5
    assert apis_module._top_error({"topics": []}) is None
    assert apis_module._top_error(NO_RESPONSE) is None
    assert apis_module._top_error(types.MappingProxyType({"error_code": 7})) == 7
