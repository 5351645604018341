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
