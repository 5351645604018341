"""ListTransactions (API key 66): the coordinator's transactional ids, filtered."""

from __future__ import annotations

import pytest

from kafka_net.protocol.api_keys import ApiKey
from tests.server.conftest import versions
from tests.server.txn_support import begin, init

VERSIONS = versions(ApiKey.LIST_TRANSACTIONS)


def listed(broker, version, states=(), pids=(), **kw):
    body = broker.call(ApiKey.LIST_TRANSACTIONS, version, state_filters=list(states),
                       producer_id_filters=list(pids), **kw)
    assert body["error_code"] == 0
    return body["unknown_state_filters"], [
        (t["transactional_id"], t["producer_id"], t["transaction_state"])
        for t in body["transaction_states"]]


@pytest.mark.parametrize("version", VERSIONS)
def test_filters(broker, version):
    broker.create_topic("t")
    pid_a, _ = begin(broker, "a")
    pid_b, _ = init(broker, "b")
    assert listed(broker, version) == ([], [("a", pid_a, "Ongoing"), ("b", pid_b, "Empty")])
    assert listed(broker, version, states=["Ongoing", "Bogus"]) == (
        ["Bogus"], [("a", pid_a, "Ongoing")])
    assert listed(broker, version, pids=[pid_b]) == ([], [("b", pid_b, "Empty")])


def test_duration_filter_v1(broker):
    broker.create_topic("t")
    coordinator = broker.transaction_coordinator
    now = [1_000_000]
    coordinator.clock_ms = lambda: now[0]
    pid, _ = begin(broker, "old")
    now[0] += 5000
    assert listed(broker, 1, duration_filter=4000)[1] == [("old", pid, "Ongoing")]
    assert listed(broker, 1, duration_filter=6000)[1] == []
