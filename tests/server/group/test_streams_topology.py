"""Configuring a streams topology against the topics (Kafka's InternalTopicManager):
task counts, repartition and changelog partition counts, copartitioning, and
the statuses a topology that is not ready reports, in Kafka's wording."""

from __future__ import annotations

import pytest

from kafka_net.server.group.streams_group import (
    INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS,
    InvalidTopology, configure, validate_topology)


def info(name, partitions=0):
    return {"name": name, "partitions": partitions, "replication_factor": 0,
            "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}


def sub(sid, sources=(), sinks=(), repartition=(), changelogs=(), copartition=()):
    return {"subtopology_id": sid, "source_topics": list(sources), "source_topic_regex": [],
            "state_changelog_topics": list(changelogs), "repartition_sink_topics": list(sinks),
            "repartition_source_topics": list(repartition),
            "copartition_groups": [{"source_topics": list(g), "source_topic_regex": [],
                                    "repartition_source_topics": []} for g in copartition]}


def topo(*subs, epoch=1):
    return {"epoch": epoch, "subtopologies": list(subs)}


TWO_STAGES = topo(sub("0", ["in"], sinks=["rep"]),
                  sub("1", ["rep"], repartition=[info("rep")], changelogs=[info("store")]))


def test_repartition_and_changelog_topics_take_their_counts_from_upstream():
    configured = configure(TWO_STAGES, {"in": 6}.get)
    assert configured.task_counts == {"0": 6, "1": 6}
    assert configured.to_create == {"rep": (6, 0, {"cleanup.policy": "compact"}),
                                    "store": (6, 0, {"cleanup.policy": "compact"})}
    assert configured.status == (MISSING_INTERNAL_TOPICS,
                                 "Internal topics are missing: rep, store")
    assert not configured.is_ready() and configured.stateful == {"1"}
    ready = configure(TWO_STAGES, {"in": 6, "rep": 6, "store": 6}.get)
    assert ready.is_ready() and ready.to_create == {}


def test_a_fixed_repartition_count_wins():
    t = topo(sub("0", ["in"], sinks=["rep"]), sub("1", ["rep"], repartition=[info("rep", 3)]))
    assert configure(t, {"in": 6, "rep": 3}.get).task_counts == {"0": 6, "1": 3}


def test_missing_source_topics_are_reported_in_kafka_s_words():
    configured = configure(topo(sub("0", ["b", "a"])), {}.get)
    assert configured.status == (MISSING_SOURCE_TOPICS, "Source topics a, b are missing.")
    assert configured.task_counts is None


def test_copartitioned_topics_must_agree():
    t = topo(sub("0", ["foo", "bar"], copartition=[(0, 1)]))
    configured = configure(t, {"foo": 6, "bar": 3}.get)
    assert configured.status == (
        INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{bar=3, foo=6}]")
    assert configure(t, {"foo": 3, "bar": 3}.get).task_counts == {"0": 3}


def test_an_existing_internal_topic_with_another_count_is_incorrectly_partitioned():
    configured = configure(TWO_STAGES, {"in": 6, "rep": 6, "store": 2}.get)
    assert configured.status[0] == INCORRECTLY_PARTITIONED_TOPICS
    assert "store" in configured.status[1]


@pytest.mark.parametrize("topology, message", [
    (topo(sub("0", ["in"], changelogs=[info("c", 3)])),
     "Changelog topic c must have an undefined partition count, but it is set to 3."),
    (topo(sub("0", [])), "No source topics found for subtopology 0"),
    (topo(sub("0", ["in"]), sub("0", ["in2"])), "Subtopology 0 is defined more than once."),
    (topo(sub("1", ["rep"], repartition=[info("rep")])),
     "Failed to compute number of partitions for all repartition topics, because a "
     "repartition source topic is never used as a sink topic."),
])
def test_invalid_topologies(topology, message):
    with pytest.raises(InvalidTopology, match="^" + message.replace(".", r"\.") + "$"):
        validate_topology(topology)


def test_the_metadata_hash_is_the_same_in_every_process():
    """It is written to __consumer_offsets and compared after a restart: a hash that
    changed with PYTHONHASHSEED would bump every group's epoch at each restart."""
    import os
    import subprocess
    import sys
    code = ("from kafka_net.server.group.streams_group import configure\n"
            "from kafka_net.server.group.streams_coordinator import _hash\n"
            "t = {'epoch': 1, 'subtopologies': [{'subtopology_id': '0', 'source_topics': "
            "['in'], 'source_topic_regex': [], 'state_changelog_topics': [], "
            "'repartition_sink_topics': [], 'repartition_source_topics': [], "
            "'copartition_groups': []}]}\n"
            "print(_hash(configure(t, {'in': 3}.get)))\n")
    hashes = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout
              for seed in ("1", "2")}
    assert len(hashes) == 1
