"""The client quota configuration (Alter/DescribeClientQuotas) against arbitrary
input, with Hypothesis: every request gets a defined answer (never an
exception), one result per entity, and only valid quotas are ever stored and
pushed to the managers and the ip seam."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.config import ServerConfig
from kafka_net.config.quota_keys import IP_KEYS, USER_AND_CLIENT_KEYS
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.messages import alter_client_quotas, describe_client_quotas
from kafka_net.server.quotas.client_quotas import QuotaRequestError
from kafka_net.server.quotas.quota_managers import QuotaManagers

ENTITY_TYPES = st.sampled_from(["user", "client-id", "ip", "group", ""])
# No name here needs DNS (tests talk to 127.0.0.1 only): "localhost" is in
# /etc/hosts, a 64-character label is refused before any lookup.
NAMES = st.one_of(st.none(), st.sampled_from(["", "localhost", "127.0.0.1", "::1", "x" * 64]))
KEYS = st.sampled_from([*USER_AND_CLIENT_KEYS, *IP_KEYS, "bogus"])
VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([1.0, 1024.0, 0.5, 2.0**31, -1.0, 0.0]))

ENTRIES = st.lists(st.fixed_dictionaries({
    "entity": st.lists(st.fixed_dictionaries(
        {"entity_type": ENTITY_TYPES, "entity_name": NAMES}), max_size=3),
    "ops": st.lists(st.fixed_dictionaries(
        {"key": KEYS, "value": VALUES, "remove": st.booleans()}), max_size=3),
}), max_size=5)

COMPONENTS = st.lists(st.fixed_dictionaries({
    "entity_type": ENTITY_TYPES, "match_type": st.integers(-1, 3), "match": NAMES}),
    max_size=3)


class IpRates:
    """A fake at the seam: ConnectionQuotas' ip-rate interface (branch `quotas`)."""

    def __init__(self) -> None:
        self.rates: dict = {}

    def update_ip_connection_rate_quota(self, ip, rate) -> None:
        if rate is None:
            self.rates.pop(ip, None)
        else:
            self.rates[ip] = rate

    def ip_connection_rate_quotas(self) -> dict:
        return dict(self.rates)


def fresh() -> QuotaManagers:
    quotas = QuotaManagers(ServerConfig())
    quotas.client_quotas.ip_quotas = IpRates()
    return quotas


@settings(max_examples=200, deadline=None)
@given(ENTRIES, st.booleans())
def test_alter_answers_anything_and_stores_only_valid_quotas(entries, validate_only):
    quotas = fresh()
    results = quotas.client_quotas.alter(entries, validate_only)
    assert all(r["error_code"] in (ErrorCode.NONE, ErrorCode.INVALID_REQUEST) for r in results)
    assert all((r["error_message"] is None) == (r["error_code"] == 0) for r in results)
    assert len(results) <= len(entries)
    stored = quotas.client_quotas.describe([], strict=False)
    if validate_only:
        assert stored == []
    for entry in stored:
        types = {e["entity_type"] for e in entry["entity"]}
        valid = IP_KEYS if "ip" in types else USER_AND_CLIENT_KEYS
        for v in entry["values"]:
            assert v["key"] in valid and v["value"] > 0 and not math.isnan(v["value"])
    ip_rates = quotas.client_quotas.ip_quotas.ip_connection_rate_quotas()
    assert all(rate > 0 for rate in ip_rates.values())


@settings(max_examples=200, deadline=None)
@given(COMPONENTS, st.booleans())
def test_describe_answers_any_filter(components, strict):
    quotas = fresh()
    quotas.client_quotas.alter([
        {"entity": [{"entity_type": "user", "entity_name": "a"}],
         "ops": [{"key": "producer_byte_rate", "value": 10.0, "remove": False}]},
        {"entity": [{"entity_type": "ip", "entity_name": None}],
         "ops": [{"key": "connection_creation_rate", "value": 10.0, "remove": False}]},
    ], False)
    try:
        entries = quotas.client_quotas.describe(components, strict)
    except QuotaRequestError as exc:
        assert exc.error_code in (ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_VERSION)
        assert exc.message
    else:
        assert len(entries) <= 2


@settings(max_examples=100, deadline=None)
@given(ENTRIES, st.booleans(), st.sampled_from([0, 1]))
def test_alter_request_round_trips_on_the_wire(entries, validate_only, version):
    body = {"entries": entries, "validate_only": validate_only}
    schema = alter_client_quotas.REQUEST
    decoded = schema.decode(schema.encode(body, version), version)
    assert decoded["validate_only"] == validate_only
    assert [[(e["entity_type"], e["entity_name"]) for e in d["entity"]] for d in decoded["entries"]] \
        == [[(e["entity_type"], e["entity_name"]) for e in d["entity"]] for d in entries]
    for got, sent in zip(decoded["entries"], entries):
        for op_got, op_sent in zip(got["ops"], sent["ops"]):
            assert op_got["value"] == op_sent["value"] or (
                math.isnan(op_got["value"]) and math.isnan(op_sent["value"]))


@settings(max_examples=100, deadline=None)
@given(COMPONENTS, st.booleans(), st.sampled_from([0, 1]))
def test_describe_request_round_trips_on_the_wire(components, strict, version):
    body = {"components": components, "strict": strict}
    schema = describe_client_quotas.REQUEST
    assert schema.decode(schema.encode(body, version), version) == body
