"""DescribeClientQuotas / AlterClientQuotas and KIP-219 throttling on a real
server, over raw sockets (issue 8).

Round trips at both versions (v1 flexible), Kafka's validation messages,
validate_only, the describe filters, the ``ip`` entity reaching the
connection-quota seam; then a client over its produce, fetch or request
quota gets ``throttle_time_ms`` at once and its connection stays muted until
the reaper ends the throttle.  No assertion on elapsed time.
"""

from __future__ import annotations

import math

import pytest

from kafka_net.network.mute_state import ChannelMuteState as S
from kafka_net.protocol import encode_request
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from tests.support import RawClient, make_config, running_server, wait_until

DESCRIBE, ALTER = 48, 49
INVALID_REQUEST = ErrorCode.INVALID_REQUEST


def entity(*pairs) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def op(key: str, value: float = 0.0, remove: bool = False) -> dict:
    return {"key": key, "value": float(value), "remove": remove}


def alter(client, entries, validate_only=False, version=1) -> list[dict]:
    body = client.call(ALTER, version, {"entries": entries, "validate_only": validate_only})
    return body["entries"]


def describe(client, components=(), strict=False, version=1) -> dict:
    return client.call(DESCRIBE, version, {"components": list(components), "strict": strict})


def component(entity_type, match_type, match=None) -> dict:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def as_table(entries) -> dict:
    """{((type, name), ...): {key: value}} for comparing describe results."""
    return {tuple(sorted((e["entity_type"], e["entity_name"]) for e in entry["entity"])):
            {v["key"]: v["value"] for v in entry["values"]} for entry in entries}


@pytest.fixture(scope="module")
def server():
    with running_server(make_config(quota_window_num=3)) as s:
        yield s


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


# --- Alter / Describe round trips ---------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_round_trip(client, version):
    user = f"alice-v{version}"
    results = alter(client, [
        {"entity": entity(("user", user), ("client-id", "app")),
         "ops": [op("producer_byte_rate", 2048), op("request_percentage", 12.5)]},
        {"entity": entity(("user", None)), "ops": [op("consumer_byte_rate", 4096)]},
    ], version=version)
    assert [(r["error_code"], r["error_message"]) for r in results] == [(0, None), (0, None)]
    assert results[0]["entity"] == entity(("user", user), ("client-id", "app"))
    body = describe(client, [component("user", 0, user)], version=version)
    assert body["error_code"] == 0 and body["error_message"] is None
    assert as_table(body["entries"]) == {
        (("client-id", "app"), ("user", user)):
            {"producer_byte_rate": 2048.0, "request_percentage": 12.5}}
    # Remove one key; removing a key that is not set is no error.
    results = alter(client, [{"entity": entity(("user", user), ("client-id", "app")),
                              "ops": [op("producer_byte_rate", remove=True),
                                      op("consumer_byte_rate", remove=True)]}],
                    version=version)
    assert results[0]["error_code"] == 0
    body = describe(client, [component("user", 0, user)], version=version)
    assert as_table(body["entries"]) == {
        (("client-id", "app"), ("user", user)): {"request_percentage": 12.5}}
    # Removing the last key removes the entity.
    alter(client, [{"entity": entity(("user", user), ("client-id", "app")),
                    "ops": [op("request_percentage", remove=True)]},
                   {"entity": entity(("user", None)),
                    "ops": [op("consumer_byte_rate", remove=True)]}], version=version)
    assert describe(client, [component("user", 0, user)], version=version)["entries"] == []


def test_validate_only_changes_nothing(client):
    results = alter(client, [{"entity": entity(("client-id", "dry-run")),
                              "ops": [op("producer_byte_rate", 1000)]}], validate_only=True)
    assert results[0]["error_code"] == 0
    assert describe(client, [component("client-id", 0, "dry-run")])["entries"] == []
    # ... and still reports what would fail.
    results = alter(client, [{"entity": entity(("client-id", "dry-run")),
                              "ops": [op("producer_byte_rate", -1)]}], validate_only=True)
    assert results[0]["error_code"] == INVALID_REQUEST


