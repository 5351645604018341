"""kafka-net as the Kafka of a test suite: the ``kafka_broker`` pytest fixture.

Installed with kafka-net (entry point ``pytest11``), so a test suite only
asks for it::

    def test_orders_are_consumed(kafka_broker):
        kafka_broker.create_topic("orders", partitions=3)
        producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
        ...

``kafka_broker`` is one in-process :class:`kafka_net.Broker` for the whole
session (a broker starts in milliseconds, but its topics and groups are
shared: use a unique topic name per test).  ``kafka_broker_function`` is a
fresh broker for each test that wants nothing left over from another.  Both
run the development profile on 127.0.0.1 and a free port, and cost no disk
unless asked: wire captures are off, and on only where the
``kafka_broker_captures`` fixture (overridden in a conftest.py) returns True;
they then go into a temporary folder (``kafka_broker.capture_dir``), in
small capture files (:data:`kafka_net.embedded.SMALL_CAPTURE_SEGMENT_BYTES`).

The ``kafka_broker_config`` fixture, overridden in a conftest.py, adds
broker settings (Kafka's keys) to both.

Faults (docs/faults.md): ``kafka_broker.faults.add(...)`` in a test, or the
marker, whose rules are added before the test and removed after it (on
``kafka_broker_function`` if the test uses it, else on ``kafka_broker``)::

    @pytest.mark.kafka_faults({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER",
                               "count": 2})
    def test_producer_retries(kafka_broker): ...
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def kafka_broker_config() -> dict:
    """Extra broker settings; override this fixture to change them."""
    return {}


@pytest.fixture(scope="session")
def kafka_broker_captures() -> bool:
    """Whether the brokers record wire captures; override this fixture to turn them on."""
    return False


@pytest.fixture(scope="session")
def kafka_broker(kafka_broker_config, kafka_broker_captures):
    """One kafka-net broker for the test session."""
    from kafka_net.embedded import Broker

    with Broker(kafka_broker_config, captures=kafka_broker_captures) as broker:
        yield broker


@pytest.fixture
def kafka_broker_function(kafka_broker_config, kafka_broker_captures):
    """A kafka-net broker of this test's own."""
    from kafka_net.embedded import Broker

    with Broker(kafka_broker_config, captures=kafka_broker_captures) as broker:
        yield broker


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "kafka_faults(*rules): fault rules (dicts of broker.faults.add's "
                   "options) on the test's kafka-net broker while the test runs")


@pytest.fixture(autouse=True)
def _kafka_faults_marker(request):
    """The ``kafka_faults`` marker's rules, on the test's broker for the test only."""
    marker = request.node.get_closest_marker("kafka_faults")
    if marker is None:
        yield
        return
    name = "kafka_broker_function" if "kafka_broker_function" in request.fixturenames \
        else "kafka_broker"
    faults = request.getfixturevalue(name).faults
    added = [faults.add(dict(rule)) for rule in marker.args]
    try:
        yield added
    finally:
        for fault in added:
            fault.remove()
