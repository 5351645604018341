"""AddOffsetsToTxn (API key 25): serves v0-v4.

Behaviour: the consumer group joins the producer's transaction (Kafka adds
the group's ``__consumer_offsets`` partition), so TxnOffsetCommit may then
send its offsets and EndTxn completes them.  Errors as AddPartitionsToTxn:
INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below
v2), CONCURRENT_TRANSACTIONS; an empty group id INVALID_GROUP_ID.

With an authorizer: WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
(GROUP_AUTHORIZATION_FAILED) (Kafka's handleAddOffsetsToTxnRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.transaction import fenced_error_for

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                         request["transactional_id"]):
        return error_response(request, ctx.api_version,
                              ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not request["group_id"]:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_GROUP_ID}
    error = ctx.transaction_coordinator.handle_add_offsets_to_transaction(
        request["transactional_id"], request["producer_id"], request["producer_epoch"],
        request["group_id"])
    error = fenced_error_for(error, ctx.api_version, 2)
    return {"throttle_time_ms": 0, "error_code": error}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code}
