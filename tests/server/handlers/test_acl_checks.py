"""Every API's authorization, through the API layer (Kafka's KafkaApis checks).

The broker has StandardAuthorizer and the ``rich`` state (topics t and u, a
Stable group g), built by the super user.  Then:

* a principal with no ACL sends every API's typical request (examples/) at
  every served version: each is refused with Kafka's error code for what it
  named (TOPIC_ / GROUP_ / CLUSTER_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
  except the APIs that only filter what they show (they show nothing) and
  those Kafka checks nothing for;
* with ``allow.everyone.if.no.acl.found=true`` the same requests succeed as
  they do without an authorizer (tests/server/handlers/test_every_api.py);
* the finer cases, one API at a time.
"""

from __future__ import annotations

import pytest

from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import SendResponse
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS
from kafka_net.server.authorizer import (
    AccessControlEntry, AclBinding, AclOperation as Op, AclPermissionType, PatternType,
    ResourcePattern, ResourceType as RT)
from tests.server.conftest import Broker, Deferred, all_served, fill, request_body
from tests.server.handlers.examples import (
    OWN_TESTS, REFUSED, UNCHECKED, typical_request, without_acls)

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
REFUSALS = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
# What each API answers a principal with no ACL is in its examples module
# (WITHOUT_ACLS): Kafka checks nothing, or only filters what it shows (UNCHECKED);
# the token APIs refuse by ownership, not by ACL (an error code; CREATE_TOKENS /
# DESCRIBE_TOKENS are only asked about other principals' tokens:
# test_delegation_tokens.py); the rest refuse with an *_AUTHORIZATION_FAILED code.
UNCHECKED_APIS = sorted(k for k in HANDLERS if without_acls(k) == UNCHECKED)


def secured_broker(**props) -> Broker:
    config = ServerConfig.from_properties({"authorizer.class.name": STANDARD, "log.store": "memory",
                                           "super.users": "User:admin", **props})
    b = Broker(config).start()
    b.principal = "User:admin"
    return fill(b)


@pytest.fixture
def secured():
    b = secured_broker()
    try:
        yield b
    finally:
        b.stop()


def answer(b: Broker, api_key: int, version: int, fields: dict):
    request, response = b.respond(api_key, version, request_body(api_key, version, **fields))
    if isinstance(response, Deferred):
        return response.body()
    assert isinstance(response, SendResponse), response
    return b.decode(request, response)


def codes(body) -> set[int]:
    found = set()
    if isinstance(body, dict):
        for key, value in body.items():
            if key.endswith("error_code"):
                found.add(value)
            else:
                found |= codes(value)
    elif isinstance(body, list):
        for item in body:
            found |= codes(item)
    return found


@pytest.mark.parametrize("api_key,version", [
    (k, v) for k, v in all_served() if without_acls(k) not in (UNCHECKED, OWN_TESTS)
    and not (k == ApiKey.PRODUCE and v < 3)])   # refused as INVALID_RECORD before anything
def test_a_principal_without_acls_is_refused_by_every_api(secured, api_key, version):
    fields = typical_request(secured, api_key, version)   # built as the super user
    secured.principal = "User:nobody"
    body = answer(secured, api_key, version, fields)
    if api_key == ApiKey.METADATA and fields.get("topics") is None and version > 0:
        assert body["topics"] == []        # listing all: nothing to see
        return
    if api_key == ApiKey.METADATA and version == 0 and not fields.get("topics"):
        assert body["topics"] == []
        return
    if api_key == ApiKey.DESCRIBE_LOG_DIRS and version < 3:
        assert body["results"] == []       # Kafka's refusal; v1-v2 have no error field
        return
    if without_acls(api_key) != REFUSED:
        # No ACL is needed for one's own tokens; another's (alice's, built above)
        # is refused by ownership, and describing shows nothing.
        assert body["error_code"] == without_acls(api_key), body
        if api_key == ApiKey.DESCRIBE_DELEGATION_TOKEN:
            assert body["tokens"] == []
        return
    assert codes(body) & REFUSALS, body


@pytest.mark.parametrize("api_key", [k for k in UNCHECKED_APIS
                                     if k not in (ApiKey.SASL_HANDSHAKE,
                                                  ApiKey.SASL_AUTHENTICATE)])
