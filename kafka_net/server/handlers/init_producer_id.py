"""InitProducerId (API key 22): serves v0-v5.

Behaviour:

* Without a transactional id (the idempotent producer, kafka-python's
  default): a new producer id with epoch 0, every time, as Kafka's
  transaction coordinator does for a null transactional id; the
  producer_id/epoch fields of v3+ only matter for transactional ids.
* With a transactional id: transactions are not implemented, so the answer is
  COORDINATOR_NOT_AVAILABLE (FindCoordinator gives the same for key type 1).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions

API_KEY = ApiKey.INIT_PRODUCER_ID
VERSIONS = Versions(0, 5)


def handle(ctx, request: dict) -> dict:
    if request["transactional_id"] is not None:
        return error_response(request, ctx.api_version, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "producer_id": ctx.allocate_producer_id(), "producer_epoch": 0}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "producer_id": -1, "producer_epoch": -1}
