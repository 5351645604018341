"""A typical and a failing request for every API, for the every-API-at-every-version
tests in tests/server/handlers/test_every_api.py; they run against the ``rich``
broker of tests/server/conftest.py (topic "t" with two partitions and data,
topic "u", a Stable group "g" with a committed offset)."""

from __future__ import annotations

import uuid

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.share.coordinator import ShareHeartbeatRequest
from tests.server.conftest import LONG, Broker, batch, fetch_fields
from tests.support import produce_body

ADMIN_APIS = (ApiKey.DELETE_RECORDS, ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS,
              ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE,
              ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_PRODUCERS,
              ApiKey.DESCRIBE_TOPIC_PARTITIONS)


OPS_APIS = (ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ELECT_LEADERS,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
            ApiKey.DESCRIBE_QUORUM, ApiKey.UPDATE_FEATURES)

TXN_APIS = (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
            ApiKey.TXN_OFFSET_COMMIT, ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS)


SHARE_APIS = (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
              ApiKey.SHARE_ACKNOWLEDGE, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
              ApiKey.ALTER_SHARE_GROUP_OFFSETS, ApiKey.DELETE_SHARE_GROUP_OFFSETS)


TOKEN_APIS = (ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
              ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN)


def _token_broker(b: Broker) -> Broker:
    """``b`` serving tokens: a secret, and alice on a SASL connection."""
    b.apis.delegation_tokens.secret_key = "token-secret"
    b.security_protocol, b.principal = "SASL_PLAINTEXT", "User:alice"
    return b


def typical_token_request(b: Broker, api_key: int) -> dict:
    _token_broker(b)
    if api_key == ApiKey.CREATE_DELEGATION_TOKEN:
        return dict(renewers=[{"principal_type": "User", "principal_name": "bob"}],
                    max_lifetime_ms=-1)
    if api_key == ApiKey.DESCRIBE_DELEGATION_TOKEN:
        b.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, renewers=[], max_lifetime_ms=-1)
        return dict(owners=None)
    token_hmac = b.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, renewers=[],
                        max_lifetime_ms=-1)["hmac"]
    if api_key == ApiKey.RENEW_DELEGATION_TOKEN:
        return dict(hmac=token_hmac, renew_period_ms=1000)
    return dict(hmac=token_hmac, expiry_time_period_ms=-1)


def failing_token_request(b: Broker, api_key: int) -> dict:
    if api_key == ApiKey.CREATE_DELEGATION_TOKEN:   # INVALID_PRINCIPAL_TYPE
        _token_broker(b)
        return dict(renewers=[{"principal_type": "Group", "principal_name": "g"}],
                    max_lifetime_ms=-1)
    if api_key == ApiKey.DESCRIBE_DELEGATION_TOKEN:   # PLAINTEXT: not allowed
        return dict(owners=None)
    _token_broker(b)   # an unknown HMAC: DELEGATION_TOKEN_NOT_FOUND
    if api_key == ApiKey.RENEW_DELEGATION_TOKEN:
        return dict(hmac=b"nothing", renew_period_ms=1000)
    return dict(hmac=b"nothing", expiry_time_period_ms=1000)


def _share_join(b: Broker, group: str, member: str) -> None:
    b.share_coordinator.heartbeat(ShareHeartbeatRequest(group, member, 0, None, ["t"]))


def typical_share_request(b: Broker, api_key: int, version: int) -> dict:
    """Share groups (KIP-932): a member of share group "sg" holding a session."""
    t = b.metadata_cache.topic("t").topic_id
    if api_key == ApiKey.SHARE_GROUP_HEARTBEAT:
        return dict(group_id=f"sg-{version}", member_id="m-1", member_epoch=0,
                    rack_id=None, subscribed_topic_names=["t"])
    if api_key == ApiKey.SHARE_GROUP_DESCRIBE:
        _share_join(b, "sg", "m-1")
        return dict(group_ids=["sg"], include_authorized_operations=True)
    fetch = dict(group_id="sg", member_id="m-1", max_wait_ms=0, min_bytes=1,
                 max_bytes=1 << 20, max_records=10, batch_size=10,
                 forgotten_topics_data=[],
                 topics=[{"topic_id": t, "partitions": [
                     {"partition_index": 0, "acknowledgement_batches": []}]}])
    if api_key == ApiKey.SHARE_FETCH:
        return dict(fetch, share_session_epoch=0)
    if api_key == ApiKey.SHARE_ACKNOWLEDGE:
        b.share_coordinator.sessions.remove("sg", "m-1")
        b.share_coordinator.sessions.open("sg", "m-1", [(t, 0)])
        return dict(group_id="sg", member_id="m-1", share_session_epoch=1, topics=[])
    _share_join(b, "sg-admin", "m-1")   # joins, then leaves: an empty share group
    b.share_coordinator.heartbeat(ShareHeartbeatRequest("sg-admin", "m-1", -1, None, None))
    if api_key == ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS:
        return dict(groups=[{"group_id": "sg-admin", "topics": None}])
    if api_key == ApiKey.ALTER_SHARE_GROUP_OFFSETS:
        return dict(group_id="sg-admin", topics=[{"topic_name": "t", "partitions": [
            {"partition_index": 0, "start_offset": 0}]}])
    return dict(group_id="sg-admin", topics=[{"topic_name": "t"}])


