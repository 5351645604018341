"""ListTransactions (API key 66): versions 0-2, flexible (KIP-664).

Wire schema of ``ListTransactionsRequest.json`` / ``ListTransactionsResponse.json``.

Version notes:

* v1: request gains duration_filter (KIP-994): only transactions running
  longer than that many milliseconds; -1 = no filter.
* v2: request gains transactional_id_pattern (KIP-1152): a regular
  expression the transactional ids must match; null or empty = no filter.  A
  pattern that does not compile is answered INVALID_REGULAR_EXPRESSION.
"""

from kafka_net.protocol.schema import INT16, INT32, INT64, STRING, Array, Field, Schema, Struct

REQUEST = Schema(
    "ListTransactionsRequest", valid="0-2", flexible="0+",
    fields=[
        Field("state_filters", Array(STRING)),
        Field("producer_id_filters", Array(INT64)),
        Field("duration_filter", INT64, versions="1+", default=-1),
        Field("transactional_id_pattern", STRING, versions="2+", nullable="2+", default=None),
    ])

RESPONSE = Schema(
    "ListTransactionsResponse", valid="0-2", flexible="0+",
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
