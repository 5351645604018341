"""AlterUserScramCredentials (API key 51): serves v0-v0 (KIP-554).

Behaviour (Kafka's ``ScramControlManager.alterCredentials``), per user:

* A user named twice in one request (deletions and upsertions together):
  DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same
  request"; none of that user's alterations happen.
* Empty name: UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a
  mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512):
  UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism".
* Upsertion: iterations below 4096 "Too few iterations", above 16384 "Too
  many iterations" (UNACCEPTABLE_CREDENTIAL).  The request carries salt and
  salted password (the client ran PBKDF2); the broker keeps salt, StoredKey,
  ServerKey and iterations, in the CredentialCache the SASL authenticators
  read, so the new credential logs in at once.
* Deletion of a credential that does not exist: RESOURCE_NOT_FOUND "Attempt
  to delete a user credential that does not exist".
* The accepted alterations are one change: their UserScramCredentialRecords
  (and removals) are committed to the metadata log, then applied, under the
  controller's lock held since the checks (server/controller.py), so a
  credential acknowledged here survives a restart.
* With an authorizer: ALTER on the cluster, else every user
  CLUSTER_AUTHORIZATION_FAILED (Kafka's handleAlterUserScramCredentialsRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security import scram
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.controller import remove_scram_credential_record, scram_credential_record

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS

_TWICE = "A user credential cannot be altered twice in the same request"


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    with ctx.controller.lock:
        return _alter(ctx, request)


def _alter(ctx, request: dict) -> dict:
    cache = ctx.credential_cache
    alterations = ([("delete", d) for d in request["deletions"]]
                   + [("upsert", u) for u in request["upsertions"]])
    names = [a["name"] for _, a in alterations]
    errors: dict[str, tuple[int, str]] = {}
    valid = []
    for kind, alteration in alterations:
        name = alteration["name"]
        if name in errors:
            continue
        if names.count(name) > 1:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
            continue
        error = _validate(cache, kind, alteration)
        if error is not None:
            errors[name] = error
        else:
            valid.append((kind, alteration))
    ctx.controller.commit([_record(kind, alteration) for kind, alteration in valid])
    results = [_result(alteration["name"], ErrorCode.NONE, None) for _, alteration in valid]
    results += [_result(name, code, message) for name, (code, message) in errors.items()]
    return {"throttle_time_ms": 0, "results": results}


def _validate(cache, kind: str, alteration: dict):
    name, mechanism = alteration["name"], scram.BY_TYPE.get(alteration["mechanism"])
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if kind == "delete":
        if cache.get(name, mechanism.mechanism_name) is None:
            return (ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist")
        return None
    if alteration["iterations"] < mechanism.min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if alteration["iterations"] > scram.MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def _record(kind: str, alteration: dict) -> tuple[str, dict]:
    name = alteration["name"]
    mechanism = scram.BY_TYPE[alteration["mechanism"]]
    if kind == "delete":
        return remove_scram_credential_record(name, mechanism)
    credential = scram.ScramFormatter(mechanism).credential_from_salted_password(
        bytes(alteration["salted_password"]), bytes(alteration["salt"]),
        alteration["iterations"])
    return scram_credential_record(name, mechanism, credential)


def _result(user: str, error_code: int, message) -> dict:
    return {"user": user, "error_code": error_code, "error_message": message}


def error_response(request: dict, version: int, error_code: int) -> dict:
    users = dict.fromkeys(a["name"] for a in request["deletions"] + request["upsertions"])
    return {"throttle_time_ms": 0,
            "results": [_result(user, error_code, None) for user in users]}
