"""as.version on a real socket: a version the played release did not advertise is
refused as Kafka refuses any version it does not serve (the connection closed,
no answer; ApiVersions alone answered at v0 with UNSUPPORTED_VERSION), and every
other connection goes on."""

from __future__ import annotations

import logging
import struct

import pytest

from kafka_net.log_safety import RateLimitedLog
from kafka_net.network import processor as processor_module
from kafka_net.protocol import encode_request
from kafka_net.protocol.api_keys import ApiKey
from tests.network.helpers import closed_by_server, metadata_body, still_open
from tests.support import API_VERSIONS_V3_BODY, RawClient, make_config, running_server


@pytest.fixture(scope="module")
def kafka_2_8():
    with running_server(make_config(as_version="2.8", num_network_threads=1,
                                    num_io_threads=2)) as server:
        yield server


@pytest.fixture(autouse=True)
def first_of_its_kind(monkeypatch):
    """Each refusal here is the first from 127.0.0.1 and gets its log line (repeats
    within 10 s are held back: test_bad_input)."""
    monkeypatch.setattr(processor_module, "_per_connection_log",
                        RateLimitedLog(processor_module.log))


def with_version(frame: bytes, version: int) -> bytes:
    return frame[:6] + struct.pack(">h", version) + frame[8:]


def test_api_versions_v4_gets_v0_unsupported_version_with_2_8s_range(kafka_2_8):
    """Kafka 2.8 served ApiVersions v0-v3: a v4 request (kafka-python's first) gets
    the KIP-511 answer naming v0-v3, and the retry at v3 works."""
    with RawClient(kafka_2_8.bound_port()) as client:
        client.send_raw(with_version(encode_request(18, 3, 7, API_VERSIONS_V3_BODY), 4))
        payload = client.recv_frame()
        assert payload == struct.pack(">ihihhh", 7, 35, 1, 18, 0, 3)
        assert still_open(client.sock)
        body = client.call(18, 3, API_VERSIONS_V3_BODY)
        assert body["error_code"] == 0
        advertised = {e["api_key"]: e["max_version"] for e in body["api_keys"]}
        assert advertised[ApiKey.METADATA] == 11
        assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in advertised


@pytest.mark.parametrize("api_key, version, body", [
    (ApiKey.METADATA, 12, metadata_body(12)),               # Metadata v12 came with 3.1
    (ApiKey.LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": []}),  # 3.0
    (ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0,                   # the API came with 3.8
     {"topics": [], "response_partition_limit": 10}),
])
def test_an_unadvertised_version_closes_the_connection(kafka_2_8, caplog, api_key, version,
                                                       body):
    with RawClient(kafka_2_8.bound_port()) as bystander, \
            RawClient(kafka_2_8.bound_port()) as client:
        assert bystander.call(18, 3, API_VERSIONS_V3_BODY)["error_code"] == 0
        with caplog.at_level(logging.INFO, logger="kafka_net"):
            client.send(api_key, version, body)
            assert closed_by_server(client.sock), "the server answered a version 2.8 lacks"
        assert f"with version {version} which is not enabled" in caplog.text
        # The versions 2.8 did serve still work, on the bystander and a new connection.
        assert bystander.call(3, 11, metadata_body(11))["brokers"]
        with RawClient(kafka_2_8.bound_port()) as fresh:
            assert fresh.call(3, 11, metadata_body(11))["brokers"]
