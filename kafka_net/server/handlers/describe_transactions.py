"""DescribeTransactions (API key 65): serves v0-v0, its only version (KIP-664).

Behaviour: per transactional id, its state name (Empty, Ongoing,
PrepareCommit, ...), timeout, start time (-1 with no transaction open),
producer id and epoch, and the partitions of the open transaction.  An
unknown id gets TRANSACTIONAL_ID_NOT_FOUND; an empty one INVALID_REQUEST.

With an authorizer: DESCRIBE on each transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; the partitions listed are those of
topics the principal may DESCRIBE (Kafka's handleDescribeTransactionsRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS


def handle(ctx, request: dict) -> dict:
    return {"throttle_time_ms": 0, "transaction_states": [
        _describe(ctx, ctx.transaction_coordinator, txn_id)
        for txn_id in request["transactional_ids"]]}


def _describe(ctx, coordinator, txn_id: str) -> dict:
    if not txn_id:
        return _error(txn_id, ErrorCode.INVALID_REQUEST)
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
        return _error(txn_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    md = coordinator.describe(txn_id)
    if md is None:
        return _error(txn_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    with md.lock:
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(md.topic_partitions):
            topics.setdefault(topic, []).append(partition)
        state = {"error_code": ErrorCode.NONE, "transactional_id": txn_id,
                 "transaction_state": md.state.value,
                 "transaction_timeout_ms": md.txn_timeout_ms,
                 "transaction_start_time_ms": md.txn_start_timestamp,
                 "producer_id": md.producer_id, "producer_epoch": md.producer_epoch}
    # Only the partitions of topics the principal may describe.
    described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topics,
                                      log_if_denied=False)
    return {**state, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()
                                if t in described]}


def _error(txn_id: str, error_code: int) -> dict:
    return {"error_code": error_code, "transactional_id": txn_id, "transaction_state": "",
            "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
            "producer_id": -1, "producer_epoch": -1, "topics": []}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"transaction_states": [_error(t, error_code)
                                   for t in request.get("transactional_ids", [])]}
