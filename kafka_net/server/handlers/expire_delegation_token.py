"""ExpireDelegationToken (API key 40): serves v1-v2; v0 while playing a release
before 4.0 (KIP-896 removed it; ``legacy_low``).

Behaviour (Kafka's ``KafkaApis.handleExpireTokenRequest``, then
``DelegationTokenControlManager.expireDelegationToken``), in order:

* A connection that may not ask for tokens (PLAINTEXT, SSL without a client
  certificate, a token login): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry -1.
* No ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED.
* No token has this HMAC: DELEGATION_TOKEN_NOT_FOUND.
* The requester is neither its owner nor one of its renewers:
  DELEGATION_TOKEN_OWNER_MISMATCH.
* ``expiry_time_period_ms`` < 0: the token is removed now (a
  RemoveDelegationTokenRecord); the answer's expiry is now.
* The token is already past its expiry or max timestamp: DELEGATION_TOKEN_EXPIRED.
* Otherwise its expiry becomes now + ``expiry_time_period_ms``, capped at its
  max timestamp (a DelegationTokenRecord); the expiry check removes it then.

The controller's errors carry expiry 0 (its response's default).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode

API_KEY = ApiKey.EXPIRE_DELEGATION_TOKEN


def handle(ctx, request: dict) -> dict:
    if not ctx.allow_token_requests():
        return error_response(request, ctx.api_version,
                              ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    error, expiry = ctx.delegation_tokens.expire(ctx.principal, bytes(request["hmac"]),
                                                 request["expiry_time_period_ms"])
    return {"error_code": error, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "expiry_timestamp_ms": -1, "throttle_time_ms": 0}
