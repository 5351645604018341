"""Fetch (API key 1): versions 0-18, flexible from v12.

Wire schema of ``FetchRequest.json`` / ``FetchResponse.json``.

Version notes:

* v1: response gains throttle_time_ms.  v2: message format v1 allowed.
* v3: request gains max_bytes; partitions are answered in request order.
* v4: request gains isolation_level; response gains last_stable_offset and
  aborted_transactions; record batches (magic 2) from here on.
* v5: request partitions gain log_start_offset; response partitions gain
  log_start_offset.  v6: no wire change.
* v7: incremental fetch sessions (KIP-227): session_id, session_epoch,
  forgotten_topics_data; response gains top-level error_code and session_id.
* v8: no wire change.  v9: partitions gain current_leader_epoch (KIP-320).
* v10: no wire change (ZStandard, KIP-110).
* v11: request gains rack_id; response gains preferred_read_replica (KIP-392).
* v12: flexible versions; partitions gain last_fetched_epoch; tagged
  cluster_id (request), diverging_epoch, current_leader, snapshot_id (response).
* v13: topic ids replace topic names (KIP-516).
* v14: no wire change (OFFSET_MOVED_TO_TIERED_STORAGE, KIP-405).
* v15: replica_id moves into the tagged replica_state (KIP-903).
* v16: response gains tagged node_endpoints (KIP-951).
* v17: request partitions gain tagged replica_directory_id (KIP-853).
* v18: request partitions gain tagged high_watermark, the follower's known
  high watermark (KIP-1166); no response change.  Consumers leave it at its
  default (int64 max, "not supported"), so a leader with no followers (ours)
  reads nothing from it.

Kafka deprecates v0-v3 (removed in Kafka 4.0).
"""

from kafka_net.protocol.schema import (
    INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "FetchRequest", valid="0-18", flexible="12+",
    fields=[
        Field("cluster_id", STRING, versions="12+", nullable="12+", tag=0, default=None),
        # -1 for consumers; a follower's broker id (v15+: in replica_state).
        Field("replica_id", INT32, versions="0-14", default=-1),
        Field("replica_state", Struct(
            Field("replica_id", INT32, versions="15+", default=-1),
            Field("replica_epoch", INT64, versions="15+", default=-1),
        ), versions="15+", tag=1),
        Field("max_wait_ms", INT32),
        Field("min_bytes", INT32),
        Field("max_bytes", INT32, versions="3+", default=2147483647),
        Field("isolation_level", INT8, versions="4+"),  # 0 read_uncommitted, 1 read_committed
        # Incremental fetch sessions (KIP-227); session_id 0 / epoch -1 = full fetch, no session.
        Field("session_id", INT32, versions="7+"),
        Field("session_epoch", INT32, versions="7+", default=-1),
        Field("topics", Array(Struct(
            Field("topic", STRING, versions="0-12"),
            Field("topic_id", UUID, versions="13+"),
            Field("partitions", Array(Struct(
                Field("partition", INT32),
                Field("current_leader_epoch", INT32, versions="9+", default=-1),
                Field("fetch_offset", INT64),
                Field("last_fetched_epoch", INT32, versions="12+", default=-1),
                Field("log_start_offset", INT64, versions="5+", default=-1),
                Field("partition_max_bytes", INT32),
                Field("replica_directory_id", UUID, versions="17+", tag=0),
                Field("high_watermark", INT64, versions="18+", tag=1,
                      default=9223372036854775807),
            ))),
        ))),
        Field("forgotten_topics_data", Array(Struct(
            Field("topic", STRING, versions="7-12"),
            Field("topic_id", UUID, versions="13+"),
            Field("partitions", Array(INT32), versions="7+"),
        )), versions="7+"),
        Field("rack_id", STRING, versions="11+"),
    ])

RESPONSE = Schema(
    "FetchResponse", valid="0-18", flexible="12+",
    fields=[
        Field("throttle_time_ms", INT32, versions="1+"),
        Field("error_code", INT16, versions="7+"),
        Field("session_id", INT32, versions="7+"),
        Field("responses", Array(Struct(
            Field("topic", STRING, versions="0-12"),
            Field("topic_id", UUID, versions="13+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
                Field("high_watermark", INT64),
                Field("last_stable_offset", INT64, versions="4+", default=-1),
                Field("log_start_offset", INT64, versions="5+", default=-1),
                # Tagged (v12+), written only when they differ from the all -1 defaults.
                Field("diverging_epoch", Struct(
                    Field("epoch", INT32, versions="12+", default=-1),
                    Field("end_offset", INT64, versions="12+", default=-1),
                ), versions="12+", tag=0),
                Field("current_leader", Struct(
                    Field("leader_id", INT32, versions="12+", default=-1),
                    Field("leader_epoch", INT32, versions="12+", default=-1),
                ), versions="12+", tag=1),
                Field("snapshot_id", Struct(
                    Field("end_offset", INT64, default=-1),
                    Field("epoch", INT32, default=-1),
                ), versions="12+", tag=2),
                Field("aborted_transactions", Array(Struct(
                    Field("producer_id", INT64, versions="4+"),
                    Field("first_offset", INT64, versions="4+"),
                )), versions="4+", nullable="4+"),
                Field("preferred_read_replica", INT32, versions="11+", default=-1),
                # Record batches as stored (magic 2 from v4), see kafka_net.protocol.records.
                Field("records", RECORDS, nullable="0+"),
            ))),
        ))),
        Field("node_endpoints", Array(Struct(
            Field("node_id", INT32, versions="16+"),
            Field("host", STRING, versions="16+"),
            Field("port", INT32, versions="16+"),
            Field("rack", STRING, versions="16+", nullable="16+", default=None),
        )), versions="16+", tag=0),
    ])
