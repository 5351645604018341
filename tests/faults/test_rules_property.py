"""Random fault rules against random traffic: a rule never fires outside its
selectors or its budget, and never fails to fire where a certain rule must."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.server.faults.rules import RuleState, rule_from_spec
from kafka_net.server.faults.rules import RequestFacts

TOPICS = ["a", "b", "c"]
IDS = {"a": "id-a", "b": "id-b", "c": ""}          # c is named only
GROUPS = ["g1", "g2"]
APIS = [0, 1, 2, 8, 10, 23]


# Each selector and budget is present with probability 1/2 (a rule with none of
# them is as interesting as one with all).  Drawn from a seed, as the traffic:
# Hypothesis then draws three integers per example, and 10,000 examples take
# seconds, not minutes.
SPEC_CHOICES = {
    "api": lambda r: r.sample(APIS, r.randint(1, 3)),
    "min_version": lambda r: r.randint(0, 5),
    "max_version": lambda r: r.randint(0, 10),
    "topic": lambda r: r.sample(TOPICS, r.randint(1, 2)),
    "topic_id": lambda r: r.choice(["id-a", "id-b"]),
    "partitions": lambda r: r.sample(range(4), r.randint(1, 3)),
    "group": lambda r: r.choice(GROUPS),
    "transactional_id": lambda r: r.choice(["tx1", "tx2"]),
    "client_id": lambda r: r.choice(["c1", "c2"]),
    "listener": lambda r: r.choice(["PLAINTEXT", "SSL"]),
    "connection": lambda r: r.choice(["conn-0", "conn-1"]),
    "count": lambda r: r.randint(1, 5),
    "nth": lambda r: r.randint(1, 4),
    "probability": lambda r: r.choice([1.0, 0.5, 0.1]),
    "seed": lambda r: r.randint(0, 2**32),
}


def random_spec(seed: int) -> dict:
    rnd = random.Random(seed)
    spec = {key: make(rnd) for key, make in SPEC_CHOICES.items() if rnd.random() < 0.5}
    spec["error"] = "NOT_LEADER_OR_FOLLOWER"
    return spec


def random_traffic(seed: int, length: int) -> list[RequestFacts]:
    """Requests drawn from a small world of names, so that rules and requests
    often meet (built from a seed: Hypothesis draws two integers, not a tree)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(length):
        topics = rnd.sample(TOPICS, rnd.randint(0, 3))
        out.append(RequestFacts(
            rnd.choice(APIS), rnd.randint(0, 10), rnd.choice(["c1", "c2", ""]),
            rnd.choice(["PLAINTEXT", "SSL"]), rnd.choice(["conn-0", "conn-1", "conn-2"]),
            {(t, IDS[t]): tuple(rnd.sample(range(4), rnd.randint(0, 3))) for t in topics},
            tuple(rnd.sample(GROUPS, rnd.randint(0, 1))),
            tuple(rnd.sample(["tx1", "tx2"], rnd.randint(0, 1)))))
    return out


def _as_list(value):
    return value if isinstance(value, list) else [value]


def reference_selection(spec: dict, facts: RequestFacts):
    """The selectors, written out plainly: the part of the request the rule may
    act on (a dict), or None where some selector does not hold."""
    if "api" in spec and facts.api_key not in spec["api"]:
        return None
    if facts.api_version < spec.get("min_version", 0):
        return None
    if facts.api_version > spec.get("max_version", 1 << 30):
        return None
    simple = [("client_id", [facts.client_id]), ("listener", [facts.listener]),
              ("connection", [facts.connection]), ("group", list(facts.groups)),
              ("transactional_id", list(facts.transactional_ids))]
    for key, have in simple:
        if key in spec and not set(_as_list(spec[key])) & set(have):
            return None
    if not ({"topic", "topic_id", "partitions"} & set(spec)):
        return {}
    out = {}
    for (name, topic_id), parts in facts.partitions.items():
        by_name = "topic" in spec and name in spec["topic"]
        by_id = "topic_id" in spec and topic_id == spec["topic_id"]
        if ("topic" in spec or "topic_id" in spec) and not (by_name or by_id):
            continue
        kept = tuple(p for p in parts if "partitions" not in spec or p in spec["partitions"])
        if kept or "partitions" not in spec:
            out[(name, topic_id)] = kept
    return out or None


@settings(max_examples=10_000, deadline=None)
@given(spec_seed=st.integers(0, 2**32), traffic_seed=st.integers(0, 2**32), length=st.integers(0, 16))
def test_a_rule_fires_only_inside_its_selectors_and_budget(spec_seed, traffic_seed, length):
    spec = random_spec(spec_seed)
    traffic = random_traffic(traffic_seed, length)
    state = RuleState("f1", rule_from_spec(spec))
    twin = RuleState("f2", rule_from_spec(spec))
    count, nth = spec.get("count"), spec.get("nth", 1)
    certain = spec.get("probability", 1.0) == 1.0
    reproducible = certain or "seed" in spec      # same seed: same decisions
    matches = hits = 0
    for facts in traffic:
        expected = reference_selection(spec, facts)
        exhausted = count is not None and hits >= count
        fired = state.offer(facts)
        if reproducible:
            assert twin.offer(facts) == fired
        if fired is not None:
            assert expected is not None, "fired outside its selectors"
            assert fired == expected, "acted on partitions it did not select"
            assert not exhausted, "fired past its count"
            hits += 1
        if expected is not None and not exhausted:
            matches += 1
            if matches < nth:
                assert fired is None, "fired before its n-th match"
            elif certain:
                assert fired is not None, "a certain rule did not fire on a match"
    assert state.hits == hits
    assert count is None or hits <= count


def test_spec_errors_are_named():
    import pytest
    from kafka_net.server.faults.rules import RuleError
    with pytest.raises(RuleError, match="unknown API"):
        rule_from_spec({"api": "Produs", "error": "NONE"})
    with pytest.raises(RuleError, match="unknown error"):
        rule_from_spec({"error": "NOT_A_LEADER"})
    with pytest.raises(RuleError, match="exactly one action"):
        rule_from_spec({"error": "NONE", "drop": True})
    with pytest.raises(RuleError, match="unknown fault option"):
        rule_from_spec({"error": "NONE", "topics": ["t"]})
    rule = rule_from_spec({"api": ["OffsetCommit", "produce"], "error": 6, "once": True})
    assert rule.selectors.apis == {8, 0} and rule.budget.count == 1


@settings(max_examples=500, deadline=None)
@given(seed=st.integers(0, 2**32), traffic_seed=st.integers(0, 2**32))
def test_a_chaos_schedule_is_the_same_from_the_same_seed(seed, traffic_seed):
    traffic = random_traffic(traffic_seed, 30)
    spec = {"chaos": True, "seed": seed, "probability": 0.3}
    runs = []
    for _ in range(2):
        state = RuleState("f1", rule_from_spec(spec))
        runs.append([(state.offer(f) is not None, state.last_action) for f in traffic])
        assert all(action is None or action.kind != "chaos" for _, action in runs[-1])
    assert runs[0] == runs[1]
