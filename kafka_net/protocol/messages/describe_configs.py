"""DescribeConfigs (API key 32): versions 0-4, flexible from v4.

Wire schema of ``DescribeConfigsRequest.json`` / ``DescribeConfigsResponse.json``.

Version notes:

* v1: request gains include_synonyms; response configs gain config_source and
  synonyms, and lose is_default (v0 only).
* v2: no wire change (responses sent before throttling).
* v3: request gains include_documentation; response configs gain
  config_type and documentation.
* v4: flexible versions.

Kafka deprecates v0.
"""

from kafka_net.protocol.schema import (
    BOOL, INT8, INT16, INT32, STRING, Array, Field, Schema, Struct)

REQUEST = Schema(
    "DescribeConfigsRequest", valid="0-4", flexible="4+",
    fields=[
        Field("resources", Array(Struct(
            Field("resource_type", INT8),      # 2 topic, 4 broker, 8 broker logger
            Field("resource_name", STRING),
            Field("configuration_keys", Array(STRING), nullable="0+"),  # null = all
        ))),
        Field("include_synonyms", BOOL, versions="1+"),
        Field("include_documentation", BOOL, versions="3+"),
    ])

RESPONSE = Schema(
    "DescribeConfigsResponse", valid="0-4", flexible="4+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("results", Array(Struct(
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("configs", Array(Struct(
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
                Field("read_only", BOOL),
                Field("is_default", BOOL, versions="0"),
                Field("config_source", INT8, versions="1+", default=-1),
                Field("is_sensitive", BOOL),
                Field("synonyms", Array(Struct(
                    Field("name", STRING, versions="1+"),
                    Field("value", STRING, versions="1+", nullable="0+"),
                    Field("source", INT8, versions="1+"),
                )), versions="1+"),
                Field("config_type", INT8, versions="3+"),
                Field("documentation", STRING, versions="3+", nullable="0+"),
            ))),
        ))),
    ])