def test_the_filtering_apis_show_nothing_and_refuse_nothing(secured, api_key):
    version = max(v for k, v in all_served() if k == api_key)
    fields = typical_request(secured, api_key, version)
    secured.principal = "User:nobody"
    body = answer(secured, api_key, version, fields)
    assert not codes(body) & REFUSALS, body
    if api_key == ApiKey.LIST_GROUPS:
        assert body["groups"] == []
    if api_key == ApiKey.LIST_TRANSACTIONS:
        assert body["transaction_states"] == []
    if api_key == ApiKey.DESCRIBE_CLUSTER:
        assert body["cluster_authorized_operations"] in (0, -2147483648)


def test_allow_everyone_if_no_acl_found_lets_every_api_through():
    b = secured_broker(**{"allow.everyone.if.no.acl.found": "true"})
    try:
        for api_key, version in all_served():
            if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
                continue
            b.principal = "User:admin"
            fields = typical_request(b, api_key, version)
            b.principal = "User:anyone"
            assert not codes(answer(b, api_key, version, fields)) & REFUSALS, (api_key,
                                                                                version)
    finally:
        b.stop()


# -- one API at a time ------------------------------------------------------------------


def grant(b: Broker, rtype, name, principal, op, pattern=PatternType.LITERAL,
          perm=AclPermissionType.ALLOW) -> None:
    [result] = b.authorizer.create_acls([AclBinding(
        ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, "*", op, perm))])
    assert result.error_code == 0


