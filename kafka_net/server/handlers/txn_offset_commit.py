"""TxnOffsetCommit (API key 28): serves v0-v6.

Behaviour: offsets a transactional producer commits for a consumer group
(``sendOffsetsToTransaction``) are held pending and become the group's
committed offsets only when the transaction commits; an abort drops them
(:mod:`kafka_net.server.transaction.txn_offsets`).

* The group must have been added with AddOffsetsToTxn to the producer's
  ongoing transaction, else INVALID_TXN_STATE; v5 (transaction version 2,
  KIP-890 part 2) adds it here instead, the group's ``__consumer_offsets``
  partition joining the transaction (which becomes Ongoing if it was not;
  CONCURRENT_TRANSACTIONS while a commit or abort is being completed); an
  unknown transactional id or another producer id INVALID_PRODUCER_ID_MAPPING;
  an old epoch INVALID_PRODUCER_EPOCH.
* v3+ with a member id or generation: checked against the group as
  OffsetCommit is (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, and for a static
  member's ``group_instance_id`` FENCED_INSTANCE_ID); without them (v0-v2,
  or -1 and ""), not.  Per partition UNKNOWN_TOPIC_OR_PARTITION and
  OFFSET_METADATA_TOO_LARGE as OffsetCommit.

* v6 (KIP-1319, Kafka 4.4): topics are named by id, resolved as OffsetCommit
  v10 resolves them; an id naming no topic answers UNKNOWN_TOPIC_ID for each
  of its partitions, and the other topics are committed.

With an authorizer (Kafka's handleTxnOffsetCommitRequest): WRITE on the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
(GROUP_AUTHORIZATION_FAILED), then READ on each topic: a topic refused answers
TOPIC_AUTHORIZATION_FAILED and the others are committed.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.group.offsets import PartitionCommit
from kafka_net.server.handlers.offset_commit import resolve_topic_ids

API_KEY = ApiKey.TXN_OFFSET_COMMIT
IMPLICIT_ADD_VERSION = 5   # Kafka's txnOffsetCommitRequestVersionToTransactionSupportedOperation
TOPIC_ID_VERSION = 6       # KIP-1319


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                         request["transactional_id"]):
        return error_response(request, ctx.api_version,
                              ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics, unknown = request["topics"], []
    if ctx.api_version >= TOPIC_ID_VERSION:
        topics, unknown = resolve_topic_ids(ctx, topics)
    readable = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC,
                                     [t["name"] for t in topics])
    commits = [PartitionCommit(t["name"], p["partition_index"], p["committed_offset"],
                               p.get("committed_leader_epoch", -1), p["committed_metadata"])
               for t in topics if t["name"] in readable for p in t["partitions"]]
    errors = iter(ctx.transaction_coordinator.handle_txn_offset_commit(
        request["transactional_id"], request["group_id"], request["producer_id"],
        request["producer_epoch"], request.get("member_id", ""),
        request.get("generation_id", -1), commits, request.get("group_instance_id"),
        add_group=ctx.api_version >= IMPLICIT_ADD_VERSION)
        if commits else ())
    answered = _response({"topics": topics}, lambda name: next(errors) if name in readable
                         else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    answered["topics"] += error_response({"topics": unknown}, ctx.api_version,
                                         ErrorCode.UNKNOWN_TOPIC_ID)["topics"]
    return answered


def _response(request: dict, next_error) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.get("name") or "", "topic_id": t.get("topic_id", ZERO_UUID), "partitions": [
            {"partition_index": p["partition_index"], "error_code": next_error(t.get("name"))}
            for p in t["partitions"]]} for t in request.get("topics", [])]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return _response(request, lambda name: error_code)
