"""kcat consuming transactional data with ``-X isolation.level=read_committed``.

confluent-kafka's transactional producer writes a committed, an aborted and
a still open transaction; kcat (its own, older librdkafka) reads up to the
last stable offset and skips the aborted records; read_uncommitted reads all.
"""

from __future__ import annotations

import shutil

import pytest
from confluent_kafka import Producer

from tests.integration.client_support import bootstrap, fast_group_config
from tests.integration.test_broker_kcat import json_lines, kcat
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


@pytest.fixture(scope="module", autouse=True)
def kcat_installed():
    assert shutil.which("kcat"), "kcat is not installed: run `make kcat` (apt-get install kcat)"


def test_read_committed_skips_aborted_and_open_transactions(server):
    topic = "kcat-txn"
    producer = Producer({"bootstrap.servers": bootstrap(server), "transactional.id": "kcat-tx"})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"committed")
    producer.commit_transaction(TIMEOUT_S)          # offsets 0, COMMIT 1
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"aborted")
    assert producer.flush(TIMEOUT_S) == 0
    producer.abort_transaction(TIMEOUT_S)           # 2, ABORT 3
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"open")
    assert producer.flush(TIMEOUT_S) == 0           # 4, left open: the LSO stays at 4

    committed = json_lines(kcat(server, "-C", "-t", topic, "-o", "beginning", "-e", "-J",
                                "-X", "isolation.level=read_committed"))
    everything = json_lines(kcat(server, "-C", "-t", topic, "-o", "beginning", "-e", "-J",
                                 "-X", "isolation.level=read_uncommitted"))
    producer.abort_transaction(TIMEOUT_S)

    assert [(r["offset"], r["payload"]) for r in committed] == [(0, "committed")]
    assert [(r["offset"], r["payload"]) for r in everything] == [
        (0, "committed"), (2, "aborted"), (4, "open")]
