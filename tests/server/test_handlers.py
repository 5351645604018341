"""Every handler through KafkaApis.build_response, with real encoding.

Each request is encoded as a client would send it, parsed as the Processor
parses it, handled, and its response bytes decoded again, so a body that
does not fit the schema at some version (a null in a non-nullable field, a
missing array) fails here rather than as a closed connection in production.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_net.network.request_channel import (
    CloseConnectionResponse, NoOpResponse, SendResponse)
from kafka_net.protocol import encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, batch_from_payload, build_batch, compress, decode_records, split_batches)
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.apis import HANDLERS
from kafka_net.server.handlers import CLOSE_CONNECTION, DEFERRED, NO_RESPONSE
from tests.server.conftest import Broker, Deferred, batch, make_broker, request_body, wait_until
from tests.server.handlers.samples import (
    ADMIN_APIS, failing_admin_request, typical_admin_request)

LONG = 60_000


def versions(api_key):
    v = HANDLERS[api_key].VERSIONS
    return list(range(v.low, v.high + 1))


def all_served():
    return [(key, version) for key in HANDLERS for version in versions(key)]


def produce_body(topic="t", partition=0, records=None, acks=1):
    return dict(acks=acks, timeout_ms=1000, topic_data=[{"name": topic, "partition_data": [
        {"index": partition, "records": batch() if records is None else records}]}])


def produce(broker, version=9, **kw):
    return broker.call(ApiKey.PRODUCE, version, **produce_body(**kw))


def fetch_body(broker, version, partitions=((("t", 0, 0)),), max_wait_ms=0, min_bytes=1,
               max_bytes=1 << 20, partition_max_bytes=1 << 20, **kw):
    topics = {}
    for topic, partition, offset in partitions:
        topics.setdefault(topic, []).append(
            {"partition": partition, "fetch_offset": offset,
             "partition_max_bytes": partition_max_bytes})
    out = []
    for name, parts in topics.items():
        meta = broker.metadata_cache.topic(name)
        topic_id = kw.pop(f"id_of_{name}", meta.topic_id if meta else uuid.uuid4())
        out.append({"topic": name, "topic_id": topic_id, "partitions": parts})
    return dict(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                topics=out, session_id=kw.pop("session_id", 0),
                session_epoch=kw.pop("session_epoch", -1), **kw)


def fetch(broker, version=12, **kw):
    return broker.call(ApiKey.FETCH, version, **fetch_body(broker, version, **kw))


def partition_of(body, index=0, topic_index=0, key="partitions"):
    return body["responses"][topic_index][key][index]


def stored_offsets(records) -> list[int]:
    return [r.offset for b in split_batches(records) for r in decode_records(b)]


# -- a broker with some state, and a typical request per API ------------------------------


@pytest.fixture
def rich():
    """Topic t (2 partitions, data), topic u, a Stable group g with offsets."""
    b = Broker().start()
    b.create_topic("t", 2)
    b.create_topic("u", 1)
    produce(b, records=batch([b"a", b"b"], max_timestamp=1000))
    produce(b, records=batch([b"c"], max_timestamp=2000))
    member = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", session_timeout_ms=LONG,
                    rebalance_timeout_ms=LONG, protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"m"}])["member_id"]
    joined = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", member_id=member,
                    session_timeout_ms=LONG, rebalance_timeout_ms=LONG,
                    protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"m"}]).body()
    b.group_member, b.generation = member, joined["generation_id"]
    synced = b.call(ApiKey.SYNC_GROUP, 3, group_id="g", generation_id=b.generation,
                    member_id=member, assignments=[{"member_id": member, "assignment": b"x"}])
    assert synced.body()["error_code"] == ErrorCode.NONE
    b.call(ApiKey.OFFSET_COMMIT, 8, group_id="g", generation_id_or_member_epoch=b.generation,
           member_id=member, topics=[{"name": "t", "partitions": [
               {"partition_index": 0, "committed_offset": 2, "committed_metadata": "m"}]}])
    try:
        yield b
    finally:
        b.stop()


def typical_request(b: Broker, api_key: int, version: int) -> dict:
    """A request each handler answers with data (not an error) where it can."""
    t_id = b.metadata_cache.topic("t").topic_id
    if api_key == ApiKey.PRODUCE:
        return produce_body()
    if api_key == ApiKey.FETCH:
        return fetch_body(b, version, partitions=[("t", 0, 0), ("t", 1, 0)])
    if api_key == ApiKey.LIST_OFFSETS:
        return dict(topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": -1}, {"partition_index": 1, "timestamp": -2},
            {"partition_index": 7, "timestamp": -1}]}])
    if api_key == ApiKey.METADATA:
        return dict(topics=[{"name": "t", "topic_id": ZERO_UUID}, {"name": "auto", "topic_id":
                                                                    ZERO_UUID}])
    if api_key == ApiKey.OFFSET_COMMIT:
        return dict(group_id="simple", generation_id_or_member_epoch=-1, topics=[
            {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 1,
                                          "committed_metadata": None}]}])
    if api_key == ApiKey.OFFSET_FETCH:
        topics = [{"name": "t", "partition_indexes": [0, 1]}]
        if version >= 8:
            return dict(groups=[{"group_id": "g", "topics": topics},
                                {"group_id": "none", "topics": None}])
        return dict(group_id="g", topics=topics)
    if api_key == ApiKey.FIND_COORDINATOR:
        return dict(key="g", coordinator_keys=["g", "h"])
    if api_key == ApiKey.JOIN_GROUP:
        return dict(group_id=f"join-{version}", session_timeout_ms=LONG,
                    rebalance_timeout_ms=LONG, protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"m"}])
    if api_key == ApiKey.HEARTBEAT:
        return dict(group_id="g", generation_id=b.generation, member_id=b.group_member)
    if api_key == ApiKey.LEAVE_GROUP:
        return dict(group_id="g", member_id="stranger",
                    members=[{"member_id": "stranger", "group_instance_id": None}])
    if api_key == ApiKey.SYNC_GROUP:
        return dict(group_id="g", generation_id=b.generation, member_id=b.group_member)
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return dict(groups=["g", "simple-unknown"], include_authorized_operations=True)
    if api_key == ApiKey.LIST_GROUPS:
        return dict()
    if api_key == ApiKey.API_VERSIONS:
        return dict(client_software_name="tests", client_software_version="1.0")
    if api_key == ApiKey.CREATE_TOPICS:
        return dict(topics=[{"name": f"created-{version}", "num_partitions": 2,
                             "replication_factor": 1, "assignments": [],
                             "configs": [{"name": "retention.ms", "value": "1000"}]}])
    if api_key == ApiKey.DELETE_TOPICS:
        return dict(topic_names=["u", "gone"],
                    topics=[{"name": "u", "topic_id": ZERO_UUID},
                            {"name": None, "topic_id": uuid.uuid4()}])
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return dict(transactional_id=None, transaction_timeout_ms=1000)
    if api_key == ApiKey.CREATE_PARTITIONS:
        current = b.metadata_cache.topic("t").num_partitions
        return dict(topics=[{"name": "t", "count": current + 1, "assignments": None}])
    if api_key in ADMIN_APIS:  # tests/server/handlers/ has their own tests
        return typical_admin_request(api_key)
    if api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS:
        return dict(components=[{"entity_type": "client-id", "match_type": 2, "match": None}])
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return dict(entries=[{"entity": [{"entity_type": "client-id", "entity_name": None}],
                              "ops": [{"key": "request_percentage", "value": 50.0}]}])
    raise AssertionError(f"no typical request for {api_key}")  # a new API needs one here


@pytest.mark.parametrize("api_key,version", all_served())
def test_every_handler_answers_and_encodes_at_every_served_version(rich, api_key, version):
    body = request_body(api_key, version, **typical_request(rich, api_key, version))
    request, response = rich.respond(api_key, version, body)
    if isinstance(response, Deferred):
        decoded = response.body()
    else:
        assert isinstance(response, SendResponse), response
        decoded = rich.decode(request, response)
    assert isinstance(decoded, dict)
    if "error_code" in decoded and api_key not in (ApiKey.JOIN_GROUP, ApiKey.LEAVE_GROUP):
        assert decoded["error_code"] == ErrorCode.NONE, decoded


def failing_request(b: Broker, api_key: int, version: int) -> dict:
    """A request each handler answers with errors in the body (unknown topics,
    groups and members, bad names): the paths where nulls and defaults lurk."""
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    if api_key == ApiKey.PRODUCE:
        return dict(acks=1, timeout_ms=10, topic_data=[
            {"name": "missing", "partition_data": [{"index": 0, "records": batch()}]},
            {"name": "t", "partition_data": [{"index": 0, "records": bytes(bad)},
                                             {"index": 1, "records": None}]}])
    if api_key == ApiKey.FETCH:
        return fetch_body(b, version, partitions=[("missing", 0, 0), ("t", 0, 99)])
    if api_key == ApiKey.LIST_OFFSETS:
        return dict(topics=[{"name": "missing", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}])
    if api_key == ApiKey.METADATA:
        return dict(allow_auto_topic_creation=False, topics=[
            {"name": "missing", "topic_id": ZERO_UUID}, {"name": "bad name", "topic_id":
                                                         ZERO_UUID}])
    if api_key == ApiKey.OFFSET_COMMIT:
        return dict(group_id="ghost", generation_id_or_member_epoch=5, member_id="m", topics=[
            {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                          "committed_metadata": "x" * 5000}]}])
    if api_key == ApiKey.OFFSET_FETCH:
        topics = [{"name": "missing", "partition_indexes": [3]}]
        if version >= 8:
            return dict(groups=[{"group_id": "ghost", "topics": topics}])
        return dict(group_id="ghost", topics=topics)
    if api_key == ApiKey.FIND_COORDINATOR:
        return dict(key="", key_type=1 if version >= 1 else 0, coordinator_keys=["", "x"])
    if api_key == ApiKey.JOIN_GROUP:
        return dict(group_id="g", session_timeout_ms=0, member_id="someone",
                    protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}])
    if api_key == ApiKey.HEARTBEAT:
        return dict(group_id="ghost", generation_id=1, member_id="m")
    if api_key == ApiKey.LEAVE_GROUP:
        return dict(group_id="ghost", member_id="m",
                    members=[{"member_id": "m", "group_instance_id": "i"}])
    if api_key == ApiKey.SYNC_GROUP:
        return dict(group_id="ghost", generation_id=1, member_id="m")
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return dict(groups=["ghost", ""])
    if api_key == ApiKey.LIST_GROUPS:
        return dict(states_filter=["Dead"], types_filter=["consumer"])
    if api_key == ApiKey.API_VERSIONS:
        return dict(client_software_name="bad name", client_software_version="")
    if api_key == ApiKey.CREATE_TOPICS:
        return dict(topics=[
            {"name": "bad name", "num_partitions": 1, "replication_factor": 1,
             "assignments": [], "configs": []},
            {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [],
             "configs": []},
            {"name": "rf", "num_partitions": 1, "replication_factor": 3, "assignments": [],
             "configs": []}])
    if api_key == ApiKey.DELETE_TOPICS:
        return dict(topic_names=["missing"], topics=[{"name": "missing", "topic_id": ZERO_UUID}])
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return dict(transactional_id="tx")
    if api_key == ApiKey.CREATE_PARTITIONS:
        return dict(topics=[{"name": "missing", "count": 3, "assignments": None},
                            {"name": "t", "count": 1, "assignments": None}])
    if api_key in ADMIN_APIS:
        return failing_admin_request(api_key)
    if api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS:
        return dict(components=[{"entity_type": "topic", "match_type": 0, "match": "t"}])
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return dict(entries=[{"entity": [{"entity_type": "user", "entity_name": ""}],
                              "ops": [{"key": "producer_byte_rate", "value": 1.0}]}])
    raise AssertionError(f"no failing request for {api_key}")  # a new API needs one here


@pytest.mark.parametrize("api_key,version", all_served())
def test_every_handler_error_path_encodes_at_every_served_version(rich, api_key, version):
    body = request_body(api_key, version, **failing_request(rich, api_key, version))
    request, response = rich.respond(api_key, version, body)
    assert isinstance(response, SendResponse), response
    decoded = rich.decode(request, response)
    codes = _all_error_codes(decoded)
    no_error_expected = api_key in (ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
                                    ApiKey.OFFSET_FETCH) or (
        api_key == ApiKey.API_VERSIONS and version < 3)  # no software name to refuse
    assert codes - {ErrorCode.NONE} or no_error_expected, decoded


@pytest.mark.parametrize("api_key,version", all_served())
def test_every_error_response_encodes_at_every_served_version(rich, api_key, version):
    body = request_body(api_key, version, **typical_request(rich, api_key, version))
    request = rich.make_request(api_key, version, body)
    module = HANDLERS[api_key]
    for code in (ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NOT_COORDINATOR,
                 ErrorCode.INVALID_REQUEST):
        answer = module.error_response(request.body, version, code)
        if answer is CLOSE_CONNECTION:
            continue
        encode_response(api_key, version, 1, answer)


class _Raises:
    """A handler module whose handle() raises: KafkaApis must fall back to the
    module's error_response, encoded, not a closed connection."""

    def __init__(self, module):
        self.API_KEY, self.VERSIONS = module.API_KEY, module.VERSIONS
        self.error_response = module.error_response

    @staticmethod
    def handle(ctx, request):
        raise RuntimeError("handler bug")


