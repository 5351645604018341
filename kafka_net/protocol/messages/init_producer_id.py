"""InitProducerId (API key 22): versions 0-5, flexible from v2.

Wire schema of ``InitProducerIdRequest.json`` / ``InitProducerIdResponse.json``.

Version notes:

* v1: no wire change (throttled responses sent before throttling).
* v2: flexible versions.
* v3: request gains producer_id and producer_epoch, so a producer can resume
  after INVALID_PRODUCER_EPOCH (KIP-360).
* v4: no wire change (PRODUCER_FENCED).
* v5: no wire change (TRANSACTION_ABORTABLE, KIP-890).  Still the newest in
  Kafka 4.2: v6 (KIP-939 two-phase commit: enable_2pc, keep_prepared_txn,
  ongoing_txn_producer_id/epoch) is marked unstable there and not
  advertised, so it is not declared here.

kafka-python's producer is idempotent by default and sends this first.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Field, Schema

REQUEST = Schema(
    "InitProducerIdRequest", valid="0-5", flexible="2+",
    fields=[
        Field("transactional_id", STRING, nullable="0+"),
        Field("transaction_timeout_ms", INT32),
        Field("producer_id", INT64, versions="3+", default=-1),
        Field("producer_epoch", INT16, versions="3+", default=-1),
    ])

RESPONSE = Schema(
    "InitProducerIdResponse", valid="0-5", flexible="2+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id", INT64, default=-1),
        Field("producer_epoch", INT16),
    ])
