"""DescribeClientQuotas / AlterClientQuotas on a real server, over raw sockets
(issue 8): round trips at both versions (v1 flexible), Kafka's validation
messages, validate_only, the describe filters, and the ``ip`` entity reaching
the connection-quota seam.  Throttling is in test_client_quota_throttling.py.
"""

from __future__ import annotations

import math

import pytest

from kafka_net.protocol.error_codes import ErrorCode
from tests.support import RawClient, make_config, server_fixture

DESCRIBE, ALTER = 48, 49
INVALID_REQUEST = ErrorCode.INVALID_REQUEST


def entity(*pairs) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def op(key: str, value: float = 0.0, remove: bool = False) -> dict:
    return {"key": key, "value": float(value), "remove": remove}


def alter(client, entries, validate_only=False, version=1) -> list[dict]:
    body = client.call(ALTER, version, {"entries": entries, "validate_only": validate_only})
    return body["entries"]


def describe(client, components=(), strict=False, version=1) -> dict:
    return client.call(DESCRIBE, version, {"components": list(components), "strict": strict})


def component(entity_type, match_type, match=None) -> dict:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def as_table(entries) -> dict:
    """{((type, name), ...): {key: value}} for comparing describe results."""
    return {tuple(sorted((e["entity_type"], e["entity_name"]) for e in entry["entity"])):
            {v["key"]: v["value"] for v in entry["values"]} for entry in entries}


server = server_fixture(lambda: make_config(quota_window_num=3), scope="module")


@pytest.fixture
def client(server):
    with RawClient(server.bound_port()) as c:
        yield c


# --- Alter / Describe round trips ---------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_round_trip(client, version):
    user = f"alice-v{version}"
    results = alter(client, [
        {"entity": entity(("user", user), ("client-id", "app")),
         "ops": [op("producer_byte_rate", 2048), op("request_percentage", 12.5)]},
        {"entity": entity(("user", None)), "ops": [op("consumer_byte_rate", 4096)]},
    ], version=version)
    assert [(r["error_code"], r["error_message"]) for r in results] == [(0, None), (0, None)]
    assert results[0]["entity"] == entity(("user", user), ("client-id", "app"))
    body = describe(client, [component("user", 0, user)], version=version)
    assert body["error_code"] == 0 and body["error_message"] is None
    assert as_table(body["entries"]) == {
        (("client-id", "app"), ("user", user)):
            {"producer_byte_rate": 2048.0, "request_percentage": 12.5}}
    # Remove one key; removing a key that is not set is no error.
    results = alter(client, [{"entity": entity(("user", user), ("client-id", "app")),
                              "ops": [op("producer_byte_rate", remove=True),
                                      op("consumer_byte_rate", remove=True)]}],
                    version=version)
    assert results[0]["error_code"] == 0
    body = describe(client, [component("user", 0, user)], version=version)
    assert as_table(body["entries"]) == {
        (("client-id", "app"), ("user", user)): {"request_percentage": 12.5}}
    # Removing the last key removes the entity.
    alter(client, [{"entity": entity(("user", user), ("client-id", "app")),
                    "ops": [op("request_percentage", remove=True)]},
                   {"entity": entity(("user", None)),
                    "ops": [op("consumer_byte_rate", remove=True)]}], version=version)
    assert describe(client, [component("user", 0, user)], version=version)["entries"] == []


def test_validate_only_changes_nothing(client):
    results = alter(client, [{"entity": entity(("client-id", "dry-run")),
                              "ops": [op("producer_byte_rate", 1000)]}], validate_only=True)
    assert results[0]["error_code"] == 0
    assert describe(client, [component("client-id", 0, "dry-run")])["entries"] == []
    # ... and still reports what would fail.
    results = alter(client, [{"entity": entity(("client-id", "dry-run")),
                              "ops": [op("producer_byte_rate", -1)]}], validate_only=True)
    assert results[0]["error_code"] == INVALID_REQUEST


