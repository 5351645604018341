"""SaslAuthenticate (API key 36): serves v0-v2, once a channel is ready.

Behaviour (Kafka's ``KafkaApis.handleSaslAuthenticateRequest``): the SASL
exchange runs in the network layer's SaslServerAuthenticator before the
channel is ready; a SaslAuthenticate that reaches this handler came after
authentication, or on a listener without SASL, and gets ILLEGAL_SASL_STATE
with Kafka's message.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode

API_KEY = ApiKey.SASL_AUTHENTICATE


def handle(ctx, request: dict) -> dict:
    body = error_response(request, ctx.api_version, ErrorCode.ILLEGAL_SASL_STATE)
    body["error_message"] = "SaslAuthenticate request received after successful authentication"
    return body


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "error_message": None, "auth_bytes": b"",
            "session_lifetime_ms": 0}
