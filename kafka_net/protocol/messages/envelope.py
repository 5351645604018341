"""Envelope (API key 58): version 0, flexible.

Wire schema of ``EnvelopeRequest.json`` / ``EnvelopeResponse.json``.

A broker forwarding a client's request, with its principal and address,
to the controller (KIP-590).  Decode-only here: kafka-net is a single node
and forwards nothing.
"""

from kafka_net.protocol.schema import BYTES, INT16, Field, Schema

REQUEST = Schema(
    "EnvelopeRequest", valid="0", flexible="0+",
    fields=[
        Field("request_data", BYTES),
        Field("request_principal", BYTES, nullable="0+"),
        Field("client_host_address", BYTES),
    ])

RESPONSE = Schema(
    "EnvelopeResponse", valid="0", flexible="0+",
    fields=[
        Field("response_data", BYTES, nullable="0+", default=None),
        Field("error_code", INT16),
    ])

