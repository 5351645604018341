"""ConnectionQuotas: how many connections the broker takes, from whom, and how fast.

Kafka's ``SocketServer.ConnectionQuotas``.  The Acceptor calls :meth:`inc`
for every accepted socket before handing it on; whoever closes a counted
socket calls :meth:`dec` exactly once.  The limits, in the order ``inc``
applies them:

1. **Broker and listener limits wait.**  ``max.connection.creation.rate``
   (broker-wide and per listener) records the connection and, if the rate is
   over its bound, makes the Acceptor wait the throttle time (at most
   ``quota.window.size.seconds``).  ``max.connections`` (broker-wide) and
   ``listener.name.<l>.max.connections`` make it wait until a slot frees.
   Meanwhile new connections pile up in the kernel's listen backlog.  The
   time waited is reported to the caller (AcceptorBlockedPercent).
2. **Per-IP creation rate throttles.**  With a ``connection_creation_rate``
   client quota on the IP (or the default IP entity), a connection over the
   rate is taken back out of every rate and :class:`ConnectionThrottledError`
   says how long to hold the socket before closing it (the Acceptor's
   delayed close).  Such a connection is never counted.
3. **Per-IP count rejects.**  The connection is counted first; if the IP
   already had ``max.connections.per.ip`` (or its override) connections,
   :class:`TooManyConnectionsError` follows and the caller closes the socket
   and calls :meth:`dec`.

The protected listener: with more than one listener, the inter-broker
listener (``inter.broker.listener.name``) ignores the broker-wide count and
rate, so brokers can always reach each other; its own listener limits still
apply.  Processors close connections of other listeners while the total is
above ``max.connections`` (:meth:`max_connections_exceeded`).

One lock (a Condition) guards every count; :meth:`dec` and
:meth:`wake_waiters` wake an Acceptor waiting for a slot.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import threading
import time
from typing import Callable

from kafka_net.config import INT_MAX, ConfigError
from kafka_net.rate import Avg, Rate

log = logging.getLogger(__name__)

IP_CONNECTION_RATE_DEFAULT = float(INT_MAX)   # QuotaConfig.IP_CONNECTION_RATE_DEFAULT
IP_SENSOR_EXPIRY_MS = 3600 * 1000             # ConnectionQuotaEntity: idle IP sensors go after 1 h
WAIT_SLICE_S = 0.1   # longest single wait, so a stopping Acceptor or a test clock is noticed


class TooManyConnectionsError(Exception):
    def __init__(self, ip: str, count: int) -> None:
        super().__init__(f"Too many connections from {ip} (maximum = {count})")
        self.ip, self.count = ip, count


class ConnectionThrottledError(Exception):
    def __init__(self, ip: str, start_throttle_time_ms: int, throttle_time_ms: int) -> None:
        super().__init__(f"{ip} throttled for {throttle_time_ms} ms")
        self.ip = ip
        self.start_throttle_time_ms = start_throttle_time_ms
        self.throttle_time_ms = throttle_time_ms


class WaitInterrupted(Exception):
    """The Acceptor stopped while :meth:`ConnectionQuotas.inc` waited; nothing was counted."""


def normalize_ip(address: str) -> str:
    """One spelling per address: an IPv4-mapped IPv6 address is its IPv4 address
    (Java's InetAddress does the same), IPv6 is compressed."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def resolve_host(host: str) -> str:
    """Kafka's InetAddress.getByName: an IP as it is, a host name's first address
    (IPv4 first, as Java prefers by default)."""
    try:
        return normalize_ip(host)
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    v4 = [i for i in infos if i[0] == socket.AF_INET]
    return normalize_ip((v4 or infos)[0][4][0])


def _system_clock_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class _ListenerQuota:
    """Kafka's ListenerConnectionQuota: one listener's count limit and rate, and
    the averages of the non-zero throttle times its connections got (Kafka's
    default metric config: 2 samples of 30 s)."""

    def __init__(self, max_connections: int, rate: Rate) -> None:
        self.max_connections = max_connections
        self.rate = rate
        self.throttle_time = Avg(2, 30_000)      # connection-accept-throttle-time
        self.ip_throttle_time = Avg(2, 30_000)   # ip-connection-accept-throttle-time


class ConnectionQuotas:
    def __init__(self, config, clock_ms: Callable[[], int] = _system_clock_ms) -> None:
        self.clock_ms = clock_ms
        self._config = config
        self._cond = threading.Condition()
        self._default_max_per_ip = config.max_connections_per_ip
        self._max_per_ip_overrides = _resolve_overrides(config.max_connections_per_ip_overrides)
        self._broker_max_connections = config.max_connections
        self._inter_broker_listener = config.inter_broker_listener()
        self._max_throttle_ms = config.quota_window_size_seconds * 1000
        self._counts: dict[str, int] = {}
        self._listener_counts: dict[str, int] = {}
        self._listeners: dict[str, _ListenerQuota] = {}
        self.total_count = 0
        self.waiting = 0   # Acceptors waiting in inc (tests synchronise on it)
        self._broker_rate = self._new_rate(config.max_connection_creation_rate)
        self._default_ip_rate = IP_CONNECTION_RATE_DEFAULT
        self._ip_rate_overrides: dict[str, float] = {}
        self._ip_rates: dict[str, Rate] = {}
        self._next_ip_expiry_ms = 0

    def _new_rate(self, bound: float) -> Rate:
        return Rate(self._config.quota_window_num,
                    self._config.quota_window_size_seconds * 1000, bound)

    def add_listener(self, listener: str) -> None:
        """Kafka's addListener: the listener's limits, falling back to the broker's."""
        max_connections, max_rate = self._config.listener_connection_limits(listener)
        with self._cond:
            if listener not in self._listeners:
                self._listeners[listener] = _ListenerQuota(max_connections,
                                                           self._new_rate(max_rate))
                self._listener_counts[listener] = 0
            self._cond.notify_all()

    # -- dynamic broker config (Kafka's SocketServer.reconfigure) ----------------------

    def reconfigure(self, values: dict) -> None:
        """Apply the broker-wide connection quotas in effect after a dynamic config
        change (AlterConfigs on the BROKER resource): ``values`` maps
        max.connections, max.connections.per.ip, max.connections.per.ip.overrides
        and max.connection.creation.rate to parsed values.  Connections already
        open stay; new ones meet the new limits, and an Acceptor waiting for a slot
        re-checks at once (a lower max.connections also makes the Processors close
        connections until the count is under it, as Kafka's do)."""
        overrides = _resolve_overrides(values["max.connections.per.ip.overrides"])
        with self._cond:
            self._broker_max_connections = values["max.connections"]
            self._default_max_per_ip = values["max.connections.per.ip"]
            self._max_per_ip_overrides = overrides
            self._broker_rate.bound = float(values["max.connection.creation.rate"])
            # A listener without its own listener.name.<l>. limits follows the broker's
            # (Kafka reconfigures each listener with valuesWithPrefixOverride).
            own_max = dict(self._config.listener_max_connections)
            own_rate = dict(self._config.listener_max_connection_creation_rate)
            for listener, quota in self._listeners.items():
                if listener not in own_max:
                    quota.max_connections = values["max.connections"]
                if listener not in own_rate:
                    quota.rate.bound = float(values["max.connection.creation.rate"])
            self._cond.notify_all()

    # -- inc / dec ------------------------------------------------------------------------

    def inc(self, listener: str, ip: str,
            on_blocked_ns: Callable[[int], None] | None = None,
            running: Callable[[], bool] = lambda: True) -> None:
        """Count a new connection from ``ip`` on ``listener``, waiting for a slot
        or a rate throttle first.  Raises TooManyConnectionsError (counted: the
        caller closes and calls :meth:`dec`), ConnectionThrottledError or
        WaitInterrupted (not counted)."""
        with self._cond:
            self._wait_for_connection_slot(listener, on_blocked_ns, running)
            self._record_ip_connection_maybe_throttle(listener, ip)
            count = self._counts.get(ip, 0)
            self._counts[ip] = count + 1
            self.total_count += 1
            self._listener_counts[listener] += 1
            limit = self._max_per_ip_overrides.get(ip, self._default_max_per_ip)
            if count >= limit:
                raise TooManyConnectionsError(ip, limit)

    def dec(self, listener: str, ip: str) -> None:
        with self._cond:
            count = self._counts.get(ip)
            if count is None:
                raise ValueError("Attempted to decrease connection count for address with "
                                 f"no connections, address: {ip}")
            if count == 1:
                del self._counts[ip]
            else:
                self._counts[ip] = count - 1
            if self.total_count <= 0:
                log.error("Attempted to decrease total connection count for broker with "
                          "no connections")
            self.total_count -= 1
            listener_count = self._listener_counts.get(listener)
            if listener_count == 0:
                log.error("Attempted to decrease connection count for listener %s with "
                          "no connections", listener)
            elif listener_count is not None:
                self._listener_counts[listener] = listener_count - 1
            self._cond.notify_all()   # an Acceptor may be waiting for this slot

    def wake_waiters(self) -> None:
        """Wake Acceptors waiting in :meth:`inc` (they re-check ``running``)."""
        with self._cond:
            self._cond.notify_all()

    # -- counts (metrics and tests) ------------------------------------------------------

    def get(self, ip: str) -> int:
        """Connections counted for ``ip`` (Kafka's ``get``)."""
        with self._cond:
            return self._counts.get(ip, 0)

    def listener_count(self, listener: str) -> int:
        with self._cond:
            return self._listener_counts.get(listener, 0)

    def max_connections_exceeded(self, listener: str) -> bool:
        """Checked by every Processor turn: close one connection if true."""
        return (self.total_count > self._broker_max_connections
                and not self._protected_listener(listener))

    def broker_accept_rate(self) -> float:
        """``broker-connection-accept-rate``."""
        with self._cond:
            return self._broker_rate.measure(self.clock_ms())

    def listener_accept_rate(self, listener: str) -> float:
        """``connection-accept-rate`` of ``listener``."""
        with self._cond:
            return self._listeners[listener].rate.measure(self.clock_ms())

    def listener_throttle_times(self, listener: str) -> tuple[float, float]:
        """(``connection-accept-throttle-time``, ``ip-connection-accept-throttle-time``)
        of ``listener``: mean non-zero throttle ms, NaN when there was none."""
        with self._cond:
            quota, now_ms = self._listeners[listener], self.clock_ms()
            return quota.throttle_time.measure(now_ms), quota.ip_throttle_time.measure(now_ms)

    def ip_accept_rate(self, ip: str) -> float | None:
        """``connection-accept-rate`` of ``ip``; None without an IP rate quota."""
        with self._cond:
            rate = self._ip_rates.get(ip)
            return None if rate is None else rate.measure(self.clock_ms())

    # -- the IP connection-rate quota (client-quota entity ``ip``) ------------------------

    def update_ip_connection_rate_quota(self, ip: str | None, rate: float | None) -> None:
        """Set (``rate``) or remove (None) the ``connection_creation_rate`` quota of
        ``ip``, or of the default IP entity when ``ip`` is None.  Raises ValueError
        for an ``ip`` that is not an IP address."""
        with self._cond:
            if ip is not None:
                address = normalize_ip(ip)
                if rate is None:
                    log.info("Removing max connection rate override for %s", address)
                    self._ip_rate_overrides.pop(address, None)
                else:
                    log.info("Updating max connection rate override for %s to %s",
                             address, rate)
                    self._ip_rate_overrides[address] = float(rate)
                addresses = [address]
            else:
                self._default_ip_rate = (IP_CONNECTION_RATE_DEFAULT if rate is None
                                         else float(rate))
                log.info("Updated default max IP connection rate to %s",
                         self._default_ip_rate)
                addresses = list(self._ip_rates)
            for address in addresses:
                sensor = self._ip_rates.get(address)
                if sensor is not None:
                    sensor.bound = self.connection_rate_for_ip(address)

    def ip_connection_rate_quotas(self) -> dict[str | None, float]:
        """The IP rate quotas set: per IP, and under None the default entity's."""
        with self._cond:
            quotas: dict[str | None, float] = dict(self._ip_rate_overrides)
            if self._default_ip_rate != IP_CONNECTION_RATE_DEFAULT:
                quotas[None] = self._default_ip_rate
            return quotas

    def connection_rate_for_ip(self, ip: str) -> float:
        """The rate enforced for ``ip``: Kafka applies the quota's value as an Int
        (``toInt``), so 2.5 connections/s is enforced as 2 and reported as 2.5."""
        return float(_java_to_int(self._ip_rate_overrides.get(ip, self._default_ip_rate)))

    # -- inside inc, under the lock -------------------------------------------------------

    def _wait_for_connection_slot(self, listener, on_blocked_ns, running) -> None:
        start_ms = self.clock_ms()
        throttle_ms = max(self._record_connection_and_get_throttle_time_ms(listener, start_ms), 0)
        if throttle_ms <= 0 and self._connection_slot_available(listener):
            return
        start_ns = time.monotonic_ns()
        end_ms = start_ms + throttle_ms
        remaining_ms = throttle_ms
        self.waiting += 1
        try:
            while True:
                if not running():
                    raise WaitInterrupted()
                slice_s = WAIT_SLICE_S if remaining_ms <= 0 else min(remaining_ms / 1000,
                                                                      WAIT_SLICE_S)
                self._cond.wait(slice_s)
                remaining_ms = max(end_ms - self.clock_ms(), 0)
                if remaining_ms <= 0 and self._connection_slot_available(listener):
                    return
        finally:
            self.waiting -= 1
            if on_blocked_ns is not None:
                on_blocked_ns(time.monotonic_ns() - start_ns)

    def _connection_slot_available(self, listener: str) -> bool:
        if self._listener_counts[listener] >= self._listeners[listener].max_connections:
            return False
        if self._protected_listener(listener):
            return True
        return self.total_count < self._broker_max_connections

    def _protected_listener(self, listener: str) -> bool:
        return listener == self._inter_broker_listener and len(self._listener_counts) > 1

    def _record_connection_and_get_throttle_time_ms(self, listener: str, now_ms: int) -> int:
        """The longer of the broker and listener rate delays (the protected
        listener skips the broker's)."""
        broker_ms = 0
        if not self._protected_listener(listener):
            broker_ms = self._broker_rate.record_and_get_throttle_time_ms(
                now_ms, self._max_throttle_ms)
        quota = self._listeners[listener]
        throttle_ms = max(broker_ms, quota.rate.record_and_get_throttle_time_ms(
            now_ms, self._max_throttle_ms))
        if throttle_ms > 0:
            quota.throttle_time.record(throttle_ms, now_ms)
        return throttle_ms

    def _record_ip_connection_maybe_throttle(self, listener: str, ip: str) -> None:
        quota = self.connection_rate_for_ip(ip)
        if quota == IP_CONNECTION_RATE_DEFAULT:
            return
        now_ms = self.clock_ms()
        self._expire_idle_ip_rates(now_ms)
        sensor = self._ip_rates.get(ip)
        if sensor is None:
            sensor = self._ip_rates[ip] = self._new_rate(quota)
        throttle_ms = sensor.record_and_get_throttle_time_ms(now_ms, self._max_throttle_ms)
        if throttle_ms > 0:
            # Not accepted, so not counted in any rate (Kafka's updateListenerMetrics).
            sensor.unrecord(now_ms)
            if not self._protected_listener(listener):
                self._broker_rate.unrecord(now_ms)
            quota = self._listeners[listener]
            quota.ip_throttle_time.record(throttle_ms, now_ms)
            quota.rate.unrecord(now_ms)
            raise ConnectionThrottledError(ip, now_ms, throttle_ms)

    def _expire_idle_ip_rates(self, now_ms: int) -> None:
        # Kafka's Metrics expires an IP's sensor after an hour without a record; a
        # sweep at most every 30 s keeps the map bounded without a thread.
        if now_ms < self._next_ip_expiry_ms:
            return
        self._next_ip_expiry_ms = now_ms + 30_000
        for ip in [ip for ip, rate in self._ip_rates.items()
                   if now_ms - (rate.last_record_ms() or now_ms) > IP_SENSOR_EXPIRY_MS]:
            del self._ip_rates[ip]


def _java_to_int(value: float) -> int:
    """Java's Double.toInt: truncate, saturate at the Int range, NaN -> 0."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return INT_MAX if value > 0 else -INT_MAX - 1
    return max(-INT_MAX - 1, min(INT_MAX, math.trunc(value)))


def _resolve_overrides(overrides) -> dict[str, int]:
    resolved = {}
    for host, count in overrides:
        try:
            resolved[resolve_host(host)] = count
        except OSError as exc:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve "
                              f"'{host}': {exc}") from None
    return resolved
