"""AllocateProducerIds (API key 67): version 0, flexible.

Wire schema of ``AllocateProducerIdsRequest.json`` / ``AllocateProducerIdsResponse.json``.

A broker asking the controller for a block of producer ids (KIP-730).
Decode-only here: kafka-net allocates producer ids itself.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, Field, Schema

REQUEST = Schema(
    "AllocateProducerIdsRequest", valid="0", flexible="0+",
    fields=[
        Field("broker_id", INT32),
        Field("broker_epoch", INT64, default=-1),
    ])

RESPONSE = Schema(
    "AllocateProducerIdsResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("producer_id_start", INT64),
        Field("producer_id_len", INT32),
    ])