def failing_share_request(b: Broker, api_key: int, version: int) -> dict:
    if api_key == ApiKey.SHARE_GROUP_HEARTBEAT:
        return dict(group_id="ghost", member_id="m", member_epoch=5, rack_id=None,
                    subscribed_topic_names=None)
    if api_key == ApiKey.SHARE_GROUP_DESCRIBE:
        return dict(group_ids=["ghost", "g", ""], include_authorized_operations=False)
    if api_key in (ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE):
        return dict(group_id="ghost", member_id="m", share_session_epoch=7, max_wait_ms=0,
                    min_bytes=1, max_bytes=100, max_records=1, batch_size=1,
                    forgotten_topics_data=[], topics=[{"topic_id": uuid.uuid4(), "partitions": [
                        {"partition_index": 0, "acknowledgement_batches": []}]}])
    if api_key == ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS:
        return dict(groups=[{"group_id": "ghost", "topics": None},
                            {"group_id": "g", "topics": [{"topic_name": "missing",
                                                          "partitions": [0]}]}])
    if api_key == ApiKey.ALTER_SHARE_GROUP_OFFSETS:
        return dict(group_id="ghost", topics=[{"topic_name": "missing", "partitions": [
            {"partition_index": 0, "start_offset": 0}]}])
    return dict(group_id="ghost", topics=[{"topic_name": "missing"}])


def _add_partitions_body(version: int, ids: dict, topics: list) -> dict:
    """AddPartitionsToTxn in its batched (v4+) or single-transaction form."""
    if version >= 4:
        return dict(transactions=[{**ids, "verify_only": False, "topics": topics}])
    return {**{f"v3_and_below_{k}": v for k, v in ids.items()}, "v3_and_below_topics": topics}


def typical_txn_request(b: Broker, api_key: int, version: int) -> dict:
    """A transaction in the state each API needs, begun through the coordinator."""
    coordinator = b.transaction_coordinator
    init = coordinator.handle_init_producer_id("tx-typical", 60_000)
    ids = dict(transactional_id="tx-typical", producer_id=init.producer_id,
               producer_epoch=init.producer_epoch)
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        return _add_partitions_body(version, ids, [{"name": "t", "partitions": [0, 1]}])
    if api_key == ApiKey.ADD_OFFSETS_TO_TXN:
        return dict(ids, group_id="g")
    coordinator.handle_add_partitions_to_transaction(
        "tx-typical", init.producer_id, init.producer_epoch, {("t", 0)})
    if api_key == ApiKey.END_TXN:
        return dict(ids, committed=True)
    if api_key == ApiKey.TXN_OFFSET_COMMIT:
        coordinator.handle_add_offsets_to_transaction(
            "tx-typical", init.producer_id, init.producer_epoch, "simple")
        return dict(ids, group_id="simple", topics=[{"name": "t", "partitions": [
            {"partition_index": 1, "committed_offset": 1, "committed_metadata": None}]}])
    if api_key == ApiKey.DESCRIBE_TRANSACTIONS:
        return dict(transactional_ids=["tx-typical"])
    return dict(state_filters=["Ongoing"], producer_id_filters=[])


def failing_txn_request(api_key: int, version: int) -> dict:
    """Requests naming a transactional id the coordinator never saw."""
    ids = dict(transactional_id="ghost", producer_id=7, producer_epoch=0)
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        return _add_partitions_body(version, ids, [{"name": "t", "partitions": [0]},
                                                   {"name": "missing", "partitions": [0]}])
    if api_key == ApiKey.ADD_OFFSETS_TO_TXN:
        return dict(ids, group_id="g")
    if api_key == ApiKey.END_TXN:
        return dict(ids, committed=False)
    if api_key == ApiKey.TXN_OFFSET_COMMIT:
        return dict(ids, group_id="g", topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]}])
    if api_key == ApiKey.DESCRIBE_TRANSACTIONS:
        return dict(transactional_ids=["ghost", ""])
    return dict(state_filters=["Nonsense"], producer_id_filters=[])