@pytest.mark.parametrize("entity_data, ops, message", [
    (entity(("group", "g")), [op("producer_byte_rate", 1)],
     "Unhandled client quota entity type: group"),
    ([], [op("producer_byte_rate", 1)], "Invalid empty client quota entity"),
    (entity(("user", "")), [op("producer_byte_rate", 1)], "Empty user not supported"),
    (entity(("user", "u"), ("user", "v")), [op("producer_byte_rate", 1)],
     "Invalid client quota entity, duplicate entity entry user"),
    (entity(("ip", "127.0.0.1"), ("user", "u")), [op("connection_creation_rate", 1)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or "
     "ClientId"),
    (entity(("ip", "no-such-host.invalid")), [op("connection_creation_rate", 1)],
     "no-such-host.invalid is not a valid IP or resolvable host."),
    (entity(("user", "u")), [op("bogus_key", 1)], "Invalid configuration key bogus_key"),
    (entity(("user", "u")), [op("connection_creation_rate", 1)],
     "Invalid configuration key connection_creation_rate"),
    (entity(("ip", None)), [op("producer_byte_rate", 1)],
     "Invalid configuration key producer_byte_rate"),
    (entity(("user", "u")), [op("producer_byte_rate", 0)],
     "Quota producer_byte_rate must be greater than 0"),
    (entity(("user", "u")), [op("request_percentage", math.nan)],
     "Quota request_percentage must be greater than 0"),
    (entity(("user", "u")), [op("producer_byte_rate", 10.5)],
     "producer_byte_rate cannot be a fractional value."),
    (entity(("user", "u")), [op("producer_byte_rate", 1e19)],
     "Proposed value for producer_byte_rate is too large for a LONG."),
    (entity(("ip", None)), [op("connection_creation_rate", 2**31)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    (entity(("user", "u")), [op("producer_byte_rate", 1), op("producer_byte_rate", 2)],
     "Duplicate quota key producer_byte_rate not updating quota for this entity "
     "ClientQuotaEntity(entries={user=u})"),
])
def test_alter_refuses_bad_entities_and_values(client, entity_data, ops, message):
    results = alter(client, [{"entity": entity_data, "ops": ops}])
    assert [(r["error_code"], r["error_message"]) for r in results] == [
        (INVALID_REQUEST, message)]


def test_a_bad_entity_fails_alone_and_all_of_its_ops(client):
    results = alter(client, [
        {"entity": entity(("client-id", "good")), "ops": [op("producer_byte_rate", 5000)]},
        {"entity": entity(("client-id", "half")),
         "ops": [op("producer_byte_rate", 5000), op("consumer_byte_rate", -5)]},
        {"entity": entity(("client-id", "good")), "ops": [op("producer_byte_rate", 7)]},
    ])
    # One result per entity, as Kafka: the repeat replaces the first one's result,
    # though the first occurrence was applied.
    assert [(r["error_code"], r["error_message"]) for r in results] == [
        (INVALID_REQUEST, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=good})"),
        (INVALID_REQUEST, "Quota consumer_byte_rate must be greater than 0")]
    table = as_table(describe(client, [component("client-id", 2)], strict=True)["entries"])
    assert table[(("client-id", "good"),)] == {"producer_byte_rate": 5000.0}
    assert (("client-id", "half"),) not in table
    alter(client, [{"entity": entity(("client-id", "good")),
                    "ops": [op("producer_byte_rate", remove=True)]}])


def test_describe_match_types_and_strict(client):
    alter(client, [
        {"entity": entity(("user", "bob")), "ops": [op("producer_byte_rate", 1000)]},
        {"entity": entity(("user", None)), "ops": [op("producer_byte_rate", 2000)]},
        {"entity": entity(("user", "bob"), ("client-id", None)),
         "ops": [op("producer_byte_rate", 3000)]},
        {"entity": entity(("client-id", "cx")), "ops": [op("consumer_byte_rate", 4000)]},
    ])
    try:
        def keys(components, strict=False):
            return set(as_table(describe(client, components, strict)["entries"]))

        bob, default_user = (("user", "bob"),), (("user", None),)
        bob_default_client = (("client-id", None), ("user", "bob"))
        cx = (("client-id", "cx"),)
        assert keys([component("user", 0, "bob")]) == {bob, bob_default_client}
        assert keys([component("user", 0, "bob")], strict=True) == {bob}
        assert keys([component("user", 1)], strict=True) >= {default_user}
        assert bob not in keys([component("user", 1)])
        assert {bob, default_user, bob_default_client} <= keys([component("user", 2)])
        assert cx not in keys([component("user", 2)])
        assert keys([component("user", 0, "bob"), component("client-id", 1)]) == {
            bob_default_client}
        assert {bob, cx} <= keys([])                  # no filter, not strict: everything
        assert keys([], strict=True) == set()         # strict and empty: nothing
    finally:
        alter(client, [
            {"entity": entity(("user", "bob")), "ops": [op("producer_byte_rate", remove=True)]},
            {"entity": entity(("user", None)), "ops": [op("producer_byte_rate", remove=True)]},
            {"entity": entity(("user", "bob"), ("client-id", None)),
             "ops": [op("producer_byte_rate", remove=True)]},
            {"entity": entity(("client-id", "cx")),
             "ops": [op("consumer_byte_rate", remove=True)]},
        ])


@pytest.mark.parametrize("components, code, message", [
    ([component("", 0, "x")], INVALID_REQUEST, "Invalid empty entity type."),
    ([component("user", 0, "a"), component("user", 2)], INVALID_REQUEST,
     "Entity type user cannot appear more than once in the filter."),
    ([component("topic", 0, "t")], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type topic"),
    ([component("user", 0)], INVALID_REQUEST,
     "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([component("user", 1, "x")], INVALID_REQUEST,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([component("user", 2, "x")], INVALID_REQUEST,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([component("user", 7)], INVALID_REQUEST, "Unknown match type 7"),
    ([component("ip", 2), component("user", 2)], INVALID_REQUEST,
     "Invalid entity filter component combination. IP filter component should not be "
     "used with user or clientId filter component."),
])
def test_describe_refuses_bad_filters(client, components, code, message):
    body = describe(client, components)
    assert (body["error_code"], body["error_message"], body["entries"]) == (code, message, None)


def test_ip_quotas_reach_the_connection_quotas_seam(server, client):
    seam = server.quotas.client_quotas.ip_quotas
    results = alter(client, [
        {"entity": entity(("ip", "127.0.0.1")), "ops": [op("connection_creation_rate", 5)]},
        {"entity": entity(("ip", None)), "ops": [op("connection_creation_rate", 50)]},
    ])
    assert [r["error_code"] for r in results] == [0, 0]
    assert seam.ip_connection_rate_quotas() == {"127.0.0.1": 5.0, None: 50.0}
    # "Any specified name" includes the default entity, as in Kafka's ClientQuotasImage.
    table = as_table(describe(client, [component("ip", 2)])["entries"])
    assert table == {(("ip", "127.0.0.1"),): {"connection_creation_rate": 5.0},
                     (("ip", None),): {"connection_creation_rate": 50.0}}
    table = as_table(describe(client, [component("ip", 1)])["entries"])
    assert table == {(("ip", None),): {"connection_creation_rate": 50.0}}
    alter(client, [
        {"entity": entity(("ip", "127.0.0.1")),
         "ops": [op("connection_creation_rate", remove=True)]},
        {"entity": entity(("ip", None)), "ops": [op("connection_creation_rate", remove=True)]},
    ])
    assert seam.ip_connection_rate_quotas() == {}


# --- throttling (a server of its own: no quotas left over from the tests above) ---------

@pytest.fixture(scope="module")
def throttling_server():
    with running_server(make_config(quota_window_num=3)) as s:
        yield s


@pytest.fixture
def throttling_client(throttling_server):
    with RawClient(throttling_server.bound_port()) as c:
        yield c

def frame(api_key, version, correlation_id, body, client_id):
    return encode_request(api_key, version, correlation_id, body, client_id=client_id)


def produce_body(topic: str, size: int) -> dict:
    return {"transactional_id": None, "acks": 1, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [
            {"index": 0, "records": build_batch([(None, b"v" * size)])}]}]}


def channel_states(server) -> list:
    return [c.mute_state.state for p in server.socket_server.processors
            for c in list(p.selector.channels.values())]


def set_client_quota(client, client_id, key, value):
    assert alter(client, [{"entity": entity(("client-id", client_id)),
                           "ops": [op(key, value)]}])[0]["error_code"] == 0


def create_topic(server, name):
    server.apis.create_topic(name, 1)


def test_produce_over_quota_is_answered_at_once_and_then_muted(throttling_server, throttling_client):
    server, client = throttling_server, throttling_client
    create_topic(server, "throttled-produce")
    set_client_quota(client, "p-slow", "producer_byte_rate", 10_000)
    with RawClient(server.bound_port()) as producer:
        # 40 kB against 10 kB/s, rate over 2 windows of 1 s: about 20 kB/s, so a
        # throttle of (20 - 10) / 10 * 2 s ~ 2 s; the produce itself succeeds.
        producer.send_raw(frame(0, 9, 1, produce_body("throttled-produce", 40_000), "p-slow"))
        _, body = producer.receive(0, 9)
        assert body["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert body["throttle_time_ms"] > 1000
        # The answer is out and the channel is muted for the throttle...
        assert wait_until(lambda: S.MUTED_AND_THROTTLED in channel_states(server), 5)
        # ...and a pipelined request is read once the reaper ends the throttle.
        producer.send_raw(frame(18, 3, 2, {"client_software_name": "t",
                                            "client_software_version": "1"}, "p-slow"))
        correlation_id, _ = producer.receive(18, 3)
        assert correlation_id == 2
    metrics = server.quotas.metrics()
    prefix = "kafka.server:type=Produce,user=,client-id=p-slow"
    assert metrics[f"{prefix},name=throttle-time"] > 1000
    assert metrics[f"{prefix},name=byte-rate"] > 10_000


def test_fetch_over_quota_gets_no_data_and_a_throttle(throttling_server, throttling_client):
    server, client = throttling_server, throttling_client
    create_topic(server, "throttled-fetch")
    with RawClient(server.bound_port()) as producer:
        for _ in range(20):
            producer.call(0, 9, produce_body("throttled-fetch", 200))
    set_client_quota(client, "f-slow", "consumer_byte_rate", 1000)
    topic_id = server.metadata_cache.topic("throttled-fetch").topic_id
    fetch_body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50_000_000,
                  "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                  "topics": [{"topic_id": topic_id, "partitions": [
                      {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1_000_000,
                       "current_leader_epoch": -1, "log_start_offset": -1,
                       "last_fetched_epoch": -1}]}],
                  "forgotten_topics_data": [], "rack_id": ""}
    with RawClient(server.bound_port()) as consumer:
        # Capped at what one quota window allows (1000 B/s * 2 s), not 50 MB: the
        # answer fits the quota, so it is not throttled.
        consumer.send_raw(frame(1, 13, 1, fetch_body, "f-slow"))
        _, first = consumer.receive(1, 13)
        records = first["responses"][0]["partitions"][0]["records"]
        assert 0 < len(records) <= 2000
        assert first["throttle_time_ms"] == 0
        # The same again puts the client over: no data, and a throttle.
        consumer.send_raw(frame(1, 13, 2, fetch_body, "f-slow"))
        _, second = consumer.receive(1, 13)
        assert second["throttle_time_ms"] > 0
        assert second["responses"] == []


