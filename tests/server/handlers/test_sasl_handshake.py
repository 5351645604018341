"""SaslHandshake (17) and SaslAuthenticate (36) in KafkaApis: only ever reached
after authentication (or on a listener without SASL), so ILLEGAL_SASL_STATE, as
Kafka's handleSaslHandshakeRequest / handleSaslAuthenticateRequest answer."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode


@pytest.mark.parametrize("version", [0, 1])
def test_handshake_after_authentication_is_illegal(broker, version):
    body = broker.call(ApiKey.SASL_HANDSHAKE, version, mechanism="PLAIN")
    assert body == {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_authenticate_after_authentication_is_illegal(broker, version):
    body = broker.call(ApiKey.SASL_AUTHENTICATE, version, auth_bytes=b"\0a\0b")
    assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert body["error_message"] == ("SaslAuthenticate request received after successful "
                                     "authentication")
