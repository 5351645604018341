"""Broker metrics under Kafka's names.

Kafka exposes these over JMX; kafka-net keeps the same names and tags so that
an operator's dashboards and vocabulary carry over:

* ``kafka.network:type=RequestMetrics,name=RequestsPerSec,request=<Api>,version=<v>``
  (here: the running count; a rate is the count's derivative),
* ``kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=<Api>,error=<ERROR>``,
* ``kafka.network:type=RequestChannel,name=RequestQueueSize``,
* ``kafka.network:type=RequestChannel,name=ResponseQueueSize`` (and
  ``...,processor=<id>``, each Processor's),
* ``kafka.network:type=Processor,name=IdlePercent,listener=<l>,networkProcessor=<id>``,
* ``kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent``,
* ``kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent``,
* ``kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=<l>``,
* ``kafka.network:type=SocketServer,name=MemoryPoolAvailable`` and
  ``MemoryPoolUsed`` (bytes of ``queued.max.request.bytes``; without a bound
  Kafka's MemoryPool.NONE figures: Long.MAX_VALUE available, 0 used),
* ``kafka.server:type=socket-server-metrics,name=MemoryPoolAvgDepletedPercent``
  (share of time, 0..1, since startup, the pool refused memory) and
  ``MemoryPoolDepletedTimeTotal`` (ms),
* ``kafka.server:type=socket-server-metrics,listener=<l>,networkProcessor=<id>``
  with ``connection-count``, ``incoming-byte-total``, ``outgoing-byte-total``,
  ``request-total`` (responses sent) and ``response-total`` (requests read):
  Kafka's Selector metrics, named from the client's side,
* ``kafka.server:type=socket-server-metrics,name=broker-connection-accept-rate``
  and ``...,listener=<l>,name=connection-accept-rate`` (ConnectionQuotas'
  rates, connections per second over the quota window),
  ``...,listener=<l>,name=connection-accept-throttle-time`` and
  ``ip-connection-accept-throttle-time`` (mean non-zero delays, ms), and the
  connections ConnectionQuotas counts per listener
  (``...,listener=<l>,name=connection-count``, kafka-net: the sum over the
  listener's Processors plus sockets not yet registered with one).

``snapshot()`` returns them all as a flat dict of MBean-style name -> value.
"""

from __future__ import annotations

import threading
from collections import Counter

from kafka_net.protocol.api_keys import api_name
from kafka_net.protocol.error_codes import ErrorCode