@pytest.mark.parametrize("api_key,version", all_served())
def test_handler_exception_gives_the_error_response_at_every_version(rich, api_key, version):
    """The error must reach the client: where a version has no top-level error
    code (Fetch v4-v6, OffsetFetch v1), Kafka's getErrorResponse puts it in
    every requested partition instead."""
    rich.apis.set_handlers({**HANDLERS, api_key: _Raises(HANDLERS[api_key])})
    body = request_body(api_key, version, **typical_request(rich, api_key, version))
    request, response = rich.respond(api_key, version, body)
    assert isinstance(response, SendResponse), response
    decoded = rich.decode(request, response)
    codes = _all_error_codes(decoded)
    assert ErrorCode.UNKNOWN_SERVER_ERROR in codes or not codes, decoded


def _all_error_codes(value) -> set:
    found = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "error_code":
                found.add(v)
            else:
                found |= _all_error_codes(v)
    elif isinstance(value, list):
        for v in value:
            found |= _all_error_codes(v)
    return found


# -- ApiVersions --------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.API_VERSIONS))
def test_api_versions_lists_exactly_the_handlers(broker, version):
    body = broker.call(ApiKey.API_VERSIONS, version, client_software_name="x",
                       client_software_version="1")
    assert body["error_code"] == ErrorCode.NONE
    advertised = {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}
    assert advertised == {int(k): (m.VERSIONS.low, m.VERSIONS.high) for k, m in HANDLERS.items()}
    assert [e["api_key"] for e in body["api_keys"]] == sorted(advertised)


