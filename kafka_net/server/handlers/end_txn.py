"""EndTxn (API key 26): serves v0-v4 (v5 is transaction version 2, unstable in Kafka).

Behaviour (Kafka's ``TransactionCoordinator.handleEndTransaction``, one node):

* ``committed`` true: a COMMIT marker (control batch) is appended to every
  partition of the transaction and the offsets sent with TxnOffsetCommit
  become the groups' committed offsets; false: ABORT markers, and the offsets
  are dropped.  The answer comes once all markers are written, so a
  read_committed consumer sees the outcome as soon as the producer does.
* A retry of an EndTxn that completed the same way: NONE.  The other outcome,
  or no transaction (Empty): INVALID_TXN_STATE.  While another EndTxn of
  the same transaction is writing markers: CONCURRENT_TRANSACTIONS.
* INVALID_PRODUCER_ID_MAPPING (unknown transactional id or producer id),
  PRODUCER_FENCED for an old epoch (INVALID_PRODUCER_EPOCH below v2): a
  producer whose transaction timed out was fenced by the abort.

With an authorizer: WRITE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's handleEndTxnRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.transaction import fenced_error_for

API_KEY = ApiKey.END_TXN
VERSIONS = Versions(0, 4)


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                         request["transactional_id"]):
        return error_response(request, ctx.api_version,
                              ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error = ctx.transaction_coordinator.handle_end_transaction(
        request["transactional_id"], request["producer_id"], request["producer_epoch"],
        request["committed"])
    error = fenced_error_for(error, ctx.api_version, 2)
    return {"throttle_time_ms": 0, "error_code": error}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code}