def typical_ops_request(api_key: int) -> dict:
    if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        return dict(replica_id=-1, topics=[{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0},
            {"partition": 1, "current_leader_epoch": -1, "leader_epoch": 0}]}])
    if api_key == ApiKey.DESCRIBE_LOG_DIRS:
        return dict(topics=None)
    if api_key == ApiKey.ELECT_LEADERS:
        return dict(election_type=0, topic_partitions=[{"topic": "t", "partitions": [0, 1]}])
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return dict(topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "replicas": [1]}]}])
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return dict(topics=None)
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return dict(topics=[{"topic_name": "__cluster_metadata",
                             "partitions": [{"partition_index": 0}]}])
    if api_key == ApiKey.UPDATE_FEATURES:
        return dict(validate_only=True, feature_updates=[
            {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1}])
    raise AssertionError(f"no typical request for {api_key}")


def failing_ops_request(api_key: int) -> dict:
    if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        return dict(topics=[{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 0},
            {"partition": 9, "current_leader_epoch": -1, "leader_epoch": 0}]},
            {"topic": "missing", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}])
    if api_key == ApiKey.DESCRIBE_LOG_DIRS:
        return dict(topics=[{"topic": "missing", "partitions": [0]}])
    if api_key == ApiKey.ELECT_LEADERS:
        return dict(election_type=1, topic_partitions=[
            {"topic": "missing", "partitions": [0]}, {"topic": "t", "partitions": [9]}])
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return dict(topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "replicas": [1, 2]},
            {"partition_index": 1, "replicas": None}]},
            {"name": "missing", "partitions": [{"partition_index": 0, "replicas": [1]}]}])
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return dict(topics=[{"name": "missing", "partition_indexes": [0]}])
    if api_key == ApiKey.DESCRIBE_QUORUM:
        return dict(topics=[{"topic_name": "t", "partitions": [{"partition_index": 0}]}])
    if api_key == ApiKey.UPDATE_FEATURES:
        return dict(feature_updates=[
            {"feature": "no.such.feature", "max_version_level": 1, "upgrade_type": 1}])
    raise AssertionError(f"no failing request for {api_key}")


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
    if api_key == ApiKey.DELETE_GROUPS:
        return dict(groups_names=["g", "ghost"])   # g has members: NON_EMPTY_GROUP
    if api_key == ApiKey.OFFSET_DELETE:
        return dict(group_id="g", topics=[{"name": "t", "partitions": [
            {"partition_index": 0}, {"partition_index": 9}]}])
    if api_key == ApiKey.DESCRIBE_CLUSTER:
        return dict(include_cluster_authorized_operations=True)
    if api_key == ApiKey.DESCRIBE_PRODUCERS:
        return dict(topics=[{"name": "t", "partition_indexes": [0, 1]}])
    if api_key == ApiKey.DESCRIBE_TOPIC_PARTITIONS:
        return dict(topics=[{"name": "t"}, {"name": "u"}], response_partition_limit=2)
    raise AssertionError(f"no typical request for {api_key}")


def failing_admin_request(api_key: int) -> dict:
    if api_key == ApiKey.DELETE_GROUPS:
        return dict(groups_names=["ghost", ""])
    if api_key == ApiKey.OFFSET_DELETE:
        return dict(group_id="ghost", topics=[{"name": "t", "partitions": [
            {"partition_index": 0}]}])
    if api_key == ApiKey.DESCRIBE_CLUSTER:
        return dict(endpoint_type=2)   # controllers: v1 only (v0 cannot ask, see the test)
    if api_key == ApiKey.DESCRIBE_PRODUCERS:
        return dict(topics=[{"name": "missing", "partition_indexes": [0]},
                            {"name": "bad name", "partition_indexes": [1]}])
    if api_key == ApiKey.DESCRIBE_TOPIC_PARTITIONS:
        return dict(topics=[{"name": "missing"}, {"name": "bad name"}])
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


