"""DescribeDelegationToken (API key 41): serves v1-v3; v0 while playing a release
before 4.0 (KIP-896 removed it; ``legacy_low``).

Behaviour (Kafka's ``KafkaApis.handleDescribeTokensRequest`` and
``DelegationTokenManager.filterToken``):

* A connection that may not ask for tokens (PLAINTEXT, SSL without a client
  certificate, a token login): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED.
* No ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED.
* ``owners`` an empty list: no tokens.  ``owners`` null: every token; else
  those whose owner or one of whose renewers is among ``owners``.
* Of those, the requester sees the tokens it owns or renews, and the others
  where it has DESCRIBE on the DelegationToken resource (the token id) or
  DESCRIBE_TOKENS on the User resource of the token's owner (``User:name``).
* Each token with its HMAC, timestamps and renewers (v3: its requester).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security.delegation_token import split_principal
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_DELEGATION_TOKEN


def handle(ctx, request: dict) -> dict:
    if not ctx.allow_token_requests():
        return error_response(request, ctx.api_version,
                              ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    manager = ctx.delegation_tokens
    if not manager.enabled:
        return error_response(request, ctx.api_version, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    owners = request.get("owners")
    if owners is not None:
        owners = [f"{o['principal_type']}:{o['principal_name']}" for o in owners]
        if not owners:
            return _answer([])
    requester = ctx.principal
    tokens = [t for t in manager.tokens() if _eligible(ctx, requester, owners, t.info)]
    return _answer([_token(t) for t in tokens])


def _eligible(ctx, requester: str, owners, info) -> bool:
    if owners is not None and not any(info.owner_or_renewer(o) for o in owners):
        return False
    if info.owner_or_renewer(requester):
        return True
    return (ctx.authorize(AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, info.token_id)
            or ctx.authorize(AclOperation.DESCRIBE_TOKENS, ResourceType.USER, info.owner))


def _token(token) -> dict:
    info = token.info
    owner_type, owner_name = split_principal(info.owner)
    requester_type, requester_name = split_principal(info.token_requester)
    return {"principal_type": owner_type, "principal_name": owner_name,
            "token_requester_principal_type": requester_type,
            "token_requester_principal_name": requester_name,
            "issue_timestamp": info.issue_timestamp, "expiry_timestamp": info.expiry_timestamp,
            "max_timestamp": info.max_timestamp, "token_id": info.token_id,
            "hmac": token.hmac,
            "renewers": [dict(zip(("principal_type", "principal_name"), split_principal(r)))
                         for r in info.renewers]}


def _answer(tokens: list) -> dict:
    return {"error_code": ErrorCode.NONE, "tokens": tokens, "throttle_time_ms": 0}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "tokens": [], "throttle_time_ms": 0}
