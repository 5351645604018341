"""Shared fixtures for the API-layer tests: no sockets, real encoding.

* :class:`Broker` is the broker's API layer (``BrokerCore``: KafkaApis, a
  metadata cache, a replica manager, a group coordinator, client quotas),
  with a :class:`FakeChannel` in place of the RequestChannel, so responses to
  parked requests (``DEFERRED``) are recorded instead of sent.
* :meth:`Broker.call` runs one request through the real wire path: the body
  is encoded as a client would (``encode_request``), parsed as the Processor
  does (``KafkaApis.parse_request``), handled by ``build_response`` and the
  response bytes are decoded again.
* :class:`FakeCtx` is the smallest context the GroupCoordinator needs.
* The ``rich`` fixture is a broker with state (topics, data, a Stable group with
  offsets), and ``produce``/``fetch`` are one-call helpers, for the per-API
  tests in tests/server/handlers/ and the group API tests.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid

import pytest

from kafka_net.config import EndPoint, ServerConfig
from kafka_net.network.request_channel import Request, SendResponse
from kafka_net.network.send import read_prefix
from kafka_net.protocol import decode_response, encode_request
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.chunked import ChunkedFrame
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import build_batch, decode_records, split_batches
from kafka_net.server.apis import HANDLERS, RequestContext
from kafka_net.server.broker import BrokerCore
from kafka_net.server.group.group import GroupConfig
from tests.support import fetch_body, produce_body, request_body, wait_until

ADVERTISED = EndPoint("PLAINTEXT", "broker.test", 19092)
LONG = 60_000  # ms: a session or poll timeout no test waits out


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


class Broker(BrokerCore):
    """The API layer of kafka_net/server/broker.py, with a FakeChannel, an
    advertised listener, and short group timeouts."""

    def __init__(self, config: ServerConfig | None = None,
                 group_config: GroupConfig | None = None, metadata_log_factory=None,
                 **core_kw) -> None:
        super().__init__(config or ServerConfig(log_store="memory"), FakeChannel(), group_config
                         or GroupConfig(min_session_timeout_ms=1, initial_rebalance_delay_ms=0),
                         metadata_log_factory, **core_kw)
        self.channel = self.request_channel
        # Who the requests come from (the authorizer tests change it).
        self.principal = "User:ANONYMOUS"
        # The listener's security protocol they come through (the token APIs care).
        self.security_protocol = "PLAINTEXT"
        self.metadata_cache.set_advertised_endpoints([ADVERTISED])
        self._correlation = 0

    def start(self) -> "Broker":
        # Purgatories only: no throttle reaper, so throttled channels are not muted.
        self.start_purgatories()
        # As BrokerCore.startup ends: the replay's leader-epoch checkpoints are
        # on disk before a request is served.
        self.log_manager.await_epoch_writes()
        return self

    def stop(self) -> None:
        self.stop_purgatories()

    # -- requests -------------------------------------------------------------------

    def make_request(self, api_key: int, version: int, body: dict,
                     client_id: str = "test-client") -> Request:
        """Encode ``body`` as a client would and parse it as the Processor does."""
        self._correlation += 1
        frame = encode_request(api_key, version, self._correlation, body, client_id=client_id)
        request = self.request_from_frame(frame[4:], f"conn-{self._correlation}",
                                          ("10.1.2.3", 40000))
        request.principal = self.principal
        request.security_protocol = self.security_protocol
        return request

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
        data = response.data
        if isinstance(data, ChunkedFrame):   # a Fetch answered from files
            data = read_prefix(data, len(data))
        correlation, body = decode_response(api_key, version, data[4:])
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
    return Broker(dataclasses.replace(ServerConfig(log_store="memory"), **config_overrides))


# -- one-call helpers for the per-API tests ----------------------------------------------


def versions(api_key: int) -> list[int]:
    """Every version the handler of ``api_key`` serves."""
    v = HANDLERS[api_key].VERSIONS
    return list(range(v.low, v.high + 1))


def all_served() -> list[tuple[int, int]]:
    return [(key, version) for key in HANDLERS for version in versions(key)]


def produce(broker: Broker, version: int = 9, topic: str = "t", partition: int = 0,
            records: bytes | None = None, acks: int = 1):
    """A Produce of ``records`` (one record by default): the decoded body, or the
    NoOpResponse/CloseConnectionResponse of acks=0."""
    return broker.call(ApiKey.PRODUCE, version, **produce_body(
        topic, partition, batch() if records is None else records, acks, timeout_ms=1000))


def fetch_fields(broker: Broker, partitions=(("t", 0, 0),), **kw) -> dict:
    """A Fetch request's fields, each topic's id looked up (a random one for a
    topic the broker does not know; ``id_of_<topic>=`` overrides it)."""
    ids = {}
    for name, _, _ in partitions:
        meta = broker.metadata_cache.topic(name)
        ids[name] = kw.pop(f"id_of_{name}", meta.topic_id if meta else uuid.uuid4())
    return fetch_body(partitions, topic_ids=ids, session_id=kw.pop("session_id", 0),
                      session_epoch=kw.pop("session_epoch", -1), **kw)


def fetch(broker: Broker, version: int = 12, **kw):
    """A Fetch: the decoded body, or a Deferred for a parked long poll."""
    return broker.call(ApiKey.FETCH, version, **fetch_fields(broker, **kw))


def partition_of(body: dict, index: int = 0, topic_index: int = 0, key: str = "partitions"):
    return body["responses"][topic_index][key][index]


def stored_offsets(records) -> list[int]:
    return [r.offset for b in split_batches(records) for r in decode_records(b)]


@pytest.fixture
def rich():
    """Topic t (2 partitions, data), topic u, a Stable group g with offsets."""
    b = Broker().start()
    try:
        yield fill(b)
    finally:
        b.stop()


def fill(b: Broker) -> Broker:
    """``rich``'s state in the started broker ``b``."""
    b.create_topic("t", 2)
    b.create_topic("u", 1)
    produce(b, records=batch([b"a", b"b"], max_timestamp=1000))
    produce(b, records=batch([b"c"], max_timestamp=2000))
    member = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", session_timeout_ms=LONG,
                    rebalance_timeout_ms=LONG, protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"m"}])["member_id"]
    joined = b.call(ApiKey.JOIN_GROUP, 5, group_id="g", member_id=member,
                    session_timeout_ms=LONG, rebalance_timeout_ms=LONG,
                    protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"m"}]).body()
    b.group_member, b.generation = member, joined["generation_id"]
    synced = b.call(ApiKey.SYNC_GROUP, 3, group_id="g", generation_id=b.generation,
                    member_id=member, assignments=[{"member_id": member, "assignment": b"x"}])
    assert synced.body()["error_code"] == ErrorCode.NONE
    b.call(ApiKey.OFFSET_COMMIT, 8, group_id="g", generation_id_or_member_epoch=b.generation,
           member_id=member, topics=[{"name": "t", "partitions": [
               {"partition_index": 0, "committed_offset": 2, "committed_metadata": "m"}]}])
    return b


class FakeCtx:
    """What the GroupCoordinator reads from a RequestContext, plus recorded answers."""

    class _Header:
        def __init__(self, client_id: str) -> None:
            self.client_id = client_id

    class _Request:
        def __init__(self, client_id: str) -> None:
            self.header = FakeCtx._Header(client_id)
            self.client_address = ("10.9.8.7", 50000)

    # No authorizer: RequestContext's checks allow everything.
    authorizer = None
    authorize = RequestContext.authorize
    authorize_cluster = RequestContext.authorize_cluster
    filter_authorized = RequestContext.filter_authorized
    authorized_operations = RequestContext.authorized_operations

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


__all__ = ["ADVERTISED", "LONG", "Broker", "Deferred", "FakeChannel", "FakeCtx", "all_served",
           "batch", "fetch", "fetch_fields", "make_broker", "partition_of", "produce",
           "request_body", "stored_offsets", "versions", "wait_until"]
