"""DescribeCluster (60): this node as the one broker and the controller."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers.metadata import CLUSTER_OPERATIONS
from tests.server.handlers.conftest import versions


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CLUSTER))
def test_describes_this_node(broker, version):
    body = broker.call(ApiKey.DESCRIBE_CLUSTER, version,
                       include_cluster_authorized_operations=False)
    node = broker.metadata_cache.node_id
    assert body["error_code"] == ErrorCode.NONE and body["error_message"] is None
    assert body["cluster_id"] == broker.metadata_cache.cluster_id
    assert body["controller_id"] == node
    # is_fenced exists from v2; below it decodes as its default, False.
    assert body["brokers"] == [
        {"broker_id": node, "host": "broker.test", "port": 19092, "rack": None,
         "is_fenced": False}]
    assert body["cluster_authorized_operations"] == -2147483648
    assert body["endpoint_type"] == 1


def test_authorized_operations_when_asked(broker):
    body = broker.call(ApiKey.DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=True)
    assert body["cluster_authorized_operations"] == CLUSTER_OPERATIONS


@pytest.mark.parametrize("endpoint_type,error,message", [
    (2, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
     "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
     "type CONTROLLER"),
    (7, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 7"),
])
def test_other_endpoint_types_are_refused_as_kafka_does(broker, endpoint_type, error, message):
    body = broker.call(ApiKey.DESCRIBE_CLUSTER, 1, endpoint_type=endpoint_type)
    assert (body["error_code"], body["error_message"]) == (error, message)
    assert body["brokers"] == [] and body["cluster_id"] == ""
