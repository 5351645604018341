"""User quotas apply to the request's principal (Kafka's sanitizedUser): a
SASL client logged in as alice is throttled by alice's quota, an anonymous
one is not."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from tests.server.conftest import batch
from tests.support import produce_body, request_body


def produce_as(broker, principal: str) -> dict:
    body = request_body(ApiKey.PRODUCE, 9, **produce_body("t", 0, batch([b"x" * 1000])))
    request = broker.make_request(ApiKey.PRODUCE, 9, body)
    request.principal = principal
    return broker.decode(request, broker.apis.build_response(request))


def test_a_user_quota_throttles_that_principal_only(broker):
    broker.create_topic("t")
    answer = broker.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, entries=[{
        "entity": [{"entity_type": "user", "entity_name": "alice"}],
        "ops": [{"key": "producer_byte_rate", "value": 10.0, "remove": False}]}],
        validate_only=False)
    assert answer["entries"][0]["error_code"] == 0
    assert produce_as(broker, "User:ANONYMOUS")["throttle_time_ms"] == 0
    assert produce_as(broker, "User:bob")["throttle_time_ms"] == 0
    assert produce_as(broker, "User:alice")["throttle_time_ms"] > 0
