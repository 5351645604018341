"""Fault rules, sans-IO: what a rule selects, how often it may fire, what it does.

A rule is three parts, each plain data:

* :class:`Selectors`, ANDed: every selector given must hold for a request to
  *match*.  A selector left out matches anything.  Topic, topic id and
  partition selectors also say *where* a partition error goes: a rule on
  ``topic=orders, partitions=[0]`` matches a Produce naming orders-0 (whatever
  else it names) and acts on orders-0 only.
* :class:`Budget`: how many matches it fires on.  ``nth`` skips the first
  ``nth - 1`` matches; then each match fires with ``probability`` (drawn from
  the rule's own ``random.Random(seed)``, so a seeded rule fires on the same
  requests of the same traffic every time) until ``count`` hits (``None``:
  until the rule is removed).
* :class:`Action`: what firing does (applied by :mod:`.actions`).

:class:`RuleState` holds one rule's counters; :meth:`RuleState.offer` is the
whole decision, and the property test drives it with random rules and random
traffic.  The registry (:mod:`.registry`) serialises calls to it.

The same rule is written the same way from Python, the control endpoint's
JSON and ``kafka-net fault`` (:func:`rule_from_spec`), with Kafka's API and
error names.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode

# The APIs whose errors belong to partitions: a rule on them with an error
# sets it on the selected partitions only (the others are served).
PARTITION_APIS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                            ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.SHARE_FETCH,
                            ApiKey.SHARE_ACKNOWLEDGE})

# Action kinds.
ERROR, DELAY, DROP, CLOSE, THROTTLE = "error", "delay", "drop", "close", "throttle"
COORDINATOR_MOVED, UNAVAILABLE, CHAOS = "coordinator_moved", "unavailable", "chaos"
KINDS = (ERROR, DELAY, DROP, CLOSE, THROTTLE, COORDINATOR_MOVED, UNAVAILABLE, CHAOS)
BEFORE, AFTER = "before", "after"   # the handler's work (error, drop, close)

# A topic as a request names it: (name, topic id as text); either may be "".
TopicRef = tuple[str, str]


@dataclass(frozen=True)
class Selectors:
    """Which requests a fault rule matches: APIs, versions, topics, groups and more."""

    apis: frozenset[int] | None = None
    min_version: int | None = None
    max_version: int | None = None
    topics: frozenset[str] | None = None
    topic_ids: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    groups: frozenset[str] | None = None
    transactional_ids: frozenset[str] | None = None
    client_ids: frozenset[str] | None = None
    listeners: frozenset[str] | None = None
    connections: frozenset[str] | None = None

    @property
    def locates(self) -> bool:
        """Whether the rule names topics or partitions (and so acts on those only)."""
        return not (self.topics is None and self.topic_ids is None and self.partitions is None)


@dataclass(frozen=True)
class Budget:
    """How often a fault rule fires: a count, a probability, from the nth match."""

    count: int | None = None          # None: until removed
    probability: float = 1.0
    seed: int | None = None
    nth: int = 1                      # the first match that may fire


@dataclass(frozen=True)
class Action:
    """What a fault rule does to a matched request: an error, a delay, a throttle, a
    close."""

    kind: str
    error_code: int | None = None
    when: str = BEFORE
    delay_ms: int = 0
    throttle_ms: int = 0
    duration_ms: int = 0              # UNAVAILABLE: how long the broker is away
    close: str = AFTER                # CLOSE: before or after the answer is sent


@dataclass(frozen=True)
class FaultRule:
    """A fault: which requests, how often, what happens."""

    selectors: Selectors
    budget: Budget
    action: Action
    spec: dict = field(default_factory=dict, compare=False)   # as given, for list()


@dataclass
class RequestFacts:
    """What the selectors look at in one request (:mod:`.facts` builds it)."""

    api_key: int
    api_version: int
    client_id: str = ""
    listener: str = ""
    connection: str = ""
    # Each topic the request names, with the partitions it names there (empty
    # for an API that names topics only, as CreateTopics).
    partitions: dict[TopicRef, tuple[int, ...]] = field(default_factory=dict)
    groups: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()


# Where a firing rule acts: topic -> the selected partitions.  Empty: the
# rule names no topic or partition, so it acts on the whole request.
Selection = dict[TopicRef, tuple[int, ...]]


def select(sel: Selectors, facts: RequestFacts) -> Selection | None:
    """The request's part the rule acts on, or None if a selector does not hold."""
    if sel.apis is not None and facts.api_key not in sel.apis:
        return None
    if sel.min_version is not None and facts.api_version < sel.min_version:
        return None
    if sel.max_version is not None and facts.api_version > sel.max_version:
        return None
    for wanted, have in ((sel.client_ids, (facts.client_id,)),
                         (sel.listeners, (facts.listener,)),
                         (sel.connections, (facts.connection,)),
                         (sel.groups, facts.groups),
                         (sel.transactional_ids, facts.transactional_ids)):
        if wanted is not None and wanted.isdisjoint(have):
            return None
    if not sel.locates:
        return {}
    chosen = {}
    for ref, parts in facts.partitions.items():
        if not _topic_selected(sel, ref):
            continue
        if sel.partitions is None:
            chosen[ref] = parts
        else:
            kept = tuple(p for p in parts if p in sel.partitions)
            if kept:
                chosen[ref] = kept
    return chosen or None


