"""TxnOffsetCommit (API key 28): versions 0-6, flexible from v3.

Wire schema of ``TxnOffsetCommitRequest.json`` / ``TxnOffsetCommitResponse.json``.

Version notes:

* v1: no wire change (responses sent before throttling).
* v2: partitions gain committed_leader_epoch.
* v3: flexible versions; the request gains generation_id, member_id and
  group_instance_id, so the group coordinator can fence zombies (KIP-447).
* v4: no wire change (TRANSACTION_ABORTABLE, KIP-890).
* v5: no wire change (transactions v2, KIP-890 part 2): it also does the work
  of AddOffsetsToTxn, adding the group's ``__consumer_offsets`` partition to
  the transaction implicitly (only once the finalized ``transaction.version``
  is 2 or more).
* v6: topics are named by id, not by name (KIP-1319, Kafka 4.4), as OffsetCommit
  v10 names them.
"""

from kafka_net.protocol.schema import (
    INT16, INT32, INT64, STRING, UUID, Array, Field, Schema, Struct)

REQUEST = Schema(
    "TxnOffsetCommitRequest", valid="0-6", flexible="3+",
    fields=[
        Field("transactional_id", STRING),
        Field("group_id", STRING),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("generation_id", INT32, versions="3+", default=-1),
        Field("member_id", STRING, versions="3+", default=""),
        Field("group_instance_id", STRING, versions="3+", nullable="3+", default=None),
        Field("topics", Array(Struct(
            Field("name", STRING, versions="0-5"),
            Field("topic_id", UUID, versions="6+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("committed_offset", INT64),
                Field("committed_leader_epoch", INT32, versions="2+", default=-1),
                Field("committed_metadata", STRING, nullable="0+"),
            ))),
        ))),
    ])

RESPONSE = Schema(
    "TxnOffsetCommitResponse", valid="0-6", flexible="3+",
    fields=[
        Field("throttle_time_ms", INT32),
        Field("topics", Array(Struct(
            Field("name", STRING, versions="0-5"),
            Field("topic_id", UUID, versions="6+"),
            Field("partitions", Array(Struct(
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ))),
        ))),
    ])
