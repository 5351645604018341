"""Wire schemas, one module per Kafka API, indexed by API key.

``MESSAGES`` lists what the codec can read and write.  Which of these the
broker *serves*, and at which versions, is decided by the dispatch table in
:mod:`kafka_net.server.apis`; ApiVersions advertises exactly that table.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.messages import (
    add_offsets_to_txn, add_partitions_to_txn, add_raft_voter, allocate_producer_ids,
    alter_client_quotas, alter_configs, alter_partition, alter_partition_reassignments,
    alter_replica_log_dirs, alter_user_scram_credentials, api_versions,
    assign_replicas_to_dirs, begin_quorum_epoch, broker_heartbeat, broker_registration,
    consumer_group_describe, consumer_group_heartbeat, controlled_shutdown,
    controller_registration, create_acls, create_delegation_token, create_partitions,
    create_topics, delete_acls, delete_groups, delete_records, delete_topics, describe_acls,
    describe_client_quotas, describe_cluster, describe_configs, describe_delegation_token,
    describe_groups, describe_log_dirs, describe_producers, describe_quorum,
    describe_topic_partitions, describe_transactions, describe_user_scram_credentials,
    elect_leaders, end_quorum_epoch, end_txn, envelope, expire_delegation_token, fetch,
    fetch_snapshot, find_coordinator, get_telemetry_subscriptions, heartbeat,
    incremental_alter_configs, init_producer_id, join_group, leader_and_isr, leave_group,
    list_client_metrics_resources, list_groups, list_offsets, list_partition_reassignments,
    list_transactions, metadata, offset_commit, offset_delete, offset_fetch,
    offset_for_leader_epoch, produce, push_telemetry, remove_raft_voter,
    renew_delegation_token, sasl_authenticate, sasl_handshake, stop_replica,
    streams_group_describe, streams_group_heartbeat, sync_group,
    txn_offset_commit, unregister_broker, update_features, update_metadata,
    update_raft_voter, update_streams_group_topology_description, vote, write_txn_markers)
from kafka_net.protocol.messages import (  # KIP-932 share groups
    alter_share_group_offsets, delete_share_group_offsets, delete_share_group_state,
    describe_share_group_offsets, initialize_share_group_state, read_share_group_state,
    read_share_group_state_summary, share_acknowledge, share_fetch, share_group_describe,
    share_group_heartbeat, write_share_group_state)
from kafka_net.protocol.schema import Schema


@dataclass(frozen=True)
class ApiMessage:
    key: ApiKey
    request: Schema
    response: Schema


# In API-key order.
MESSAGES: dict[int, ApiMessage] = {
    ApiKey.PRODUCE: ApiMessage(ApiKey.PRODUCE, produce.REQUEST, produce.RESPONSE),
    ApiKey.FETCH: ApiMessage(ApiKey.FETCH, fetch.REQUEST, fetch.RESPONSE),
    ApiKey.LIST_OFFSETS: ApiMessage(
        ApiKey.LIST_OFFSETS, list_offsets.REQUEST, list_offsets.RESPONSE),
    ApiKey.METADATA: ApiMessage(ApiKey.METADATA, metadata.REQUEST, metadata.RESPONSE),
    ApiKey.LEADER_AND_ISR: ApiMessage(
        ApiKey.LEADER_AND_ISR, leader_and_isr.REQUEST, leader_and_isr.RESPONSE),
    ApiKey.STOP_REPLICA: ApiMessage(
        ApiKey.STOP_REPLICA, stop_replica.REQUEST, stop_replica.RESPONSE),
    ApiKey.UPDATE_METADATA: ApiMessage(
        ApiKey.UPDATE_METADATA, update_metadata.REQUEST, update_metadata.RESPONSE),
    ApiKey.CONTROLLED_SHUTDOWN: ApiMessage(
        ApiKey.CONTROLLED_SHUTDOWN, controlled_shutdown.REQUEST, controlled_shutdown.RESPONSE),
    ApiKey.OFFSET_COMMIT: ApiMessage(
        ApiKey.OFFSET_COMMIT, offset_commit.REQUEST, offset_commit.RESPONSE),
    ApiKey.OFFSET_FETCH: ApiMessage(
        ApiKey.OFFSET_FETCH, offset_fetch.REQUEST, offset_fetch.RESPONSE),
    ApiKey.FIND_COORDINATOR: ApiMessage(
        ApiKey.FIND_COORDINATOR, find_coordinator.REQUEST, find_coordinator.RESPONSE),
    ApiKey.JOIN_GROUP: ApiMessage(
        ApiKey.JOIN_GROUP, join_group.REQUEST, join_group.RESPONSE),
    ApiKey.HEARTBEAT: ApiMessage(
        ApiKey.HEARTBEAT, heartbeat.REQUEST, heartbeat.RESPONSE),
    ApiKey.LEAVE_GROUP: ApiMessage(
        ApiKey.LEAVE_GROUP, leave_group.REQUEST, leave_group.RESPONSE),
    ApiKey.SYNC_GROUP: ApiMessage(
        ApiKey.SYNC_GROUP, sync_group.REQUEST, sync_group.RESPONSE),
    ApiKey.DESCRIBE_GROUPS: ApiMessage(
        ApiKey.DESCRIBE_GROUPS, describe_groups.REQUEST, describe_groups.RESPONSE),
    ApiKey.LIST_GROUPS: ApiMessage(
        ApiKey.LIST_GROUPS, list_groups.REQUEST, list_groups.RESPONSE),
    ApiKey.SASL_HANDSHAKE: ApiMessage(
        ApiKey.SASL_HANDSHAKE, sasl_handshake.REQUEST, sasl_handshake.RESPONSE),
    ApiKey.API_VERSIONS: ApiMessage(
        ApiKey.API_VERSIONS, api_versions.REQUEST, api_versions.RESPONSE),
    ApiKey.CREATE_TOPICS: ApiMessage(
        ApiKey.CREATE_TOPICS, create_topics.REQUEST, create_topics.RESPONSE),
    ApiKey.DELETE_TOPICS: ApiMessage(
        ApiKey.DELETE_TOPICS, delete_topics.REQUEST, delete_topics.RESPONSE),
    ApiKey.DELETE_RECORDS: ApiMessage(
        ApiKey.DELETE_RECORDS, delete_records.REQUEST, delete_records.RESPONSE),
    ApiKey.INIT_PRODUCER_ID: ApiMessage(
        ApiKey.INIT_PRODUCER_ID, init_producer_id.REQUEST, init_producer_id.RESPONSE),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ApiMessage(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        offset_for_leader_epoch.REQUEST, offset_for_leader_epoch.RESPONSE),
    ApiKey.ADD_PARTITIONS_TO_TXN: ApiMessage(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        add_partitions_to_txn.REQUEST, add_partitions_to_txn.RESPONSE),
    ApiKey.ADD_OFFSETS_TO_TXN: ApiMessage(
        ApiKey.ADD_OFFSETS_TO_TXN, add_offsets_to_txn.REQUEST, add_offsets_to_txn.RESPONSE),
    ApiKey.END_TXN: ApiMessage(ApiKey.END_TXN, end_txn.REQUEST, end_txn.RESPONSE),
    ApiKey.WRITE_TXN_MARKERS: ApiMessage(
        ApiKey.WRITE_TXN_MARKERS, write_txn_markers.REQUEST, write_txn_markers.RESPONSE),
    ApiKey.TXN_OFFSET_COMMIT: ApiMessage(
        ApiKey.TXN_OFFSET_COMMIT, txn_offset_commit.REQUEST, txn_offset_commit.RESPONSE),
    ApiKey.DESCRIBE_ACLS: ApiMessage(
        ApiKey.DESCRIBE_ACLS, describe_acls.REQUEST, describe_acls.RESPONSE),
    ApiKey.CREATE_ACLS: ApiMessage(ApiKey.CREATE_ACLS, create_acls.REQUEST, create_acls.RESPONSE),
    ApiKey.DELETE_ACLS: ApiMessage(ApiKey.DELETE_ACLS, delete_acls.REQUEST, delete_acls.RESPONSE),
    ApiKey.DESCRIBE_CONFIGS: ApiMessage(
        ApiKey.DESCRIBE_CONFIGS, describe_configs.REQUEST, describe_configs.RESPONSE),
    ApiKey.ALTER_CONFIGS: ApiMessage(
        ApiKey.ALTER_CONFIGS, alter_configs.REQUEST, alter_configs.RESPONSE),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ApiMessage(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        alter_replica_log_dirs.REQUEST, alter_replica_log_dirs.RESPONSE),
    ApiKey.DESCRIBE_LOG_DIRS: ApiMessage(
        ApiKey.DESCRIBE_LOG_DIRS, describe_log_dirs.REQUEST, describe_log_dirs.RESPONSE),
    ApiKey.SASL_AUTHENTICATE: ApiMessage(
        ApiKey.SASL_AUTHENTICATE, sasl_authenticate.REQUEST, sasl_authenticate.RESPONSE),
    ApiKey.CREATE_PARTITIONS: ApiMessage(
        ApiKey.CREATE_PARTITIONS, create_partitions.REQUEST, create_partitions.RESPONSE),
    ApiKey.CREATE_DELEGATION_TOKEN: ApiMessage(
        ApiKey.CREATE_DELEGATION_TOKEN,
        create_delegation_token.REQUEST, create_delegation_token.RESPONSE),
    ApiKey.RENEW_DELEGATION_TOKEN: ApiMessage(
        ApiKey.RENEW_DELEGATION_TOKEN,
        renew_delegation_token.REQUEST, renew_delegation_token.RESPONSE),
    ApiKey.EXPIRE_DELEGATION_TOKEN: ApiMessage(
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        expire_delegation_token.REQUEST, expire_delegation_token.RESPONSE),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: ApiMessage(
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
        describe_delegation_token.REQUEST, describe_delegation_token.RESPONSE),
    ApiKey.DELETE_GROUPS: ApiMessage(
        ApiKey.DELETE_GROUPS, delete_groups.REQUEST, delete_groups.RESPONSE),
    ApiKey.ELECT_LEADERS: ApiMessage(
        ApiKey.ELECT_LEADERS, elect_leaders.REQUEST, elect_leaders.RESPONSE),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ApiMessage(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        incremental_alter_configs.REQUEST, incremental_alter_configs.RESPONSE),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ApiMessage(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        alter_partition_reassignments.REQUEST, alter_partition_reassignments.RESPONSE),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ApiMessage(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        list_partition_reassignments.REQUEST, list_partition_reassignments.RESPONSE),
    ApiKey.OFFSET_DELETE: ApiMessage(
        ApiKey.OFFSET_DELETE, offset_delete.REQUEST, offset_delete.RESPONSE),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ApiMessage(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        describe_client_quotas.REQUEST, describe_client_quotas.RESPONSE),
    ApiKey.ALTER_CLIENT_QUOTAS: ApiMessage(
        ApiKey.ALTER_CLIENT_QUOTAS, alter_client_quotas.REQUEST, alter_client_quotas.RESPONSE),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ApiMessage(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_user_scram_credentials.REQUEST,
        describe_user_scram_credentials.RESPONSE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ApiMessage(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS, alter_user_scram_credentials.REQUEST,
        alter_user_scram_credentials.RESPONSE),
    ApiKey.VOTE: ApiMessage(
        ApiKey.VOTE, vote.REQUEST, vote.RESPONSE),
    ApiKey.BEGIN_QUORUM_EPOCH: ApiMessage(
        ApiKey.BEGIN_QUORUM_EPOCH, begin_quorum_epoch.REQUEST, begin_quorum_epoch.RESPONSE),
    ApiKey.END_QUORUM_EPOCH: ApiMessage(
        ApiKey.END_QUORUM_EPOCH, end_quorum_epoch.REQUEST, end_quorum_epoch.RESPONSE),
    ApiKey.DESCRIBE_QUORUM: ApiMessage(
        ApiKey.DESCRIBE_QUORUM, describe_quorum.REQUEST, describe_quorum.RESPONSE),
    ApiKey.ALTER_PARTITION: ApiMessage(
        ApiKey.ALTER_PARTITION, alter_partition.REQUEST, alter_partition.RESPONSE),
    ApiKey.UPDATE_FEATURES: ApiMessage(
        ApiKey.UPDATE_FEATURES, update_features.REQUEST, update_features.RESPONSE),
    ApiKey.ENVELOPE: ApiMessage(
        ApiKey.ENVELOPE, envelope.REQUEST, envelope.RESPONSE),
    ApiKey.FETCH_SNAPSHOT: ApiMessage(
        ApiKey.FETCH_SNAPSHOT, fetch_snapshot.REQUEST, fetch_snapshot.RESPONSE),
    ApiKey.DESCRIBE_CLUSTER: ApiMessage(
        ApiKey.DESCRIBE_CLUSTER, describe_cluster.REQUEST, describe_cluster.RESPONSE),
    ApiKey.DESCRIBE_PRODUCERS: ApiMessage(
        ApiKey.DESCRIBE_PRODUCERS, describe_producers.REQUEST, describe_producers.RESPONSE),
    ApiKey.BROKER_REGISTRATION: ApiMessage(
        ApiKey.BROKER_REGISTRATION, broker_registration.REQUEST, broker_registration.RESPONSE),
    ApiKey.BROKER_HEARTBEAT: ApiMessage(
        ApiKey.BROKER_HEARTBEAT, broker_heartbeat.REQUEST, broker_heartbeat.RESPONSE),
    ApiKey.UNREGISTER_BROKER: ApiMessage(
        ApiKey.UNREGISTER_BROKER, unregister_broker.REQUEST, unregister_broker.RESPONSE),
    ApiKey.DESCRIBE_TRANSACTIONS: ApiMessage(
        ApiKey.DESCRIBE_TRANSACTIONS,
        describe_transactions.REQUEST, describe_transactions.RESPONSE),
    ApiKey.LIST_TRANSACTIONS: ApiMessage(
        ApiKey.LIST_TRANSACTIONS, list_transactions.REQUEST, list_transactions.RESPONSE),
    ApiKey.ALLOCATE_PRODUCER_IDS: ApiMessage(
        ApiKey.ALLOCATE_PRODUCER_IDS,
        allocate_producer_ids.REQUEST, allocate_producer_ids.RESPONSE),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ApiMessage(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        consumer_group_heartbeat.REQUEST, consumer_group_heartbeat.RESPONSE),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ApiMessage(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        consumer_group_describe.REQUEST, consumer_group_describe.RESPONSE),
    ApiKey.CONTROLLER_REGISTRATION: ApiMessage(
        ApiKey.CONTROLLER_REGISTRATION,
        controller_registration.REQUEST, controller_registration.RESPONSE),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: ApiMessage(
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
        get_telemetry_subscriptions.REQUEST, get_telemetry_subscriptions.RESPONSE),
    ApiKey.PUSH_TELEMETRY: ApiMessage(
        ApiKey.PUSH_TELEMETRY, push_telemetry.REQUEST, push_telemetry.RESPONSE),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: ApiMessage(
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        assign_replicas_to_dirs.REQUEST, assign_replicas_to_dirs.RESPONSE),
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: ApiMessage(
        ApiKey.LIST_CLIENT_METRICS_RESOURCES,
        list_client_metrics_resources.REQUEST, list_client_metrics_resources.RESPONSE),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: ApiMessage(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        describe_topic_partitions.REQUEST, describe_topic_partitions.RESPONSE),
    ApiKey.SHARE_GROUP_HEARTBEAT: ApiMessage(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        share_group_heartbeat.REQUEST, share_group_heartbeat.RESPONSE),
    ApiKey.SHARE_GROUP_DESCRIBE: ApiMessage(
        ApiKey.SHARE_GROUP_DESCRIBE, share_group_describe.REQUEST, share_group_describe.RESPONSE),
    ApiKey.SHARE_FETCH: ApiMessage(ApiKey.SHARE_FETCH, share_fetch.REQUEST, share_fetch.RESPONSE),
    ApiKey.SHARE_ACKNOWLEDGE: ApiMessage(
        ApiKey.SHARE_ACKNOWLEDGE, share_acknowledge.REQUEST, share_acknowledge.RESPONSE),
    ApiKey.ADD_RAFT_VOTER: ApiMessage(
        ApiKey.ADD_RAFT_VOTER, add_raft_voter.REQUEST, add_raft_voter.RESPONSE),
    ApiKey.REMOVE_RAFT_VOTER: ApiMessage(
        ApiKey.REMOVE_RAFT_VOTER, remove_raft_voter.REQUEST, remove_raft_voter.RESPONSE),
    ApiKey.UPDATE_RAFT_VOTER: ApiMessage(
        ApiKey.UPDATE_RAFT_VOTER, update_raft_voter.REQUEST, update_raft_voter.RESPONSE),
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: ApiMessage(
        ApiKey.INITIALIZE_SHARE_GROUP_STATE,
        initialize_share_group_state.REQUEST, initialize_share_group_state.RESPONSE),
    ApiKey.READ_SHARE_GROUP_STATE: ApiMessage(
        ApiKey.READ_SHARE_GROUP_STATE,
        read_share_group_state.REQUEST, read_share_group_state.RESPONSE),
    ApiKey.WRITE_SHARE_GROUP_STATE: ApiMessage(
        ApiKey.WRITE_SHARE_GROUP_STATE,
        write_share_group_state.REQUEST, write_share_group_state.RESPONSE),
    ApiKey.DELETE_SHARE_GROUP_STATE: ApiMessage(
        ApiKey.DELETE_SHARE_GROUP_STATE,
        delete_share_group_state.REQUEST, delete_share_group_state.RESPONSE),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: ApiMessage(
        ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
        read_share_group_state_summary.REQUEST, read_share_group_state_summary.RESPONSE),
    ApiKey.STREAMS_GROUP_HEARTBEAT: ApiMessage(
        ApiKey.STREAMS_GROUP_HEARTBEAT,
        streams_group_heartbeat.REQUEST, streams_group_heartbeat.RESPONSE),
    ApiKey.STREAMS_GROUP_DESCRIBE: ApiMessage(
        ApiKey.STREAMS_GROUP_DESCRIBE,
        streams_group_describe.REQUEST, streams_group_describe.RESPONSE),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: ApiMessage(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        describe_share_group_offsets.REQUEST, describe_share_group_offsets.RESPONSE),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: ApiMessage(
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        alter_share_group_offsets.REQUEST, alter_share_group_offsets.RESPONSE),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: ApiMessage(
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        delete_share_group_offsets.REQUEST, delete_share_group_offsets.RESPONSE),
    ApiKey.UPDATE_STREAMS_GROUP_TOPOLOGY_DESCRIPTION: ApiMessage(
        ApiKey.UPDATE_STREAMS_GROUP_TOPOLOGY_DESCRIPTION,
        update_streams_group_topology_description.REQUEST,
        update_streams_group_topology_description.RESPONSE),
}
