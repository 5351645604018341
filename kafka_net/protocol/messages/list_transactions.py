"""ListTransactions (API key 66): versions 0-1, flexible (KIP-664).

Wire schema of ``ListTransactionsRequest.json`` / ``ListTransactionsResponse.json``.

Version notes:

* v1: request gains duration_filter (KIP-994): only transactions running
  longer than that many milliseconds; -1 = no filter.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ListTransactionsRequest", valid="0-1", flexible="0+",
    fields=[
        Field("state_filters", Array(STRING)),
        Field("producer_id_filters", Array(INT64)),
        Field("duration_filter", INT64, versions="1+", default=-1),
    ])

RESPONSE = Schema(
    "ListTransactionsResponse", valid="0-1", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("unknown_state_filters", Array(STRING)),
        Field("transaction_states", Array(Struct(
            Field("transactional_id", STRING),
            Field("producer_id", INT64),
            Field("transaction_state", STRING),
        ))),
    ])
