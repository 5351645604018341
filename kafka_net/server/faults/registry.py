"""FaultRegistry: the broker's rules, consulted by the request path.

``KafkaApis.fault_check`` is this registry while it holds a rule that can
still fire, and None otherwise: a broker without faults pays one attribute
test per request and nothing else.  The handler threads call :meth:`decide`
(under one lock: rules are few and the decision is a few comparisons); the
test's thread, the control endpoint and the command add, list, wait on and
remove rules.

``broker.faults`` is this object: see :meth:`add` for the Python form.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass

from kafka_net.protocol.api_keys import ApiKey, api_name
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.faults.facts import request_facts
from kafka_net.server.faults.rules import (
    CHAOS, COORDINATOR_MOVED, UNAVAILABLE, RuleError, RuleState, Selection, rule_from_spec)
from kafka_net.server.faults.unavailable import broker_unavailable

log = logging.getLogger(__name__)


@dataclass
class Fired:
    """One rule firing on one request: what :mod:`.actions` applies."""

    state: RuleState
    selection: Selection
    timestamp_ns: int          # wall clock, as the capture's records
    action: object = None      # the rule's Action (a chaos rule's: what it drew)

    def __post_init__(self) -> None:
        if self.action is None:
            self.action = self.state.last_action or self.state.rule.action

    def note(self) -> dict:
        """The FAULT record's JSON (and the log line's fields)."""
        action = self.action
        code = action.error_code
        topics = [{"topic": name, "topic_id": topic_id, "partitions": list(parts)}
                  for (name, topic_id), parts in self.selection.items()]
        note = {"rule": self.state.id, "action": action.kind, "error_code": code,
                "chaos": self.state.rule.action.kind == "chaos",
                "error": _error_name(code), "when": action.when,
                "topic": topics[0]["topic"] if len(topics) == 1 else None,
                "partitions": topics[0]["partitions"] if len(topics) == 1 else [],
                "topics": topics}
        if action.delay_ms:
            note["delay_ms"] = action.delay_ms
        if action.throttle_ms:
            note["throttle_ms"] = action.throttle_ms
        return note


def _error_name(code: int | None) -> str | None:
    if code is None:
        return None
    try:
        return ErrorCode(code).name
    except ValueError:
        return None     # a code Kafka does not define: the rule may still inject it


class Fault:
    """A handle on one rule: its id and hits; ``wait``, ``remove``; a context
    manager that removes the rule when the block ends."""

    def __init__(self, registry: "FaultRegistry", rule_id: str) -> None:
        self.registry = registry
        self.id = rule_id

    @property
    def hits(self) -> int:
        return self.registry.hits(self.id)

    def wait(self, hits: int = 1, timeout: float = 10.0) -> bool:
        return self.registry.wait(self.id, hits, timeout)

    def remove(self) -> None:
        self.registry.remove(self.id)

    def __enter__(self) -> "Fault":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"Fault({self.id!r}, hits={self.hits})"


class FaultRegistry:
    def __init__(self, apis=None) -> None:
        self._apis = apis                # its fault_check is set while a rule is live
        self._lock = threading.Condition()
        self._rules: dict[str, RuleState] = {}
        self._next_id = 1
        self._final_hits: dict[str, int] = {}   # removed rules' hits, for their handles
        # The API keys some live rule may select (None: any), so that a request
        # of another API costs a set lookup, not its facts.
        self._api_filter: frozenset[int] | None = frozenset()
        self.server = None               # the KafkaServer (attach): for UNAVAILABLE
        self.recent: list[dict] = []     # the last fired faults, for list() and logs

    def attach(self, server) -> None:
        self.server = server

    # -- the Python API --------------------------------------------------------------

    def add(self, spec: dict | None = None, **options) -> Fault:
        """Add a rule; returns its :class:`Fault` handle.  Options as the command's,
        with Kafka's names::

            broker.faults.add(api="Produce", topic="orders", partitions=[0],
                              error="NOT_LEADER_OR_FOLLOWER", count=2)

        Selectors (ANDed): api, min_version, max_version, topic, topic_id,
        partitions, group, transactional_id, client_id, listener, connection.
        Budget: count (or once=True), nth, probability with seed; none: until
        removed.  One action: error (with when="after" for after the work),
        delay_ms, drop=True, close="before"|"after", throttle_ms,
        coordinator_moved=True, unavailable_ms; or chaos=True with probability
        and seed: each match meets, with that probability, a fault drawn from
        the seed (a reproducible schedule).  Raises RuleError (ValueError).
        """
        spec = {**(spec or {}), **options}
        rule = rule_from_spec(spec)
        if rule.action.kind == UNAVAILABLE and self.server is None:
            raise RuleError("unavailable_ms needs a started broker")
        with self._lock:
            rule_id = f"f{self._next_id}"
            self._next_id += 1
            state = self._rules[rule_id] = RuleState(rule_id, rule)
            if rule.action.kind == UNAVAILABLE:
                state.matched = state.hits = 1   # fires once, now, on no request
            self._armed()
            self._lock.notify_all()
        log.info("Fault %s added: %s", rule_id, json.dumps(rule.spec, default=str))
        if rule.action.kind == UNAVAILABLE:
            broker_unavailable(self.server, rule.action.duration_ms / 1000, rule_id)
        return Fault(self, rule_id)

    def chaos(self, seed: int, probability: float = 0.05, **selectors) -> Fault:
        """A seeded random fault schedule on the requests ``selectors`` match:
        the same seed and the same traffic meet the same faults."""
        return self.add(chaos=True, seed=seed, probability=probability, **selectors)

    def remove(self, rule_id: str | None = None) -> int:
        """Remove one rule, or every rule (None); how many went."""
        with self._lock:
            ids = list(self._rules) if rule_id is None else \
                [rule_id] if rule_id in self._rules else []
            for gone_id in ids:
                # A handle still says how often its rule fired, once removed.
                self._final_hits[gone_id] = self._rules.pop(gone_id).hits
            self._armed()
        return len(ids)

    clear = remove

    def list(self) -> list[dict]:
        with self._lock:
            return [s.to_json() for s in self._rules.values()]

    def hits(self, rule_id: str) -> int:
        with self._lock:
            state = self._rules.get(rule_id)
            return state.hits if state is not None else self._final_hits.get(rule_id, 0)

    def wait(self, rule_id: str, hits: int = 1, timeout: float = 10.0) -> bool:
        """Block until the rule fired ``hits`` times (True) or ``timeout`` s passed."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                state = self._rules.get(rule_id)
                if state is None:
                    raise KeyError(f"no fault {rule_id}")
                if state.hits >= hits:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)

    def group_state(self, group_id: str) -> str:
        """The group's state as ListGroups says it ("Stable", "Empty", ...), or
        "Dead" for a group the broker does not know."""
        for group in self._apis.group_coordinator.list_groups():
            if group.group_id == group_id:
                return group.state
        return "Dead"

    def wait_group(self, group_id: str, state: str, timeout: float = 10.0) -> bool:
        """Block until the group is in ``state`` (any case: "stable"), or ``timeout`` s
        passed.  Polled every 20 ms: group states change on the handler threads."""
        deadline = time.monotonic() + timeout
        while True:
            if self.group_state(group_id).lower() == state.lower():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def __enter__(self) -> "FaultRegistry":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    # -- the request path ------------------------------------------------------------

    def decide(self, request) -> Fired | None:
        """The first rule (in the order added) that fires on ``request``, if any."""
        header = request.header
        api_filter = self._api_filter
        if api_filter is not None and header.api_key not in api_filter:
            return None
        facts = request_facts(header.api_key, header.api_version, request.body,
                              header.client_id, request.listener_name,
                              request.connection_id, self._topic_name_of)
        with self._lock:
            if header.api_key == ApiKey.FIND_COORDINATOR:
                self._coordinator_looked_up(facts)
            for state in self._rules.values():
                selection = state.offer(facts)
                if selection is not None:
                    fired = Fired(state, selection, time.time_ns())
                    self._armed()
                    self._lock.notify_all()
                    break
            else:
                return None
        # A chaos schedule fires often in a soak: its firings at DEBUG.
        log.log(logging.DEBUG if state.rule.action.kind == CHAOS else logging.INFO,
                "Fault %s fired (%s) on %s %s", state.id, fired.action.kind,
                api_name(header.api_key), request.describe())
        return fired

    def _coordinator_looked_up(self, facts) -> None:
        # The client looked the coordinator up again: "moved" is over for its groups.
        for state in self._rules.values():
            if state.rule.action.kind == COORDINATOR_MOVED and state.hits:
                groups = state.rule.selectors.groups
                if groups is None or not groups.isdisjoint(facts.groups):
                    state.disarmed = True
        self._armed()

    def _topic_name_of(self, topic_id) -> str:
        apis = self._apis
        if apis is None:
            return ""
        topic = apis.metadata_cache.topic_by_id(topic_id)
        return topic.name if topic is not None else ""

    def _armed(self) -> None:
        """Point the request path at this registry while a rule can still fire."""
        live = [s.rule for s in self._rules.values() if not s.exhausted]
        keys: set[int] | None = set()
        for rule in live:
            if rule.selectors.apis is None:
                keys = None
                break
            keys |= rule.selectors.apis
            if rule.action.kind == COORDINATOR_MOVED:
                keys.add(ApiKey.FIND_COORDINATOR)
        self._api_filter = None if keys is None else frozenset(keys)
        if self._apis is not None:
            self._apis.fault_check = self if live else None
