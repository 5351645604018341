"""EndTxn (API key 26): serves v0-v5.

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

v5 (transaction version 2, KIP-890 part 2; clients use it once the broker
finalizes ``transaction.version`` 2): the commit or abort bumps the producer
epoch, the markers carry the new epoch, and the response returns the producer
id and epoch the producer goes on with (a new producer id at epoch 0 when the
epoch ran out).  A retry of a completed EndTxn v5 comes with the epoch before
the bump and is answered NONE with the current one; an abort with no
transaction open is allowed (and bumps the epoch); any other epoch than the
current one is PRODUCER_FENCED (Kafka's endTransaction for a TV_2 client).

With an authorizer: WRITE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's handleEndTxnRequest).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.transaction import fenced_error_for

API_KEY = ApiKey.END_TXN
TRANSACTION_V2_VERSION = 5   # Kafka's TransactionVersion.transactionVersionForEndTxn


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                         request["transactional_id"]):
        return error_response(request, ctx.api_version,
                              ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    result = ctx.transaction_coordinator.handle_end_transaction(
        request["transactional_id"], request["producer_id"], request["producer_epoch"],
        request["committed"], 2 if ctx.api_version >= TRANSACTION_V2_VERSION else 0)
    return {"throttle_time_ms": 0,
            "error_code": fenced_error_for(result.error_code, ctx.api_version, 2),
            "producer_id": result.producer_id, "producer_epoch": result.producer_epoch}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code}
