"""RenewDelegationToken (API key 39): serves v1-v2; v0 while playing a release
before 4.0 (KIP-896 removed it; ``legacy_low``).

Behaviour (Kafka's ``KafkaApis.handleRenewTokenRequest``, then
``DelegationTokenControlManager.renewDelegationToken``), in order:

* A connection that may not ask for tokens (PLAINTEXT, SSL without a client
  certificate, a token login): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry -1.
* No ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED.
* No token has this HMAC: DELEGATION_TOKEN_NOT_FOUND.
* The token is past its expiry or max timestamp: DELEGATION_TOKEN_EXPIRED.
* The requester is neither its owner nor one of its renewers:
  DELEGATION_TOKEN_OWNER_MISMATCH.
* Otherwise the new expiry is now + ``renew_period_ms`` (when > 0, bounded by
  ``delegation.token.expiry.time.ms``; else that config), capped at the token's
  max timestamp, committed as a DelegationTokenRecord.

The controller's errors carry expiry 0 (its response's default).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode

API_KEY = ApiKey.RENEW_DELEGATION_TOKEN


def handle(ctx, request: dict) -> dict:
    if not ctx.allow_token_requests():
        return error_response(request, ctx.api_version,
                              ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    error, expiry = ctx.delegation_tokens.renew(ctx.principal, bytes(request["hmac"]),
                                                request["renew_period_ms"])
    return {"error_code": error, "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "expiry_timestamp_ms": -1, "throttle_time_ms": 0}
