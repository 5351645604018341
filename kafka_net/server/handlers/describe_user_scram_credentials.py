"""DescribeUserScramCredentials (API key 50): serves v0-v0 (KIP-554).

Behaviour (Kafka's ``ScramImage.describe``):

* ``users`` null or empty: every user that has a credential.
* Each user: one ``credential_infos`` entry (mechanism 1 = SCRAM-SHA-256,
  2 = SCRAM-SHA-512, iterations) per credential; never salt or keys.
* A user without credentials: RESOURCE_NOT_FOUND, "Attempt to describe a user
  credential that does not exist: <user>"; a user named twice:
  DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for the same user
  twice in a single request: <user>" (once in the results).
* With an authorizer: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED
  (Kafka's handleDescribeUserScramCredentialsRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security import scram
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS

_NOT_FOUND = "Attempt to describe a user credential that does not exist: "
_DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    cache = ctx.credential_cache
    named = [u["name"] for u in request.get("users") or []]
    users = dict.fromkeys(named or cache.users(), False)   # user -> named twice
    for name in named:
        users[name] = named.count(name) > 1
    results = [_describe(cache, user, twice) for user, twice in users.items()]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}


def _describe(cache, user: str, twice: bool) -> dict:
    if twice:
        return _result(user, ErrorCode.DUPLICATE_RESOURCE, _DUPLICATE + user)
    infos = [{"mechanism": scram.MECHANISMS[name].type, "iterations": iterations}
             for name, iterations in cache.describe(user)]
    if not infos:
        return _result(user, ErrorCode.RESOURCE_NOT_FOUND, _NOT_FOUND + user)
    result = _result(user, ErrorCode.NONE, None)
    result["credential_infos"] = infos
    return result


def _result(user: str, error_code: int, message) -> dict:
    return {"user": user, "error_code": error_code, "error_message": message,
            "credential_infos": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None,
            "results": []}
