"""Produce (API key 0): serves v0-v13; record batches (magic 2) from v3.

Behaviour:

* v3+: each partition's ``records`` must be exactly one magic-2 batch,
  validated as Kafka does (size, magic, CRC32C, count, offsets); a bad batch
  gets CORRUPT_MESSAGE or INVALID_RECORD for that partition only.  The batch
  is stored as it came, compression included; only its base offset is
  rewritten.
* Compressed batches are decompressed to be checked, at most
  message.max.uncompressed.bytes each and for the whole request together
  (kafka-net's bound; Kafka has none); past it, CORRUPT_MESSAGE.
* v0-v2 carry legacy message sets (v0-v1 magic 0, v2 magic 0 or 1).
  Playing a Kafka release before 4.0 (``as.version``), they are accepted as
  Kafka 3.x accepted them and converted up to one magic-2 batch
  (:mod:`kafka_net.protocol.records.conversion`: offsets assigned, magic-0
  timestamps -1, CRC-32 checked per message, max.message.bytes per message
  and for the converted batch, keys on compacted topics, the wrapper's codec
  kept unless the topic's compression.type names another); a magic-2 batch
  is accepted there too, as Kafka does not check the magic below v3.  v2
  answers log_append_time_ms.  Without ``as.version``, or at 4.0+, v0-v2
  are advertised but refused with INVALID_RECORD, as Kafka 4.0 does:
  librdkafka before 2.11.1 only enables record batches when the advertised
  Produce range includes v3 *and* starts low enough (KAFKA-18659).
* acks: 1 and -1 are answered after the local append (a single node is its
  whole ISR); 0 gets no response at all (a NoOp that only unmutes the
  connection), unless a partition failed, in which case the connection is
  closed so the producer notices (Kafka's CloseConnectionResponse).  Any other
  value gets INVALID_REQUIRED_ACKS.
* Idempotent producers (producer id set): duplicates of the last five batches
  are acknowledged with their original offsets; gaps get
  OUT_OF_ORDER_SEQUENCE_NUMBER; see :mod:`kafka_net.server.producer_state`.
* Topic configs: a batch larger than the topic's ``max.message.bytes`` gets
  MESSAGE_TOO_LARGE, one larger than its ``segment.bytes`` RECORD_LIST_TOO_LARGE; on a ``message.timestamp.type=LogAppendTime`` topic the
  broker stamps the batch and answers its time in ``log_append_time_ms``
  (-1 otherwise).
* A compacted topic (cleanup.policy has compact) refuses a batch holding a
  record without a key: INVALID_RECORD, with a record error per keyless
  record (v8+), as Kafka's LogValidator.
* A topic is never created by Produce (clients create it through Metadata).
* The internal topics are written by their coordinators only: a batch for
  ``__consumer_offsets`` or ``__transaction_state`` gets INVALID_TOPIC_EXCEPTION
  "Cannot append to internal topic ..." (Kafka's ReplicaManager.appendToLocalLog).
* Transactional batches are accepted only for a partition added to the
  producer's ongoing transaction (AddPartitionsToTxn) and from its current
  epoch: INVALID_TXN_STATE / INVALID_PRODUCER_EPOCH otherwise (Kafka's
  transaction.partition.verification.enable, on by default); the first one
  of a transaction holds back the partition's last stable offset.
* v12+ (transaction version 2, KIP-890 part 2): a transactional batch for a
  partition not yet in the transaction adds it (the transaction becomes
  Ongoing if it was not), as the AddPartitionsToTxn Kafka's broker sends the
  coordinator would; an old epoch is still INVALID_PRODUCER_EPOCH,
  CONCURRENT_TRANSACTIONS while a commit or abort is being completed.
* v13: topics are named by id (KIP-516), in the request and the response; an
  id no topic has gets UNKNOWN_TOPIC_ID for each of its partitions (before
  any authorization: there is no name to authorize).
* With an authorizer (Kafka's handleProduceRequest): a request carrying
  transactional batches needs WRITE on its transactional id, else every
  partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs
  WRITE, else its partitions answer TOPIC_AUTHORIZATION_FAILED (whether the
  topic exists or not).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.handlers import CLOSE_CONNECTION, NO_RESPONSE
from kafka_net.server.internal_topics import INTERNAL_TOPICS

API_KEY = ApiKey.PRODUCE
LEGACY_MAX_VERSION = 2   # v0-v2 carry message sets (magic 0, v2 also magic 1)
TOPIC_ID_VERSION = 13


def handle(ctx, request: dict):
    acks = request["acks"]
    version = ctx.api_version
    if acks not in (0, 1, -1):
        return error_response(request, version, ErrorCode.INVALID_REQUIRED_ACKS)
    legacy = version <= LEGACY_MAX_VERSION
    if legacy and not ctx.legacy_formats:
        # Kafka 4: advertised only for librdkafka's feature detection (KAFKA-18659).
        return error_response(request, version, ErrorCode.INVALID_RECORD)
    if version >= TOPIC_ID_VERSION:
        _resolve_topic_ids(ctx, request)
    unauthorized = ()
    if ctx.authorizer is not None:
        refused = _authorize(ctx, request)
        if isinstance(refused, ErrorCode):
            return error_response(request, version, refused)
        unauthorized = refused
    replica_manager = ctx.replica_manager
    # message.max.uncompressed.bytes bounds the request's compressed batches together too.
    budget = replica_manager.decompression_budget()
    append_records = replica_manager.append_records
    failed = False
    responses = []
    for topic in request["topic_data"]:
        name = topic["name"]
        if name is None:   # v13: an id no topic has
            failed = True
            responses.append(_refused(topic, ErrorCode.UNKNOWN_TOPIC_ID, None))
            continue
        # One set lookup per topic, not per batch; an unauthorized principal is
        # told TOPIC_AUTHORIZATION_FAILED first, as Kafka authorizes before appending.
        if name in INTERNAL_TOPICS and name not in unauthorized:
            failed = True
            responses.append(_refused(topic, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                      f"Cannot append to internal topic {name}"))
            continue
        partitions = []
        for data in topic["partition_data"]:
            index = data["index"]
            if name in unauthorized:
                error_code, base_offset, log_start_offset, error_message, log_append_time_ms, \
                    record_errors = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, None, -1, ()
            else:
                error_code, base_offset, log_start_offset, error_message, log_append_time_ms, \
                    record_errors = append_records(name, index, data["records"], version, budget,
                                                   legacy)
            if error_code:
                failed = True
            partitions.append({
                "index": index, "error_code": error_code, "base_offset": base_offset,
                "log_append_time_ms": log_append_time_ms, "log_start_offset": log_start_offset,
                "error_message": error_message, "record_errors": record_errors,
            })
        responses.append({"name": name, "topic_id": topic.get("topic_id", ZERO_UUID),
                          "partition_responses": partitions})
    if acks == 0:
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    return {"responses": responses, "throttle_time_ms": 0}


def _authorize(ctx, request: dict):
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request, or the set of
    topics the principal may not WRITE."""
    if _has_transactional_records(request):
        transactional_id = request.get("transactional_id")
        if transactional_id is None or not ctx.authorize(
                AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    names = [t["name"] for t in request["topic_data"] if t["name"] is not None]
    return set(names) - ctx.filter_authorized(AclOperation.WRITE, ResourceType.TOPIC, names)


_MAGIC_AT = 16              # a v2 batch: base offset 8, length 4, epoch 4, then magic
_ATTRIBUTES_AT = 21         # then crc 4, then attributes
_TRANSACTIONAL_BIT = 0x10   # attributes bit 4


def _has_transactional_records(request: dict) -> bool:
    """Kafka's ProduceRequest.hasTransactionalRecords: the first batch of some
    partition is transactional (a producer's batches are all or none)."""
    for topic in request["topic_data"]:
        for data in topic["partition_data"]:
            records = data["records"]
            # a legacy message set (v0-v2) has no attributes there, and no transactions
            if records and len(records) > _ATTRIBUTES_AT + 1 and records[_MAGIC_AT] == 2 and \
                    records[_ATTRIBUTES_AT + 1] & _TRANSACTIONAL_BIT:
                return True
    return False


def _resolve_topic_ids(ctx, request: dict) -> None:
    """v13: each topic's name from its id, None for an id no topic has."""
    cache = ctx.metadata_cache
    for topic in request["topic_data"]:
        found = cache.topic_by_id(topic["topic_id"])
        topic["name"] = found.name if found is not None else None


def _refused(topic: dict, error_code: int, message: str | None) -> dict:
    return {"name": topic["name"] or "", "topic_id": topic.get("topic_id", ZERO_UUID),
            "partition_responses": [
                {"index": data["index"], "error_code": error_code, "base_offset": -1,
                 "log_append_time_ms": -1, "log_start_offset": -1, "error_message": message,
                 "record_errors": ()}
                for data in topic["partition_data"]]}


def error_response(request: dict, version: int, error_code: int):
    if request.get("acks") == 0:
        return CLOSE_CONNECTION  # Kafka: no error response exists for acks=0
    return {"responses": [
        {"name": t["name"] or "", "topic_id": t.get("topic_id", ZERO_UUID),
         "partition_responses": [
            {"index": p["index"], "error_code": error_code, "base_offset": -1}
            for p in t["partition_data"]]}
        for t in request.get("topic_data", [])]}
