"""``kafka-net decode`` reads the Kafka 4.2 keys kafka-net knows but does not serve.

A capture taken between Kafka brokers or controllers carries the inter-broker
and KRaft RPCs (Vote, BrokerHeartbeat, LeaderAndIsr, ...): each is decoded by
name and field, request and response, at its newest version.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafka_net.capture.decode import decode_file
from kafka_net.protocol import ApiKey, encode_request
from kafka_net.protocol.codec import encode_response
from kafka_net.protocol.messages import MESSAGES
from tests.capture.test_decode import pcap_bytes, wire_of

REPO = Path(__file__).resolve().parents[2]
DECODE_ONLY = [ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
               ApiKey.CONTROLLED_SHUTDOWN, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH,
               ApiKey.END_QUORUM_EPOCH, ApiKey.ALTER_PARTITION, ApiKey.ENVELOPE,
               ApiKey.FETCH_SNAPSHOT, ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT,
               ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.CONTROLLER_REGISTRATION,
               ApiKey.ASSIGN_REPLICAS_TO_DIRS, ApiKey.UPDATE_RAFT_VOTER]

PRE_VOTE = {"cluster_id": "c1", "voter_id": 2, "topics": [
    {"topic_name": "__cluster_metadata", "partitions": [
        {"partition_index": 0, "candidate_epoch": 5, "candidate_id": 1,
         "candidate_directory_id": uuid.UUID(int=7), "voter_directory_id": uuid.UUID(int=8),
         "last_offset_epoch": 4, "last_offset": 99, "pre_vote": True}]}]}


def capture_of(api_key: int, version: int, request: dict, response: dict) -> bytes:
    frames = {"q1": encode_request(api_key, version, 1, request)[4:],
              "r1": bytes(encode_response(api_key, version, 1, response))[4:]}
    return pcap_bytes(wire_of(["q1", "r1"], extra=frames))


@pytest.mark.parametrize("key", DECODE_ONLY, ids=lambda k: ApiKey(k).title)
def test_each_decode_only_key_is_read_at_its_newest_version(key):
    message = MESSAGES[key]
    version = message.request.valid.high
    text = "\n".join(decode_file(capture_of(key, version, {}, {}), "k.pcap"))
    title = ApiKey(key).title
    assert f"Kafka: {title} v{version} request (api key {int(key)}), correlation id 1" in text
    assert f"Kafka: {title} v{version} response (api key {int(key)}), correlation id 1" in text
    assert "VIOLATION" not in text and "cannot" not in text.lower()


def test_the_cli_prints_a_pre_vote_request_field_by_field(tmp_path):
    cap = tmp_path / "vote.pcap"
    cap.write_bytes(capture_of(ApiKey.VOTE, 2, PRE_VOTE, {"error_code": 0}))
    done = subprocess.run([sys.executable, "-m", "kafka_net", "decode", str(cap)], cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": ""}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Kafka: Vote v2 request (api key 52), correlation id 1" in out
    for line in ("topic_name: '__cluster_metadata'", "last_offset: 99", "pre_vote: True",
                 "candidate_directory_id: 00000000-0000-0000-0000-000000000007"):
        assert line in out
    assert "Kafka: Vote v2 response (api key 52), correlation id 1" in out


def test_controlled_shutdown_v0_has_the_header_without_client_id():
    """Kafka's one exception: ControlledShutdown v0 requests use request header v0."""
    response = {"error_code": 0,
                "remaining_partitions": [{"topic_name": "t", "partition_index": 1}]}
    text = "\n".join(decode_file(
        capture_of(ApiKey.CONTROLLED_SHUTDOWN, 0, {"broker_id": 3}, response), "c.pcap"))
    # api key, version, correlation id (8 bytes), broker_id (4): no client id field.
    assert "Length: 12 (after the 4-byte size prefix)" in text
    assert "broker_id: 3" in text and "topic_name: 't'" in text
    assert "VIOLATION" not in text
