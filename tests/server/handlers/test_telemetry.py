"""GetTelemetrySubscriptions (71) and PushTelemetry (72) through KafkaApis with real
encoding: instance ids, subscription matching, Kafka's subscription id, every error
code of both APIs, decompression and OTLP decoding, the metrics kept for /metrics,
and instances expiring.  A fake clock stands in for time: nothing waits."""

from __future__ import annotations

import gzip
import uuid

import cramjam
import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.client_metrics import (
    java_hash_set_order, java_string_hash, kafka_uuid_text, subscription_id)
from kafka_net.server.prometheus import client_families
from tests.otlp_support import (
    CUMULATIVE, DELTA, gauge, histogram, metrics_data, number_point, sum_metric, summary)
from tests.server.conftest import make_broker
from tests.server.handlers.conftest import DELETE, SET, incremental
from tests.support import request_body

CLIENT_METRICS = 16
DEFAULT_INTERVAL = 300_000


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def broker(clock):
    """A broker whose metrics listener exports client metrics (not started here)."""
    b = make_broker(metrics_listener="http://127.0.0.1:0").start()
    b.apis.client_metrics.clock = clock
    try:
        yield b
    finally:
        b.stop()


def subscribe(broker, name, **configs):
    ops = [(key.replace("_", "."), SET, value) for key, value in configs.items()]
    result = incremental(broker, *ops, name=name, resource_type=CLIENT_METRICS)
    assert result["error_code"] == ErrorCode.NONE, result


def call(broker, api_key, client_id="app-1", software=("librdkafka", "2.16.0"), **fields):
    request = broker.make_request(api_key, 0, request_body(api_key, 0, **fields), client_id)
    request.client_software = software
    return broker.decode(request, broker.apis.build_response(request))


def get(broker, instance=ZERO_UUID, **kw):
    return call(broker, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, client_instance_id=instance, **kw)


def push(broker, got, metrics=b"", compression=0, terminating=False, subscription=None, **kw):
    return call(broker, ApiKey.PUSH_TELEMETRY, client_instance_id=got["client_instance_id"],
                subscription_id=got["subscription_id"] if subscription is None else subscription,
                compression_type=compression, terminating=terminating, metrics=metrics,
                **kw)["error_code"]


