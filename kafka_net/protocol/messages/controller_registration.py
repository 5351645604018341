"""ControllerRegistration (API key 70): version 0, flexible.

Wire schema of ``ControllerRegistrationRequest.json`` / ``ControllerRegistrationResponse.json``.

A KRaft controller registering its listeners and features (KIP-919).
Decode-only here.
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ControllerRegistrationRequest", valid="0", flexible="0+",
    fields=[
        Field("controller_id", INT32),
        Field("incarnation_id", UUID),
        Field("zk_migration_ready", BOOL),
        Field("listeners", Array(Struct(
            Field("name", STRING),
            Field("host", STRING),
            Field("port", UINT16),
            Field("security_protocol", INT16),
        ))),
        Field("features", Array(Struct(
            Field("name", STRING),
            Field("min_supported_version", INT16),
            Field("max_supported_version", INT16),
        ))),
    ])

RESPONSE = Schema(
    "ControllerRegistrationResponse", valid="0", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ])

