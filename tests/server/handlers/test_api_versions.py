"""ApiVersions (API key 18) through KafkaApis with real encoding: the advertised
versions are exactly the handlers', and v3 validates the client software name."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS
from tests.server.conftest import make_broker, versions

TELEMETRY = {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}


def _advertised(broker, version: int) -> dict:
    body = broker.call(ApiKey.API_VERSIONS, version, client_software_name="x",
                       client_software_version="1")
    assert body["error_code"] == ErrorCode.NONE
    assert [e["api_key"] for e in body["api_keys"]] == sorted(
        e["api_key"] for e in body["api_keys"])
    return {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}


@pytest.mark.parametrize("version", versions(ApiKey.API_VERSIONS))
def test_api_versions_lists_exactly_the_handlers(version):
    # With an exporter of client metrics (the metrics listener), as Kafka with a
    # ClientTelemetryExporter plugin: every handler.
    exporting = make_broker(metrics_listener="http://127.0.0.1:0")
    assert _advertised(exporting, version) == {
        int(k): (m.VERSIONS.low, m.VERSIONS.high) for k, m in HANDLERS.items()}


@pytest.mark.parametrize("version", versions(ApiKey.API_VERSIONS))
def test_telemetry_apis_are_listed_only_with_an_exporter(broker, version):
    assert _advertised(broker, version) == {
        int(k): (m.VERSIONS.low, m.VERSIONS.high) for k, m in HANDLERS.items()
        if k not in TELEMETRY}
    # Still served, as Kafka serves them unlisted.
    body = broker.call(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0)
    assert body["error_code"] == ErrorCode.NONE


def test_api_versions_v3_invalid_software_name(broker):
    for name, ver in [("bad name", "1"), ("-x", "1"), ("ok", "1.0-"), ("", "1")]:
        body = broker.call(ApiKey.API_VERSIONS, 3, client_software_name=name,
                           client_software_version=ver)
        assert body["error_code"] == ErrorCode.INVALID_REQUEST, (name, ver)
        assert body["api_keys"] == []
    # v0-v2 carry no software name: nothing to validate.
    assert broker.call(ApiKey.API_VERSIONS, 2)["error_code"] == ErrorCode.NONE
