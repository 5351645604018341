"""Real Kafka clients against a real kafka-net broker on 127.0.0.1.

Each client negotiates ApiVersions with its own first version (reference
section 5.2): kafka-python 3.0.12 sends v4, librdkafka (confluent-kafka) v3,
aiokafka v0.  Every client then picks, per API, the highest version in the
overlap of its own range and the range the broker advertises (section 5.4);
the request metrics (``server.apis.metrics.requests_seen``) show what each
client actually sent.

Expected versions are computed from the served table
(``server.apis.supported_versions()``) and each client's own range, read from
the library where it says so (kafka-python and aiokafka) and from the
librdkafka source otherwise, so the tests keep holding as the broker grows.

Rules kept throughout: loopback only, every client call bounded by a timeout,
every client closed before its server stops (each test names its server
fixture before its client fixture, so the clients are torn down first), no
assertion on elapsed time.
"""

from __future__ import annotations

import importlib

import asyncio
import gc
import types

import pytest

from kafka_net.protocol.schema import Versions
from kafka_net.server.apis import HANDLERS
from kafka_net.server.handlers import api_versions, metadata
from tests.integration.client_support import bootstrap
from tests.support import LOOPBACK, make_config, running_server

pytestmark = pytest.mark.interop

API_VERSIONS, METADATA = 18, 3

# librdkafka: rd_kafka_MetadataRequest0 caps Metadata at 13 (10 when it asks
# for cluster authorized operations, which list_topics/describe_topics don't).
LIBRDKAFKA_METADATA = Versions(0, 13)
FLEXIBLE_METADATA = 9   # MetadataRequest.json: "flexibleVersions": "9+"
TIMEOUT_MS = 10_000     # per client request / bootstrap
ASYNC_TIMEOUT_S = 20    # whole aiokafka scenario


# -- helpers ---------------------------------------------------------------------------

def seen(server, api_key: int) -> list[int]:
    return server.apis.metrics.requests_seen(api_key)


def served(server, api_key: int) -> Versions:
    return server.apis.supported_versions()[api_key]


def highest_common(client: Versions, broker: Versions) -> int:
    """The negotiation rule of all three clients: max of the overlap."""
    high = min(client.high, broker.high)
    assert high >= max(client.low, broker.low), (client, broker)
    return high


def limited(module, high: int):
    """A handler that serves ``module``'s API, but only up to ``high``."""
    return types.SimpleNamespace(API_KEY=module.API_KEY,
                                 VERSIONS=Versions(HANDLERS[module.API_KEY].VERSIONS.low, high),
                                 handle=module.handle,
                                 error_response=module.error_response)


def kafka_python_metadata_range() -> Versions:
    from kafka.protocol.metadata import MetadataRequest
    return Versions(MetadataRequest.min_version, MetadataRequest.max_version)


def aiokafka_metadata_range() -> Versions:
    from aiokafka.protocol.metadata import MetadataRequest
    versions = [cls.API_VERSION for cls in MetadataRequest._CLASSES]
    return Versions(min(versions), max(versions))


# -- fixtures --------------------------------------------------------------------------

@pytest.fixture
def api_versions_v2_server():
    """A broker whose ApiVersions goes up to v2 only (KIP-511 fallback)."""
    with running_server(make_config(), apis_handlers={API_VERSIONS: limited(api_versions, 2)}) as s:
        yield s


@pytest.fixture
def metadata_v8_server():
    """A broker whose Metadata stops at v8, the last non-flexible version."""
    with running_server(make_config(), apis_handlers={METADATA: limited(metadata, 8)}) as s:
        yield s


@pytest.fixture
def kafka_python():
    kafka = importlib.import_module("kafka")
    made = []

    def make(kind: str, server, **config):
        cls = {"consumer": kafka.KafkaConsumer, "admin": kafka.KafkaAdminClient,
               "producer": kafka.KafkaProducer}[kind]
        config.setdefault("request_timeout_ms", TIMEOUT_MS)
        if kind != "admin":
            config.setdefault("bootstrap_timeout_ms", TIMEOUT_MS)
        client = cls(bootstrap_servers=bootstrap(server), **config)
        made.append(client)
        return client

    yield make
    for client in reversed(made):
        if isinstance(client, kafka.KafkaProducer):
            client.close(timeout=5)
        else:
            client.close()


