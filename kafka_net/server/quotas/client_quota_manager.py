"""ClientQuotaManager: per-client rates, quota look-up, throttle times (Kafka's
``ClientQuotaManager`` with its ``DefaultQuotaCallback``; KIP-13, KIP-55).

Quotas are set on entities: a user, a client-id, or both, where either may be
the *default* entity (``<default>`` in Kafka's tools; :data:`DEFAULT` here).
A connection (user U, client-id C) is governed by the most specific quota
that matches it, in this order::

    1. user U,       client-id C          5. default user, default client-id
    2. user U,       default client-id    6. default user
    3. user U                             7. client-id C
    4. default user, client-id C          8. default client-id

Usage is measured by a sensor per *metric tags* (user tag, client-id tag).
The tags say which clients share a rate: with client-id quotas only, every
user of client-id C shares one (user tag ""); with user quotas only, every
client of user U shares one.  The quota of a sensor is looked up from its
tags, so the tags and the look-up together implement the order above.

Quotas off costs one attribute test: until some quota of this manager's type
has been set, nothing is recorded (Kafka's ``quotasEnabled``; as in Kafka it
stays on after the quotas are removed again, until restart).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Callable

from kafka_net.log_safety import escape
from kafka_net.rate import Avg, Rate, throttle_time_ms
from kafka_net.server.quotas.throttled_channel import (
    ThrottleCallback, ThrottledChannel, ThrottledChannelReaper)

log = logging.getLogger(__name__)

LONG_MAX = float(2**63 - 1)          # no quota: Kafka's Long.MaxValue bound
INACTIVE_SENSOR_EXPIRATION_S = 3600   # ClientQuotaManager.InactiveSensorExpirationTimeSeconds
_EXPIRY_CHECK_MS = 30_000             # Kafka's metrics expiry thread runs every 30 s
# Kafka's throttle-time sensor uses the broker's default metric config.
_METRICS_NUM_SAMPLES, _METRICS_SAMPLE_WINDOW_MS = 2, 30_000


class _Default:
    def __repr__(self) -> str:
        return "<default>"


DEFAULT = _Default()
"""The default user or default client-id entity (a null name on the wire)."""

# QuotaTypes: which levels have ever had a quota (bit set).
NO_QUOTAS, CLIENT_ID_QUOTA, USER_QUOTA, USER_CLIENT_ID_QUOTA = 0, 1, 2, 4

QuotaEntity = tuple  # (user, client_id): a name, DEFAULT, or None (not part of the entity)


class ClientSensors:
    """The quota sensor (a rate with its bound) and the throttle-time sensor of one
    set of metric tags."""

    __slots__ = ("tags", "rate", "bound", "throttle_time", "last_record_ms")

    def __init__(self, tags: tuple[str, str], rate: Rate, bound: float, now_ms: int) -> None:
        self.tags, self.rate, self.bound = tags, rate, bound
        self.throttle_time = Avg(_METRICS_NUM_SAMPLES, _METRICS_SAMPLE_WINDOW_MS)
        self.last_record_ms = now_ms


class ClientQuotaManager:
    """One quota type: ``Produce`` (bytes in), ``Fetch`` (bytes out) or ``Request``
    (handler time, see :class:`ClientRequestQuotaManager`)."""

    metric_name = "byte-rate"

    def __init__(self, quota_type: str, num_samples: int, window_size_s: int,
                 reaper: ThrottledChannelReaper | None = None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self.quota_type = quota_type
        self.num_samples = num_samples
        self.window_ms = window_size_s * 1000
        self.reaper = reaper
        self._clock_ms = clock_ms or (lambda: time.monotonic_ns() // 1_000_000)
        self._lock = threading.Lock()
        self._quotas: dict[QuotaEntity, float] = {}
        self._sensors: dict[tuple[str, str], ClientSensors] = {}
        self._types_enabled = NO_QUOTAS
        self._next_expiry_check_ms = 0
        self.quotas_enabled = False   # plain attribute: the hot path reads only this

    # -- recording -----------------------------------------------------------------

    def maybe_record_and_get_throttle_time_ms(self, user: str, client_id: str,
                                              value: float, now_ms: int) -> int:
        if not self.quotas_enabled:
            return 0
        return self.record_and_get_throttle_time_ms(user, client_id, value, now_ms)

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float,
                                        now_ms: int) -> int:
        """Record ``value``; if the rate is now over quota, the time (ms) it takes to
        come back to the quota if nothing more is recorded."""
        with self._lock:
            sensors = self._sensors_for(user, client_id, now_ms)
            sensors.rate.record(value, now_ms)
            sensors.last_record_ms = now_ms
            observed = sensors.rate.measure(now_ms)
            if observed <= sensors.bound:
                return 0
            delay = self._throttle_time(observed, sensors.bound,
                                        sensors.rate.window_size_ms(now_ms))
        log.debug("Quota violated for sensor (%s-%s:%s). Delay time: (%d)",
                  self.quota_type, escape(sensors.tags[0]), escape(sensors.tags[1]), delay)
        return delay

    def _throttle_time(self, observed: float, bound: float, window_ms: int) -> int:
        return throttle_time_ms(observed, bound, window_ms)

    def record_no_throttle(self, user: str, client_id: str, value: float) -> None:
        now_ms = self._clock_ms()
        with self._lock:
            self._sensors_for(user, client_id, now_ms).rate.record(value, now_ms)

    def unrecord_quota_sensor(self, user: str, client_id: str, value: float,
                              now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch returns no data)."""
        with self._lock:
            self._sensors_for(user, client_id, now_ms).rate.record(-value, now_ms)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """The most that can be recorded at once without certain throttling (Kafka's
        ``getMaxValueInQuotaWindow``; caps a consumer's fetch size)."""
        if not self.quotas_enabled:
            return math.inf
        with self._lock:
            tags = self._metric_tags(user, client_id)
            bound = self._quota_limit(tags)
        if bound is None:
            return math.inf
        return bound * (self.num_samples - 1) * self.window_ms / 1000

    # -- throttling ----------------------------------------------------------------

    def throttle(self, user: str, client_id: str, callback: ThrottleCallback,
                 throttle_time_ms: int) -> None:
        """Mute the channel for ``throttle_time_ms`` (starts now; the reaper ends it)."""
        if throttle_time_ms <= 0:
            return
        now_ms = self._clock_ms()
        with self._lock:
            self._sensors_for(user, client_id, now_ms).throttle_time.record(
                throttle_time_ms, now_ms)
        now_ns = self.reaper.clock_ns() if self.reaper is not None else time.monotonic_ns()
        channel = ThrottledChannel(throttle_time_ms, callback, now_ns)
        if self.reaper is not None:
            self.reaper.add(channel)

    # -- quotas --------------------------------------------------------------------

    def update_quota(self, user, client_id, quota: float | None) -> None:
        """Set (or with None remove) the quota of an entity; ``user``/``client_id``
        are a name, :data:`DEFAULT`, or None when not part of the entity."""
        entity = (user, client_id)
        with self._lock:
            if user is not None:
                self._types_enabled |= USER_CLIENT_ID_QUOTA if client_id is not None \
                    else USER_QUOTA
            elif client_id is not None:
                self._types_enabled |= CLIENT_ID_QUOTA
            if quota is None:
                self._quotas.pop(entity, None)
                log.info("Removing %s quota for %s", self.quota_type, _describe(entity))
            else:
                self._quotas[entity] = float(quota)
                log.info("Changing %s quota for %s to %s", self.quota_type,
                         _describe(entity), quota)
            self.quotas_enabled = self._types_enabled != NO_QUOTAS
            # Kafka updates only the one sensor when it can; walking every sensor is
            # as correct and quota changes are rare.
            for sensors in self._sensors.values():
                sensors.bound = self._bound(sensors.tags)

    def quota(self, user: str, client_id: str) -> float:
        """The quota that applies to (user, client_id) (Kafka's test helper)."""
        with self._lock:
            return self._bound(self._metric_tags(user, client_id))

    # -- sensors and tags ----------------------------------------------------------

    def _sensors_for(self, user: str, client_id: str, now_ms: int) -> ClientSensors:
        tags = self._metric_tags(user, client_id)
        sensors = self._sensors.get(tags)
        if sensors is None:
            self._expire_sensors(now_ms)
            sensors = self._sensors[tags] = ClientSensors(
                tags, Rate(self.num_samples, self.window_ms), self._bound(tags), now_ms)
        return sensors

    def _expire_sensors(self, now_ms: int) -> None:
        if now_ms < self._next_expiry_check_ms:
            return
        self._next_expiry_check_ms = now_ms + _EXPIRY_CHECK_MS
        horizon = now_ms - INACTIVE_SENSOR_EXPIRATION_S * 1000
        for tags in [t for t, s in self._sensors.items() if s.last_record_ms < horizon]:
            del self._sensors[tags]

    def _metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """DefaultQuotaCallback.quotaMetricTags: which sensor (user tag, client-id tag)."""
        enabled = self._types_enabled
        if enabled in (NO_QUOTAS, CLIENT_ID_QUOTA):
            return "", client_id
        if enabled == USER_QUOTA:
            return user, ""
        if enabled == USER_CLIENT_ID_QUOTA:
            return user, client_id
        quotas = self._quotas
        for entity, tags in (((user, client_id), (user, client_id)),
                             ((user, DEFAULT), (user, client_id)),
                             ((user, None), (user, "")),
                             ((DEFAULT, client_id), (user, client_id)),
                             ((DEFAULT, DEFAULT), (user, client_id)),
                             ((DEFAULT, None), (user, ""))):
            if entity in quotas:
                return tags
        return "", client_id

    def _quota_limit(self, tags: tuple[str, str]) -> float | None:
        """DefaultQuotaCallback.quotaLimit: the quota for a sensor's tags, if any."""
        user, client_id = tags
        if user and client_id:
            candidates = ((user, client_id), (user, DEFAULT), (DEFAULT, client_id),
                          (DEFAULT, DEFAULT))
        elif user:
            candidates = ((user, None), (DEFAULT, None))
        elif client_id:
            candidates = ((None, client_id), (None, DEFAULT))
        else:
            return None
        for entity in candidates:
            quota = self._quotas.get(entity)
            if quota is not None:
                return quota
        return None

    def _bound(self, tags: tuple[str, str]) -> float:
        limit = self._quota_limit(tags)
        return LONG_MAX if limit is None else limit

    # -- metrics -------------------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        """``kafka.server:type=<QuotaType>,user=<u>,client-id=<c>`` byte-rate (or
        request-time) and throttle-time, per sensor, as Kafka names them."""
        now_ms = self._clock_ms()
        out = {}
        with self._lock:
            for (user, client_id), s in self._sensors.items():
                # Client strings: the daemon logs these names (SIGUSR1).
                prefix = (f"kafka.server:type={self.quota_type},user={escape(user)},"
                          f"client-id={escape(client_id)}")
                out[f"{prefix},name={self.metric_name}"] = s.rate.measure(now_ms)
                out[f"{prefix},name=throttle-time"] = s.throttle_time.measure(now_ms)
        return out


class ClientRequestQuotaManager(ClientQuotaManager):
    """Request quotas (KIP-124): the share of handler-thread time a client may use,
    as a percentage of one thread per second (``request_percentage``); the
    throttle is capped at one quota window."""

    metric_name = "request-time"
    NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1e9

    def __init__(self, num_samples: int, window_size_s: int, reaper=None,
                 clock_ms=None) -> None:
        super().__init__("Request", num_samples, window_size_s, reaper, clock_ms)
        self.max_throttle_time_ms = window_size_s * 1000
        self.exempt = Rate(num_samples, self.window_ms)

    def maybe_record_thread_time(self, user: str, client_id: str, thread_time_ns: int,
                                 now_ms: int) -> int:
        if not self.quotas_enabled:
            return 0
        return self.record_and_get_throttle_time_ms(
            user, client_id, thread_time_ns * self.NANOS_TO_PERCENTAGE_PER_SECOND, now_ms)

    def maybe_record_exempt(self, thread_time_ns: int, now_ms: int) -> None:
        """Time spent on requests exempt from the quota (Kafka's exempt-request-time)."""
        if self.quotas_enabled:
            with self._lock:
                self.exempt.record(thread_time_ns * self.NANOS_TO_PERCENTAGE_PER_SECOND, now_ms)

    def _throttle_time(self, observed: float, bound: float, window_ms: int) -> int:
        return min(throttle_time_ms(observed, bound, window_ms), self.max_throttle_time_ms)


def _describe(entity: QuotaEntity) -> str:
    """Kafka's KafkaQuotaEntity.toString: "user alice client-id app", "default user"."""
    user, client_id = entity
    parts = []
    if user is not None:
        parts.append("default user" if user is DEFAULT else f"user {escape(user)}")
    if client_id is not None:
        parts.append("default client-id" if client_id is DEFAULT
                     else f"client-id {escape(client_id)}")
    return " ".join(parts)