def series(broker):
    """{(family name, labels...): value} of what /metrics would show from clients."""
    out = {}
    for family in client_families(broker.apis.client_metrics, set()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


# -- GetTelemetrySubscriptions -------------------------------------------------------------


def test_a_new_client_gets_an_instance_id_and_kafkas_defaults(broker):
    got = get(broker)
    assert got["error_code"] == ErrorCode.NONE
    instance = got["client_instance_id"]
    assert instance not in (ZERO_UUID, uuid.UUID(int=1))
    assert got["requested_metrics"] == []               # no subscription matches
    assert got["push_interval_ms"] == DEFAULT_INTERVAL
    assert got["accepted_compression_types"] == [4, 3, 1, 2]   # zstd, lz4, gzip, snappy
    assert got["telemetry_max_bytes"] == 1024 * 1024
    assert got["delta_temporality"] is True
    assert got["subscription_id"] == subscription_id([], DEFAULT_INTERVAL, instance)


def test_kafkas_subscription_id_is_reproduced():
    # Kafka's ClientMetricsManager.computeSubscriptionId spelled out: CRC32C of the
    # set's toString() and the interval, XOR Uuid.hashCode() ((most ^ least) folded).
    instance = uuid.UUID(int=(1 << 64) | 2)   # most=1, least=2: hashCode 3
    from crc32c import crc32c
    expected = (crc32c(b"[*]1000") ^ 3) & 0xFFFFFFFF
    expected -= (1 << 32) if expected >= 1 << 31 else 0
    assert subscription_id(["*"], 1000, instance) == expected
    # Java's String.hashCode and a HashSet's iteration order.
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("org.apache.kafka.") == (sum(
        ord(c) * 31 ** (len("org.apache.kafka.") - 1 - i)
        for i, c in enumerate("org.apache.kafka.")) & 0xFFFFFFFF)
    assert java_hash_set_order(["b", "a", "c"]) == ["a", "b", "c"]   # buckets 2, 1, 3 of 16


def test_asking_again_within_the_interval_is_throttled(broker, clock):
    got = get(broker)
    again = get(broker, got["client_instance_id"])
    assert again["error_code"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert again["client_instance_id"] == ZERO_UUID and again["requested_metrics"] == []
    clock.ms += DEFAULT_INTERVAL
    assert get(broker, got["client_instance_id"])["error_code"] == ErrorCode.NONE


def test_a_changed_subscription_is_given_at_once(broker):
    got = get(broker)
    subscribe(broker, "s", metrics="org.apache.kafka.producer.", interval_ms="1000")
    again = get(broker, got["client_instance_id"])   # within the interval, yet answered
    assert again["error_code"] == ErrorCode.NONE
    assert again["requested_metrics"] == ["org.apache.kafka.producer."]
    assert again["push_interval_ms"] == 1000
    assert again["subscription_id"] != got["subscription_id"]


def test_subscriptions_match_on_every_selector_and_combine(broker):
    subscribe(broker, "producers", metrics="org.apache.kafka.producer.", interval_ms="2000",
              match="client_id=app-.*,client_software_name=librdkafka")
    subscribe(broker, "from-here", metrics="org.apache.kafka.consumer.", interval_ms="500",
              match="client_source_address=10\\.1\\..*,client_source_port=40000")
    subscribe(broker, "old-clients", metrics="*", match="client_software_version=1\\..*")
    got = get(broker)
    assert sorted(got["requested_metrics"]) == ["org.apache.kafka.consumer.",
                                                "org.apache.kafka.producer."]
    assert got["push_interval_ms"] == 500                # the smallest matching interval
    other = get(broker, client_id="other")               # only the address subscription
    assert other["requested_metrics"] == ["org.apache.kafka.consumer."]
    old = get(broker, client_id="x", software=("librdkafka", "1.9.2"))
    assert old["requested_metrics"] == ["*"]             # "*" wins over prefixes


def test_a_subscription_can_match_one_instance(broker):
    got = get(broker)
    name = kafka_uuid_text(got["client_instance_id"])
    subscribe(broker, "one", metrics="*", match=f"client_instance_id={name}")
    assert get(broker, got["client_instance_id"])["requested_metrics"] == ["*"]
    assert get(broker)["requested_metrics"] == []       # another instance


def test_matching_is_a_full_match_and_a_missing_attribute_never_matches(broker):
    subscribe(broker, "s", metrics="*", match="client_id=app")
    assert get(broker, client_id="app-1")["requested_metrics"] == []   # not a prefix match
    assert get(broker, client_id="app")["requested_metrics"] == ["*"]
    assert get(broker, client_id=None)["requested_metrics"] == []


# -- PushTelemetry: the error codes ---------------------------------------------------------


def test_push_with_the_zero_or_reserved_id_is_an_invalid_request(broker):
    for instance in (ZERO_UUID, uuid.UUID(int=1)):
        assert push(broker, {"client_instance_id": instance, "subscription_id": 0}) == \
            ErrorCode.INVALID_REQUEST


def test_a_second_push_within_the_interval_is_throttled(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    assert push(broker, got) == ErrorCode.NONE   # right after GetTelemetrySubscriptions
    assert push(broker, got) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.ms += 1000
    assert push(broker, got) == ErrorCode.NONE


def test_a_terminating_push_is_accepted_early_and_is_the_last(broker):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    assert push(broker, got) == ErrorCode.NONE
    assert push(broker, got, terminating=True) == ErrorCode.NONE   # within the interval
    assert push(broker, got) == ErrorCode.INVALID_REQUEST


def test_a_stale_subscription_id_is_unknown_and_the_client_may_ask_again_at_once(broker):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    assert push(broker, got, subscription=got["subscription_id"] ^ 1) == \
        ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    again = get(broker, got["client_instance_id"])       # not throttled after that error
    assert again["error_code"] == ErrorCode.NONE


def test_a_subscription_change_makes_the_old_id_unknown(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    subscribe(broker, "s", metrics="org.apache.kafka.", interval_ms="1000")
    assert push(broker, got) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID


def test_an_unknown_compression_type_is_unsupported(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    assert push(broker, got, metrics=b"x", compression=5) == \
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert get(broker, got["client_instance_id"])["error_code"] == ErrorCode.NONE


def test_more_than_telemetry_max_bytes_is_too_large(clock):
    b = make_broker(metrics_listener="http://127.0.0.1:0", telemetry_max_bytes=64).start()
    b.apis.client_metrics.clock = clock
    try:
        subscribe(b, "s", metrics="*", interval_ms="100")
        got = get(b)
        assert got["telemetry_max_bytes"] == 64
        assert push(b, got, metrics=bytes(65)) == ErrorCode.TELEMETRY_TOO_LARGE
        # Small on the wire, large once decompressed: a bomb costs the limit only.
        clock.ms += 100
        bomb = bytes(cramjam.zstd.compress(bytes(1_000_000)))
        assert len(bomb) <= 64
        assert push(b, got, metrics=bomb, compression=4) == ErrorCode.TELEMETRY_TOO_LARGE
    finally:
        b.stop()


def test_a_payload_that_does_not_decode_is_an_invalid_record(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="100")
    got = get(broker)
    assert push(broker, got, metrics=b"\xff\xff\xff") == ErrorCode.INVALID_RECORD
    clock.ms += 100
    assert push(broker, got, metrics=b"not zstd", compression=4) == ErrorCode.INVALID_RECORD
    assert series(broker) == {}


def test_without_an_exporter_pushes_are_accepted_and_not_decoded(clock):
    b = make_broker().start()   # no metrics.listener
    b.apis.client_metrics.clock = clock
    try:
        subscribe(b, "s", metrics="*", interval_ms="100")
        got = get(b)
        assert push(b, got, metrics=b"\xff\xff") == ErrorCode.NONE   # Kafka: no plugin
        assert series(b) == {}
    finally:
        b.stop()


# -- PushTelemetry: the metrics ------------------------------------------------------------


def _labels(got, client_id="app-1", **extra):
    return tuple(sorted({"client_instance_id": kafka_uuid_text(got["client_instance_id"]),
                         "client_id": client_id, "client_software_name": "librdkafka",
                         "client_software_version": "2.16.0", **extra}.items()))


@pytest.mark.parametrize("compression,compress", [
    (0, bytes), (1, gzip.compress),
    (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
    (3, lambda d: bytes(cramjam.lz4.compress(d))),
    (4, lambda d: bytes(cramjam.zstd.compress(d)))])
def test_pushed_metrics_are_decoded_whatever_the_codec(broker, compression, compress):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    payload = metrics_data(
        gauge("org.apache.kafka.producer.node.request.latency.avg",
              number_point(2.5, {"node.id": "1"}), description="latency"),
        resource={"service": "x"})
    assert push(broker, got, metrics=compress(payload), compression=compression) == 0
    assert series(broker) == {
        ("org_apache_kafka_producer_node_request_latency_avg",
         _labels(got, node_id="1", service="x")): 2.5}


def test_deltas_add_up_gauges_and_cumulative_values_replace(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    for value in (3, 4):
        payload = metrics_data(
            sum_metric("org.apache.kafka.producer.connection.creation.total",
                       number_point(value), temporality=DELTA),
            sum_metric("org.apache.kafka.consumer.bytes.total", number_point(value * 10),
                       temporality=CUMULATIVE),
            gauge("org.apache.kafka.producer.queue", number_point(float(value))),
            histogram("h", 2, 3.0, [1, 1, 0], [1.0, 2.0]),
            summary("s.latency", 2, 3.0, [(0.5, 1.0), (0.99, 2.0)]))
        assert push(broker, got, metrics=payload) == ErrorCode.NONE
        clock.ms += 1000
    found = series(broker)
    labels = _labels(got)
    assert found[("org_apache_kafka_producer_connection_creation_total", labels)] == 7
    assert found[("org_apache_kafka_consumer_bytes_total", labels)] == 40
    assert found[("org_apache_kafka_producer_queue", labels)] == 4.0
    assert found[("h_bucket", labels + (("le", "1.0"),))] == 2      # deltas: 1 + 1
    assert found[("h_bucket", labels + (("le", "2.0"),))] == 4      # cumulative buckets
    assert found[("h_bucket", labels + (("le", "+Inf"),))] == 4
    assert found[("h_count", labels)] == 4 and found[("h_sum", labels)] == 6.0
    assert found[("s_latency", tuple(sorted(dict(labels, quantile="0.99").items())))] == 2.0


def test_an_instance_and_its_metrics_expire_when_it_stops(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    assert push(broker, got, metrics=metrics_data(gauge("g", number_point(1.0)))) == 0
    assert series(broker)
    manager = broker.apis.client_metrics
    clock.ms += 59_999                      # Kafka: max(60 s, 3 x the push interval)
    assert series(broker) and manager.instance_count() == 1
    clock.ms += 1
    assert series(broker) == {} and manager.instance_count() == 0


def test_removing_the_subscription_keeps_pushed_metrics_until_expiry(broker, clock):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    assert push(broker, got, metrics=metrics_data(gauge("g", number_point(1.0)))) == 0
    assert incremental(broker, ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                       name="s", resource_type=CLIENT_METRICS)["error_code"] == 0
    assert get(broker, got["client_instance_id"])["requested_metrics"] == []
    assert series(broker)


def test_a_client_metric_never_takes_a_broker_series_name(broker):
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    got = get(broker)
    payload = metrics_data(gauge("kafka.server.replicamanager.leadercount", number_point(9.0)),
                           gauge("x.y_count", number_point(1.0)))
    assert push(broker, got, metrics=payload) == ErrorCode.NONE
    assert client_families(broker.apis.client_metrics,
                           {"kafka_server_replicamanager_leadercount"}) == []


def test_the_instance_cache_is_bounded_least_recently_used_first(broker):
    manager = broker.apis.client_metrics
    manager.cache_max_size = 2
    first, second = get(broker), get(broker)
    assert get(broker, first["client_instance_id"])["error_code"] == \
        ErrorCode.THROTTLING_QUOTA_EXCEEDED          # first is now the most recently used
    get(broker)                                      # a third: second goes
    assert manager.instance_count() == 2
    assert manager.instance(second["client_instance_id"]) is None
    assert manager.instance(first["client_instance_id"]) is not None


def test_a_failure_inside_the_manager_is_an_invalid_request(broker, monkeypatch, caplog):
    # KafkaApis answers INVALID_REQUEST when ClientMetricsManager throws, and logs it.
    def broken(*args):
        raise RuntimeError("boom")
    monkeypatch.setattr(broker.apis.client_metrics, "get_subscriptions", broken)
    monkeypatch.setattr(broker.apis.client_metrics, "push", broken)
    assert get(broker)["error_code"] == ErrorCode.INVALID_REQUEST
    assert push(broker, {"client_instance_id": uuid.uuid4(), "subscription_id": 0}) == \
        ErrorCode.INVALID_REQUEST
    assert "Error handling GetTelemetrySubscriptions" in caplog.text


def test_an_instance_keeps_a_bounded_number_of_series(broker, clock, monkeypatch):
    from kafka_net.server import client_metrics
    monkeypatch.setattr(client_metrics, "MAX_SERIES_PER_INSTANCE", 3)
    subscribe(broker, "s", metrics="*", interval_ms="100")
    got = get(broker)
    for first in (0, 2):   # two made-up attribute values per push
        points = [number_point(1.0, {"made_up": str(i)}) for i in (first, first + 1)]
        assert push(broker, got, metrics=metrics_data(gauge("g", *points))) == 0
        clock.ms += 100
    assert sorted(dict(labels)["made_up"] for (_, labels) in series(broker)) == ["0", "1", "2"]


def test_an_instance_and_its_metrics_go_when_its_connection_closes(broker):
    """Kafka's ClientMetricsManager ConnectionDisconnectListener: the connection that
    created an instance (or re-created it after a subscription change) owns it."""
    subscribe(broker, "s", metrics="*", interval_ms="1000")
    manager = broker.apis.client_metrics
    listener = manager.connection_disconnect_listener()
    got = get(broker)
    created_on = manager.instance(got["client_instance_id"]).connection_id
    assert push(broker, got, metrics=metrics_data(gauge("g", number_point(1.0)))) == 0
    listener.on_disconnect("conn-unrelated")
    assert series(broker) and manager.instance_count() == 1
    listener.on_disconnect(created_on)
    assert series(broker) == {} and manager.instance_count() == 0

    again = get(broker)
    first = manager.instance(again["client_instance_id"]).connection_id
    subscribe(broker, "s", metrics="*", interval_ms="2000")   # re-evaluated at its next request
    later = get(broker, again["client_instance_id"])
    second = manager.instance(later["client_instance_id"]).connection_id
    assert second != first
    listener.on_disconnect(first)
    assert manager.instance_count() == 1
    listener.on_disconnect(second)
    assert manager.instance_count() == 0 and manager._connections == {}