@pytest.fixture
def confluent():
    """confluent-kafka handles; destroyed (rd_kafka_destroy) at teardown."""
    ck = importlib.import_module("confluent_kafka")
    admin_mod = importlib.import_module("confluent_kafka.admin")
    made = []

    def make(kind: str, server, **config):
        cls = {"admin": admin_mod.AdminClient, "producer": ck.Producer}[kind]
        # Errors and worse still reach stderr (captured by pytest, shown on failure).
        conf = {"bootstrap.servers": bootstrap(server), "log_level": 3, **config}
        client = cls(conf)
        made.append(client)
        return client

    yield make
    for client in made:
        if hasattr(client, "flush"):
            client.flush(5)
    made.clear()
    gc.collect()  # the last references go: librdkafka's destroy runs now


def run_async(coro):
    return asyncio.run(asyncio.wait_for(coro, ASYNC_TIMEOUT_S))


def aiokafka_topics(server) -> set:
    """The topics an aiokafka consumer sees: bootstrap, ApiVersions, Metadata."""
    aiokafka = importlib.import_module("aiokafka")

    async def scenario():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap(server),
                                             request_timeout_ms=TIMEOUT_MS)
        await consumer.start()
        try:
            return await consumer.topics()
        finally:
            await consumer.stop()

    return run_async(scenario())


# -- kafka-python 3.0.12: ApiVersions v4 first ----------------------------------------

def test_kafka_python_consumer_and_admin_read_metadata(server, kafka_python):
    port = server.bound_port()
    # A topic auto-created through Metadata by kafka-python itself: the producer
    # asks for the topic with allow_auto_topic_creation=true.  Idempotence off,
    # so nothing but ApiVersions and Metadata is needed.
    producer = kafka_python("producer", server, enable_idempotence=False, acks=1,
                            max_block_ms=TIMEOUT_MS)
    assert producer.partitions_for("kp-auto") == set(range(server.config.num_partitions))

    consumer = kafka_python("consumer", server)
    assert "kp-auto" in consumer.topics()

    admin = kafka_python("admin", server)
    # describe_cluster prefers DescribeCluster (key 60), which the broker serves.
    cluster = admin.describe_cluster()
    assert seen(server, 60) == [2]      # DescribeCluster v2 (Kafka 4.2), negotiated
    assert cluster["cluster_id"] == server.metadata_cache.cluster_id
    assert cluster["controller_id"] == server.config.node_id
    assert cluster["brokers"] == [{"broker_id": server.config.node_id, "host": LOOPBACK,
                                   "port": port, "rack": None, "is_fenced": False}]
    assert "kp-auto" in admin.list_topics()
    (described,) = admin.describe_topics(["kp-auto"])
    assert described["error_code"] == 0
    assert [p["leader_id"] for p in described["partitions"]] == \
        [server.config.node_id] * server.config.num_partitions

    # ApiVersions: v4 on every connection, never a retry below it.
    assert seen(server, API_VERSIONS) == [4]
    # Metadata: the highest common version (0-13 vs 0-12 -> 12), a flexible one.
    expected = highest_common(kafka_python_metadata_range(), served(server, METADATA))
    assert expected >= FLEXIBLE_METADATA
    assert seen(server, METADATA) == [expected]


# -- confluent-kafka / librdkafka: ApiVersions v3 first --------------------------------

def test_confluent_admin_list_topics(server, confluent):
    port, node = server.bound_port(), server.config.node_id
    admin = confluent("admin", server)
    md = admin.list_topics(timeout=10)
    assert md.cluster_id == server.metadata_cache.cluster_id
    assert md.controller_id == node
    assert list(md.brokers) == [node]
    broker = md.brokers[node]
    assert (broker.id, broker.host, broker.port) == (node, LOOPBACK, port)

    # A producer handle asks for a named topic with allow_auto_topic_creation=true.
    producer = confluent("producer", server)
    created = producer.list_topics(topic="ck-auto", timeout=10).topics["ck-auto"]
    assert created.error is None
    assert sorted(created.partitions) == list(range(server.config.num_partitions))
    assert all(p.leader == node for p in created.partitions.values())
    assert "ck-auto" in admin.list_topics(timeout=10).topics

    # describe_cluster is answered by librdkafka from a Metadata request too.
    cluster = admin.describe_cluster(request_timeout=10).result(timeout=15)
    assert cluster.cluster_id == server.metadata_cache.cluster_id
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(node, LOOPBACK, port)]

    assert seen(server, API_VERSIONS) == [3]
    expected = highest_common(LIBRDKAFKA_METADATA, served(server, METADATA))
    assert expected >= FLEXIBLE_METADATA
    assert seen(server, METADATA) == [expected]


# -- aiokafka 0.14: ApiVersions v0 only ------------------------------------------------

