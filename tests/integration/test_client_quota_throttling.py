"""KIP-219 throttling on a real server, over raw sockets (issue 8): a client
over its produce, fetch or request quota gets ``throttle_time_ms`` at once and
its connection stays muted until the reaper ends the throttle.  A server of
its own (the fixtures are imported, so instantiated per module): no quotas
left over from the Alter/Describe tests.  No assertion on elapsed time.
"""

from __future__ import annotations

from kafka_net.network.mute_state import ChannelMuteState as S
from kafka_net.protocol import encode_request
from kafka_net.protocol.records import build_batch
from tests.integration.test_client_quotas import alter, client, entity, op, server  # noqa: F401
from tests.support import RawClient, produce_body, running_server, wait_until


def frame(api_key, version, correlation_id, body, client_id):
    return encode_request(api_key, version, correlation_id, body, client_id=client_id)


def batch_of(size: int) -> bytes:
    return build_batch([(None, b"v" * size)])


def channel_states(server) -> list:
    return [c.mute_state.state for p in server.socket_server.processors
            for c in list(p.selector.channels.values())]


def set_client_quota(client, client_id, key, value):
    assert alter(client, [{"entity": entity(("client-id", client_id)),
                           "ops": [op(key, value)]}])[0]["error_code"] == 0


def create_topic(server, name):
    server.apis.create_topic(name, 1)


def test_produce_over_quota_is_answered_at_once_and_then_muted(server, client):
    create_topic(server, "throttled-produce")
    set_client_quota(client, "p-slow", "producer_byte_rate", 10_000)
    with RawClient(server.bound_port()) as producer:
        # 40 kB against 10 kB/s, rate over 2 windows of 1 s: about 20 kB/s, so a
        # throttle of (20 - 10) / 10 * 2 s ~ 2 s; the produce itself succeeds.
        producer.send_raw(frame(0, 9, 1, produce_body("throttled-produce", 0, batch_of(40_000)),
                                "p-slow"))
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


def test_acks_0_produce_over_quota_mutes_without_an_answer(server, client):
    # acks=0 is exempt from the request quota, not from the byte rate: no
    # response (a NoOp), but the channel is throttled all the same.
    create_topic(server, "throttled-acks0")
    set_client_quota(client, "p-acks0", "producer_byte_rate", 10_000)
    body = {**produce_body("throttled-acks0", 0, batch_of(40_000)), "acks": 0}
    with RawClient(server.bound_port()) as producer:
        producer.send_raw(frame(0, 9, 1, body, "p-acks0"))
        assert wait_until(lambda: S.MUTED_AND_THROTTLED in channel_states(server), 5)
        producer.send_raw(frame(18, 3, 2, {"client_software_name": "t",
                                            "client_software_version": "1"}, "p-acks0"))
        assert producer.receive(18, 3)[0] == 2   # read once the throttle ended
    prefix = "kafka.server:type=Produce,user=,client-id=p-acks0"
    assert server.quotas.metrics()[f"{prefix},name=throttle-time"] > 1000


def test_fetch_over_quota_gets_no_data_and_a_throttle(server, client):
    create_topic(server, "throttled-fetch")
    with RawClient(server.bound_port()) as producer:
        for _ in range(20):
            producer.call(0, 9, produce_body("throttled-fetch", 0, batch_of(200)))
    set_client_quota(client, "f-slow", "consumer_byte_rate", 1000)
    topic_id = server.metadata_cache.topic("throttled-fetch").topic_id
    fetch_v13 = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50_000_000,
                 "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                 "topics": [{"topic_id": topic_id, "partitions": [
                     {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1_000_000,
                      "current_leader_epoch": -1, "log_start_offset": -1,
                      "last_fetched_epoch": -1}]}],
                 "forgotten_topics_data": [], "rack_id": ""}
    with RawClient(server.bound_port()) as consumer:
        # Capped at what one quota window allows (1000 B/s * 2 s), not 50 MB: the
        # answer fits the quota, so it is not throttled.
        consumer.send_raw(frame(1, 13, 1, fetch_v13, "f-slow"))
        _, first = consumer.receive(1, 13)
        records = first["responses"][0]["partitions"][0]["records"]
        assert 0 < len(records) <= 2000
        assert first["throttle_time_ms"] == 0
        # The same again puts the client over: no data, and a throttle.
        consumer.send_raw(frame(1, 13, 2, fetch_v13, "f-slow"))
        _, second = consumer.receive(1, 13)
        assert second["throttle_time_ms"] > 0
        assert second["responses"] == []


def test_request_quota_throttles_every_api(server, client):
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
        c.send_raw(frame(0, 9, 1, produce_body("t", 0, batch_of(10_000)), "p-slow"))
        assert c.receive(0, 9)[1]["throttle_time_ms"] > 60_000
        assert wait_until(lambda: S.MUTED_AND_THROTTLED in channel_states(s), 5)
        assert s.shutdown() is True   # drained: the throttled request was answered
        assert not s.quotas.reaper.is_alive()
