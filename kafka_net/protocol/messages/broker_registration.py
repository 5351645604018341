"""BrokerRegistration (API key 62): versions 0-4, flexible in every version.

Wire schema of ``BrokerRegistrationRequest.json`` / ``BrokerRegistrationResponse.json``.

A KRaft broker registering with the controller quorum (KIP-631).
Decode-only here.

Version notes:

* v1: is_migrating_zk_broker (KIP-866).  v2: log_dirs (KIP-858).
* v3: previous_broker_epoch (KIP-966).  v4: no wire change (KAFKA-17011: a
  feature's min_supported_version may be 0).
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, UINT16, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "BrokerRegistrationRequest", valid="0-4", flexible="0+",
    fields=[
        Field("broker_id", INT32),
        Field("cluster_id", STRING),
        Field("incarnation_id", UUID),
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
        Field("rack", STRING, nullable="0+"),
        Field("is_migrating_zk_broker", BOOL, versions="1+"),
        Field("log_dirs", Array(UUID), versions="2+"),
        Field("previous_broker_epoch", INT64, versions="3+", default=-1),
    ])

RESPONSE = Schema(
    "BrokerRegistrationResponse", valid="0-4", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("broker_epoch", INT64, default=-1),
    ])

