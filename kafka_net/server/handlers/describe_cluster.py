"""DescribeCluster (API key 60): serves v0-v2.

Behaviour (Kafka's ``KafkaApis.handleDescribeCluster`` with
``AuthHelper.computeDescribeClusterResponse``): the cluster id, this node as
the one broker (at the advertised address of the listener the request came
in on) and as the controller id.  v1 asks for an endpoint type: a broker
answers for brokers (1); controllers (2) get MISMATCHED_ENDPOINT_TYPE, any
other value UNSUPPORTED_ENDPOINT_TYPE (both INVALID_REQUEST at v0), with
Kafka's messages.  v2 (KIP-1073) asks whether to list fenced brokers too and
marks each broker's is_fenced: this node answers, so it is registered and
unfenced, and there is no other broker, fenced or not, to add.  Any principal may ask (Kafka checks nothing here); with
an authorizer, the authorized operations asked for are the principal's (0
without DESCRIBE on the cluster); with none every cluster operation is allowed.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.messages.describe_cluster import BROKERS, CONTROLLERS
from kafka_net.server.handlers.metadata import cluster_operations

API_KEY = ApiKey.DESCRIBE_CLUSTER

ENDPOINT_TYPE_NAMES = {BROKERS: "BROKER", CONTROLLERS: "CONTROLLER"}


def handle(ctx, request: dict) -> dict:
    error = _endpoint_type_error(request["endpoint_type"], ctx.api_version)
    if error is not None:
        return {**error_response(request, ctx.api_version, error[0]), "error_message": error[1]}
    cache = ctx.metadata_cache
    endpoint = cache.endpoint_for(ctx.listener_name)
    brokers = [] if endpoint is None else [
        {"broker_id": cache.node_id, "host": endpoint.host, "port": endpoint.port,
         "rack": None, "is_fenced": False}]
    if not request["include_fenced_brokers"]:   # False before v2: the unfenced only
        brokers = [b for b in brokers if not b["is_fenced"]]
    return {
        "throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
        "endpoint_type": BROKERS, "cluster_id": cache.cluster_id,
        "controller_id": cache.node_id,
        "brokers": brokers,
        "cluster_authorized_operations": cluster_operations(
            ctx, request["include_cluster_authorized_operations"]),
    }


def _endpoint_type_error(endpoint_type: int, version: int) -> tuple[int, str] | None:
    if endpoint_type == BROKERS:
        return None
    if endpoint_type not in ENDPOINT_TYPE_NAMES:
        code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        message = f"Unsupported endpoint type {endpoint_type}"
    else:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = ("The request was sent to an endpoint of type BROKER, but we wanted an "
                   f"endpoint of type {ENDPOINT_TYPE_NAMES[endpoint_type]}")
    return (ErrorCode.INVALID_REQUEST if version == 0 else code), message


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None,
            "cluster_id": "", "brokers": []}
