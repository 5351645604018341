"""AddPartitionsToTxn (API key 24): serves v0-v5.

Behaviour (Kafka's ``handleAddPartitionsToTxnRequest``):

* The partitions join the producer's transaction, which becomes Ongoing;
  only then may the producer send transactional batches to them (Produce
  answers INVALID_TXN_STATE otherwise).
* Per partition: a topic or partition that does not exist gets
  UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED (nothing
  is added).  Otherwise every partition gets the coordinator's answer:
  INVALID_PRODUCER_ID_MAPPING (unknown transactional id or another producer
  id), PRODUCER_FENCED (an old epoch; INVALID_PRODUCER_EPOCH below v2),
  CONCURRENT_TRANSACTIONS (a commit or abort is being completed).
* v4+ batches several transactions, each answered on its own;
  ``verify_only`` checks instead of adding: NONE for a partition in the
  ongoing transaction, INVALID_TXN_STATE otherwise.

With an authorizer (Kafka's handleAddPartitionsToTxnRequest): v4+ (from
brokers) needs CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED); below v4, WRITE
on the transactional id (every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
then WRITE on each topic: a refused topic's partitions answer
TOPIC_AUTHORIZATION_FAILED and the others OPERATION_NOT_ATTEMPTED.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.transaction import fenced_error_for

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN


def handle(ctx, request: dict) -> dict:
    if ctx.api_version >= 4:
        # Brokers' batched verification (KIP-890): a broker's request.
        if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
            return error_response(request, ctx.api_version,
                                  ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "results_by_transaction": [
                    {"transactional_id": t["transactional_id"],
                     "topic_results": _add(ctx, t["transactional_id"], t["producer_id"],
                                           t["producer_epoch"], t["topics"], t["verify_only"])}
                    for t in request["transactions"]]}
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _add(
        ctx, request["v3_and_below_transactional_id"], request["v3_and_below_producer_id"],
        request["v3_and_below_producer_epoch"], request["v3_and_below_topics"], False)}


def _add(ctx, txn_id: str, producer_id: int, epoch: int, topics: list,
         verify_only: bool) -> list:
    wanted = [(t["name"], p) for t in topics for p in t["partitions"]]
    coordinator = ctx.transaction_coordinator
    if ctx.api_version < 4 and not ctx.authorize(AclOperation.WRITE,
                                                 ResourceType.TRANSACTIONAL_ID, txn_id):
        return _results(topics, lambda name, p: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    writable = ctx.filter_authorized(AclOperation.WRITE, ResourceType.TOPIC,
                                     [t["name"] for t in topics])
    unknown = {tp for tp in wanted if tp[0] in writable and not _exists(ctx, *tp)}
    if len(writable) < len({t["name"] for t in topics}):
        # Kafka's order: refused topics, then unknown ones; the rest not attempted.
        errors = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] not in writable
                  else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                  else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    elif unknown:
        errors = {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                  else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
    elif verify_only:
        errors = coordinator.handle_verify_partitions_in_transaction(
            txn_id, producer_id, epoch, wanted)
    else:
        # v4+ comes from a broker adding for a TV2 client (Kafka's
        # transactionVersionForAddPartitionsToTxn).
        error = coordinator.handle_add_partitions_to_transaction(
            txn_id, producer_id, epoch, set(wanted), 2 if ctx.api_version >= 4 else 0)
        error = fenced_error_for(error, ctx.api_version, 2)
        errors = dict.fromkeys(wanted, error)
    return _results(topics, lambda name, p: errors[(name, p)])


def _exists(ctx, topic: str, partition: int) -> bool:
    return ctx.replica_manager.partition(topic, partition) is not None


def _results(topics: list, error_of) -> list:
    return [{"name": t["name"], "results_by_partition": [
        {"partition_index": p, "partition_error_code": error_of(t["name"], p)}
        for p in t["partitions"]]} for t in topics]


def error_response(request: dict, version: int, error_code: int) -> dict:
    if version >= 4:
        return {"error_code": error_code, "results_by_transaction": []}
    return {"results_by_topic_v3_and_below": _results(
        request.get("v3_and_below_topics", []), lambda name, p: error_code)}
