"""DescribeClientQuotas (API key 48): serves v0-v1 (KIP-546).

Behaviour (Kafka's ``ClientQuotasImage.describe``):

* Every stored entity matching all filter components is listed with all its
  quota values; ``strict`` also drops entities that have an entity type the
  filter does not name.  No components and not strict lists everything.
* A bad filter fails the whole request, ``entries`` null, with Kafka's
  message: an empty entity type, a type named twice, exact match without a
  name, default/any match with one, an unknown match type, or ``ip`` combined
  with ``user``/``client-id`` -> INVALID_REQUEST; an entity type other than
  ``user``, ``client-id``, ``ip`` -> UNSUPPORTED_VERSION (Kafka's
  UnsupportedVersionException).
* No authorization on PLAINTEXT (everyone is User:ANONYMOUS).

With an authorizer: DESCRIBE_CONFIGS on the cluster, else
CLUSTER_AUTHORIZATION_FAILED (Kafka's handleDescribeClientQuotasRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.quotas.client_quotas import QuotaRequestError

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    try:
        entries = ctx.quotas.client_quotas.describe(request["components"],
                                                         request["strict"])
    except QuotaRequestError as exc:
        return _error(exc.error_code, exc.message)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _error(error_code, None)


def _error(error_code: int, message) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": message,
            "entries": None}
