"""AddPartitionsToTxn (API key 24): versions 0-5, flexible from v3.

Wire schema of ``AddPartitionsToTxnRequest.json`` / ``AddPartitionsToTxnResponse.json``.

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: no wire change (PRODUCER_FENCED replaces INVALID_PRODUCER_EPOCH, KIP-588).
* v3: flexible versions.
* v4: batched form (KIP-890): several ``transactions``, each with its own
  producer id, epoch and ``verify_only`` flag; the response gains a top-level
  error_code and ``results_by_transaction``.  Kafka keeps v4+ for brokers
  (partition leaders verifying a transaction) and answers it for clients too.
* v5: no wire change (TRANSACTION_ABORTABLE, KIP-890).  Kafka 4.2's newest:
  with transaction version 2 clients stop sending it (Produce v12 adds the
  partition); a broker's v4+ request without ``verify_only`` adds partitions
  for such a client.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)


def _topics(versions: str) -> Field:
    return Field("topics", Array(Struct(
        Field("name", STRING),
        Field("partitions", Array(INT32)),
    )), versions=versions)


def _topic_results() -> Array:
    return Array(Struct(
        Field("name", STRING),
        Field("results_by_partition", Array(Struct(
            Field("partition_index", INT32),
            Field("partition_error_code", INT16),
        ))),
    ))


REQUEST = Schema(
    "AddPartitionsToTxnRequest", valid="0-5", flexible="3+",
    fields=[
        Field("transactions", Array(Struct(
            Field("transactional_id", STRING, versions="4+"),
            Field("producer_id", INT64, versions="4+"),
            Field("producer_epoch", INT16, versions="4+"),
            Field("verify_only", BOOL, versions="4+", default=False),
            _topics("4+"),
        )), versions="4+"),
        Field("v3_and_below_transactional_id", STRING, versions="0-3"),
        Field("v3_and_below_producer_id", INT64, versions="0-3"),
        Field("v3_and_below_producer_epoch", INT16, versions="0-3"),
        Field("v3_and_below_topics", Array(Struct(
            Field("name", STRING),
            Field("partitions", Array(INT32)),
        )), versions="0-3"),
    ])

RESPONSE = Schema(
    "AddPartitionsToTxnResponse", valid="0-5", flexible="3+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16, versions="4+"),
        Field("results_by_transaction", Array(Struct(
            Field("transactional_id", STRING, versions="4+"),
            Field("topic_results", _topic_results(), versions="4+"),
        )), versions="4+"),
        Field("results_by_topic_v3_and_below", _topic_results(), versions="0-3"),
    ])