def _topic_selected(sel: Selectors, ref: TopicRef) -> bool:
    if sel.topics is None and sel.topic_ids is None:
        return True
    return (sel.topics is not None and ref[0] in sel.topics) or \
        (sel.topic_ids is not None and ref[1] in sel.topic_ids)


class RuleState:
    """One rule and its counters; not thread-safe (the registry locks)."""

    def __init__(self, rule_id: str, rule: FaultRule) -> None:
        self.id = rule_id
        self.rule = rule
        self.matched = 0
        self.hits = 0
        self.disarmed = False          # COORDINATOR_MOVED after the client's FindCoordinator
        self.last_action: Action | None = None   # CHAOS: what the last firing drew
        self._rng = random.Random(rule.budget.seed)

    @property
    def exhausted(self) -> bool:
        count = self.rule.budget.count
        return self.disarmed or (count is not None and self.hits >= count)

    def offer(self, facts: RequestFacts) -> Selection | None:
        """Count a match and decide whether it fires: the Selection it acts on, or None."""
        if self.exhausted:
            return None
        chosen = select(self.rule.selectors, facts)
        if chosen is None:
            return None
        self.matched += 1
        budget = self.rule.budget
        if self.matched < budget.nth:
            return None
        if budget.probability < 1.0 and self._rng.random() >= budget.probability:
            return None
        self.hits += 1
        if self.rule.action.kind == CHAOS:
            self.last_action = chaos_action(self._rng, facts)
        return chosen

    def to_json(self) -> dict:
        return {"id": self.id, "rule": self.rule.spec, "hits": self.hits,
                "matched": self.matched, "active": not self.exhausted}


# -- chaos: a seeded random schedule of faults -------------------------------------------

_GROUP_APIS = frozenset({ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP,
                         ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                         ApiKey.TXN_OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT})


