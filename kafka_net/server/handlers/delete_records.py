"""DeleteRecords (API key 21): serves v0-v2.

Behaviour (per partition, Kafka's ``Partition.deleteRecordsOnLeader``):

* The log start offset moves up to the requested offset (never down);
  batches wholly below it are dropped.  -1 means the high watermark.  The
  answer's ``low_watermark`` is the new log start offset (one replica, so
  it is the partition's low watermark at once; ``timeout_ms`` never waits).
* An offset below 0 (other than -1) or beyond the high watermark:
  OFFSET_OUT_OF_RANGE.  A topic whose cleanup.policy lacks ``delete``:
  POLICY_VIOLATION.  Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
  An internal topic (``__consumer_offsets``, ``__transaction_state``):
  INVALID_TOPIC_EXCEPTION, as Kafka refuses clients there.
  A failed partition has low_watermark -1.
* Afterwards Fetch below the log start gets OFFSET_OUT_OF_RANGE and
  ListOffsets EARLIEST answers the log start offset.

With an authorizer: DELETE on each topic, else its partitions answer
TOPIC_AUTHORIZATION_FAILED (Kafka's handleDeleteRecordsRequest).
"""

import logging

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.DELETE_RECORDS

log = logging.getLogger(__name__)


def handle(ctx, request: dict) -> dict:
    rm = ctx.replica_manager
    deletable = ctx.filter_authorized(AclOperation.DELETE, ResourceType.TOPIC,
                                      [t["name"] for t in request["topics"]])
    topics = []
    for t in request["topics"]:
        partitions = []
        for p in t["partitions"]:
            if t["name"] not in deletable:
                partitions.append({"partition_index": p["partition_index"], "low_watermark": -1,
                                   "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
                continue
            error, low = rm.delete_records(t["name"], p["partition_index"], p["offset"])
            if error == ErrorCode.NONE:
                log.info("Deleted records of %s-%d before offset %d (DeleteRecords)",
                         t["name"], p["partition_index"], low)
            partitions.append({"partition_index": p["partition_index"],
                               "low_watermark": low, "error_code": error})
        topics.append({"name": t["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "low_watermark": -1,
             "error_code": error_code}
            for p in t["partitions"]]}
        for t in request.get("topics", [])]}