def test_metadata_hides_lists_and_refuses(secured):
    grant(secured, RT.TOPIC, "t", "User:alice", Op.READ)
    secured.principal = "User:alice"
    listed = secured.call(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=True)
    assert [(t["name"], t["topic_authorized_operations"]) for t in listed["topics"]] == [
        ("t", (1 << Op.READ) | (1 << Op.DESCRIBE))]
    named = secured.call(ApiKey.METADATA, 12, topics=[{"name": "u"}, {"name": "nope"}],
                         allow_auto_topic_creation=True,
                         include_topic_authorized_operations=False)["topics"]
    assert [(t["name"], t["error_code"]) for t in named] == [
        ("u", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("nope", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert secured.metadata_cache.topic("nope") is None


def test_metadata_auto_creation_needs_create(secured):
    grant(secured, RT.TOPIC, "auto-", "User:alice", Op.DESCRIBE, PatternType.PREFIXED)
    secured.principal = "User:alice"
    ask = dict(allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    [refused] = secured.call(ApiKey.METADATA, 12, topics=[{"name": "auto-1"}], **ask)["topics"]
    assert refused["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(secured, RT.TOPIC, "auto-", "User:alice", Op.CREATE, PatternType.PREFIXED)
    [created] = secured.call(ApiKey.METADATA, 12, topics=[{"name": "auto-1"}], **ask)["topics"]
    assert created["error_code"] == ErrorCode.NONE


def test_produce_needs_write_and_the_transactional_id(secured):
    from tests.server.conftest import batch, produce
    grant(secured, RT.TOPIC, "t", "User:alice", Op.WRITE)
    secured.principal = "User:alice"
    body = produce(secured, topic="t")
    assert body["responses"][0]["partition_responses"][0]["error_code"] == 0
    body = produce(secured, topic="u")
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
    body = produce(secured, topic="t", records=batch(
        producer_id=1, producer_epoch=0, base_sequence=0, transactional=True))
    assert body["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_offset_commit_commits_what_it_may_read(secured):
    grant(secured, RT.GROUP, "simple", "User:alice", Op.READ)
    grant(secured, RT.TOPIC, "t", "User:alice", Op.READ)
    secured.principal = "User:alice"
    body = secured.call(ApiKey.OFFSET_COMMIT, 8, group_id="simple",
                        generation_id_or_member_epoch=-1, member_id="", topics=[
                            {"name": "t", "partitions": [{"partition_index": 0,
                                                          "committed_offset": 1,
                                                          "committed_metadata": None}]},
                            {"name": "u", "partitions": [{"partition_index": 0,
                                                          "committed_offset": 1,
                                                          "committed_metadata": None}]}])
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in body["topics"]] == [
        ("t", ErrorCode.NONE), ("u", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_list_groups_with_and_without_describe_on_the_cluster(secured):
    grant(secured, RT.GROUP, "g", "User:alice", Op.DESCRIBE)
    secured.principal = "User:alice"
    assert [g["group_id"] for g in secured.call(ApiKey.LIST_GROUPS, 4)["groups"]] == ["g"]
    secured.principal = "User:nobody"
    assert secured.call(ApiKey.LIST_GROUPS, 4)["groups"] == []


def test_init_producer_id_idempotence_needs_idempotent_write_or_a_topic_write(secured):
    secured.principal = "User:alice"
    ask = dict(transactional_id=None, transaction_timeout_ms=1000)
    assert secured.call(ApiKey.INIT_PRODUCER_ID, 4, **ask)["error_code"] == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(secured, RT.TOPIC, "t", "User:alice", Op.WRITE)
    assert secured.call(ApiKey.INIT_PRODUCER_ID, 4, **ask)["error_code"] == ErrorCode.NONE
    secured.principal = "User:bob"
    grant(secured, RT.CLUSTER, "kafka-cluster", "User:bob", Op.IDEMPOTENT_WRITE)
    assert secured.call(ApiKey.INIT_PRODUCER_ID, 4, **ask)["error_code"] == ErrorCode.NONE
    assert secured.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id="tx",
                        transaction_timeout_ms=1000)["error_code"] == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_create_topics_needs_create_on_the_cluster_or_the_topic(secured):
    secured.principal = "User:alice"
    new = [{"name": "n1", "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": []}]
    [refused] = secured.call(ApiKey.CREATE_TOPICS, 7, topics=new)["topics"]
    assert (refused["error_code"], refused["error_message"]) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    grant(secured, RT.TOPIC, "n1", "User:alice", Op.CREATE)
    [created] = secured.call(ApiKey.CREATE_TOPICS, 7, topics=new)["topics"]
    assert created["error_code"] == 0
    assert created["topic_config_error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", [12, 15])
def test_a_followers_fetch_needs_cluster_action(secured, version):
    from tests.server.conftest import fetch_fields
    grant(secured, RT.TOPIC, "t", "User:alice", Op.READ)
    secured.principal = "User:alice"
    follower = {"replica_id": 1} if version < 15 else {
        "replica_state": {"replica_id": 1, "replica_epoch": -1}}
    fields = {**fetch_fields(secured, max_wait_ms=0), **follower}
    body = secured.call(ApiKey.FETCH, version, **fields)
    assert body["responses"][0]["partitions"][0]["error_code"] == \
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(secured, RT.CLUSTER, "kafka-cluster", "User:alice", Op.CLUSTER_ACTION)
    body = secured.call(ApiKey.FETCH, version, **fields)
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


# -- streams groups (KIP-1071) ------------------------------------------------------------

STREAMS_TOPOLOGY = {"epoch": 1, "subtopologies": [{
    "subtopology_id": "0", "source_topics": ["t"], "source_topic_regex": [],
    "state_changelog_topics": [{"name": "sg-store-changelog", "partitions": 0,
                                "replication_factor": 0, "topic_configs": []}],
    "repartition_sink_topics": [], "repartition_source_topics": [],
    "copartition_groups": []}]}


def streams_join(b: Broker, group: str) -> dict:
    return answer(b, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, dict(
        group_id=group, member_id="m1", member_epoch=0, rebalance_timeout_ms=1000,
        process_id="p1", topology=STREAMS_TOPOLOGY, active_tasks=[], standby_tasks=[],
        warmup_tasks=[]))


@pytest.fixture
def streams_secured():
    """``secured`` without the initial rebalance delay of new streams groups."""
    b = secured_broker(**{"group.streams.initial.rebalance.delay.ms": "0"})
    try:
        yield b
    finally:
        b.stop()


def test_streams_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(secured):
    secured.principal = "User:alice"
    assert streams_join(secured, "sg")["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    secured.principal = "User:admin"
    grant(secured, RT.GROUP, "sg", "User:alice", Op.READ)
    grant(secured, RT.TOPIC, "t", "User:alice", Op.DESCRIBE)
    secured.principal = "User:alice"
    refused = streams_join(secured, "sg")
    assert refused["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert "sg-store-changelog" in refused["error_message"]


def test_streams_internal_topics_are_created_only_with_create(streams_secured):
    secured = streams_secured
    secured.principal = "User:admin"
    grant(secured, RT.GROUP, "sg", "User:alice", Op.READ)
    grant(secured, RT.TOPIC, "*", "User:alice", Op.DESCRIBE)
    secured.principal = "User:alice"
    joined = streams_join(secured, "sg")
    assert joined["error_code"] == ErrorCode.NONE
    assert [s["status_detail"] for s in joined["status"]] == [
        "Internal topics are missing: sg-store-changelog",
        "Unauthorized to CREATE on topics sg-store-changelog."]
    assert secured.metadata_cache.topic("sg-store-changelog") is None
    secured.principal = "User:admin"
    grant(secured, RT.TOPIC, "sg-store-changelog", "User:alice", Op.CREATE)
    secured.principal = "User:alice"
    again = streams_join(secured, "sg")
    assert again["error_code"] == ErrorCode.NONE
    assert secured.metadata_cache.topic("sg-store-changelog") is not None


def test_streams_describe_needs_describe_on_the_group_and_its_topics(streams_secured):
    secured = streams_secured
    secured.principal = "User:admin"
    joined = streams_join(secured, "sg")      # creates the changelog topic
    ready = answer(secured, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, dict(
        group_id="sg", member_id="m1", member_epoch=joined["member_epoch"]))
    assert ready["error_code"] == ErrorCode.NONE and ready["status"] == []
    grant(secured, RT.GROUP, "sg", "User:bob", Op.DESCRIBE)
    secured.principal = "User:bob"

    def describe():
        return answer(secured, ApiKey.STREAMS_GROUP_DESCRIBE, 0, dict(
            group_ids=["sg"], include_authorized_operations=True))["groups"][0]
    assert describe()["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    secured.principal = "User:admin"
    grant(secured, RT.TOPIC, "*", "User:bob", Op.DESCRIBE)
    secured.principal = "User:bob"
    described = describe()
    assert described["error_code"] == ErrorCode.NONE
    assert described["authorized_operations"] == 1 << Op.DESCRIBE


def consumer_join(b: Broker, group: str, topics: list[str]) -> dict:
    return answer(b, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, dict(
        group_id=group, member_id="m1", member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=topics, subscribed_topic_regex=None, server_assignor=None,
        topic_partitions=[]))


def test_a_consumer_heartbeat_needs_describe_on_each_topic_it_names(secured):
    """KAFKA-18813: every topic subscribed by name, DESCRIBE, else the heartbeat
    answers TOPIC_AUTHORIZATION_FAILED (and the member does not join)."""
    grant(secured, RT.GROUP, "cg", "User:alice", Op.READ)
    grant(secured, RT.TOPIC, "t", "User:alice", Op.READ)
    secured.principal = "User:alice"
    refused = consumer_join(secured, "cg", ["t", "u"])
    assert refused["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert secured.group_coordinator.group("cg") is None or \
        not secured.group_coordinator.group("cg").members
    joined = consumer_join(secured, "cg", ["t"])
    assert joined["error_code"] == ErrorCode.NONE


def test_consumer_group_describe_needs_describe_on_the_group_s_topics(secured):
    """KAFKA-18813: a group whose members use a topic the caller may not DESCRIBE is
    answered TOPIC_AUTHORIZATION_FAILED, members left out."""
    assert consumer_join(secured, "cg", ["t", "u"])["error_code"] == ErrorCode.NONE
    grant(secured, RT.GROUP, "cg", "User:bob", Op.DESCRIBE)
    grant(secured, RT.TOPIC, "t", "User:bob", Op.DESCRIBE)
    secured.principal = "User:bob"

    def describe():
        return answer(secured, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, dict(
            group_ids=["cg"], include_authorized_operations=False))["groups"][0]
    refused = describe()
    assert (refused["error_code"], refused["error_message"], refused["members"]) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "The described group uses topics that the client is not authorized to describe.", [])
    secured.principal = "User:admin"
    grant(secured, RT.TOPIC, "u", "User:bob", Op.DESCRIBE)
    secured.principal = "User:bob"
    described = describe()
    assert described["error_code"] == ErrorCode.NONE and len(described["members"]) == 1