def typical_request(b: Broker, api_key: int, version: int) -> dict:
    """A request each handler answers with data (not an error) where it can."""
    if api_key == ApiKey.PRODUCE:
        return produce_body("t", 0, batch(), timeout_ms=1000,
                            topic_id=b.metadata_cache.topic("t").topic_id)
    if api_key == ApiKey.FETCH:
        return fetch_fields(b, partitions=[("t", 0, 0), ("t", 1, 0)])
    if api_key == ApiKey.LIST_OFFSETS:
        return dict(topics=[{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": -1}, {"partition_index": 1, "timestamp": -2},
            {"partition_index": 7, "timestamp": -1}]}])
    if api_key == ApiKey.METADATA:
        return dict(topics=[{"name": "t", "topic_id": ZERO_UUID}, {"name": "auto", "topic_id":
                                                                    ZERO_UUID}])
    if api_key == ApiKey.OFFSET_COMMIT:
        return dict(group_id="simple", generation_id_or_member_epoch=-1, topics=[
            {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 1,
                                          "committed_metadata": None}]}])
    if api_key == ApiKey.OFFSET_FETCH:
        topics = [{"name": "t", "partition_indexes": [0, 1]}]
        if version >= 8:
            return dict(groups=[{"group_id": "g", "topics": topics},
                                {"group_id": "none", "topics": None}])
        return dict(group_id="g", topics=topics)
    if api_key == ApiKey.FIND_COORDINATOR:
        return dict(key="g", coordinator_keys=["g", "h"])
    if api_key == ApiKey.JOIN_GROUP:
        return dict(group_id=f"join-{version}", session_timeout_ms=LONG,
                    rebalance_timeout_ms=LONG, protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"m"}])
    if api_key == ApiKey.HEARTBEAT:
        return dict(group_id="g", generation_id=b.generation, member_id=b.group_member)
    if api_key == ApiKey.LEAVE_GROUP:
        return dict(group_id="g", member_id="stranger",
                    members=[{"member_id": "stranger", "group_instance_id": None}])
    if api_key == ApiKey.SYNC_GROUP:
        return dict(group_id="g", generation_id=b.generation, member_id=b.group_member)
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return dict(groups=["g", "simple-unknown"], include_authorized_operations=True)
    if api_key == ApiKey.LIST_GROUPS:
        return dict()
    if api_key == ApiKey.API_VERSIONS:
        return dict(client_software_name="tests", client_software_version="1.0")
    if api_key == ApiKey.CREATE_TOPICS:
        return dict(topics=[{"name": f"created-{version}", "num_partitions": 2,
                             "replication_factor": 1, "assignments": [],
                             "configs": [{"name": "retention.ms", "value": "1000"}]}])
    if api_key == ApiKey.DELETE_TOPICS:
        return dict(topic_names=["u", "gone"],
                    topics=[{"name": "u", "topic_id": ZERO_UUID},
                            {"name": None, "topic_id": uuid.uuid4()}])
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return dict(transactional_id=None, transaction_timeout_ms=1000)
    if api_key == ApiKey.CREATE_PARTITIONS:
        current = b.metadata_cache.topic("t").num_partitions
        return dict(topics=[{"name": "t", "count": current + 1, "assignments": None}])
    if api_key in ADMIN_APIS:  # their own tests: test_<api>.py in this folder
        return typical_admin_request(api_key)
    if api_key in OPS_APIS:  # their own tests: test_<api>.py in this folder
        return typical_ops_request(api_key)
    if api_key in TXN_APIS:  # their own tests: test_<api>.py in this folder
        return typical_txn_request(b, api_key, version)
    if api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS:
        return dict(components=[{"entity_type": "client-id", "match_type": 2, "match": None}])
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return dict(entries=[{"entity": [{"entity_type": "client-id", "entity_name": None}],
                              "ops": [{"key": "request_percentage", "value": 50.0}]}])
    if api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return dict(group_id=f"cg-{version}", member_id="" if version == 0 else "m-1",
                    member_epoch=0, rebalance_timeout_ms=LONG, subscribed_topic_names=["t"],
                    topic_partitions=[])
    if api_key == ApiKey.CONSUMER_GROUP_DESCRIBE:
        b.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, **typical_request(
            b, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0))
        return dict(group_ids=["cg-0", "g"])
    if api_key == ApiKey.STREAMS_GROUP_HEARTBEAT:
        return dict(group_id="sg", member_id="m-1", member_epoch=0, rebalance_timeout_ms=LONG,
                    process_id="p-1", active_tasks=[], standby_tasks=[], warmup_tasks=[],
                    topology={"epoch": 1, "subtopologies": [{
                        "subtopology_id": "0", "source_topics": ["t"], "source_topic_regex": [],
                        "state_changelog_topics": [], "repartition_sink_topics": [],
                        "repartition_source_topics": [], "copartition_groups": []}]})
    if api_key == ApiKey.STREAMS_GROUP_DESCRIBE:
        b.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, **typical_request(
            b, ApiKey.STREAMS_GROUP_HEARTBEAT, 0))
        return dict(group_ids=["sg", "g"])
    if api_key == ApiKey.UPDATE_STREAMS_GROUP_TOPOLOGY_DESCRIPTION:
        b.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, **typical_request(
            b, ApiKey.STREAMS_GROUP_HEARTBEAT, 0))
        return dict(group_id="sg", member_id="m-1", topology_epoch=1, topology_description={
            "subtopologies": [{"subtopology_id": "0", "nodes": [
                {"name": "KSTREAM-SOURCE-0000000000", "node_type": 1, "source_topics": ["t"],
                 "stores": [], "successors": []}]}], "global_stores": []})
    if api_key == ApiKey.SASL_HANDSHAKE:
        return dict(mechanism="PLAIN")
    if api_key == ApiKey.SASL_AUTHENTICATE:
        return dict(auth_bytes=b"\0alice\0secret")
    if api_key == ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS:
        return dict(users=None)
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return dict(deletions=[], upsertions=[{"name": "alice", "mechanism": 1,
                                               "iterations": 4096, "salt": b"salt",
                                               "salted_password": bytes(32)}])
    if api_key == ApiKey.DESCRIBE_ACLS:   # no authorizer here: SECURITY_DISABLED
        return dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                    principal_filter=None, host_filter=None, operation=1, permission_type=1)
    if api_key == ApiKey.CREATE_ACLS:
        return dict(creations=[{"resource_type": 2, "resource_name": "t",
                                "resource_pattern_type": 3, "principal": "User:alice",
                                "host": "*", "operation": 3, "permission_type": 3}])
    if api_key == ApiKey.DELETE_ACLS:
        return dict(filters=[{"resource_type_filter": 1, "resource_name_filter": None,
                              "pattern_type_filter": 1, "principal_filter": None,
                              "host_filter": None, "operation": 1, "permission_type": 1}])
    if api_key == ApiKey.GET_TELEMETRY_SUBSCRIPTIONS:
        return dict(client_instance_id=ZERO_UUID)   # a new client: an id assigned
    if api_key == ApiKey.PUSH_TELEMETRY:
        got = b.call(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, client_instance_id=ZERO_UUID)
        return dict(client_instance_id=got["client_instance_id"],
                    subscription_id=got["subscription_id"], compression_type=0, metrics=b"")
    if api_key == ApiKey.LIST_CLIENT_METRICS_RESOURCES:
        return dict(resource_types=[])
    if api_key in SHARE_APIS:
        return typical_share_request(b, api_key, version)
    if api_key in TOKEN_APIS:
        return typical_token_request(b, api_key)
    raise AssertionError(f"no typical request for {api_key}")  # a new API needs one here


