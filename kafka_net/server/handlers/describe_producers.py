"""DescribeProducers (API key 61): serves v0-v0.

Behaviour (Kafka's ``KafkaApis.handleDescribeProducersRequest``): per
requested partition, the producers with idempotent state there: id, epoch,
last sequence and the max timestamp of its last batch; coordinator_epoch -1
and current_txn_start_offset -1 (no open transaction).  An illegal topic
name gets INVALID_TOPIC_EXCEPTION, an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION, on each of its partitions.

With an authorizer: READ on each topic, else its partitions answer
TOPIC_AUTHORIZATION_FAILED (Kafka's handleDescribeProducersRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.metadata_cache import topic_name_error

API_KEY = ApiKey.DESCRIBE_PRODUCERS


def handle(ctx, request: dict) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [_partition(ctx, t["name"], p)
                                           for p in t["partition_indexes"]]}
        for t in request["topics"]]}


def _partition(ctx, topic: str, index: int) -> dict:
    if not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, topic):
        return _failed(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    name_error = topic_name_error(topic)
    if name_error:
        return _failed(index, ErrorCode.INVALID_TOPIC_EXCEPTION, name_error)
    error, producers = ctx.replica_manager.active_producers(topic, index)
    if error != ErrorCode.NONE:
        return _failed(index, error)
    return {"partition_index": index, "error_code": ErrorCode.NONE, "error_message": None,
            "active_producers": [
                {"producer_id": pid, "producer_epoch": epoch, "last_sequence": last_seq,
                 "last_timestamp": last_timestamp, "coordinator_epoch": -1,
                 "current_txn_start_offset": -1}
                for pid, epoch, last_seq, last_timestamp in producers]}


def _failed(index: int, error_code: int, message: str | None = None) -> dict:
    return {"partition_index": index, "error_code": error_code, "error_message": message,
            "active_producers": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [_failed(p, error_code)
                                           for p in t["partition_indexes"]]}
        for t in request.get("topics", [])]}
