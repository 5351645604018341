"""AlterClientQuotas (API key 49): serves v0-v1 (KIP-546).

Behaviour (Kafka's ``ClientQuotaControlManager``), per entity, all of its
changes or none:

* entity: ``user`` and/or ``client-id``, or ``ip`` alone; a null name is the
  default entity.  An empty entity, an unknown entity type, a type given
  twice, an empty name, ``ip`` with another type, or an ip that is neither an
  address nor resolvable -> INVALID_REQUEST with Kafka's message.
* keys: ``producer_byte_rate``, ``consumer_byte_rate`` (whole numbers),
  ``request_percentage``, ``controller_mutation_rate`` for users/client-ids;
  ``connection_creation_rate`` (a whole number) for ips.  An unknown key, a
  value <= 0 (or NaN), a fraction for a whole-number key, a key twice in one
  entity -> INVALID_REQUEST.  Removing a key that is not set is not an error.
* A repeated entity is refused ("Ignoring duplicate entity"); the first
  occurrence stands.
* ``validate_only`` answers as if applied and changes nothing.
* Applied changes take effect at once: the quota managers enforce
  user/client-id quotas on the next request; ``ip`` quotas go to the
  connection quotas.  ``controller_mutation_rate`` is stored, not enforced.

With an authorizer: ALTER_CONFIGS on the cluster, else every entity
CLUSTER_AUTHORIZATION_FAILED (Kafka's handleAlterClientQuotasRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.ALTER_CONFIGS):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return {"throttle_time_ms": 0, "entries": ctx.quotas.client_quotas.alter(
        request["entries"], request["validate_only"])}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": error_code, "error_message": None, "entity": e["entity"]}
        for e in request.get("entries", [])]}
