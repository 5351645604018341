"""Client quotas with real client libraries (issue 8).

* Neither confluent-kafka 2.16 (librdkafka has no client quota admin API) nor
  kafka-python 3.0.12's KafkaAdminClient has alter/describe_client_quotas
  methods.  kafka-python does ship the message classes
  (``kafka.protocol.admin.client_quotas``, generated from Kafka's JSON), so the
  round trip below sends kafka-python's own encoding of AlterClientQuotas and
  DescribeClientQuotas over its admin client's connection and reads our
  answers with its decoder.
* confluent-kafka: with ``producer_byte_rate`` = 102400 for client.id "slow",
  a "slow" producer receives throttle events (librdkafka's ``throttle_cb``,
  fed by ``throttle_time_ms`` in Produce responses) and the broker's own
  byte-rate sensor for it stays near the quota; a "fast" producer sees none.
  Assertions are on throttle values and sensor values, never on elapsed time.
"""

from __future__ import annotations

import math

import pytest
from confluent_kafka import Producer
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest, DescribeClientQuotasRequest)

from tests.integration.client_support import bootstrap
from tests.support import RawClient, make_config, server_fixture

pytestmark = pytest.mark.interop

QUOTA = 102400
FLUSH_TIMEOUT_S = 60


# Three 1 s samples: a first burst is spread over 2 s (not 10), so the test
# needs less data to go over the quota.
server = server_fixture(lambda: make_config(quota_window_num=3), scope="module")


def kafka_python_call(admin, request):
    async def send():
        return await admin._manager.send(request)
    return admin._manager.run(send)


def test_kafka_python_alter_and_describe_client_quotas(server):
    entry = AlterClientQuotasRequest.EntryData
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(server), client_id="kp-admin")
    try:
        response = kafka_python_call(admin, AlterClientQuotasRequest(entries=[
            entry(entity=[entry.EntityData(entity_type="user", entity_name="kp-user"),
                          entry.EntityData(entity_type="client-id", entity_name=None)],
                  ops=[entry.OpData(key="consumer_byte_rate", value=65536.0, remove=False),
                       entry.OpData(key="request_percentage", value=25.0, remove=False)]),
            entry(entity=[entry.EntityData(entity_type="client-id", entity_name="kp-bad")],
                  ops=[entry.OpData(key="no_such_quota", value=1.0, remove=False)]),
        ], validate_only=False))
        assert [(e.error_code, e.error_message) for e in response.entries] == [
            (0, None), (42, "Invalid configuration key no_such_quota")]

        component = DescribeClientQuotasRequest.ComponentData
        response = kafka_python_call(admin, DescribeClientQuotasRequest(components=[
            component(entity_type="user", match_type=0, match="kp-user"),
            component(entity_type="client-id", match_type=1, match=None)], strict=True))
        assert response.error_code == 0
        [found] = response.entries
        assert {(e.entity_type, e.entity_name) for e in found.entity} == {
            ("user", "kp-user"), ("client-id", None)}
        assert {v.key: v.value for v in found.values} == {
            "consumer_byte_rate": 65536.0, "request_percentage": 25.0}

        response = kafka_python_call(admin, DescribeClientQuotasRequest(components=[
            component(entity_type="topic", match_type=2, match=None)], strict=False))
        assert (response.error_code, response.entries) == (35, None)
    finally:
        admin.close()
    assert server.quotas.fetch.quota("kp-user", "any-client") == 65536.0


def produce_rounds(server, client_id: str, rounds: int = 2, per_round: int = 20):
    """Produce 10 kB messages in rounds, flushing each; returns the throttle
    times (seconds) librdkafka reported and the delivery errors."""
    throttles, errors = [], []
    producer = Producer({
        "bootstrap.servers": bootstrap(server), "client.id": client_id,
        "linger.ms": 5, "batch.size": 20000,
        "throttle_cb": lambda event: throttles.append(event.throttle_time)})

    def delivered(err, msg):
        if err is not None:
            errors.append(err)

    for _ in range(rounds):
        for _ in range(per_round):
            producer.produce("quota-topic", b"x" * 10_000, on_delivery=delivered)
        assert producer.flush(FLUSH_TIMEOUT_S) == 0
    return throttles, errors


def test_confluent_producer_over_quota_is_throttled_and_held_near_it(server):
    with RawClient(server.bound_port()) as c:
        response = c.call(49, 1, {"entries": [
            {"entity": [{"entity_type": "client-id", "entity_name": "slow"}],
             "ops": [{"key": "producer_byte_rate", "value": float(QUOTA), "remove": False}]}],
            "validate_only": False})
    assert response["entries"][0]["error_code"] == 0

    slow_throttles, slow_errors = produce_rounds(server, "slow")
    # Read at once: samples with no event for quota.window.num windows are dropped.
    slow_rate = server.quotas.metrics()["kafka.server:type=Produce,user=,client-id=slow,"
                                        "name=byte-rate"]
    fast_throttles, fast_errors = produce_rounds(server, "fast")
    assert slow_errors == [] and fast_errors == []
    # librdkafka reported throttling for "slow" (it also reports the return to 0).
    assert any(t > 0 for t in slow_throttles)
    assert not any(t > 0 for t in fast_throttles)

    metrics = server.quotas.metrics()
    slow = "kafka.server:type=Produce,user=,client-id=slow"
    fast = "kafka.server:type=Produce,user=,client-id=fast"
    assert metrics[f"{slow},name=throttle-time"] > 0
    assert math.isnan(metrics[f"{fast},name=throttle-time"])   # never throttled
    # The broker held "slow" near its quota: its measured rate is the quota's
    # order (it may overshoot by about one request before a throttle bites).
    assert 0.3 * QUOTA < slow_rate < 1.5 * QUOTA
    assert server.quotas.produce.quota("ANONYMOUS", "fast") > 1e18   # no quota
