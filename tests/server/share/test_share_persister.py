"""ShareStatePersister: what a load of __share_group_state rebuilds is what was
written, whatever the mix of ShareSnapshot and ShareUpdate records (Hypothesis
writes random states of a share-partition, with a snapshot every 0-3 updates,
then a second persister loads the topic and must find the last state), and a
deleted state stays deleted."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.server.internal_topics import SHARE_GROUP_STATE_TOPIC_NAME
from kafka_net.server.share.persister import ShareStatePersister
from kafka_net.server.share.share_partition import StateBatch
from tests.server.conftest import Broker

_groups = itertools.count()


@pytest.fixture(scope="module")
def broker():
    b = Broker().start()
    yield b
    b.stop()


def _window(start: int, states: list[tuple[int, int]]) -> list[StateBatch]:
    """A share-partition's in-flight window from ``start``: one (state, count) per
    offset, in runs."""
    out: list[StateBatch] = []
    for offset, (state, count) in enumerate(states, start):
        if out and out[-1].last_offset == offset - 1 and out[-1][2:] == (state, count):
            out[-1] = out[-1]._replace(last_offset=offset)
        else:
            out.append(StateBatch(offset, offset, state, count))
    return out


record_state = st.tuples(st.sampled_from([0, 2, 4]), st.integers(1, 5))


@st.composite
def writes(draw):
    """A share-partition's successive states as SharePartition makes them: the
    start offset only moves forward, the window grows at its end, and every
    offset still in it has a state (a write carries the whole window)."""
    steps, start, length = [], 0, 0
    for _ in range(draw(st.integers(1, 12))):
        advance = draw(st.integers(0, 3))
        start, length = start + advance, max(length - advance, 0) + draw(st.integers(0, 3))
        steps.append((start, draw(st.lists(record_state, min_size=length, max_size=length))))
    return steps


def load_again(broker) -> ShareStatePersister:
    fresh = ShareStatePersister(broker.replica_manager, broker.internal_topics)
    fresh.load(broker.internal_topics.partition_count(SHARE_GROUP_STATE_TOPIC_NAME))
    return fresh


@settings(max_examples=40, deadline=None)
@given(writes(), st.integers(0, 3))
def test_a_load_rebuilds_the_last_state_written(broker, steps, per_snapshot):
    group, topic_id = f"g{next(_groups)}", uuid.uuid4()
    persister = ShareStatePersister(broker.replica_manager, broker.internal_topics,
                                    per_snapshot)
    for start, states in steps:
        assert persister.write_state(group, topic_id, 0, 0, 1, start,
                                     _window(start, states)) == 0
    last_start, last_states = steps[-1]
    loaded = load_again(broker).read_state(group, topic_id, 0)
    assert (loaded.start_offset, loaded.batches) == (last_start, _window(last_start,
                                                                         last_states))
    assert persister.read_state(group, topic_id, 0).batches == loaded.batches


def test_a_deleted_state_stays_deleted(broker):
    persister = ShareStatePersister(broker.replica_manager, broker.internal_topics, 1)
    topic_id = uuid.uuid4()
    for start in range(3):
        persister.write_state("gone", topic_id, 0, 0, 1, start, [StateBatch(start, start, 0, 1)])
    assert persister.delete_state("gone", topic_id, 0) == 0
    assert persister.read_state("gone", topic_id, 0) is None
    assert load_again(broker).read_state("gone", topic_id, 0) is None
    assert "gone" not in load_again(broker).groups()
