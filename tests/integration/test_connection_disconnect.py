"""What a connection created goes when it closes (Kafka's ConnectionDisconnectListener):
a raw-socket share member's share session, whose acquired records another member
then gets, long before any lock or session timeout; and a client-telemetry instance,
whose pushed metrics leave /metrics.  A real server on loopback, raw sockets."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.client_metrics import kafka_uuid_text
from tests.otlp_support import gauge, metrics_data, number_point
from tests.server.share.support import offsets
from tests.support import (
    RawClient, make_config, produce_body, request_body, server_fixture, wait_until)

TOPIC = "disconnects"
CLIENT_METRICS = 16
# Locks and sessions far longer than any wait below: only the close can free them.
server = server_fixture(lambda: make_config(group_share_record_lock_duration_ms=60_000,
                                            group_share_max_record_lock_duration_ms=60_000,
                                            group_share_session_timeout_ms=60_000,
                                            metrics_listener="http://127.0.0.1:0"),
                        scope="module")


def call(client: RawClient, api_key: int, version: int, **fields) -> dict:
    return client.call(api_key, version, request_body(api_key, version, **fields))


@pytest.fixture(scope="module")
def topic_id(server):
    with RawClient(server.bound_port()) as c:
        body = call(c, ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
             "assignments": [], "configs": []}], timeout_ms=5000)
        assert body["topics"][0]["error_code"] == ErrorCode.NONE, body
    return server.metadata_cache.topic(TOPIC).topic_id


class RawShareMember:
    """A share consumer on its own connection: heartbeat, then ShareFetch."""

    def __init__(self, server, group: str, member_id: str, topic_id) -> None:
        self.client = RawClient(server.bound_port())
        self.group, self.member_id, self.topic_id = group, member_id, topic_id
        self.epoch = 0
        body = call(self.client, ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group,
                    member_id=member_id, member_epoch=0, rack_id=None,
                    subscribed_topic_names=[TOPIC])
        assert body["error_code"] == ErrorCode.NONE, body

    def fetch(self, max_wait_ms: int = 0) -> dict:
        body = call(self.client, ApiKey.SHARE_FETCH, 1, group_id=self.group,
                    member_id=self.member_id, share_session_epoch=self.epoch,
                    max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                    max_records=500, batch_size=500, forgotten_topics_data=[],
                    topics=[{"topic_id": self.topic_id, "partitions": [
                        {"partition_index": 0, "acknowledgement_batches": []}]}])
        assert body["error_code"] == ErrorCode.NONE, body
        self.epoch += 1
        return body


def produce(server, count: int) -> None:
    batch = build_batch([(None, b"v%d" % i) for i in range(count)])
    with RawClient(server.bound_port()) as c:
        body = c.call(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, batch))
    assert body["responses"][0]["partition_responses"][0]["error_code"] == 0, body


def test_a_closed_share_members_session_goes_and_its_records_go_to_another(server, topic_id):
    sessions = server.core.share_coordinator.sessions
    holder = RawShareMember(server, "dc-share", "holder", topic_id)
    holder.fetch()                    # opens the session; the share-partition starts at the end
    produce(server, 3)
    taken = offsets(holder.fetch())
    assert taken, "the holder acquired nothing"
    other = RawShareMember(server, "dc-share", "other", topic_id)
    assert offsets(other.fetch()) == []          # all of them are the holder's
    assert sessions.get("dc-share", "holder") is not None

    holder.client.close()             # no final ShareFetch, no leave: just the close

    assert wait_until(lambda: sessions.get("dc-share", "holder") is None, 10)
    got: list[int] = []
    assert wait_until(lambda: got.extend(offsets(other.fetch(max_wait_ms=200))) or got, 10)
    assert got == taken
    # The member stays in its group (its heartbeats may come on another connection).
    assert "holder" in server.core.share_coordinator.group("dc-share").members
    other.client.close()


def scrape(server) -> list:
    with urllib.request.urlopen(server.metrics_http.url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return [s for f in text_string_to_metric_families(text) for s in f.samples]


def test_a_closed_connections_telemetry_instance_leaves_metrics(server):
    with RawClient(server.bound_port()) as c:
        body = call(c, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
            {"resource_type": CLIENT_METRICS, "resource_name": "dc-all", "configs": [
                {"name": "metrics", "config_operation": 0, "value": "*"},
                {"name": "interval.ms", "config_operation": 0, "value": "1000"}]}])
        assert body["responses"][0]["error_code"] == ErrorCode.NONE, body
    client = RawClient(server.bound_port())
    got = call(client, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, client_instance_id=ZERO_UUID)
    assert got["error_code"] == ErrorCode.NONE, got
    instance = kafka_uuid_text(got["client_instance_id"])
    pushed = call(client, ApiKey.PUSH_TELEMETRY, 0,
                  client_instance_id=got["client_instance_id"],
                  subscription_id=got["subscription_id"], terminating=False,
                  compression_type=0,
                  metrics=metrics_data(gauge("dc.gauge", number_point(1.5))))
    assert pushed["error_code"] == ErrorCode.NONE, pushed

    def shown() -> bool:
        return any(s.labels.get("client_instance_id") == instance for s in scrape(server))
    assert shown()
    client.close()
    assert wait_until(lambda: not shown(), 10)   # Kafka's expiry would be 60 s away
    assert server.apis.client_metrics.instance(got["client_instance_id"]) is None
