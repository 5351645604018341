"""confluent-kafka's AdminClient on groups and the cluster: DeleteGroups,
describe_cluster and describe_topics, against a real kafka-net broker.

Before DeleteGroups existed, ``delete_consumer_groups`` failed with
``_UNSUPPORTED_FEATURE`` and librdkafka then aborted at process exit
(``rd_kafka_q_destroy0: assert: rkq->rkq_refcnt > 0``, exit 134);
:func:`test_a_process_deleting_a_group_exits_cleanly` runs that process.

librdkafka 2.16 answers describe_cluster and describe_topics from Metadata
(v12), not from DescribeCluster (60) or DescribeTopicPartitions (75): the
tests say so, and kafka-python's admin covers those two APIs
(test_admin_groups_kafka_python.py).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_net.protocol.api_keys import ApiKey
from tests.integration.client_support import bootstrap, fast_group_config
from tests.support import as_version_fixture, server_fixture

pytestmark = pytest.mark.interop

TIMEOUT_S = 20

as_version = as_version_fixture()
server = server_fixture(fast_group_config, scope="module", as_version=True)


@pytest.fixture(scope="module")
def admin(server):
    a = AdminClient({"bootstrap.servers": bootstrap(server)})
    futures = a.create_topics([NewTopic("cg-t", 2, 1)])
    futures["cg-t"].result(TIMEOUT_S)
    return a


def consumer(server, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap(server), "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def commit(server, group: str, offset: int) -> None:
    c = consumer(server, group)
    c.commit(offsets=[TopicPartition("cg-t", 0, offset)], asynchronous=False)
    c.close()


def committed(admin, server, group: str) -> int:
    c = consumer(server, group)
    try:
        [tp] = c.committed([TopicPartition("cg-t", 0)], timeout=TIMEOUT_S)
        return tp.offset
    finally:
        c.close()


def delete_result(admin, group: str):
    """None on success, else the KafkaError."""
    [future] = admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S).values()
    try:
        future.result(TIMEOUT_S)
        return None
    except KafkaException as exc:
        return exc.args[0]


def test_delete_an_empty_group_and_its_offsets(admin, server):
    commit(server, "cg-empty", 5)
    assert committed(admin, server, "cg-empty") == 5
    assert delete_result(admin, "cg-empty") is None
    assert committed(admin, server, "cg-empty") < 0      # OFFSET_INVALID: nothing committed
    assert delete_result(admin, "cg-empty").code() == KafkaError.GROUP_ID_NOT_FOUND


def test_a_group_with_a_live_member_is_not_deleted(admin, server):
    live = consumer(server, "cg-live")
    assigned = []
    live.subscribe(["cg-t"], on_assign=lambda c, ps: assigned.extend(ps))
    try:
        for _ in range(100):
            live.poll(0.2)
            if assigned:
                break
        assert sorted(p.partition for p in assigned) == [0, 1]
        assert delete_result(admin, "cg-live").code() == KafkaError.NON_EMPTY_GROUP
    finally:
        live.close()     # leaves the group: now it can go
    assert delete_result(admin, "cg-live") is None


def test_a_process_deleting_a_group_exits_cleanly(server):
    script = textwrap.dedent("""
        import sys
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": sys.argv[1]})
        [future] = admin.delete_consumer_groups(["cg-exit"], request_timeout=20).values()
        try:
            future.result(20)
        except Exception as exc:
            print(exc.args[0].name())
    """)
    run = subprocess.run([sys.executable, "-c", script, bootstrap(server)],
                         capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout.strip()) == (0, "GROUP_ID_NOT_FOUND"), run.stderr


def test_describe_cluster(admin, server):
    result = admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert result.cluster_id == server.metadata_cache.cluster_id
    assert result.controller.id == 1
    assert [(n.id, n.host, n.port) for n in result.nodes] == [
        (1, "127.0.0.1", server.bound_port())]
    assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_CLUSTER) == []  # Metadata instead


def test_describe_topics(admin, server):
    futures = admin.describe_topics(TopicCollection(["cg-t", "cg-missing"]),
                                    request_timeout=TIMEOUT_S)
    description = futures["cg-t"].result(TIMEOUT_S)
    assert description.name == "cg-t" and not description.is_internal
    assert [(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr])
            for p in description.partitions] == [(0, 1, [1], [1]), (1, 1, [1], [1])]
    with pytest.raises(KafkaException) as info:
        futures["cg-missing"].result(TIMEOUT_S)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert server.apis.metrics.requests_seen(ApiKey.DESCRIBE_TOPIC_PARTITIONS) == []
