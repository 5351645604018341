"""InitProducerId (API key 22): serves v0-v5.

Behaviour (Kafka's ``TransactionCoordinator.handleInitProducerId``):

* Without a transactional id (the idempotent producer, kafka-python's
  default): a new producer id with epoch 0, every time.
* With a transactional id: the first call allocates a producer id with epoch
  0; each later one bumps the epoch, fencing every older producer with that
  id (their requests get PRODUCER_FENCED, INVALID_PRODUCER_EPOCH below v4).
  A transaction still open is aborted first and the answer is
  CONCURRENT_TRANSACTIONS; the client retries and gets the epoch after the
  fencing one.  CONCURRENT_TRANSACTIONS also while a commit or abort is
  being completed.  v3+: a client resuming with (producer_id, producer_epoch)
  that is not the current producer gets PRODUCER_FENCED.
* An empty transactional id: INVALID_REQUEST.  transaction_timeout_ms not in
  (0, transaction.max.timeout.ms]: INVALID_TRANSACTION_TIMEOUT.

With an authorizer (Kafka 4's handleInitProducerIdRequest): a transactional
producer needs WRITE on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
an idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on at least one
topic (CLUSTER_AUTHORIZATION_FAILED).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.transaction import fenced_error_for

API_KEY = ApiKey.INIT_PRODUCER_ID


def handle(ctx, request: dict) -> dict:
    if ctx.authorizer is not None:
        refused = _authorization_error(ctx, request["transactional_id"])
        if refused is not None:
            return error_response(request, ctx.api_version, refused)
    expected = None
    if ctx.api_version >= 3 and request["producer_id"] >= 0:
        expected = (request["producer_id"], request["producer_epoch"])
    result = ctx.transaction_coordinator.handle_init_producer_id(
        request["transactional_id"], request["transaction_timeout_ms"], expected)
    error = result.error_code
    error = fenced_error_for(error, ctx.api_version, 4)
    return {"throttle_time_ms": 0, "error_code": error,
            "producer_id": result.producer_id, "producer_epoch": result.producer_epoch}


def _authorization_error(ctx, transactional_id: str | None) -> int | None:
    if transactional_id is not None:
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                             transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return None
    # Idempotence alone: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
    if ctx.authorize(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, "kafka-cluster",
                     log_if_denied=False) or \
            ctx.authorize_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "producer_id": -1, "producer_epoch": -1}