def test_api_versions_v3_invalid_software_name(broker):
    for name, ver in [("bad name", "1"), ("-x", "1"), ("ok", "1.0-"), ("", "1")]:
        body = broker.call(ApiKey.API_VERSIONS, 3, client_software_name=name,
                           client_software_version=ver)
        assert body["error_code"] == ErrorCode.INVALID_REQUEST, (name, ver)
        assert body["api_keys"] == []
    # v0-v2 carry no software name: nothing to validate.
    assert broker.call(ApiKey.API_VERSIONS, 2)["error_code"] == ErrorCode.NONE


# -- Produce ------------------------------------------------------------------------------


def test_produce_appends_and_returns_offsets(broker):
    broker.create_topic("t", 2)
    body = produce(broker, records=batch([b"a", b"b"]))
    [topic] = body["responses"]
    [p] = topic["partition_responses"]
    assert (topic["name"], p["index"], p["error_code"], p["base_offset"]) == ("t", 0, 0, 0)
    assert p["log_append_time_ms"] == -1 and p["log_start_offset"] == 0
    body = produce(broker, records=batch([b"c"]))
    assert body["responses"][0]["partition_responses"][0]["base_offset"] == 2


def test_produce_acks_all_behaves_as_acks_one(broker):
    broker.create_topic("t")
    body = produce(broker, acks=-1)
    assert body["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE


def test_produce_acks_zero_is_a_noop_response(broker):
    broker.create_topic("t")
    response = produce(broker, acks=0)
    assert isinstance(response, NoOpResponse)
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 1


def test_produce_acks_zero_with_a_bad_batch_closes_the_connection(broker):
    broker.create_topic("t")
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    assert isinstance(produce(broker, acks=0, records=bytes(bad)), CloseConnectionResponse)
    assert isinstance(produce(broker, acks=0, topic="missing"), CloseConnectionResponse)


@pytest.mark.parametrize("acks", [2, -2, 5])
def test_produce_invalid_acks(broker, acks):
    broker.create_topic("t")
    body = produce(broker, acks=acks)
    [p] = body["responses"][0]["partition_responses"]
    assert p["error_code"] == ErrorCode.INVALID_REQUIRED_ACKS
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 0


def test_produce_does_not_create_topics(broker):
    body = produce(broker, topic="never-created")
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.metadata_cache.topic("never-created") is None


def test_produce_errors_are_per_partition(broker):
    broker.create_topic("t", 2)
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    body = broker.call(ApiKey.PRODUCE, 9, acks=1, timeout_ms=1000, topic_data=[
        {"name": "t", "partition_data": [{"index": 0, "records": bytes(bad)},
                                         {"index": 1, "records": batch()},
                                         {"index": 2, "records": batch()}]}])
    codes = [(p["index"], p["error_code"]) for p in body["responses"][0]["partition_responses"]]
    assert codes == [(0, ErrorCode.CORRUPT_MESSAGE), (1, ErrorCode.NONE),
                     (2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert body["responses"][0]["partition_responses"][0]["error_message"]


def test_produce_decompression_bombs_fail_only_their_own_partitions():
    bound = 64 * 1024
    broker = make_broker(message_max_uncompressed_bytes=bound).start()
    try:
        broker.create_topic("t", 4)
        good = batch([b"x" * 100] * 50, compression=Compression.GZIP)
        bombs = {codec: batch_from_payload(compress(codec, bytes(4 * bound)), 1,
                                           compression=codec)
                 for codec in (Compression.GZIP, Compression.ZSTD, Compression.SNAPPY)}
        body = broker.call(ApiKey.PRODUCE, 9, acks=1, timeout_ms=1000, topic_data=[
            {"name": "t", "partition_data": [
                {"index": 0, "records": bombs[Compression.GZIP]},
                {"index": 1, "records": good},
                {"index": 2, "records": bombs[Compression.ZSTD]},
                {"index": 3, "records": bombs[Compression.SNAPPY]}]}])
        parts = body["responses"][0]["partition_responses"]
        assert [p["error_code"] for p in parts] == [ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE,
                                                    ErrorCode.CORRUPT_MESSAGE,
                                                    ErrorCode.CORRUPT_MESSAGE]
        assert "message.max.uncompressed.bytes" in parts[0]["error_message"]
        stored = broker.replica_manager.read("t", 1, 0, 1 << 20, True)[1].records
        assert [r.value for b in split_batches(stored) for r in decode_records(b)] == \
            [b"x" * 100] * 50
        assert broker.replica_manager.partition("t", 0).log.log_end_offset == 0
    finally:
        broker.stop()


def test_produce_compressed_batches_of_one_request_share_a_budget():
    bound = 128 * 1024  # per request: bound // 4 = 32,768 records and headers
    broker = make_broker(message_max_uncompressed_bytes=bound).start()
    try:
        broker.create_topic("t", 4)
        many = batch([b""] * 12_000, compression=Compression.ZSTD)  # ~100 KB inflated
        plain = batch([b""] * 12_000)
        body = broker.call(ApiKey.PRODUCE, 9, acks=1, timeout_ms=1000, topic_data=[
            {"name": "t", "partition_data": [{"index": 0, "records": many},
                                             {"index": 1, "records": many},
                                             {"index": 2, "records": many},
                                             {"index": 3, "records": plain}]}])
        parts = body["responses"][0]["partition_responses"]
        assert [p["error_code"] for p in parts] == [ErrorCode.NONE, ErrorCode.NONE,
                                                    ErrorCode.CORRUPT_MESSAGE, ErrorCode.NONE]
        assert "decompression budget" in parts[2]["error_message"]
        # The budget is per request: the next one starts afresh.
        again = produce(broker, partition=2, records=many)
        assert again["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    finally:
        broker.stop()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_are_refused_with_invalid_record(broker, version):
    """The module docstring: v0-v2 are advertised but refused with INVALID_RECORD."""
    broker.create_topic("t")
    body = produce(broker, version)
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.INVALID_RECORD
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 0


def test_produce_idempotent_retry_gets_the_original_offset(broker):
    broker.create_topic("t")
    pid = broker.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None)["producer_id"]
    data = batch([b"a"], producer_id=pid, producer_epoch=0, base_sequence=0)
    first = produce(broker, records=data)["responses"][0]["partition_responses"][0]
    again = produce(broker, records=data)["responses"][0]["partition_responses"][0]
    assert first["base_offset"] == again["base_offset"] == 0
    assert again["error_code"] == ErrorCode.NONE
    gap = batch([b"b"], producer_id=pid, producer_epoch=0, base_sequence=5)
    assert produce(broker, records=gap)["responses"][0]["partition_responses"][0][
        "error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


# -- Fetch --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
def test_fetch_returns_records_and_watermarks(broker, version):
    broker.create_topic("t", 1)
    produce(broker, records=batch([b"a", b"b"]))
    produce(broker, records=batch([b"c"]))
    body = fetch(broker, version, partitions=[("t", 0, 1)])
    p = partition_of(body)
    assert p["error_code"] == ErrorCode.NONE
    assert p["high_watermark"] == 3
    assert p["last_stable_offset"] == 3
    if version >= 5:
        assert p["log_start_offset"] == 0
    assert stored_offsets(p["records"]) == [0, 1, 2]  # the whole first batch
    if version >= 7:
        assert body["session_id"] == 0 and body["error_code"] == ErrorCode.NONE
    if version >= 13:
        assert body["responses"][0]["topic_id"] == broker.metadata_cache.topic("t").topic_id
    else:
        assert body["responses"][0]["topic"] == "t"


def test_fetch_offset_out_of_range_reports_the_log_bounds(broker):
    broker.create_topic("t")
    produce(broker)
    p = partition_of(fetch(broker, partitions=[("t", 0, 5)], max_wait_ms=LONG))
    assert p["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (p["high_watermark"], p["log_start_offset"]) == (1, 0)
    assert p["records"] in (b"", None)


def test_fetch_unknown_topic_is_answered_at_once(broker):
    body = fetch(broker, partitions=[("nope", 0, 0)], max_wait_ms=LONG)
    assert partition_of(body)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [13, 15, 17])
def test_fetch_by_unknown_topic_id(broker, version):
    body = fetch(broker, version, partitions=[("ghost", 0, 0)], max_wait_ms=LONG)
    assert body["responses"][0]["topic_id"] != ZERO_UUID
    assert partition_of(body)["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_fetch_by_topic_id(broker):
    topic = broker.create_topic("t")
    produce(broker)
    body = fetch(broker, 13, partitions=[("t", 0, 0)])
    assert body["responses"][0]["topic_id"] == topic.topic_id
    assert stored_offsets(partition_of(body)["records"]) == [0]


def test_incremental_fetch_in_a_session_we_never_created(broker):
    broker.create_topic("t")
    body = fetch(broker, 12, session_id=123, session_epoch=1)
    assert body["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert body["responses"] == []


@pytest.mark.parametrize("epoch", [0, -1])
def test_full_fetch_naming_a_session_is_served_without_one(broker, epoch):
    # Kafka: a full fetch (epoch 0 = new session, -1 = no session) is always
    # served; the old session id is simply dropped.
    broker.create_topic("t")
    body = fetch(broker, 12, session_id=7, session_epoch=epoch)
    assert body["error_code"] == ErrorCode.NONE and body["session_id"] == 0
    assert len(body["responses"]) == 1


def test_fetch_session_epoch_without_a_session(broker):
    broker.create_topic("t")
    body = fetch(broker, 12, session_id=0, session_epoch=3)
    assert body["error_code"] != ErrorCode.NONE
    # Epoch 0 asks for a new session: declined (session id 0) but served in full.
    produce(broker)
    body = fetch(broker, 12, session_id=0, session_epoch=0)
    assert body["error_code"] == ErrorCode.NONE and body["session_id"] == 0
    assert stored_offsets(partition_of(body)["records"]) == [0]


def test_fetch_max_bytes_and_partition_max_bytes(broker):
    broker.create_topic("t", 2)
    for _ in range(3):
        produce(broker, records=batch([b"x" * 200]))
        produce(broker, partition=1, records=batch([b"y" * 200]))
    one = len(bytes(broker.replica_manager.read("t", 0, 0, 1 << 20, True)[1].records)) // 3
    # max_bytes smaller than one batch: the first batch still comes back (KIP-74),
    # and nothing more, not even from the next partition.
    body = fetch(broker, partitions=[("t", 0, 0), ("t", 1, 0)], max_bytes=10)
    assert stored_offsets(partition_of(body, 0)["records"]) == [0]
    assert not partition_of(body, 1)["records"]
    # partition_max_bytes limits each partition; max_bytes the total.
    body = fetch(broker, partitions=[("t", 0, 0), ("t", 1, 0)],
                 partition_max_bytes=2 * one, max_bytes=3 * one)
    assert stored_offsets(partition_of(body, 0)["records"]) == [0, 1]
    assert stored_offsets(partition_of(body, 1)["records"]) == [0]
    assert partition_of(body, 1)["high_watermark"] == 3


def test_fetch_first_partition_without_data_does_not_use_up_min_one(broker):
    broker.create_topic("t", 2)
    produce(broker, partition=1, records=batch([b"y" * 300]))
    body = fetch(broker, partitions=[("t", 0, 0), ("t", 1, 0)], max_bytes=10)
    assert stored_offsets(partition_of(body, 1)["records"]) == [0]


def test_long_poll_fetch_is_parked_and_completed_by_an_append(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    assert isinstance(parked, Deferred) and not parked.done
    assert broker.replica_manager.fetch_purgatory.watched() == 1
    produce(broker, records=batch([b"late"]))
    body = parked.body()
    p = partition_of(body)
    assert p["error_code"] == ErrorCode.NONE and p["high_watermark"] == 1
    assert stored_offsets(p["records"]) == [0]
    assert broker.replica_manager.fetch_purgatory.watched() == 0


def test_long_poll_fetch_times_out_with_an_empty_answer(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=30)
    assert isinstance(parked, Deferred)
    p = partition_of(parked.body())
    assert p["error_code"] == ErrorCode.NONE and not p["records"]


def test_long_poll_fetch_waits_for_min_bytes(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG, min_bytes=500)
    produce(broker, records=batch([b"small"]))
    assert not parked.done
    produce(broker, records=batch([b"x" * 600]))
    assert stored_offsets(partition_of(parked.body())["records"]) == [0, 1]


def test_fetch_with_enough_data_is_answered_at_once(broker):
    broker.create_topic("t")
    produce(broker)
    body = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    assert isinstance(body, dict)


def test_long_poll_fetch_answered_when_its_topic_is_deleted(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    broker.call(ApiKey.DELETE_TOPICS, 5, topic_names=["t"], timeout_ms=1000)
    assert partition_of(parked.body())["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_parked_fetches_answered_by_complete_all(broker):
    broker.create_topic("t")
    parked = fetch(broker, partitions=[("t", 0, 0)], max_wait_ms=LONG)
    assert broker.replica_manager.fetch_purgatory.complete_all() == 1
    assert partition_of(parked.body())["error_code"] == ErrorCode.NONE


# -- ListOffsets --------------------------------------------------------------------------


def list_offsets(broker, version, *specs):
    body = broker.call(ApiKey.LIST_OFFSETS, version, topics=[{"name": "t", "partitions": [
        {"partition_index": p, "timestamp": ts} for p, ts in specs]}])
    return [(p["error_code"], p["offset"], p["timestamp"])
            for p in body["topics"][0]["partitions"]]


@pytest.mark.parametrize("version", versions(ApiKey.LIST_OFFSETS))
def test_list_offsets_earliest_latest_and_by_timestamp(broker, version):
    broker.create_topic("t")
    produce(broker, records=build_batch([(None, b"a", (), 1000), (None, b"b", (), 1000)]))
    produce(broker, records=build_batch([(None, b"c", (), 3000)]))         # 2
    produce(broker, records=build_batch([(None, b"d", (), 2000)]))         # 3
    got = list_offsets(broker, version, (0, -1), (0, -2), (0, 1500), (0, 1000), (0, 9999),
                       (5, -1))
    assert got == [(0, 4, -1), (0, 0, -1), (0, 2, 3000), (0, 0, 1000), (0, -1, -1),
                   (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
    if version >= 7:
        assert list_offsets(broker, version, (0, -3)) == [(0, 2, 3000)]


def test_list_offsets_on_an_empty_partition(broker):
    broker.create_topic("t")
    assert list_offsets(broker, 9, (0, -1), (0, -2), (0, -3), (0, -4), (0, -5), (0, 0)) == [
        (0, 0, -1), (0, 0, -1), (0, -1, -1), (0, 0, -1), (0, -1, -1), (0, -1, -1)]


# -- Metadata -----------------------------------------------------------------------------


def metadata(broker, version, names=None, **kw):
    topics = None if names is None else [{"name": n, "topic_id": ZERO_UUID} for n in names]
    return broker.call(ApiKey.METADATA, version, topics=topics, **kw)


def topic_errors(body):
    return {t["name"]: t["error_code"] for t in body["topics"]}


@pytest.mark.parametrize("version", versions(ApiKey.METADATA))
def test_metadata_brokers_and_partitions(broker, version):
    broker.create_topic("t", 3)
    body = metadata(broker, version, ["t"])
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == \
        [(1, "broker.test", 19092)]
    [t] = body["topics"]
    assert t["error_code"] == ErrorCode.NONE and t["name"] == "t"
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in t["partitions"]] == [(i, 1, [1], [1]) for i in range(3)]
    if version >= 1:
        assert body["controller_id"] == 1
    if version >= 2:
        assert body["cluster_id"] == broker.config.cluster_id
    if version >= 10:
        assert t["topic_id"] == broker.metadata_cache.topic("t").topic_id


def test_metadata_auto_creates_unknown_topics(broker):
    body = metadata(broker, 9, ["fresh"])
    assert topic_errors(body) == {"fresh": ErrorCode.NONE}
    assert len(body["topics"][0]["partitions"]) == broker.config.num_partitions
    assert broker.replica_manager.partition("fresh", 0) is not None


def test_metadata_auto_create_uses_num_partitions():
    b = make_broker(num_partitions=3)
    body = metadata(b, 9, ["fresh"])
    assert len(body["topics"][0]["partitions"]) == 3


def test_metadata_auto_create_disabled():
    b = make_broker(auto_create_topics_enable=False)
    for version in (0, 3, 4, 9, 12):
        body = metadata(b, version, [f"t{version}"])
        assert topic_errors(body) == {f"t{version}": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert b.metadata_cache.topics() == []


@pytest.mark.parametrize("version", [4, 8, 12])
def test_metadata_allow_auto_topic_creation_false(broker, version):
    body = metadata(broker, version, ["fresh"], allow_auto_topic_creation=False)
    assert topic_errors(body) == {"fresh": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.metadata_cache.topic("fresh") is None


@pytest.mark.parametrize("version", [0, 1, 3])
def test_metadata_before_v4_always_auto_creates(broker, version):
    assert topic_errors(metadata(broker, version, ["fresh"])) == {"fresh": ErrorCode.NONE}


@pytest.mark.parametrize("name", ["bad name", "a" * 250, ".", "..", "x/y"])
def test_metadata_invalid_topic_name_is_never_created(broker, name):
    body = metadata(broker, 9, [name])
    assert topic_errors(body) == {name: ErrorCode.INVALID_TOPIC_EXCEPTION}
    assert broker.metadata_cache.topics() == []


def test_metadata_which_topics(broker):
    broker.create_topic("a")
    broker.create_topic("b")
    assert [t["name"] for t in metadata(broker, 0, [])["topics"]] == ["a", "b"]   # v0: all
    assert metadata(broker, 1, [])["topics"] == []                                # v1+: none
    assert [t["name"] for t in metadata(broker, 1, None)["topics"]] == ["a", "b"]  # null: all
    assert [t["name"] for t in metadata(broker, 12, None)["topics"]] == ["a", "b"]


def test_metadata_by_topic_id_v12(broker):
    topic = broker.create_topic("t", 2)
    body = broker.call(ApiKey.METADATA, 12, topics=[
        {"name": None, "topic_id": topic.topic_id},
        {"name": None, "topic_id": uuid.uuid4()}])
    known, unknown = body["topics"]
    assert (known["name"], known["topic_id"], known["error_code"]) == \
        ("t", topic.topic_id, ErrorCode.NONE)
    assert len(known["partitions"]) == 2
    assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID and unknown["name"] is None


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_null_topic_name_gets_an_answer(broker, version):
    """v10-11 requests may carry a null topic name (nullable from v10), but the
    response name is non-nullable until v12: the broker must still answer
    (Kafka answers an error, INVALID_REQUEST) rather than fail to encode and
    close the connection."""
    broker.create_topic("t")
    request, response = broker.respond(ApiKey.METADATA, version, request_body(
        ApiKey.METADATA, version, topics=[{"name": None, "topic_id": uuid.uuid4()}]))
    assert isinstance(response, SendResponse), response


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_error_response_with_a_null_topic_name_encodes(broker, version):
    from kafka_net.server.handlers import metadata as metadata_handler
    request = broker.make_request(ApiKey.METADATA, version, request_body(
        ApiKey.METADATA, version, topics=[{"name": None, "topic_id": uuid.uuid4()}]))
    answer = metadata_handler.error_response(request.body, version, ErrorCode.INVALID_REQUEST)
    encode_response(ApiKey.METADATA, version, 1, answer)


def test_metadata_authorized_operations(broker):
    broker.create_topic("t")
    body = metadata(broker, 10, ["t"], include_cluster_authorized_operations=True,
                    include_topic_authorized_operations=True)
    assert body["cluster_authorized_operations"] > 0
    assert body["topics"][0]["topic_authorized_operations"] > 0
    body = metadata(broker, 10, ["t"])
    assert body["cluster_authorized_operations"] == -2147483648
    assert body["topics"][0]["topic_authorized_operations"] == -2147483648


# -- CreateTopics -------------------------------------------------------------------------


def create_topics(broker, version, *topics, validate_only=False):
    body = broker.call(ApiKey.CREATE_TOPICS, version, validate_only=validate_only, topics=[
        {"name": name, "num_partitions": parts, "replication_factor": rf,
         "assignments": [], "configs": []} for name, parts, rf in topics])
    return body["topics"]


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
def test_create_topics(broker, version):
    [t] = create_topics(broker, version, ("new", 3, 1))
    assert t["name"] == "new" and t["error_code"] == ErrorCode.NONE
    created = broker.metadata_cache.topic("new")
    assert created.num_partitions == 3
    assert broker.replica_manager.partition("new", 2) is not None
    if version >= 5:
        assert (t["num_partitions"], t["replication_factor"]) == (3, 1)
    if version >= 7:
        assert t["topic_id"] == created.topic_id
    [again] = create_topics(broker, version, ("new", 3, 1))
    assert again["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS


def test_create_topics_errors(broker):
    results = create_topics(broker, 5, ("bad name", 1, 1), ("rf", 1, 3), ("zero", 0, 1),
                            ("neg", -2, 1), ("rf0", 1, 0), ("ok", 1, 1))
    assert [(t["name"], t["error_code"]) for t in results] == [
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("rf", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("zero", ErrorCode.INVALID_PARTITIONS),
        ("neg", ErrorCode.INVALID_PARTITIONS),
        ("rf0", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("ok", ErrorCode.NONE)]
    assert all(t["error_message"] for t in results[:-1])
    assert [t.name for t in broker.metadata_cache.topics()] == ["ok"]


def test_create_topics_minus_one_takes_the_defaults():
    b = make_broker(num_partitions=4)
    [t] = create_topics(b, 4, ("d", -1, -1))
    assert t["error_code"] == ErrorCode.NONE
    assert b.metadata_cache.topic("d").num_partitions == 4


def test_create_topics_validate_only_creates_nothing(broker):
    [t] = create_topics(broker, 7, ("v", 2, 1), validate_only=True)
    assert t["error_code"] == ErrorCode.NONE and t["topic_id"] == ZERO_UUID
    assert broker.metadata_cache.topic("v") is None
    [bad] = create_topics(broker, 7, ("v", 2, 2), validate_only=True)
    assert bad["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR


def test_create_topics_duplicate_names_in_one_request(broker):
    results = create_topics(broker, 5, ("dup", 1, 1), ("other", 1, 1), ("dup", 2, 1))
    assert [(t["name"], t["error_code"]) for t in results] == [
        ("dup", ErrorCode.INVALID_REQUEST), ("other", ErrorCode.NONE),
        ("dup", ErrorCode.INVALID_REQUEST)]
    assert broker.metadata_cache.topic("dup") is None


def test_create_topics_manual_assignments(broker):
    body = broker.call(ApiKey.CREATE_TOPICS, 5, topics=[
        {"name": "m", "num_partitions": -1, "replication_factor": -1, "configs": [],
         "assignments": [{"partition_index": 0, "broker_ids": [1]},
                         {"partition_index": 1, "broker_ids": [1]}]},
        {"name": "x", "num_partitions": -1, "replication_factor": -1, "configs": [],
         "assignments": [{"partition_index": 0, "broker_ids": [2]}]}])
    assert [(t["name"], t["error_code"]) for t in body["topics"]] == [
        ("m", ErrorCode.NONE), ("x", ErrorCode.INVALID_REPLICA_ASSIGNMENT)]
    assert broker.metadata_cache.topic("m").num_partitions == 2


def test_create_topics_echoes_configs_v5(broker):
    body = broker.call(ApiKey.CREATE_TOPICS, 5, topics=[
        {"name": "c", "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": [{"name": "cleanup.policy", "value": "compact"}]}])
    [t] = body["topics"]  # every config; the one given is a DYNAMIC_TOPIC_CONFIG (1)
    assert [(c["name"], c["value"], c["config_source"]) for c in t["configs"]
            if c["config_source"] != 5] == [("cleanup.policy", "compact", 1)]


# -- DeleteTopics -------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_by_name(broker, version):
    broker.create_topic("d")
    produce(broker, topic="d")
    if version >= 6:
        body = broker.call(ApiKey.DELETE_TOPICS, version, topics=[
            {"name": "d", "topic_id": ZERO_UUID}, {"name": "missing", "topic_id": ZERO_UUID}])
    else:
        body = broker.call(ApiKey.DELETE_TOPICS, version, topic_names=["d", "missing"])
    assert [(r["name"], r["error_code"]) for r in body["responses"]] == [
        ("d", ErrorCode.NONE), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert broker.metadata_cache.topic("d") is None
    assert broker.replica_manager.partition("d", 0) is None


def test_delete_topics_by_id_v6(broker):
    topic = broker.create_topic("d")
    ghost = uuid.uuid4()
    body = broker.call(ApiKey.DELETE_TOPICS, 6, topics=[
        {"name": None, "topic_id": topic.topic_id}, {"name": None, "topic_id": ghost}])
    assert [(r["name"], r["topic_id"], r["error_code"]) for r in body["responses"]] == [
        ("d", topic.topic_id, ErrorCode.NONE), (None, ghost, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert broker.metadata_cache.topic("d") is None


def test_delete_topics_removes_committed_offsets(broker):
    broker.create_topic("d")
    broker.create_topic("keep")
    broker.call(ApiKey.OFFSET_COMMIT, 8, group_id="s", topics=[
        {"name": "d", "partitions": [{"partition_index": 0, "committed_offset": 3}]},
        {"name": "keep", "partitions": [{"partition_index": 0, "committed_offset": 4}]}])
    broker.call(ApiKey.DELETE_TOPICS, 4, topic_names=["d"])
    body = broker.call(ApiKey.OFFSET_FETCH, 7, group_id="s", topics=None)
    assert [t["name"] for t in body["topics"]] == ["keep"]


def test_deleted_topic_can_be_recreated_empty(broker):
    old = broker.create_topic("d")
    produce(broker, topic="d")
    broker.call(ApiKey.DELETE_TOPICS, 4, topic_names=["d"])
    [t] = create_topics(broker, 7, ("d", 1, 1))
    assert t["topic_id"] != old.topic_id
    assert broker.replica_manager.partition("d", 0).log.log_end_offset == 0


# -- CreatePartitions ---------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions(broker, version):
    broker.create_topic("t", 2)
    produce(broker)
    body = broker.call(ApiKey.CREATE_PARTITIONS, version, topics=[
        {"name": "t", "count": 4, "assignments": None},
        {"name": "missing", "count": 4, "assignments": None}])
    assert [(r["name"], r["error_code"]) for r in body["results"]] == [
        ("t", ErrorCode.NONE), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert broker.metadata_cache.topic("t").num_partitions == 4
    assert broker.replica_manager.partition("t", 3) is not None
    assert broker.replica_manager.partition("t", 0).log.log_end_offset == 1  # data kept


def test_create_partitions_errors_and_validate_only(broker):
    broker.create_topic("t", 3)
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "t", "count": 3, "assignments": None}])
    assert body["results"][0]["error_code"] == ErrorCode.INVALID_PARTITIONS
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "t", "count": 2, "assignments": None}])
    assert body["results"][0]["error_code"] == ErrorCode.INVALID_PARTITIONS
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
        {"name": "t", "count": 4, "assignments": [{"broker_ids": [9]}]}])
    assert body["results"][0]["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    body = broker.call(ApiKey.CREATE_PARTITIONS, 3, validate_only=True, topics=[
        {"name": "t", "count": 5, "assignments": [{"broker_ids": [1]}, {"broker_ids": [1]}]}])
    assert body["results"][0]["error_code"] == ErrorCode.NONE
    assert broker.metadata_cache.topic("t").num_partitions == 3
    assert broker.replica_manager.partition("t", 3) is None


# -- InitProducerId -----------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
def test_init_producer_id_gives_a_new_id_each_time(broker, version):
    first = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=None)
    second = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=None,
                         producer_id=first["producer_id"], producer_epoch=0)
    for body in (first, second):
        assert body["error_code"] == ErrorCode.NONE and body["producer_epoch"] == 0
        assert body["producer_id"] >= 0
    assert second["producer_id"] != first["producer_id"]


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
def test_init_producer_id_with_a_transactional_id(broker, version):
    body = broker.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id="tx-1")
    assert body["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (body["producer_id"], body["producer_epoch"]) == (-1, -1)


def test_markers_are_distinct():
    assert len({id(CLOSE_CONNECTION), id(DEFERRED), id(NO_RESPONSE)}) == 3
    assert repr(DEFERRED) == "DEFERRED"


def test_every_handler_module_has_the_documented_shape():
    for key, module in HANDLERS.items():
        assert module.API_KEY == key
        assert callable(module.handle) and callable(module.error_response)
        assert module.__doc__ and f"API key {int(key)}" in module.__doc__
        assert f"v{module.VERSIONS.low}-v{module.VERSIONS.high}" in module.__doc__, module


def test_wait_until_helper_is_bounded():
    assert wait_until(lambda: True)
    assert not wait_until(lambda: False, timeout=0.01)
