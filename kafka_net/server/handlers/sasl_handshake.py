"""SaslHandshake (API key 17): serves v0-v1, once a channel is ready.

Behaviour (Kafka's ``KafkaApis.handleSaslHandshakeRequest``):

* Before authentication a SASL listener's SaslServerAuthenticator answers
  SaslHandshake on the network thread (:mod:`kafka_net.network.authenticator`);
  with a session lifetime set (``connections.max.reauth.ms``) a SaslHandshake
  on an authenticated channel starts a re-authentication there too.
* Any SaslHandshake that reaches this handler (a PLAINTEXT listener, or a
  SASL channel without re-authentication) gets ILLEGAL_SASL_STATE.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode

API_KEY = ApiKey.SASL_HANDSHAKE


def handle(ctx, request: dict) -> dict:
    return error_response(request, ctx.api_version, ErrorCode.ILLEGAL_SASL_STATE)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "mechanisms": []}
