"""A broker inside your own process, for tests: ``with kafka_net.Broker() as b:``.

::

    import kafka_net

    with kafka_net.Broker() as broker:              # 127.0.0.1, a free port
        broker.create_topic("orders", partitions=3)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        ...

It is the same :class:`~kafka_net.server.kafka_server.KafkaServer` that
``kafka-net serve`` runs, started on its own threads in this process, with
the development profile (:data:`kafka_net.config.DEV_PROFILE`) under any
settings you pass.  The profile changes timing, never semantics: a first
consumer-group join is not held back three seconds waiting for more members,
and fewer threads answer small requests faster on CPython.

``captures=True`` records every request and response into a temporary
folder (``broker.capture_dir``), which the conformance job and
``kafka_net.capture`` read.  Its capture files are small
(:data:`SMALL_CAPTURE_SEGMENT_BYTES` each, unless ``capture.segment.bytes`` is
given): a daemon reserves 64 MiB per file, which a test suite starting many
brokers should not pay.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Mapping

from kafka_net.config import DEV_PROFILE, ServerConfig

__all__ = ["Broker"]

# A test broker's capture files: each Processor reserves one file's space on disk
# when it opens it (capture/writer.py), so a test's files are 1 MiB, not 64 MiB.
SMALL_CAPTURE_SEGMENT_BYTES = 1024 * 1024


class Broker:
    """An in-process kafka-net broker; a context manager (or :meth:`start` / :meth:`stop`)."""

    def __init__(self, config: Mapping[str, object] | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, captures: bool = False,
                 dev: bool = True) -> None:
        props = dict(DEV_PROFILE) if dev else {}
        props["listeners"] = f"PLAINTEXT://{host}:{port}"
        props.update({k: str(v).lower() if isinstance(v, bool) else str(v)
                      for k, v in (config or {}).items()})
        self._own_capture_dir = None
        if captures and not props.get("capture.dir"):
            self._own_capture_dir = tempfile.mkdtemp(prefix="kafka-net-captures-")
            props["capture.dir"] = self._own_capture_dir
            props.setdefault("capture.segment.bytes", str(SMALL_CAPTURE_SEGMENT_BYTES))
        # Parsed here, so a bad key or value fails at construction, not at start.
        self.config = ServerConfig.from_properties(props)
        self.server = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> "Broker":
        from kafka_net.server.kafka_server import KafkaServer

        if self.server is not None:
            raise RuntimeError("this Broker is already started")
        self.server = KafkaServer(self.config)
        self.server.startup()
        self.server.apis.faults.attach(self.server)
        return self

    def stop(self) -> None:
        """Stop gracefully (answering requests already read); idempotent."""
        if self.server is not None:
            self.server.shutdown(graceful=True)
        if self._own_capture_dir is not None:
            shutil.rmtree(self._own_capture_dir, ignore_errors=True)
            self._own_capture_dir = None

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what a test needs ---------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the first listener, for any client's bootstrap setting."""
        endpoint = self._started().advertised_endpoints()[0]
        host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
        return f"{host}:{endpoint.port}"

    @property
    def port(self) -> int:
        return self._started().socket_server.bound_endpoints()[0].port

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port`` of the metrics listener (``metrics.listener``), or None."""
        metrics = self._started().metrics_http
        return metrics.url if metrics is not None else None

    @property
    def faults(self):
        """Faults on demand (:class:`kafka_net.server.faults.registry.FaultRegistry`)::

            with broker.faults.add(api="Produce", topic="orders", partitions=[0],
                                   error="NOT_LEADER_OR_FOLLOWER", count=2) as fault:
                ...                      # the producer's first two tries fail
                assert fault.wait(hits=2)

        See docs/faults.md for every selector, budget and action."""
        return self._started().apis.faults

    @property
    def capture_dir(self) -> str | None:
        return self.config.capture_dir or None

    def create_topic(self, name: str, partitions: int = 1,
                     configs: Mapping[str, object] | None = None) -> None:
        """Create a topic (no-op if it exists with any partition count or configs).

        ``configs`` are topic configs as CreateTopics takes them, e.g.
        ``{"retention.ms": 60000, "cleanup.policy": "compact"}``.  Raises
        ValueError for a name Kafka would refuse, a count below 1, or a config
        Kafka would refuse (with Kafka's INVALID_CONFIG message).
        """
        from kafka_net.server.metadata_cache import topic_name_error
        from kafka_net.config.errors import InvalidConfig

        error = topic_name_error(name)
        if error or partitions < 1:
            raise ValueError(error or f"partitions must be at least 1, not {partitions}")
        apis = self._started().apis
        try:
            overrides = apis.config_repository.validate(name, {
                k: str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in (configs or {}).items()})
        except InvalidConfig as exc:
            raise ValueError(str(exc)) from None
        apis.create_topic(name, partitions, overrides)

    def delete_topic(self, name: str) -> bool:
        return self._started().apis.delete_topic(name)

    def topics(self) -> list[str]:
        return sorted(t.name for t in self._started().metadata_cache.topics())

    def _started(self):
        if self.server is None:
            raise RuntimeError("the Broker is not started (use it as a context manager)")
        return self.server
