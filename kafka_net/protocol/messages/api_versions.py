"""ApiVersions (API key 18): versions 0-4, flexible from v3.

Wire schema of ``ApiVersionsRequest.json`` / ``ApiVersionsResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.
* v2: no wire change (the response throttle time may now be honoured).
* v3: flexible versions; the request carries client_software_name and
  client_software_version (KIP-511); the response may carry feature tags.
* v4: no wire change; an empty SupportedFeatures list now means "none"
  (KAFKA-17011).

Quirks (handled in :mod:`kafka_net.server.handlers.api_versions` and
:mod:`kafka_net.protocol.codec`):

* A version newer than the broker knows is answered, not disconnected: with a
  **v0** body holding UNSUPPORTED_VERSION and the ApiVersions range, so the
  client can retry with a version both sides speak.
* The response header is always v0 (see :mod:`kafka_net.protocol.headers`).
"""

from kafka_net.protocol.schema import (
    BOOL, INT16, INT32, INT64, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "ApiVersionsRequest", valid="0-4", flexible="3+",
    fields=[
        Field("client_software_name", STRING, versions="3+"),
        Field("client_software_version", STRING, versions="3+"),
    ])

RESPONSE = Schema(
    "ApiVersionsResponse", valid="0-4", flexible="3+",
    fields=[
        Field("error_code", INT16),
        Field("api_keys", Array(Struct(
            Field("api_key", INT16),
            Field("min_version", INT16),
            Field("max_version", INT16),
        ))),
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("supported_features", Array(Struct(
            Field("name", STRING),
            Field("min_version", INT16),
            Field("max_version", INT16),
        )), versions="3+", tag=0),
        Field("finalized_features_epoch", INT64, versions="3+", tag=1, default=-1),
        Field("finalized_features", Array(Struct(
            Field("name", STRING),
            Field("max_version_level", INT16),
            Field("min_version_level", INT16),
        )), versions="3+", tag=2),
        Field("zk_migration_ready", BOOL, versions="3+", tag=3),
    ])
