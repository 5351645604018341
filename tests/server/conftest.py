"""Shared fixtures for the API-layer tests: no sockets, real encoding.

* :class:`Broker` wires a :class:`KafkaApis` to a metadata cache, a replica
  manager and a group coordinator, with a :class:`FakeChannel` in place of
  the RequestChannel, so responses to parked requests (``DEFERRED``) are
  recorded instead of sent.
* :meth:`Broker.call` runs one request through the real wire path: the body
  is encoded as a client would (``encode_request``), parsed as the Processor
  does (``KafkaApis.parse_request``), handled by ``build_response`` and the
  response bytes are decoded again.
* :class:`FakeCtx` is the smallest context the GroupCoordinator needs.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest

from kafka_net.config import EndPoint, ServerConfig
from kafka_net.network.request_channel import Request, SendResponse
from kafka_net.protocol import decode_response, encode_request
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.records import build_batch
from kafka_net.server.apis import KafkaApis
from kafka_net.server.group import GroupConfig, GroupCoordinator
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.replica_manager import ReplicaManager
from tests import support

ADVERTISED = EndPoint("PLAINTEXT", "broker.test", 19092)


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.005) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (a bound, never asserted on)."""
    return support.wait_until(predicate, timeout, interval)


def request_body(api_key: int, version: int, **fields) -> dict:
    """Every field of the request at its default, then ``fields`` on top."""
    body = MESSAGES[api_key].request.defaults()
    body.update(fields)
    return body


def batch(values=(b"v",), **kw) -> bytes:
    """A valid magic-2 batch with one record per value (offset deltas 0, 1, ...)."""
    return build_batch([(None, v) for v in values], **kw)


class FakeChannel:
    """Stands in for the RequestChannel: records every response sent to it."""

    def __init__(self) -> None:
        self.responses: list = []
        self._cond = threading.Condition()

    def send_response(self, response) -> None:
        with self._cond:
            self.responses.append(response)
            self._cond.notify_all()

    def for_correlation(self, correlation_id: int) -> list:
        with self._cond:
            return [r for r in self.responses
                    if r.request.header.correlation_id == correlation_id]


class Deferred:
    """A parked request: what ``Broker.call`` returns for a ``DEFERRED`` answer."""

    def __init__(self, broker: "Broker", request: Request) -> None:
        self.broker, self.request = broker, request

    @property
    def done(self) -> bool:
        return bool(self.broker.channel.for_correlation(self.request.header.correlation_id))

    def response(self):
        answers = self.broker.channel.for_correlation(self.request.header.correlation_id)
        assert len(answers) == 1, f"expected exactly one answer, got {answers}"
        return answers[0]

    def body(self, timeout: float = 5.0) -> dict:
        assert wait_until(lambda: self.done, timeout), "the parked request was never answered"
        return self.broker.decode(self.request, self.response())


class Broker:
    def __init__(self, config: ServerConfig | None = None,
                 group_config: GroupConfig | None = None) -> None:
        self.config = config or ServerConfig()
        self.metadata_cache = MetadataCache(self.config.node_id, self.config.cluster_id)
        self.metadata_cache.set_advertised_endpoints([ADVERTISED])
        self.replica_manager = ReplicaManager(self.config.message_max_bytes,
                                              self.config.message_max_uncompressed_bytes)
        self.group_coordinator = GroupCoordinator(
            group_config or GroupConfig(min_session_timeout_ms=1, initial_rebalance_delay_ms=0),
            self._partition_count)
        self.channel = FakeChannel()
        self.apis = KafkaApis(self.config, self.metadata_cache, self.channel,
                              replica_manager=self.replica_manager,
                              group_coordinator=self.group_coordinator)
        self._correlation = 0

    def _partition_count(self, topic: str):
        t = self.metadata_cache.topic(topic)
        return None if t is None else t.num_partitions

    def start(self) -> "Broker":
        self.replica_manager.fetch_purgatory.start()
        self.group_coordinator.start()
        return self

    def stop(self) -> None:
        self.replica_manager.fetch_purgatory.shutdown()
        self.group_coordinator.shutdown()

    # -- requests -------------------------------------------------------------------

    def make_request(self, api_key: int, version: int, body: dict,
                     client_id: str = "test-client") -> Request:
        """Encode ``body`` as a client would and parse it as the Processor does."""
        self._correlation += 1
        frame = encode_request(api_key, version, self._correlation, body, client_id=client_id)
        parsed = self.apis.parse_request(frame[4:])
        return Request(0, f"conn-{self._correlation}", "PLAINTEXT", ("10.1.2.3", 40000),
                       parsed.header, parsed.body, parsed.body_size,
                       unsupported_version=parsed.unsupported_version)

    def respond(self, api_key: int, version: int, body: dict, client_id: str = "test-client"):
        """(request, Response or Deferred)."""
        request = self.make_request(api_key, version, body, client_id)
        response = self.apis.build_response(request)
        if response is None:
            return request, Deferred(self, request)
        return request, response

    def call(self, api_key: int, version: int, client_id: str = "test-client", **fields):
        """A decoded response body, or a Deferred, NoOpResponse or CloseConnectionResponse."""
        body = request_body(api_key, version, **fields)
        request, response = self.respond(api_key, version, body, client_id)
        if isinstance(response, SendResponse):
            return self.decode(request, response)
        return response

    @staticmethod
    def decode(request: Request, response) -> dict:
        assert isinstance(response, SendResponse), f"not a SendResponse: {response!r}"
        api_key, version = request.header.api_key, request.header.api_version
        if request.unsupported_version:
            version = 0
        correlation, body = decode_response(api_key, version, response.data[4:])
        assert correlation == request.header.correlation_id
        return body

    # -- state helpers ----------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1):
        topic, _ = self.apis.create_topic(name, partitions)
        return topic


@pytest.fixture
def broker():
    b = Broker().start()
    try:
        yield b
    finally:
        b.stop()


def make_broker(**config_overrides) -> Broker:
    return Broker(dataclasses.replace(ServerConfig(), **config_overrides))


class FakeCtx:
    """What the GroupCoordinator reads from a RequestContext, plus recorded answers."""

    class _Header:
        def __init__(self, client_id: str) -> None:
            self.client_id = client_id

    class _Request:
        def __init__(self, client_id: str) -> None:
            self.header = FakeCtx._Header(client_id)
            self.client_address = ("10.9.8.7", 50000)

    def __init__(self, api_version: int, client_id: str = "consumer") -> None:
        self.api_version = api_version
        self.request = FakeCtx._Request(client_id)
        self.answers: list[dict] = []
        self._lock = threading.Lock()

    def complete(self, body) -> None:
        with self._lock:
            self.answers.append(body)

    @property
    def answer(self) -> dict:
        assert len(self.answers) == 1, f"expected one answer, got {self.answers}"
        return self.answers[0]

    def wait(self, timeout: float = 5.0) -> dict:
        assert wait_until(lambda: self.answers, timeout), "never answered"
        return self.answer


__all__ = ["ADVERTISED", "Broker", "Deferred", "FakeChannel", "FakeCtx", "batch",
           "make_broker", "request_body", "wait_until"]
