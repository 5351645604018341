"""Typical requests for the admin APIs, for the every-API-at-every-version tests
in tests/server/test_handlers.py (which knows topic "t" with two partitions)."""

from kafka_net.protocol.api_keys import ApiKey

ADMIN_APIS = (ApiKey.DELETE_RECORDS, ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS,
              ApiKey.INCREMENTAL_ALTER_CONFIGS)


def typical_admin_request(api_key: int) -> dict:
    if api_key == ApiKey.DELETE_RECORDS:
        return dict(topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "offset": 1}, {"partition_index": 9, "offset": 0}]}],
            timeout_ms=1000)
    if api_key == ApiKey.DESCRIBE_CONFIGS:
        return dict(resources=[
            {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]},
            {"resource_type": 2, "resource_name": "missing", "configuration_keys": None}],
            include_synonyms=True, include_documentation=True)
    if api_key == ApiKey.ALTER_CONFIGS:
        return dict(resources=[{"resource_type": 2, "resource_name": "t", "configs": [
            {"name": "retention.bytes", "value": "100000"}]}])
    if api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
        return dict(resources=[{"resource_type": 2, "resource_name": "t", "configs": [
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}])
    raise AssertionError(f"no typical request for {api_key}")


def failing_admin_request(api_key: int) -> dict:
    if api_key == ApiKey.DELETE_RECORDS:
        return dict(topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "offset": 99}, {"partition_index": 1, "offset": -7}]},
            {"name": "missing", "partitions": [{"partition_index": 0, "offset": 0}]}])
    if api_key == ApiKey.DESCRIBE_CONFIGS:
        return dict(resources=[
            {"resource_type": 2, "resource_name": "bad name", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "7", "configuration_keys": None},
            {"resource_type": 99, "resource_name": "x", "configuration_keys": None}])
    configs = [{"name": "cleanup.policy", "value": "nonsense", "config_operation": 0}]
    return dict(resources=[
        {"resource_type": 2, "resource_name": "t", "configs": configs},
        {"resource_type": 4, "resource_name": "1", "configs": configs},
        {"resource_type": 2, "resource_name": "missing", "configs": []}])