@pytest.mark.parametrize("entity_data, ops, message", [
    (entity(("group", "g")), [op("producer_byte_rate", 1)],
     "Unhandled client quota entity type: group"),
    ([], [op("producer_byte_rate", 1)], "Invalid empty client quota entity"),
    (entity(("user", "")), [op("producer_byte_rate", 1)], "Empty user not supported"),
    (entity(("user", "u"), ("user", "v")), [op("producer_byte_rate", 1)],
     "Invalid client quota entity, duplicate entity entry user"),
    (entity(("ip", "127.0.0.1"), ("user", "u")), [op("connection_creation_rate", 1)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or "
     "ClientId"),
    # A 64-character label is refused before any DNS lookup (loopback only).
    (entity(("ip", "x" * 64)), [op("connection_creation_rate", 1)],
     "x" * 64 + " is not a valid IP or resolvable host."),
    (entity(("user", "u")), [op("bogus_key", 1)], "Invalid configuration key bogus_key"),
    (entity(("user", "u")), [op("connection_creation_rate", 1)],
     "Invalid configuration key connection_creation_rate"),
    (entity(("ip", None)), [op("producer_byte_rate", 1)],
     "Invalid configuration key producer_byte_rate"),
    (entity(("user", "u")), [op("producer_byte_rate", 0)],
     "Quota producer_byte_rate must be greater than 0"),
    (entity(("user", "u")), [op("request_percentage", math.nan)],
     "Quota request_percentage must be greater than 0"),
    (entity(("user", "u")), [op("producer_byte_rate", 10.5)],
     "producer_byte_rate cannot be a fractional value."),
    (entity(("user", "u")), [op("producer_byte_rate", 1e19)],
     "Proposed value for producer_byte_rate is too large for a LONG."),
    (entity(("ip", None)), [op("connection_creation_rate", 2**31)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    (entity(("user", "u")), [op("producer_byte_rate", 1), op("producer_byte_rate", 2)],
     "Duplicate quota key producer_byte_rate not updating quota for this entity "
     "ClientQuotaEntity(entries={user=u})"),
])
def test_alter_refuses_bad_entities_and_values(client, entity_data, ops, message):
    results = alter(client, [{"entity": entity_data, "ops": ops}])
    assert [(r["error_code"], r["error_message"]) for r in results] == [
        (INVALID_REQUEST, message)]


def test_a_bad_entity_fails_alone_and_all_of_its_ops(client):
    results = alter(client, [
        {"entity": entity(("client-id", "good")), "ops": [op("producer_byte_rate", 5000)]},
        {"entity": entity(("client-id", "half")),
         "ops": [op("producer_byte_rate", 5000), op("consumer_byte_rate", -5)]},
        {"entity": entity(("client-id", "good")), "ops": [op("producer_byte_rate", 7)]},
    ])
    # One result per entity, as Kafka: the repeat replaces the first one's result,
    # though the first occurrence was applied.
    assert [(r["error_code"], r["error_message"]) for r in results] == [
        (INVALID_REQUEST, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=good})"),
        (INVALID_REQUEST, "Quota consumer_byte_rate must be greater than 0")]
    table = as_table(describe(client, [component("client-id", 2)], strict=True)["entries"])
    assert table[(("client-id", "good"),)] == {"producer_byte_rate": 5000.0}
    assert (("client-id", "half"),) not in table
    alter(client, [{"entity": entity(("client-id", "good")),
                    "ops": [op("producer_byte_rate", remove=True)]}])


def test_describe_match_types_and_strict(client):
    alter(client, [
        {"entity": entity(("user", "bob")), "ops": [op("producer_byte_rate", 1000)]},
        {"entity": entity(("user", None)), "ops": [op("producer_byte_rate", 2000)]},
        {"entity": entity(("user", "bob"), ("client-id", None)),
         "ops": [op("producer_byte_rate", 3000)]},
        {"entity": entity(("client-id", "cx")), "ops": [op("consumer_byte_rate", 4000)]},
    ])
    try:
        def keys(components, strict=False):
            return set(as_table(describe(client, components, strict)["entries"]))

        bob, default_user = (("user", "bob"),), (("user", None),)
        bob_default_client = (("client-id", None), ("user", "bob"))
        cx = (("client-id", "cx"),)
        assert keys([component("user", 0, "bob")]) == {bob, bob_default_client}
        assert keys([component("user", 0, "bob")], strict=True) == {bob}
        assert keys([component("user", 1)], strict=True) >= {default_user}
        assert bob not in keys([component("user", 1)])
        assert {bob, default_user, bob_default_client} <= keys([component("user", 2)])
        assert cx not in keys([component("user", 2)])
        assert keys([component("user", 0, "bob"), component("client-id", 1)]) == {
            bob_default_client}
        assert {bob, cx} <= keys([])                  # no filter, not strict: everything
        assert keys([], strict=True) == set()         # strict and empty: nothing
    finally:
        alter(client, [
            {"entity": entity(("user", "bob")), "ops": [op("producer_byte_rate", remove=True)]},
            {"entity": entity(("user", None)), "ops": [op("producer_byte_rate", remove=True)]},
            {"entity": entity(("user", "bob"), ("client-id", None)),
             "ops": [op("producer_byte_rate", remove=True)]},
            {"entity": entity(("client-id", "cx")),
             "ops": [op("consumer_byte_rate", remove=True)]},
        ])


@pytest.mark.parametrize("components, code, message", [
    ([component("", 0, "x")], INVALID_REQUEST, "Invalid empty entity type."),
    ([component("user", 0, "a"), component("user", 2)], INVALID_REQUEST,
     "Entity type user cannot appear more than once in the filter."),
    ([component("topic", 0, "t")], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type topic"),
    ([component("user", 0)], INVALID_REQUEST,
     "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([component("user", 1, "x")], INVALID_REQUEST,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([component("user", 2, "x")], INVALID_REQUEST,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([component("user", 7)], INVALID_REQUEST, "Unknown match type 7"),
    ([component("ip", 2), component("user", 2)], INVALID_REQUEST,
     "Invalid entity filter component combination. IP filter component should not be "
     "used with user or clientId filter component."),
])
def test_describe_refuses_bad_filters(client, components, code, message):
    body = describe(client, components)
    assert (body["error_code"], body["error_message"], body["entries"]) == (code, message, None)


def test_ip_quotas_reach_the_connection_quotas_seam(server, client):
    seam = server.quotas.client_quotas.ip_quotas
    results = alter(client, [
        {"entity": entity(("ip", "127.0.0.1")), "ops": [op("connection_creation_rate", 5)]},
        {"entity": entity(("ip", None)), "ops": [op("connection_creation_rate", 50)]},
    ])
    assert [r["error_code"] for r in results] == [0, 0]
    assert seam.ip_connection_rate_quotas() == {"127.0.0.1": 5.0, None: 50.0}
    # "Any specified name" includes the default entity, as in Kafka's ClientQuotasImage.
    table = as_table(describe(client, [component("ip", 2)])["entries"])
    assert table == {(("ip", "127.0.0.1"),): {"connection_creation_rate": 5.0},
                     (("ip", None),): {"connection_creation_rate": 50.0}}
    table = as_table(describe(client, [component("ip", 1)])["entries"])
    assert table == {(("ip", None),): {"connection_creation_rate": 50.0}}
    alter(client, [
        {"entity": entity(("ip", "127.0.0.1")),
         "ops": [op("connection_creation_rate", remove=True)]},
        {"entity": entity(("ip", None)), "ops": [op("connection_creation_rate", remove=True)]},
    ])
    assert seam.ip_connection_rate_quotas() == {}
