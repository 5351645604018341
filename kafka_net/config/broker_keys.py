"""The key table: every key kafka-net reads, with Kafka's name, default and a
one-line doc.  Each default is written here once: ServerConfig's field
defaults are these strings, converted (server_config.py); ``kafka-net serve
--help`` and docs/operations.md's key table (``python docs/make_tables.py keys``) print them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafka_net.config.kafka_broker_names import KAFKA_BROKER_KEYS
from kafka_net.config.listeners import DEFAULT_PROTOCOL_MAP
from kafka_net.config.sasl import mechanism_list, scram_credentials
from kafka_net.config.values import (
    INT_MAX, LONG_MAX, assignor_list, authorizer_class, boolean, choice, decimal,
    http_address, integer, ip_overrides, listener_list, listener_name, listener_names,
    optional_integer, principal_list, protocol_map, segment_bytes, string, string_list)
from kafka_net.config.values import kafka_release


@dataclass(frozen=True)
class _Key:
    """One configuration key: its name, the ServerConfig attribute, how its text converts,
    its default (as text) and what it does."""

    name: str
    attr: str
    convert: Callable[[str, str], Any]
    default: str
    doc: str


KEYS: tuple[_Key, ...] = (
    _Key("node.id", "node_id", integer(0), "1",
         "This broker's id, returned in Metadata (broker.id is accepted too)."),
    _Key("listeners", "listeners", listener_list, "PLAINTEXT://127.0.0.1:9092",
         "Comma-separated NAME://host:port; port 0 picks an ephemeral port."),
    _Key("advertised.listeners", "advertised_listeners", listener_list, "",
         "Addresses given to clients in Metadata; defaults to listeners."),
    _Key("listener.security.protocol.map", "listener_security_protocol_map",
         protocol_map, DEFAULT_PROTOCOL_MAP,
         "Listener name -> security protocol; PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL "
         "listeners are served."),
    _Key("controller.listener.names", "controller_listener_names", listener_names, "",
         "Listeners of a KRaft controller; kafka-net has none and does not open them."),
    _Key("num.network.threads", "num_network_threads", integer(1), "3",
         "Processor threads per listener (N)."),
    _Key("num.io.threads", "num_io_threads", integer(1), "8",
         "Request handler threads (M)."),
    _Key("queued.max.requests", "queued_max_requests", integer(1), "500",
         "Requests the RequestChannel holds before Processors block."),
    _Key("socket.request.max.bytes", "socket_request_max_bytes", integer(1), "104857600",
         "Largest request frame accepted; larger ones close the connection."),
    _Key("socket.request.read.timeout.ms", "socket_request_read_timeout_ms",
         integer(-1, hi=LONG_MAX), "30000",
         "kafka-net: a request whose first bytes arrived must be whole within this "
         "long, plus a second per socket.request.read.min.bytes.per.second bytes of it "
         "received, or its connection is closed; -1 disables."),
    _Key("socket.request.read.min.bytes.per.second",
         "socket_request_read_min_bytes_per_second", integer(0), "65536",
         "kafka-net: the rate that keeps a large request alive past "
         "socket.request.read.timeout.ms; 0: the timeout alone bounds every request."),
    _Key("socket.send.buffer.bytes", "socket_send_buffer_bytes", integer(-1), "102400",
         "SO_SNDBUF of accepted sockets; -1 keeps the OS default."),
    _Key("socket.receive.buffer.bytes", "socket_receive_buffer_bytes", integer(-1), "102400",
         "SO_RCVBUF of the listening and accepted sockets; -1 keeps the OS default."),
    _Key("socket.listen.backlog.size", "socket_listen_backlog_size", integer(1), "50",
         "listen() backlog of each listener."),
    _Key("connections.max.idle.ms", "connections_max_idle_ms", integer(hi=LONG_MAX), "600000",
         "Idle connections are closed after this long; negative disables."),
    _Key("auto.create.topics.enable", "auto_create_topics_enable", boolean, "true",
         "Create unknown topics named in Metadata requests."),
    _Key("num.partitions", "num_partitions", integer(1), "1",
         "Partitions of auto-created topics."),
    _Key("default.replication.factor", "default_replication_factor", integer(1, 1), "1",
         "Replication factor of auto-created topics (a single node: 1)."),
    _Key("cluster.id", "cluster_id", string, "",
         "kafka-net: the cluster id (Kafka keeps it in meta.properties); empty = the log "
         "dirs' own, or a new random one when they are formatted, or per start in memory."),
    _Key("as.version", "as_version", kafka_release, "",
         "kafka-net: play Kafka release X.Y (2.1 ... 4.4): ApiVersions advertises, and "
         "the broker accepts, only the API versions and features that release served "
         "(docs/operations.md, \"Playing an older Kafka\"); empty = everything kafka-net serves."),
    _Key("shutdown.timeout.ms", "shutdown_timeout_ms", integer(0), "30000",
         "kafka-net: how long a graceful stop waits for requests already received."),
    _Key("delete.topic.enable", "delete_topic_enable", boolean, "true",
         "Whether DeleteTopics may delete topics."),
    _Key("message.max.bytes", "message_max_bytes", integer(0), "1048588",
         "Largest record batch a producer may send (per partition)."),
    # -- the log store (Kafka's LogManager and LogConfig broker keys) -------------------
    _Key("log.store", "log_store", choice("disk", "memory"), "disk",
         "kafka-net: where partition logs live: disk (segment files under log.dirs, "
         "Kafka's layout, kept across restarts) or memory (nothing survives a restart; "
         "--dev, the pytest fixture and kafka_net.Broker use it)."),
    _Key("log.dirs", "log_dirs", string_list, "",
         "Comma-separated folders holding the partition logs; empty = log.dir."),
    _Key("log.dir", "log_dir", string, "/tmp/kafka-logs",
         "The log folder when log.dirs is empty (Kafka's default; its KRaft "
         "quickstart file sets log.dirs=/tmp/kraft-combined-logs)."),
    _Key("log.segment.bytes", "log_segment_bytes", segment_bytes, "1073741824",
         "Size at which a segment file rolls (topic config segment.bytes); at least "
         "1048576, as in Kafka 4 (tests that roll small segments set the topic config "
         "internal.segment.bytes)."),
    _Key("log.roll.ms", "log_roll_ms", optional_integer(1, LONG_MAX), "",
         "Time after which a segment rolls (segment.ms); empty = log.roll.hours."),
    _Key("log.roll.hours", "log_roll_hours", integer(1), "168",
         "Hours after which a segment rolls, unless log.roll.ms is set."),
    # Kafka reads retention as ms, else minutes, else hours (LogConfig's
    # logRetentionTimeMillis); any negative value means no time limit.
    _Key("log.retention.ms", "log_retention_ms", optional_integer(None, LONG_MAX), "",
         "How long a batch is kept (topic config retention.ms); empty = "
         "log.retention.minutes; negative = forever."),
    _Key("log.retention.minutes", "log_retention_minutes", optional_integer(None), "",
         "Minutes a batch is kept, unless log.retention.ms is set; empty = "
         "log.retention.hours."),
    _Key("log.retention.hours", "log_retention_hours", integer(None), "168",
         "Hours a batch is kept, unless log.retention.ms or .minutes is set."),
    _Key("log.retention.bytes", "log_retention_bytes", integer(None, LONG_MAX), "-1",
         "Largest size a partition's log keeps before old segments are deleted "
         "(topic config retention.bytes); -1 = no limit."),
    _Key("log.index.interval.bytes", "log_index_interval_bytes", integer(0), "4096",
         "Bytes appended between offset and time index entries (index.interval.bytes)."),
    _Key("log.index.size.max.bytes", "log_index_size_max_bytes", integer(4), "10485760",
         "Largest offset or time index; a full index rolls the segment "
         "(segment.index.bytes)."),
    _Key("log.flush.interval.messages", "log_flush_interval_messages",
         integer(1, LONG_MAX), str(LONG_MAX),
         "Records appended to a partition before its log is fsynced (flush.messages); "
         "by default the OS decides when to write."),
    _Key("log.flush.interval.ms", "log_flush_interval_ms", optional_integer(0, LONG_MAX), "",
         "Longest a record stays unflushed (flush.ms); empty = "
         "log.flush.scheduler.interval.ms."),
    _Key("log.flush.scheduler.interval.ms", "log_flush_scheduler_interval_ms",
         integer(1, LONG_MAX), str(LONG_MAX),
         "How often the kafka-log-flusher checks which logs flush.ms requires flushing."),
    _Key("log.flush.offset.checkpoint.interval.ms", "log_flush_offset_checkpoint_interval_ms",
         integer(0), "60000",
         "How often each log dir's recovery-point-offset-checkpoint is written."),
    _Key("log.flush.start.offset.checkpoint.interval.ms",
         "log_flush_start_offset_checkpoint_interval_ms", integer(0), "60000",
         "How often each log dir's log-start-offset-checkpoint is written."),
    _Key("log.segment.delete.delay.ms", "log_segment_delete_delay_ms", integer(0, LONG_MAX),
         "60000",
         "How long a deleted segment's files (renamed .deleted) stay for reads in flight "
         "(file.delete.delay.ms)."),
    _Key("log.retention.check.interval.ms", "log_retention_check_interval_ms", integer(1),
         "300000",
         "How often the kafka-log-retention task deletes batches past their topic's "
         "retention.ms / retention.bytes."),
    _Key("log.initial.task.delay.ms", "log_initial_task_delay_ms", integer(0), "30000",
         "How long after startup the kafka-log-retention task first runs."),
    # -- the LogCleaner (log compaction; Kafka's CleanerConfig) --------------------------
    _Key("log.cleaner.enable", "log_cleaner_enable", boolean, "true",
         "Run the LogCleaner, which compacts topics with cleanup.policy=compact."),
    _Key("log.cleaner.threads", "log_cleaner_threads", integer(0), "1",
         "LogCleaner threads (kafka-log-cleaner-thread-N)."),
    _Key("log.cleaner.backoff.ms", "log_cleaner_backoff_ms", integer(0, LONG_MAX), "15000",
         "How long a cleaner thread sleeps when no log needs cleaning."),
    _Key("log.cleaner.dedupe.buffer.size", "log_cleaner_dedupe_buffer_size",
         integer(0, LONG_MAX), "134217728",
         "Memory for the cleaners' key -> offset maps, shared by the threads (24 bytes a "
         "key, as Kafka's SkimpyOffsetMap counts)."),
    _Key("log.cleaner.min.cleanable.ratio", "log_cleaner_min_cleanable_ratio",
         decimal(0, 1), "0.5",
         "Default min.cleanable.dirty.ratio: the dirty share of a log that makes it cleanable."),
    _Key("log.cleaner.delete.retention.ms", "log_cleaner_delete_retention_ms",
         integer(0, LONG_MAX), "86400000",
         "Default delete.retention.ms: how long a tombstone stays after the first "
         "cleaning that saw it."),
    _Key("log.cleaner.min.compaction.lag.ms", "log_cleaner_min_compaction_lag_ms",
         integer(0, LONG_MAX), "0",
         "Default min.compaction.lag.ms: a record this young is not compacted."),
    _Key("log.cleaner.max.compaction.lag.ms", "log_cleaner_max_compaction_lag_ms",
         integer(1, LONG_MAX), str(LONG_MAX),
         "Default max.compaction.lag.ms: a log with a record this old is cleaned "
         "whatever its dirty ratio."),
    _Key("group.min.session.timeout.ms", "group_min_session_timeout_ms", integer(), "6000",
         "Smallest session timeout a consumer group member may ask for."),
    _Key("group.max.session.timeout.ms", "group_max_session_timeout_ms", integer(), "1800000",
         "Largest session timeout a consumer group member may ask for."),
    _Key("group.initial.rebalance.delay.ms", "group_initial_rebalance_delay_ms", integer(0),
         "3000", "How long the first rebalance of an empty group waits for more members."),
    _Key("group.max.size", "group_max_size", integer(1), str(2**31 - 1),
         "Most members a consumer group may have."),
    _Key("group.consumer.heartbeat.interval.ms", "group_consumer_heartbeat_interval_ms",
         integer(1), "5000",
         "Heartbeat interval given to consumer-protocol (KIP-848) group members."),
    _Key("group.consumer.session.timeout.ms", "group_consumer_session_timeout_ms",
         integer(1), "45000",
         "A consumer-protocol member silent this long is fenced from its group."),
    _Key("group.consumer.assignors", "group_consumer_assignors", assignor_list,
         "uniform,range",
         "Server-side assignors of consumer-protocol groups; the first is the default."),
    _Key("group.consumer.max.size", "group_consumer_max_size", integer(1), str(2**31 - 1),
         "Most members a consumer-protocol group may have."),
    _Key("group.consumer.regex.refresh.interval.ms", "group_consumer_regex_refresh_interval_ms",
         integer(10000), "600000",
         "How often a consumer-protocol group resolves its subscribed regular expressions "
         "again even without new topics (ACLs may have changed)."),
    _Key("group.consumer.migration.policy", "group_consumer_migration_policy",
         choice("disabled", "upgrade", "downgrade", "bidirectional"), "bidirectional",
         "Online migration between the classic and consumer group protocols (KIP-848): "
         "upgrade turns a classic group a ConsumerGroupHeartbeat joins into a consumer "
         "group, downgrade turns a consumer group whose last consumer-protocol member "
         "left back into a classic one."),
    # -- share groups (KIP-932: Kafka's ShareGroupConfig, ShareCoordinatorConfig) -------
    _Key("group.share.record.lock.duration.ms", "group_share_record_lock_duration_ms",
         integer(1000, 3600000), "30000",
         "How long a share-group member holds the records a ShareFetch acquired for it; "
         "unacknowledged, they become available again (share.record.lock.duration.ms "
         "overrides it per group)."),
    _Key("group.share.min.record.lock.duration.ms", "group_share_min_record_lock_duration_ms",
         integer(1000, 3600000), "15000",
         "Lowest group.share.record.lock.duration.ms (and group override) accepted."),
    _Key("group.share.max.record.lock.duration.ms", "group_share_max_record_lock_duration_ms",
         integer(1000, 3600000), "60000",
         "Highest group.share.record.lock.duration.ms (and group override) accepted."),
    _Key("group.share.delivery.count.limit", "group_share_delivery_count_limit",
         integer(2, 10), "5",
         "Deliveries of a record to a share group before it is archived, never delivered "
         "again."),
    _Key("group.share.partition.max.record.locks", "group_share_partition_max_record_locks",
         integer(100, 10000), "2000",
         "Records in flight (between a share-partition's start and end offsets) at most."),
    _Key("group.share.session.timeout.ms", "group_share_session_timeout_ms",
         integer(1), "45000",
         "A share-group member silent this long is removed from its group; the records "
         "it holds are released."),
    _Key("group.share.heartbeat.interval.ms", "group_share_heartbeat_interval_ms",
         integer(1), "5000", "Heartbeat interval given to share-group members."),
    _Key("group.share.max.size", "group_share_max_size", integer(1, 1000), "200",
         "Most members a share group may have."),
    _Key("group.share.max.share.sessions", "group_share_max_share_sessions",
         integer(1), "2000",
         "Share sessions (one per member fetching) the broker keeps at most; past it a new "
         "one gets SHARE_SESSION_LIMIT_REACHED."),
    _Key("share.coordinator.state.topic.num.partitions",
         "share_coordinator_state_topic_num_partitions", integer(1), "50",
         "Partitions of __share_group_state (share-partition state); fixed once the "
         "topic exists."),
    _Key("share.coordinator.state.topic.replication.factor",
         "share_coordinator_state_topic_replication_factor", integer(1, 32767), "3",
         "Accepted; one node holds the one replica of __share_group_state."),
    _Key("share.coordinator.state.topic.segment.bytes",
         "share_coordinator_state_topic_segment_bytes", integer(1), "104857600",
         "segment.bytes of __share_group_state."),
    _Key("share.coordinator.snapshot.update.records.per.snapshot",
         "share_coordinator_snapshot_update_records_per_snapshot", integer(0, 500), "500",
         "ShareUpdate records written for a share-partition between two ShareSnapshot "
         "records of its whole state."),
    _Key("group.streams.heartbeat.interval.ms", "group_streams_heartbeat_interval_ms",
         integer(1), "5000", "Heartbeat interval given to streams group (KIP-1071) members."),
    _Key("group.streams.session.timeout.ms", "group_streams_session_timeout_ms",
         integer(1), "45000", "A streams group member silent this long is fenced."),
    _Key("group.streams.num.standby.replicas", "group_streams_num_standby_replicas",
         integer(0), "0", "Standby replicas of each task of a streams group."),
    _Key("group.streams.max.size", "group_streams_max_size", integer(1), str(2**31 - 1),
         "Most members a streams group may have."),
    _Key("group.streams.initial.rebalance.delay.ms", "group_streams_initial_rebalance_delay_ms",
         integer(0), "3000",
         "How long the first assignment of a new (previously empty) streams group waits for "
         "more members; its members get the status ASSIGNMENT_DELAYED meanwhile."),
    _Key("errors.deadletterqueue.auto.create.topics.enable",
         "errors_deadletterqueue_auto_create_topics_enable", boolean, "false",
         "Whether a share group's dead-letter topic (KIP-1191) that does not exist is "
         "created at its first dead letter (num.partitions, "
         "errors.deadletterqueue.group.enable=true); dynamic, cluster-wide or per broker."),
    _Key("group.streams.num.warmup.replicas", "group_streams_num_warmup_replicas",
         integer(0), "2",
         "Most warm-up tasks a streams group runs at a time.  Kafka 4.4's coordinator "
         "derives none by default (its assignment refiner is a no-op), nor does kafka-net."),
    _Key("group.streams.acceptable.recovery.lag", "group_streams_acceptable_recovery_lag",
         integer(0, LONG_MAX), "10000",
         "Changelog lag at or below which a streams task's state counts as caught up; "
         "sent to the members in each heartbeat answer."),
    _Key("group.streams.task.offset.interval.ms", "group_streams_task_offset_interval_ms",
         integer(1), "60000",
         "How often streams group members send their tasks' changelog offsets."),
    _Key("offset.metadata.max.bytes", "offset_metadata_max_bytes", integer(0), "4096",
         "Largest metadata string an offset commit may carry."),
    # -- the internal topics (Kafka's GroupCoordinatorConfig, TransactionLogConfig) ----
    _Key("offsets.retention.minutes", "offsets_retention_minutes", integer(1), "10080",
         "Committed offsets of a group without members (or of topics it no longer "
         "consumes) are removed this long after the group emptied or the commit."),
    _Key("offsets.retention.check.interval.ms", "offsets_retention_check_interval_ms",
         integer(1), "600000", "How often expired offsets and empty groups are removed."),
    _Key("offsets.topic.num.partitions", "offsets_topic_num_partitions", integer(1), "50",
         "Partitions of __consumer_offsets (committed offsets and group metadata); "
         "fixed once the topic exists."),
    _Key("offsets.topic.replication.factor", "offsets_topic_replication_factor",
         integer(1, 32767), "3",
         "Accepted; one node holds the one replica of __consumer_offsets."),
    _Key("offsets.topic.segment.bytes", "offsets_topic_segment_bytes", integer(1), "104857600",
         "segment.bytes of __consumer_offsets."),
    _Key("transaction.state.log.num.partitions", "transaction_state_log_num_partitions",
         integer(1), "50",
         "Partitions of __transaction_state (transaction coordinator state)."),
    _Key("transaction.state.log.replication.factor",
         "transaction_state_log_replication_factor", integer(1, 32767), "3",
         "Accepted; one node holds the one replica of __transaction_state."),
    _Key("transaction.state.log.segment.bytes", "transaction_state_log_segment_bytes",
         integer(1), "104857600",
         "segment.bytes of __transaction_state."),
    # -- transactions (Kafka's TransactionConfig) -------------------------------------
    _Key("transaction.max.timeout.ms", "transaction_max_timeout_ms", integer(1), "900000",
         "Longest transaction.timeout.ms a producer may ask for (else "
         "INVALID_TRANSACTION_TIMEOUT)."),
    _Key("transactional.id.expiration.ms", "transactional_id_expiration_ms", integer(1),
         "604800000",
         "A transactional id unused this long (and with no open transaction) is forgotten."),
    _Key("transaction.abort.timed.out.transaction.cleanup.interval.ms",
         "transaction_abort_timed_out_transaction_cleanup_interval_ms", integer(1), "10000",
         "How often open transactions past their timeout are looked for and aborted."),
    _Key("transaction.remove.expired.transaction.cleanup.interval.ms",
         "transaction_remove_expired_transaction_cleanup_interval_ms", integer(1), "3600000",
         "How often expired transactional ids are removed."),
    # -- connection quotas (Kafka's ConnectionQuotas; listener.name.<l>. forms too) --
    _Key("max.connections", "max_connections", integer(0), str(INT_MAX),
         "Most connections the broker holds; at the limit the Acceptor waits for a slot."),
    _Key("max.connections.per.ip", "max_connections_per_ip", integer(0), str(INT_MAX),
         "Most connections from one IP address; more are closed at once."),
    _Key("max.connections.per.ip.overrides", "max_connections_per_ip_overrides",
         ip_overrides, "",
         "Per-host or per-IP exceptions to max.connections.per.ip, as host:count,..."),
    _Key("max.connection.creation.rate", "max_connection_creation_rate", integer(0),
         str(INT_MAX),
         "Most new connections per second; faster accepts are delayed."),
    _Key("inter.broker.listener.name", "inter_broker_listener_name", listener_name, "",
         "The inter-broker listener; with several listeners it is exempt from "
         "max.connections. Empty = PLAINTEXT (Kafka's default)."),
    # -- SASL (listener.name.<l>.<mechanism>.sasl.jaas.config too) ---------------------
    _Key("sasl.enabled.mechanisms", "sasl_enabled_mechanisms", mechanism_list, "GSSAPI",
         "SASL mechanisms of SASL listeners; kafka-net has PLAIN, SCRAM-SHA-256 and "
         "SCRAM-SHA-512 (Kafka's default GSSAPI is refused at startup)."),
    _Key("connections.max.reauth.ms", "connections_max_reauth_ms", integer(hi=LONG_MAX), "0",
         "SASL session lifetime (KIP-368): a request after it without re-authentication "
         "closes the connection; 0 = no limit."),
    _Key("connection.failed.authentication.delay.ms",
         "connection_failed_authentication_delay_ms", integer(0), "100",
         "A failed authentication is answered and closed this much later (a brake on "
         "password guessing); must be below connections.max.idle.ms."),
    _Key("connection.authentication.timeout.ms", "connection_authentication_timeout_ms",
         integer(-1, hi=LONG_MAX), "30000",
         "kafka-net: a connection whose TLS handshake and SASL authentication (or a "
         "KIP-368 re-authentication) are not done this long after they began is closed; "
         "-1 disables (then only connections.max.idle.ms ends a stalled handshake)."),
    _Key("sasl.server.max.receive.size", "sasl_server_max_receive_size", integer(1),
         "524288",
         "Largest frame read before SASL authentication completes; a larger one fails "
         "the authentication."),
    _Key("scram.credentials", "scram_credentials", scram_credentials, "",
         "kafka-net: SCRAM users created at startup, as kafka-storage format --add-scram "
         "writes them: SCRAM-SHA-256=[name=alice,password=alice-secret] ..."),
    # -- delegation tokens (KIP-48; Kafka's DelegationTokenManagerConfigs) ------------
    _Key("delegation.token.secret.key", "delegation_token_secret_key", string, "",
         "Secret that signs delegation tokens (their HMAC-SHA512); tokens are enabled "
         "only when it is set (delegation.token.master.key: its deprecated synonym)."),
    _Key("delegation.token.max.lifetime.ms", "delegation_token_max_lifetime_ms",
         integer(1, hi=LONG_MAX), "604800000",
         "A token cannot be renewed past this long after its creation."),
    _Key("delegation.token.expiry.time.ms", "delegation_token_expiry_time_ms",
         integer(1, hi=LONG_MAX), "86400000",
         "A token expires this long after its creation or last renewal, unless renewed."),
    _Key("delegation.token.expiry.check.interval.ms",
         "delegation_token_expiry_check_interval_ms", integer(1, hi=LONG_MAX), "3600000",
         "How often expired tokens are removed (from the metadata log)."),
    # -- authorization (Kafka's StandardAuthorizer) -------------------------------------
    _Key("authorizer.class.name", "authorizer_class_name", authorizer_class, "",
         "org.apache.kafka.metadata.authorizer.StandardAuthorizer switches ACLs on; empty = "
         "no authorization (the ACL APIs answer SECURITY_DISABLED); any other class fails "
         "startup."),
    _Key("super.users", "super_users", principal_list, "",
         "Semicolon-separated principals allowed everything, whatever the ACLs say "
         "(User:admin;User:CN=broker)."),
    _Key("allow.everyone.if.no.acl.found", "allow_everyone_if_no_acl_found", boolean,
         "false",
         "With an authorizer: a resource no ACL covers is open to everyone (true) or to "
         "super users only (false)."),
    # -- memory pool and quotas --------------------------------------------------------
    _Key("queued.max.request.bytes", "queued_max_request_bytes", integer(-(2**63), LONG_MAX),
         "-1",
         "Bytes of requests read and not yet handled before reading pauses; -1 = no bound."),
    _Key("quota.window.num", "quota_window_num", integer(1), "11",
         "Samples kept in memory for client and connection-rate quotas."),
    _Key("quota.window.size.seconds", "quota_window_size_seconds", integer(1), "1",
         "Time span of one quota sample; also the longest connection-rate delay."),
    # -- request limits a Python broker needs (kafka-net) ------------------------------
    _Key("max.partitions.per.request", "max_partitions_per_request", integer(1), "10000",
         "kafka-net: most partitions one CreateTopics or CreatePartitions may create "
         "(10000 empty ones take about 10 MiB)."),
    _Key("max.broker.partitions", "max_broker_partitions", integer(1), "100000",
         "kafka-net: most partitions the broker holds in all (KIP-578's name); 100000 take "
         "about 110 MiB, under 1 GiB even while 8 Metadata-for-all answers are built "
         "(bench/RESULTS.md)."),
    _Key("message.max.uncompressed.bytes", "message_max_uncompressed_bytes", integer(1),
         "4194304",
         "kafka-net: most bytes a compressed record batch may decompress to (a Produce "
         "request's batches together: 16x that, and a quarter of it in records and "
         "headers); 4 MiB keeps the worst request near 1 s of handler CPU "
         "(bench/records_worst_case.py)."),
    # -- the metadata log (KRaft's __cluster_metadata: server/metadata_log.py) ----------
    _Key("metadata.log.dir", "metadata_log_dir", string, "",
         "Folder of the metadata log (__cluster_metadata-0) with log.store=disk; "
         "empty = the first of log.dirs."),
    _Key("metadata.log.max.record.bytes.between.snapshots",
         "metadata_log_max_record_bytes_between_snapshots", integer(1), "20971520",
         "Bytes of metadata records appended before the state is written as a snapshot "
         "and the log before it dropped."),
    _Key("metadata.log.max.snapshot.interval.ms", "metadata_log_max_snapshot_interval_ms",
         integer(0), "3600000",
         "Longest time between metadata snapshots while records are appended; 0 "
         "snapshots by size only."),
    _Key("metadata.log.truncate.on.corruption", "metadata_log_truncate_on_corruption", boolean,
         "false",
         "kafka-net: a damaged batch in the metadata log (CRC, magic or size) stops the "
         "startup, naming the records after it; true truncates the log there and starts "
         "without them (a torn last batch, a write a crash cut short, is cut either way)."),
    # -- SSL listeners (Kafka's SslConfigs; listener.name.<l>.ssl.* forms too) ---------
    _Key("ssl.keystore.type", "ssl_keystore_type", choice("JKS", "PKCS12", "PEM", upper=True),
         "JKS", "Format of the key store; kafka-net reads PEM only (JKS and PKCS12 are "
         "refused at startup)."),
    _Key("ssl.keystore.location", "ssl_keystore_location", string, "",
         "PEM file holding the private key and the certificate chain."),
    _Key("ssl.keystore.certificate.chain", "ssl_keystore_certificate_chain", string, "",
         "The certificate chain itself, in PEM (with ssl.keystore.key, instead of a file)."),
    _Key("ssl.keystore.key", "ssl_keystore_key", string, "",
         "The private key itself, in PEM (with ssl.keystore.certificate.chain)."),
    _Key("ssl.key.password", "ssl_key_password", string, "",
         "Password of an encrypted private key."),
    _Key("ssl.truststore.type", "ssl_truststore_type",
         choice("JKS", "PKCS12", "PEM", upper=True), "JKS",
         "Format of the trust store; kafka-net reads PEM only."),
    _Key("ssl.truststore.location", "ssl_truststore_location", string, "",
         "PEM file of the CA certificates client certificates are checked against."),
    _Key("ssl.truststore.certificates", "ssl_truststore_certificates", string, "",
         "The trusted CA certificates themselves, in PEM."),
    _Key("ssl.client.auth", "ssl_client_auth", choice("required", "requested", "none"),
         "none", "Client certificates: none, requested (checked if sent) or required."),
    _Key("ssl.enabled.protocols", "ssl_enabled_protocols", string_list, "TLSv1.2,TLSv1.3",
         "TLS versions a client may use."),
    _Key("ssl.protocol", "ssl_protocol", string, "TLSv1.3",
         "The SSLContext protocol (TLSv1.2, TLSv1.3 or TLS); ssl.enabled.protocols "
         "bounds the versions."),
    _Key("ssl.cipher.suites", "ssl_cipher_suites", string_list, "",
         "TLS 1.2 cipher suites in OpenSSL's names; empty = OpenSSL's defaults (TLS 1.3 "
         "suites are always OpenSSL's)."),
    _Key("ssl.principal.mapping.rules", "ssl_principal_mapping_rules", string, "DEFAULT",
         "Rules mapping a client certificate's DN to a principal name "
         "(RULE:pattern/replacement/[LU], DEFAULT = the full DN)."),
    _Key("capture.dir", "capture_dir", string, "",
         "kafka-net: write wire captures here (one file series per Processor); "
         "empty = off."),
    _Key("capture.segment.bytes", "capture_segment_bytes", integer(1024), "67108864",
         "kafka-net: start a new capture file once one reaches this size."),
    _Key("capture.max.frame.bytes", "capture_max_frame_bytes", integer(0), "1048576",
         "kafka-net: frames are cut to this many bytes in captures (the cut is recorded)."),
    _Key("metrics.listener", "metrics_listener", http_address, "",
         "kafka-net: serve /metrics (Prometheus), /health and /requests at http://HOST:PORT "
         "(port 0 picks a free port, shown in the started line); empty = off."),
    _Key("faults.control.allowed.hosts", "faults_control_allowed_hosts", string_list, "",
         "kafka-net: addresses besides loopback that may use the metrics listener's "
         "/faults control endpoint (docs/faults.md); * = any; empty = loopback only."),
    _Key("telemetry.max.bytes", "telemetry_max_bytes", integer(1), "1048576",
         "Largest client metrics push (KIP-714) accepted, compressed or not; "
         "GetTelemetrySubscriptions tells clients this bound."),
)

BY_NAME = {k.name: k for k in KEYS}
# The integer keys DescribeConfigs types LONG, as Kafka's ConfigDef does; the others: INT.
LONG_KEYS = frozenset({"connections.max.idle.ms", "queued.max.request.bytes",
                       "group.streams.acceptable.recovery.lag"})
# The keys a listener.name.<l>. prefix may override for one SSL listener.
SSL_KEYS = tuple(k for k in KEYS if k.name.startswith("ssl."))
# Secrets: kept out of ServerConfig's repr (Kafka prints a Password as [hidden]).
SECRET_ATTRS = ("ssl_key_password", "ssl_keystore_key", "delegation_token_secret_key")
ALIASES = {"broker.id": "node.id",
           # Kafka's deprecated name of the token secret (KIP-681).
           "delegation.token.master.key": "delegation.token.secret.key"}


def default_of(attr: str) -> Any:
    """The default of ServerConfig's field ``attr``: its key's default text in
    :data:`KEYS`, converted as a value in a file would be."""
    key = _BY_ATTR[attr]
    return key.convert(key.name, key.default)


_BY_ATTR = {k.attr: k for k in KEYS}

# Real Kafka broker keys that kafka-net does not use: accepted with a warning, as
# Kafka itself warns about keys it does not know (the list: kafka_broker_names.py).
IGNORED_KAFKA_KEYS = KAFKA_BROKER_KEYS - BY_NAME.keys()


# The development profile (``kafka-net serve --dev``, ``kafka_net.Broker``, the
# pytest fixture): settings that make a broker quick for tests and local work
# without changing what any request means.  Kafka's quickstart, Testcontainers
# and Redpanda's dev mode make the same choice for the rebalance delay.
DEV_PROFILE: dict[str, str] = {
    # Disposable and fast: a development broker keeps its logs in memory.
    "log.store": "memory",
    # A first group join otherwise waits 3 s for more members to arrive.
    "group.initial.rebalance.delay.ms": "0",
    # On CPython threads share one GIL: 1 network and 2 handler threads answer
    # small requests faster than Kafka's 3 + 8 (docs/operations.md, "Thread counts").
    "num.network.threads": "1",
    "num.io.threads": "2",
}


def canonical_key(key: str) -> str:
    """The key's name in :data:`KEYS` (``broker.id`` -> ``node.id``), else ``key``."""
    key = key.strip()
    return ALIASES.get(key, key)