class RequestMetrics:
    """Counters updated by handler threads; a lock keeps the updates whole.

    One count per api key, version and error code (or None), one dict update per
    request (two ``Counter`` updates cost 0.25 µs more, on every request);
    ``requests`` and ``errors`` are summed from it when read.  Nested by key,
    version and code rather than keyed by a tuple: on free-threaded CPython 3.13
    a lookup by a new, equal tuple in a dict another handler filled spins in the
    dict's lock (docs/design.md, "Free threading"); small ints are immortal.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, dict[int, dict[int | None, int]]] = {}

    def record(self, api_key: int, api_version: int, error_code: int | None = None) -> None:
        with self._lock:
            by_version = self._counts.get(api_key)
            if by_version is None:
                by_version = self._counts[api_key] = {}
            by_code = by_version.get(api_version)
            if by_code is None:
                by_code = by_version[api_version] = {}
            by_code[error_code] = by_code.get(error_code, 0) + 1

    @property
    def requests(self) -> Counter[tuple[int, int]]:
        """Requests by (api key, version)."""
        return _requests(self._copy())

    @property
    def errors(self) -> Counter[tuple[int, int]]:
        """Responses by (api key, top-level error code), for the APIs that have one."""
        return _errors(self._copy())

    def requests_seen(self, api_key: int) -> list[int]:
        """The versions of ``api_key`` requested so far, ascending (tests use this)."""
        return sorted(v for (k, v), n in self.requests.items() if k == api_key and n)

    def snapshot(self) -> dict[str, float]:
        counts = self._copy()   # one moment for both families
        out = {}
        for (key, version), n in sorted(_requests(counts).items()):
            out[f"kafka.network:type=RequestMetrics,name=RequestsPerSec,"
                f"request={api_name(key)},version={version}"] = n
        for (key, code), n in sorted(_errors(counts).items()):
            out[f"kafka.network:type=RequestMetrics,name=ErrorsPerSec,"
                f"request={api_name(key)},error={_error_name(code)}"] = n
        return out

    def _copy(self) -> dict[tuple[int, int, int | None], int]:
        with self._lock:
            return {(key, version, code): n
                    for key, by_version in self._counts.items()
                    for version, by_code in by_version.items()
                    for code, n in by_code.items()}


def _requests(counts: dict) -> Counter[tuple[int, int]]:
    out: Counter[tuple[int, int]] = Counter()
    for (key, version, _), n in counts.items():
        out[(key, version)] += n
    return out


def _errors(counts: dict) -> Counter[tuple[int, int]]:
    out: Counter[tuple[int, int]] = Counter()
    for (key, _, code), n in counts.items():
        if code is not None:
            out[(key, code)] += n
    return out


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def server_snapshot(server) -> dict[str, float]:
    """Every metric of a running :class:`~kafka_net.server.kafka_server.KafkaServer`."""
    out = dict(server.apis.metrics.snapshot())
    out.update(server.apis.quotas.metrics())   # client quota sensors, once a quota is set
    channel = server.request_channel
    out["kafka.network:type=RequestChannel,name=RequestQueueSize"] = channel.request_queue_size()
    sizes = channel.response_queue_sizes()
    out["kafka.network:type=RequestChannel,name=ResponseQueueSize"] = sum(sizes.values())
    processors = server.socket_server.processors
    idle = [p.idle_fraction() for p in processors]
    out["kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent"] = (
        sum(idle) / len(idle) if idle else 1.0)
    out["kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"] = (
        server.handler_pool.avg_idle_fraction())
    pool = server.socket_server.memory_pool
    out["kafka.network:type=SocketServer,name=MemoryPoolAvailable"] = pool.available
    out["kafka.network:type=SocketServer,name=MemoryPoolUsed"] = pool.used
    out["kafka.server:type=socket-server-metrics,name=MemoryPoolAvgDepletedPercent"] = (
        pool.avg_depleted_fraction())
    out["kafka.server:type=socket-server-metrics,name=MemoryPoolDepletedTimeTotal"] = (
        pool.depleted_time_ns() / 1e6)
    for acceptor in server.socket_server.acceptors:
        out[f"kafka.network:type=Acceptor,name=AcceptorBlockedPercent,"
            f"listener={acceptor.endpoint.listener_name}"] = acceptor.blocked_fraction()
    _connection_quota_metrics(server.socket_server, out)
    _broker_metrics(server, out)
    for p in processors:
        prefix = (f"kafka.server:type=socket-server-metrics,listener={p.listener_name},"
                  f"networkProcessor={p.id}")
        out[f"{prefix},name=connection-count"] = len(p.selector.channels)
        out[f"{prefix},name=incoming-byte-total"] = p.selector.bytes_in
        out[f"{prefix},name=outgoing-byte-total"] = p.selector.bytes_out
        out[f"{prefix},name=response-total"] = p.requests_received
        out[f"{prefix},name=request-total"] = p.responses_sent
        # Kafka's authentication sensors (failed/successful on SSL and SASL
        # listeners; 0 elsewhere) and expired-connections-killed-count (KIP-368
        # sessions that ended).
        for name, value in p.selector.auth_counts.items():
            out[f"{prefix},name={name}"] = value
        out[f"kafka.network:type=Processor,name=IdlePercent,listener={p.listener_name},"
            f"networkProcessor={p.id}"] = p.idle_fraction()
        out[f"kafka.network:type=RequestChannel,name=ResponseQueueSize,processor={p.id}"] = (
            p.response_queue_size())
    return out


def _connection_quota_metrics(socket_server, out: dict) -> None:
    quotas = socket_server.connection_quotas
    group = "kafka.server:type=socket-server-metrics"
    out[f"{group},name=broker-connection-accept-rate"] = quotas.broker_accept_rate()
    for acceptor in socket_server.acceptors:
        listener = acceptor.endpoint.listener_name
        out[f"{group},listener={listener},name=connection-accept-rate"] = (
            quotas.listener_accept_rate(listener))
        out[f"{group},listener={listener},name=connection-count"] = (
            quotas.listener_count(listener))
        throttle, ip_throttle = quotas.listener_throttle_times(listener)
        out[f"{group},listener={listener},name=connection-accept-throttle-time"] = throttle
        out[f"{group},listener={listener},name=ip-connection-accept-throttle-time"] = ip_throttle


def _broker_metrics(server, out: dict) -> None:
    """What a single-node KRaft broker reports of its partitions, controller and disk.

    One node leads every partition and is its only replica, so nothing is ever
    under-replicated, offline or reassigned; those metrics are 0, as a healthy
    Kafka reports them, so dashboards and alert rules find them.  A partition is
    at min ISR when its topic's min.insync.replicas is 1 (its ISR is itself)."""
    rm = server.replica_manager
    partitions = rm.all_partitions()
    under_min = 0
    repository = rm.config_repository
    min_isr: dict[str, int] = {}
    for p in partitions:
        if p.topic not in min_isr:
            min_isr[p.topic] = repository.effective(p.topic)["min.insync.replicas"]
        tags = f"topic={p.topic},partition={p.index}"
        under = int(min_isr[p.topic] > 1)
        under_min += under
        for name, value in (("UnderReplicated", 0), ("UnderMinIsr", under),
                            ("AtMinIsr", int(min_isr[p.topic] == 1)), ("LastStableOffsetLag", 0),
                            ("ReplicasCount", 1), ("InSyncReplicasCount", 1)):
            out[f"kafka.cluster:type=Partition,name={name},{tags}"] = value
        log = p.log
        for name, value in (("Size", log.size_in_bytes), ("LogStartOffset", log.log_start_offset),
                            ("LogEndOffset", log.log_end_offset)):
            out[f"kafka.log:type=Log,name={name},{tags}"] = value
    server_group = "kafka.server:type=ReplicaManager"
    for name, value in (("LeaderCount", len(partitions)), ("PartitionCount", len(partitions)),
                        ("UnderReplicatedPartitions", 0), ("OfflineReplicaCount", 0),
                        ("UnderMinIsrPartitionCount", under_min),
                        ("AtMinIsrPartitionCount", len(partitions) - under_min),
                        ("IsrShrinksPerSec", 0), ("IsrExpandsPerSec", 0)):
        out[f"{server_group},name={name}"] = value
    topics = server.metadata_cache.topics()
    for name, value in (("ActiveControllerCount", 1), ("OfflinePartitionsCount", 0),
                        ("PreferredReplicaImbalanceCount", 0),
                        ("GlobalTopicCount", len(topics)),
                        ("GlobalPartitionCount", sum(t.num_partitions for t in topics))):
        out[f"kafka.controller:type=KafkaController,name={name}"] = value
    out["kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec"] = 0
    out["kafka.log:type=LogManager,name=OfflineLogDirectoryCount"] = 0
    out.update(rm.topic_stats.snapshot())
    read_bytes, write_bytes = linux_io_bytes()
    if read_bytes is not None:
        out["kafka.server:type=KafkaServer,name=linux-disk-read-bytes"] = read_bytes
        out["kafka.server:type=KafkaServer,name=linux-disk-write-bytes"] = write_bytes


def linux_io_bytes(path: str = "/proc/self/io") -> tuple[int | None, int | None]:
    """(read_bytes, write_bytes) this process caused to be read from and written to
    storage, from /proc/self/io (Kafka's LinuxIoMetricsCollector); (None, None)
    where the file does not exist (not Linux) or cannot be read."""
    try:
        with open(path, encoding="ascii") as fh:
            fields = dict(line.split(":", 1) for line in fh if ":" in line)
        return int(fields["read_bytes"]), int(fields["write_bytes"])
    except (OSError, KeyError, ValueError):
        return None, None
