"""CreateDelegationToken (API key 38): serves v1-v3; v0 while playing a release
before 4.0 (KIP-896 removed it; ``legacy_low``).

Behaviour (Kafka's ``KafkaApis.handleCreateTokenRequest``, then the controller's
``DelegationTokenControlManager.createDelegationToken``), checked in order:

* A connection that may not ask for tokens -- PLAINTEXT, SSL without a client
  certificate, or one that logged in with a delegation token:
  DELEGATION_TOKEN_REQUEST_NOT_ALLOWED.
* v3 ``owner_principal_type``/``owner_principal_name`` name an owner other than
  the requester: CREATE_TOKENS on the User resource ``Type:name`` is needed,
  else DELEGATION_TOKEN_AUTHORIZATION_FAILED.
* A renewer whose principal type is not ``User``: INVALID_PRINCIPAL_TYPE; so
  is an owner name with a null ``owner_principal_type`` (Kafka's KafkaPrincipal
  refuses a null type with an exception: UNKNOWN_SERVER_ERROR there).
* No ``delegation.token.secret.key``: DELEGATION_TOKEN_AUTH_DISABLED.
* Otherwise a token: a random id, its HMAC-SHA512 under the secret key, issued
  now, max timestamp now + ``max_lifetime_ms`` (when > 0) bounded by
  ``delegation.token.max.lifetime.ms``, expiry now +
  ``delegation.token.expiry.time.ms`` bounded by the max timestamp; committed
  to the metadata log as a DelegationTokenRecord before the answer.

The answer names the owner (``principal_type``/``principal_name``) and, from v3,
the requester, on errors too; the timestamps are -1 on the broker's refusals
and 0 on the controller's, as in Kafka.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security.delegation_token import USER_TYPE, split_principal
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.CREATE_DELEGATION_TOKEN


def handle(ctx, request: dict) -> dict:
    requester = ctx.principal
    owner_name = request.get("owner_principal_name")
    owner = (requester if not owner_name
             else f"{request.get('owner_principal_type')}:{owner_name}")
    renewers = [f"{r['principal_type']}:{r['principal_name']}" for r in request["renewers"]]
    if owner_name and request.get("owner_principal_type") is None:
        owner = f"{USER_TYPE}:{owner_name}"   # for the answer only
        return _answer(owner, requester, ErrorCode.INVALID_PRINCIPAL_TYPE, -1)
    if not ctx.allow_token_requests():
        return _answer(owner, requester, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)
    if owner != requester and not ctx.authorize(AclOperation.CREATE_TOKENS,
                                                ResourceType.USER, owner):
        return _answer(owner, requester, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, -1)
    if any(split_principal(r)[0] != USER_TYPE for r in renewers):
        return _answer(owner, requester, ErrorCode.INVALID_PRINCIPAL_TYPE, -1)
    error, token = ctx.delegation_tokens.create(owner, requester, renewers,
                                                request["max_lifetime_ms"])
    if token is None:
        return _answer(owner, requester, error, 0)
    info = token.info
    body = _answer(owner, requester, ErrorCode.NONE, 0)
    body.update(issue_timestamp_ms=info.issue_timestamp,
                expiry_timestamp_ms=info.expiry_timestamp,
                max_timestamp_ms=info.max_timestamp, token_id=info.token_id,
                hmac=token.hmac)
    return body


def _answer(owner: str, requester: str, error_code: int, timestamp: int) -> dict:
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester)
    return {"error_code": error_code, "principal_type": owner_type,
            "principal_name": owner_name, "token_requester_principal_type": requester_type,
            "token_requester_principal_name": requester_name,
            "issue_timestamp_ms": timestamp, "expiry_timestamp_ms": timestamp,
            "max_timestamp_ms": timestamp, "token_id": "", "hmac": b"",
            "throttle_time_ms": 0}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _answer(":", ":", error_code, -1)