def test_request_quota_throttles_every_api(throttling_server, throttling_client):
    server, client = throttling_server, throttling_client
    set_client_quota(client, "r-slow", "request_percentage", 0.0001)
    throttles = []
    with RawClient(server.bound_port()) as busy:
        for i in range(20):
            busy.send_raw(frame(18, 3, i, {"client_software_name": "t",
                                           "client_software_version": "1"}, "r-slow"))
            throttles.append(busy.receive(18, 3)[1]["throttle_time_ms"])
            if throttles[-1]:
                break
    assert throttles[-1] > 0
    assert throttles[-1] <= 1000   # request throttles are capped at one quota window


def test_no_quota_no_sensors_and_no_throttle():
    with running_server() as fresh, RawClient(fresh.bound_port()) as c:
        body = c.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert body["throttle_time_ms"] == 0
        assert not fresh.quotas.enabled
        assert fresh.quotas.metrics() == {}
        assert fresh.quotas.produce._sensors == {}


def test_throttled_clients_do_not_hold_up_a_graceful_shutdown():
    server = running_server()
    with server as s, RawClient(s.bound_port()) as c:
        create_topic(s, "t")
        set_client_quota(c, "p-slow", "producer_byte_rate", 1)
        c.send_raw(frame(0, 9, 1, produce_body("t", 10_000), "p-slow"))
        assert c.receive(0, 9)[1]["throttle_time_ms"] > 60_000
        assert wait_until(lambda: S.MUTED_AND_THROTTLED in channel_states(s), 5)
        assert s.shutdown() is True   # drained: the throttled request was answered
        assert not s.quotas.reaper.is_alive()
