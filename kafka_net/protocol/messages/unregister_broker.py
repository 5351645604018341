"""UnregisterBroker (API key 64): version 0, flexible in every version.

Wire schema of ``UnregisterBrokerRequest.json`` / ``UnregisterBrokerResponse.json``.

Removes a broker's registration from the KRaft cluster metadata (KIP-631);
the admin client's unregisterBroker.
"""

from kafka_net.protocol.schema import INT16, INT32, STRING, Field, Schema

REQUEST = Schema(
    "UnregisterBrokerRequest", valid="0", flexible="0+",
    fields=[
        Field("broker_id", INT32),
    ])

RESPONSE = Schema(
    "UnregisterBrokerResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ])
