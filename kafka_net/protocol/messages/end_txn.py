"""EndTxn (API key 26): versions 0-5, flexible from v3.

Wire schema of ``EndTxnRequest.json`` / ``EndTxnResponse.json``.

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: no wire change (PRODUCER_FENCED replaces INVALID_PRODUCER_EPOCH, KIP-588).
* v3: flexible versions.
* v4: no wire change (TRANSACTION_ABORTABLE, KIP-890).
* v5: response gains producer_id and producer_epoch (transaction version 2,
  KIP-890: the epoch is bumped at every commit or abort).  Kafka marks v5
  unstable, so brokers do not advertise it by default.
"""

from kafka_net.protocol.schema import BOOL, INT16, INT32, INT64, STRING, Field, Schema

REQUEST = Schema(
    "EndTxnRequest", valid="0-5", flexible="3+",
    fields=[
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("committed", BOOL),
    ])

RESPONSE = Schema(
    "EndTxnResponse", valid="0-5", flexible="3+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, versions="5+", default=-1),
        Field("producer_epoch", INT16, versions="5+", default=-1),
    ])