def failing_request(b: Broker, api_key: int, version: int) -> dict:
    """A request each handler answers with errors in the body (unknown topics,
    groups and members, bad names): the paths where nulls and defaults lurk."""
    bad = bytearray(batch())
    bad[-1] ^= 0xFF
    if api_key == ApiKey.PRODUCE:
        return dict(acks=1, timeout_ms=10, topic_data=[
            {"name": "missing", "partition_data": [{"index": 0, "records": batch()}]},
            {"name": "t", "partition_data": [{"index": 0, "records": bytes(bad)},
                                             {"index": 1, "records": None}]}])
    if api_key == ApiKey.FETCH:
        return fetch_fields(b, partitions=[("missing", 0, 0), ("t", 0, 99)])
    if api_key == ApiKey.LIST_OFFSETS:
        return dict(topics=[{"name": "missing", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}])
    if api_key == ApiKey.METADATA:
        return dict(allow_auto_topic_creation=False, topics=[
            {"name": "missing", "topic_id": ZERO_UUID}, {"name": "bad name", "topic_id":
                                                         ZERO_UUID}])
    if api_key == ApiKey.OFFSET_COMMIT:
        return dict(group_id="ghost", generation_id_or_member_epoch=5, member_id="m", topics=[
            {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                          "committed_metadata": "x" * 5000}]}])
    if api_key == ApiKey.OFFSET_FETCH:
        topics = [{"name": "missing", "partition_indexes": [3]}]
        if version >= 8:
            return dict(groups=[{"group_id": "ghost", "topics": topics}])
        return dict(group_id="ghost", topics=topics)
    if api_key == ApiKey.FIND_COORDINATOR:
        return dict(key="", key_type=1 if version >= 1 else 0, coordinator_keys=["", "x"])
    if api_key == ApiKey.JOIN_GROUP:
        return dict(group_id="g", session_timeout_ms=0, member_id="someone",
                    protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}])
    if api_key == ApiKey.HEARTBEAT:
        return dict(group_id="ghost", generation_id=1, member_id="m")
    if api_key == ApiKey.LEAVE_GROUP:
        return dict(group_id="ghost", member_id="m",
                    members=[{"member_id": "m", "group_instance_id": "i"}])
    if api_key == ApiKey.SYNC_GROUP:
        return dict(group_id="ghost", generation_id=1, member_id="m")
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return dict(groups=["ghost", ""])
    if api_key == ApiKey.LIST_GROUPS:
        return dict(states_filter=["Dead"], types_filter=["consumer"])
    if api_key == ApiKey.API_VERSIONS:
        return dict(client_software_name="bad name", client_software_version="")
    if api_key == ApiKey.CREATE_TOPICS:
        return dict(topics=[
            {"name": "bad name", "num_partitions": 1, "replication_factor": 1,
             "assignments": [], "configs": []},
            {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [],
             "configs": []},
            {"name": "rf", "num_partitions": 1, "replication_factor": 3, "assignments": [],
             "configs": []}])
    if api_key == ApiKey.DELETE_TOPICS:
        return dict(topic_names=["missing"], topics=[{"name": "missing", "topic_id": ZERO_UUID}])
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return dict(transactional_id="tx")
    if api_key == ApiKey.CREATE_PARTITIONS:
        return dict(topics=[{"name": "missing", "count": 3, "assignments": None},
                            {"name": "t", "count": 1, "assignments": None}])
    if api_key in ADMIN_APIS:
        return failing_admin_request(api_key)
    if api_key in OPS_APIS:
        return failing_ops_request(api_key)
    if api_key in TXN_APIS:
        return failing_txn_request(api_key, version)
    if api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS:
        return dict(components=[{"entity_type": "topic", "match_type": 0, "match": "t"}])
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return dict(entries=[{"entity": [{"entity_type": "user", "entity_name": ""}],
                              "ops": [{"key": "producer_byte_rate", "value": 1.0}]}])
    if api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return dict(group_id="ghost", member_id="m", member_epoch=5, topic_partitions=None)
    if api_key == ApiKey.CONSUMER_GROUP_DESCRIBE:
        return dict(group_ids=["ghost", "g", ""])
    if api_key == ApiKey.STREAMS_GROUP_HEARTBEAT:
        return dict(group_id="ghost", member_id="m", member_epoch=5, active_tasks=None)
    if api_key == ApiKey.STREAMS_GROUP_DESCRIBE:
        return dict(group_ids=["ghost", "g", ""])
    if api_key == ApiKey.UPDATE_STREAMS_GROUP_TOPOLOGY_DESCRIPTION:   # UNKNOWN_MEMBER_ID
        return dict(group_id="ghost", member_id="m", topology_epoch=1,
                    topology_description={"subtopologies": [], "global_stores": []})
    if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
        return typical_request(b, api_key, version)   # always ILLEGAL_SASL_STATE here
    if api_key == ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS:
        return dict(users=[{"name": "nobody"}])
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return dict(deletions=[{"name": "nobody", "mechanism": 1}], upsertions=[])
    if api_key in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        return typical_request(b, api_key, version)   # SECURITY_DISABLED: no authorizer
    if api_key == ApiKey.GET_TELEMETRY_SUBSCRIPTIONS:   # again within the push interval
        got = b.call(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, client_instance_id=ZERO_UUID)
        return dict(client_instance_id=got["client_instance_id"])
    if api_key == ApiKey.PUSH_TELEMETRY:
        return dict(client_instance_id=ZERO_UUID, subscription_id=1, metrics=b"x")
    if api_key == ApiKey.LIST_CLIENT_METRICS_RESOURCES:
        return dict(resource_types=[1])   # v1: not a type v1 lists
    if api_key in SHARE_APIS:
        return failing_share_request(b, api_key, version)
    if api_key in TOKEN_APIS:
        return failing_token_request(b, api_key)
    raise AssertionError(f"no failing request for {api_key}")  # a new API needs one here