def test_aiokafka_bootstrap_and_metadata(server):
    aiokafka = importlib.import_module("aiokafka")
    from aiokafka.client import AIOKafkaClient
    port, node = server.bound_port(), server.config.node_id

    async def scenario():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap(server),
                                             request_timeout_ms=TIMEOUT_MS)
        await producer.start()
        try:
            # Metadata v4+ with allow_auto_topic_creation=true: created here.
            partitions = await producer.partitions_for("aio-auto")
        finally:
            await producer.stop()

        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap(server),
                                             request_timeout_ms=TIMEOUT_MS)
        await consumer.start()
        try:
            topics = await consumer.topics()
        finally:
            await consumer.stop()

        client = AIOKafkaClient(bootstrap_servers=bootstrap(server),
                                request_timeout_ms=TIMEOUT_MS)
        await client.bootstrap()
        try:
            cluster = await client.fetch_all_metadata()
        finally:
            await client.close()
        return partitions, topics, cluster

    partitions, topics, cluster = run_async(scenario())
    assert partitions == set(range(server.config.num_partitions))
    assert "aio-auto" in topics
    assert [(b.nodeId, b.host, b.port) for b in cluster.brokers()] == [(node, LOOPBACK, port)]
    assert "aio-auto" in cluster.topics()

    assert seen(server, API_VERSIONS) == [0]
    expected = highest_common(aiokafka_metadata_range(), served(server, METADATA))
    assert expected == 5 < FLEXIBLE_METADATA
    assert seen(server, METADATA) == [expected]


# -- KIP-511: a broker that serves ApiVersions v0-v2 only -------------------------------

def test_kafka_python_falls_back_to_api_versions_v2(api_versions_v2_server, kafka_python):
    kafka = importlib.import_module("kafka")
    server = api_versions_v2_server
    try:
        consumer = kafka_python("consumer", server, bootstrap_timeout_ms=3000)
    except kafka.errors.KafkaTimeoutError as exc:
        raise AssertionError(
            f"kafka-python could not bootstrap ({exc}); ApiVersions versions the "
            f"server saw: {seen(server, API_VERSIONS)} (expected [2, 4])") from exc
    assert consumer.topics() == set()
    # v4 answered with UNSUPPORTED_VERSION and the 0-2 range, then v2.
    assert seen(server, API_VERSIONS) == [2, 4]
    assert seen(server, METADATA) == [
        highest_common(kafka_python_metadata_range(), served(server, METADATA))]


def test_confluent_falls_back_to_api_versions_v0(api_versions_v2_server, confluent):
    server = api_versions_v2_server
    admin = confluent("admin", server)
    md = admin.list_topics(timeout=10)
    assert md.cluster_id == server.metadata_cache.cluster_id
    assert [(b.id, b.port) for b in md.brokers.values()] == \
        [(server.config.node_id, server.bound_port())]
    # librdkafka reads the v0 error body with its v3 (compact) reader: the int32
    # array count 00 00 00 01 starts with a 0x00 byte, a compact count of -1,
    # so it sees no ApiVersions entry and retries at v0, not at the advertised
    # v2 (rd_kafka_handle_ApiVersion / rd_kafka_broker_handle_ApiVersion).
    # Against Apache Kafka it does the same.
    assert seen(server, API_VERSIONS) == [0, 3]
    assert seen(server, METADATA) == [highest_common(LIBRDKAFKA_METADATA, served(server, METADATA))]


def test_aiokafka_unaffected_by_api_versions_v2(api_versions_v2_server):
    server = api_versions_v2_server
    assert aiokafka_topics(server) == set()
    assert seen(server, API_VERSIONS) == [0]


# -- Negotiation with the broker as the limiting side: Metadata capped at v8 ------------

def test_kafka_python_picks_metadata_v8_when_capped(metadata_v8_server, kafka_python):
    server = metadata_v8_server
    consumer = kafka_python("consumer", server)
    assert consumer.topics() == set()
    assert seen(server, API_VERSIONS) == [4]
    assert seen(server, METADATA) == [8]


def test_confluent_picks_metadata_v8_when_capped(metadata_v8_server, confluent):
    server = metadata_v8_server
    md = confluent("admin", server).list_topics(timeout=10)
    assert list(md.brokers) == [server.config.node_id]
    assert seen(server, API_VERSIONS) == [3]
    assert seen(server, METADATA) == [8]


def test_aiokafka_keeps_metadata_v5_when_capped(metadata_v8_server):
    server = metadata_v8_server
    assert aiokafka_topics(server) == set()
    assert seen(server, METADATA) == [5]   # its own maximum, below our cap
