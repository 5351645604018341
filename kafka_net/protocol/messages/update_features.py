"""UpdateFeatures (API key 57): versions 0-2, flexible in every version.

Wire schema of ``UpdateFeaturesRequest.json`` / ``UpdateFeaturesResponse.json``.

Finalizes feature levels of the cluster (KIP-584).

Request history (from Kafka's JSON):

* Version 1 adds validate only field.
* Version 2 changes the response to not return feature level results.
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "UpdateFeaturesRequest", valid="0-2", flexible="0+",
    fields=[
        Field("timeout_ms", INT32, default=60000),
        Field("feature_updates", Array(Struct(
            Field("feature", STRING),
            Field("max_version_level", INT16),
            Field("allow_downgrade", BOOL, versions="0"),
            Field("upgrade_type", INT8, versions="1+", default=1),
        ))),
        Field("validate_only", BOOL, versions="1+"),
    ])

RESPONSE = Schema(
    "UpdateFeaturesResponse", valid="0-2", flexible="0+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("results", Array(Struct(
            Field("feature", STRING),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        )), versions="0-1"),
    ])
