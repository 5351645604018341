"""AddOffsetsToTxn (API key 25): versions 0-4, flexible from v3.

Wire schema of ``AddOffsetsToTxnRequest.json`` / ``AddOffsetsToTxnResponse.json``.

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: no wire change (PRODUCER_FENCED replaces INVALID_PRODUCER_EPOCH, KIP-588).
* v3: flexible versions.
* v4: no wire change (TRANSACTION_ABORTABLE, KIP-890).  Kafka 4.2's newest;
  clients of transaction version 2 no longer send it (TxnOffsetCommit v5
  adds the group).
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Field, Schema

REQUEST = Schema(
    "AddOffsetsToTxnRequest", valid="0-4", flexible="3+",
    fields=[
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("group_id", STRING),
    ])

RESPONSE = Schema(
    "AddOffsetsToTxnResponse", valid="0-4", flexible="3+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
    ])