def chaos_action(rng: random.Random, facts: RequestFacts) -> Action:
    """One fault a real broker's bad day could show for this request, drawn from
    ``rng`` (the rule's own, seeded: the same traffic gets the same schedule).
    Only what a client must survive: retriable errors, slow, lost and cut answers."""
    menu = [Action(DELAY, delay_ms=rng.choice((50, 200, 1000))),
            Action(CLOSE, close=BEFORE, when=AFTER)]
    if facts.api_key in PARTITION_APIS:
        menu.append(Action(ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER))
        if facts.api_key == ApiKey.PRODUCE:
            menu.append(Action(ERROR, ErrorCode.REQUEST_TIMED_OUT, AFTER))
    elif facts.api_key in _GROUP_APIS:
        menu.append(Action(ERROR, ErrorCode.NOT_COORDINATOR))
        menu.append(Action(ERROR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    return rng.choice(menu)


# -- from a spec (Python keywords, the endpoint's JSON, the command's options) ----------

_SET_KEYS = {"topic": "topics", "topic_id": "topic_ids", "partitions": "partitions",
             "group": "groups", "transactional_id": "transactional_ids",
             "client_id": "client_ids", "listener": "listeners", "connection": "connections"}
_ACTION_KEYS = ("error", "delay_ms", "drop", "close", "throttle_ms", "coordinator_moved",
                "unavailable_ms", "chaos")
SPEC_KEYS = frozenset({"api", "min_version", "max_version", "count", "once", "probability",
                       "seed", "nth", "when", *_SET_KEYS, *_ACTION_KEYS})


class RuleError(ValueError):
    """A spec that does not make a rule (the message says why)."""


def rule_from_spec(spec: dict) -> FaultRule:
    """A rule from its spec: ``{"api": "Produce", "topic": "t", "partitions": [0],
    "error": "NOT_LEADER_OR_FOLLOWER", "count": 2}``.  Raises RuleError."""
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise RuleError(f"unknown fault option(s): {', '.join(sorted(unknown))}")
    clean = {k: v for k, v in spec.items() if v is not None and v is not False}
    return FaultRule(_selectors(clean), _budget(clean), _action(clean), clean)


def _selectors(spec: dict) -> Selectors:
    values = {}
    for key, attr in _SET_KEYS.items():
        if key in spec:
            items = spec[key] if isinstance(spec[key], (list, tuple, set, frozenset)) \
                else [spec[key]]
            if key == "partitions":
                items = [_int(key, p, 0) for p in items]
            else:
                items = [str(i) for i in items]
            values[attr] = frozenset(items)
    if "api" in spec:
        apis = spec["api"] if isinstance(spec["api"], (list, tuple)) else [spec["api"]]
        values["apis"] = frozenset(api_key_of(a) for a in apis)
    for key in ("min_version", "max_version"):
        if key in spec:
            values[key] = _int(key, spec[key], 0)
    return Selectors(**values)


def _budget(spec: dict) -> Budget:
    count = 1 if spec.get("once") or "unavailable_ms" in spec else spec.get("count")
    if count is not None:
        count = _int("count", count, 1)
    probability = float(spec.get("probability", 1.0))
    if not 0.0 < probability <= 1.0:
        raise RuleError(f"probability must be in (0, 1], not {probability}")
    seed = spec.get("seed")
    return Budget(count, probability, None if seed is None else _int("seed", seed, None),
                  _int("nth", spec.get("nth", 1), 1))


def _action(spec: dict) -> Action:
    given = [k for k in _ACTION_KEYS if k in spec]
    if len(given) != 1:
        raise RuleError("give exactly one action: " + ", ".join(_ACTION_KEYS)
                        + (f" (got {', '.join(given)})" if given else ""))
    key = given[0]
    # An error comes before the work unless asked; a dropped or cut answer after it.
    when = spec.get("when", AFTER if key in ("drop", "close") else BEFORE)
    if when not in (BEFORE, AFTER):
        raise RuleError(f"when must be before or after, not {when!r}")
    if key == "error":
        return Action(ERROR, error_code_of(spec["error"]), when)
    if key == "delay_ms":
        return Action(DELAY, delay_ms=_int(key, spec[key], 0))
    if key == "throttle_ms":
        return Action(THROTTLE, throttle_ms=_int(key, spec[key], 1))
    if key == "drop":
        return Action(DROP, when=when)
    if key == "close":
        close = spec["close"] if spec["close"] in (BEFORE, AFTER) else AFTER
        if close == AFTER and when == BEFORE:
            raise RuleError("close after the answer needs the work done (when=after)")
        return Action(CLOSE, when=when, close=close)
    if key == "coordinator_moved":
        return Action(COORDINATOR_MOVED, ErrorCode.NOT_COORDINATOR)
    if key == "chaos":
        if spec.get("seed") is None or float(spec.get("probability", 1.0)) >= 1.0:
            raise RuleError("chaos needs a seed and a probability below 1 "
                            "(the share of matching requests that meet a fault)")
        return Action(CHAOS)
    return Action(UNAVAILABLE, duration_ms=_int(key, spec[key], 1))


def api_key_of(value) -> int:
    """An API key from its number, Kafka's name ("OffsetCommit") or the enum's name."""
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value)
    wanted = str(value).replace("_", "").lower()
    for key in ApiKey:
        if key.title.lower() == wanted:
            return int(key)
    raise RuleError(f"unknown API {value!r} (use Kafka's names, e.g. Produce, OffsetCommit)")


def error_code_of(value) -> int:
    """An error code from its number or Kafka's name (NOT_LEADER_OR_FOLLOWER)."""
    if isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit()):
        return int(value)
    try:
        return int(ErrorCode[str(value).upper()])
    except KeyError:
        raise RuleError(f"unknown error {value!r} (use Kafka's names, "
                        f"e.g. NOT_LEADER_OR_FOLLOWER)") from None


def _int(key: str, value, low: int | None) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RuleError(f"{key} must be an integer, not {value!r}") from None
    if low is not None and number < low:
        raise RuleError(f"{key} must be at least {low}, not {number}")
    return number
