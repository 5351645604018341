"""ConnectionQuotas and Rate alone, with an injected clock.  Reference 1.H (H1-H8).

Ports of Kafka's ConnectionQuotasTest where they fit.  Waits are synchronised
on ``ConnectionQuotas.waiting`` (an Acceptor is inside ``inc``'s wait), never on
elapsed time; the rate cases drive the clock by hand.
"""

from __future__ import annotations

import math
import socket
import threading

import pytest

from kafka_net.config import INT_MAX, ConfigError, parse_listeners
from kafka_net.network.connection_quotas import (
    ConnectionQuotas, ConnectionThrottledError, TooManyConnectionsError, WaitInterrupted,
    normalize_ip)
from kafka_net.rate import Avg, Rate
from tests.support import make_config, wait_until

EXTERNAL, REPLICATION, ADMIN = "EXTERNAL", "REPLICATION", "ADMIN"
IP, OTHER_IP = "192.168.1.1", "192.168.1.2"
TIMEOUT = 10.0


class Clock:
    """Integer milliseconds, moved by the test."""

    def __init__(self, ms: int = 1_000_000) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def quotas_for(clock: Clock | None = None, **overrides) -> ConnectionQuotas:
    """Kafka's brokerPropsWithDefaultConnectionLimits: three listeners, REPLICATION
    the inter-broker one."""
    base = dict(
        listeners=parse_listeners(
            "EXTERNAL://127.0.0.1:0,REPLICATION://127.0.0.1:0,ADMIN://127.0.0.1:0",
            protocol_map={EXTERNAL: "PLAINTEXT", REPLICATION: "PLAINTEXT", ADMIN: "PLAINTEXT"}),
        inter_broker_listener_name=REPLICATION, quota_window_num=2)
    base.update(overrides)
    config = make_config(**base)
    quotas = ConnectionQuotas(config, clock or Clock())
    for endpoint in config.listeners:
        quotas.add_listener(endpoint.listener_name)
    return quotas


class Incrementer(threading.Thread):
    """``inc`` on its own thread, since it may wait; records blocked time and errors."""

    def __init__(self, quotas: ConnectionQuotas, listener: str, ip: str = IP) -> None:
        super().__init__(daemon=True)
        self.quotas, self.listener, self.ip = quotas, listener, ip
        self.blocked_ns: list[int] = []
        self.error: Exception | None = None
        self.stop = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            self.quotas.inc(self.listener, self.ip, self.blocked_ns.append,
                            lambda: not self.stop.is_set())
        except Exception as exc:
            self.error = exc

    def finish(self) -> None:
        self.join(TIMEOUT)
        assert not self.is_alive(), "inc never returned"


def waiting_for_slot(quotas: ConnectionQuotas, n: int = 1) -> bool:
    return wait_until(lambda: quotas.waiting == n, TIMEOUT)


# --- Rate: Kafka's arithmetic --------------------------------------------------------


def test_rate_counts_at_least_samples_minus_one_whole_windows():
    rate = Rate(samples=11, window_ms=1000, bound=INT_MAX)
    for _ in range(50):
        rate.record(1, 0)
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == pytest.approx(5.0)


def test_rate_throttle_time_brings_the_rate_back_to_the_bound():
    # 2 samples of 1 s: 6 connections at once measure 6/s against a bound of 5/s;
    # (6 - 5) / 5 * 1000 ms = 200 ms (SocketServerTest.testConnectionRatePerIp).
    rate = Rate(samples=2, window_ms=1000, bound=5)
    assert [rate.record_and_get_throttle_time_ms(0, 1000) for _ in range(6)] == [0] * 5 + [200]


def test_rate_throttle_time_is_capped_and_a_zero_bound_throttles_fully():
    rate = Rate(samples=2, window_ms=1000, bound=1)
    rate.record_and_get_throttle_time_ms(0, 1000)
    assert rate.record_and_get_throttle_time_ms(0, 1000) == 1000   # 1000 ms exactly
    assert rate.record_and_get_throttle_time_ms(0, 500) == 500     # capped
    assert Rate(2, 1000, 0).record_and_get_throttle_time_ms(0, 1000) == 1000


def test_avg_is_nan_until_recorded_and_forgets_old_samples():
    avg = Avg(2, 30_000)
    assert math.isnan(avg.measure(0))
    avg.record(100, 0)
    avg.record(300, 10)
    assert avg.measure(10) == 200.0
    assert math.isnan(avg.measure(60_010))


def test_rate_forgets_samples_older_than_the_window():
    rate = Rate(samples=2, window_ms=1000, bound=5)
    for _ in range(5):
        rate.record(1, 0)
    assert rate.measure(0) == pytest.approx(5.0)
    assert rate.measure(2000) == 0.0
    rate.record(1, 2000)
    rate.unrecord(2000)
    assert rate.measure(2000) == 0.0


# --- counts and the per-IP limit -------------------------------------------------------


def test_no_connection_limits_by_default():
    quotas = quotas_for()
    for listener in (EXTERNAL, REPLICATION, ADMIN):
        for _ in range(1000):
            quotas.inc(listener, IP)
    assert quotas.get(IP) == 3000
    assert quotas.total_count == 3000
    assert quotas.listener_count(EXTERNAL) == 1000
    assert quotas.broker_accept_rate() > 0 and quotas.listener_accept_rate(ADMIN) > 0
    quotas.dec(EXTERNAL, IP)
    assert (quotas.get(IP), quotas.listener_count(EXTERNAL), quotas.total_count) == (
        2999, 999, 2999)
    assert quotas.waiting == 0


def test_decrement_for_an_unknown_ip_raises():
    quotas = quotas_for()
    with pytest.raises(ValueError, match="no connections, address: 10.0.0.1"):
        quotas.dec(EXTERNAL, "10.0.0.1")


def test_inc_on_a_listener_never_added_raises():
    quotas = ConnectionQuotas(make_config(), Clock())
    with pytest.raises(KeyError):
        quotas.inc("PLAINTEXT", IP)


def test_max_connections_per_ip():
    quotas = quotas_for(max_connections_per_ip=17)
    for _ in range(17):
        quotas.inc(EXTERNAL, IP)
    # Counted first, then refused: the caller closes and decrements.
    for _ in range(2):
        with pytest.raises(TooManyConnectionsError) as info:
            quotas.inc(EXTERNAL, IP)
        assert (info.value.ip, info.value.count) == (IP, 17)
    assert quotas.get(IP) == 19
    for _ in range(17):
        quotas.inc(EXTERNAL, OTHER_IP)   # another address has its own count
    for _ in range(4):
        quotas.dec(EXTERNAL, IP)
    assert quotas.get(IP) == 15
    quotas.inc(EXTERNAL, IP)
    quotas.inc(EXTERNAL, IP)
    assert quotas.get(IP) == 17


def test_per_ip_overrides_are_resolved_once_and_win_over_the_default():
    quotas = quotas_for(max_connections_per_ip=0,
                        max_connections_per_ip_overrides=(("localhost", 2), ("10.0.0.7", 1)))
    quotas.inc(EXTERNAL, "127.0.0.1")
    quotas.inc(EXTERNAL, "127.0.0.1")
    with pytest.raises(TooManyConnectionsError):
        quotas.inc(EXTERNAL, "127.0.0.1")
    quotas.inc(EXTERNAL, "10.0.0.7")
    with pytest.raises(TooManyConnectionsError):
        quotas.inc(EXTERNAL, "10.0.0.7")
    with pytest.raises(TooManyConnectionsError) as info:
        quotas.inc(EXTERNAL, IP)                  # no override: 0
    assert info.value.count == 0


def test_an_override_that_does_not_resolve_is_a_config_error():
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides"):
        quotas_for(max_connections_per_ip_overrides=(("no-such-host.invalid", 3),))


def test_ipv4_mapped_addresses_count_as_ipv4():
    assert normalize_ip("::ffff:127.0.0.1") == "127.0.0.1"
    assert normalize_ip("0:0:0:0:0:0:0:1") == "::1"


# --- broker-wide and listener limits wait ----------------------------------------------


def test_broker_wide_limit_blocks_until_a_slot_frees_and_spares_the_inter_broker_listener():
    quotas = quotas_for(max_connections=20)
    for _ in range(20):
        quotas.inc(EXTERNAL, IP)
    assert not quotas.max_connections_exceeded(EXTERNAL)   # exactly at the limit

    waiter = Incrementer(quotas, EXTERNAL)
    assert waiting_for_slot(quotas)
    quotas.dec(EXTERNAL, IP)
    waiter.finish()
    assert waiter.error is None and quotas.get(IP) == 20
    assert waiter.blocked_ns and waiter.blocked_ns[0] > 0   # AcceptorBlockedPercent

    # The protected inter-broker listener goes over the broker-wide limit ...
    quotas.inc(REPLICATION, IP)
    assert quotas.max_connections_exceeded(EXTERNAL)
    assert not quotas.max_connections_exceeded(REPLICATION)
    # ... another listener waits, and the inter-broker one still gets in.
    admin = Incrementer(quotas, ADMIN)
    assert waiting_for_slot(quotas)
    quotas.inc(REPLICATION, IP)
    # 22 connections, limit 20: the waiter needs three to go.
    quotas.dec(EXTERNAL, IP)
    quotas.dec(EXTERNAL, IP)
    assert quotas.waiting == 1 and admin.is_alive()
    quotas.dec(EXTERNAL, IP)
    admin.finish()
    assert admin.error is None and quotas.listener_count(ADMIN) == 1


def test_the_inter_broker_listener_is_protected_only_with_several_listeners():
    config = make_config(max_connections=1)   # one listener, PLAINTEXT = inter-broker
    quotas = ConnectionQuotas(config, Clock())
    quotas.add_listener("PLAINTEXT")
    quotas.inc("PLAINTEXT", IP)
    waiter = Incrementer(quotas, "PLAINTEXT")
    assert waiting_for_slot(quotas)
    quotas.dec("PLAINTEXT", IP)
    waiter.finish()


def test_listener_limits_block_every_listener_even_the_inter_broker_one():
    quotas = quotas_for(max_connections=800, listener_max_connections=(
        (EXTERNAL, 5), (REPLICATION, 5), (ADMIN, 5)))
    for listener in (EXTERNAL, REPLICATION, ADMIN):
        for _ in range(5):
            quotas.inc(listener, IP)
        assert not quotas.max_connections_exceeded(listener)
    waiters = [Incrementer(quotas, listener) for listener in (EXTERNAL, REPLICATION, ADMIN)]
    assert waiting_for_slot(quotas, 3)
    for listener in (EXTERNAL, REPLICATION, ADMIN):
        quotas.dec(listener, IP)
    for waiter in waiters:
        waiter.finish()
        assert waiter.error is None
    assert [quotas.listener_count(x) for x in (EXTERNAL, REPLICATION, ADMIN)] == [5, 5, 5]


def test_a_listener_falls_back_to_the_broker_limit():
    quotas = quotas_for(max_connections=3, listener_max_connections=((ADMIN, 10),))
    for _ in range(3):
        quotas.inc(REPLICATION, IP)
    # REPLICATION ignores the broker-wide total, not its own limit (3, the broker's).
    waiter = Incrementer(quotas, REPLICATION)
    assert waiting_for_slot(quotas)
    quotas.dec(REPLICATION, IP)
    waiter.finish()


def test_a_stopping_acceptor_is_released_from_the_wait_and_nothing_is_counted():
    quotas = quotas_for(max_connections=1)
    quotas.inc(EXTERNAL, IP)
    waiter = Incrementer(quotas, EXTERNAL, OTHER_IP)
    assert waiting_for_slot(quotas)
    waiter.stop.set()
    quotas.wake_waiters()
    waiter.finish()
    assert isinstance(waiter.error, WaitInterrupted)
    assert quotas.get(OTHER_IP) == 0 and quotas.total_count == 1


# --- creation rates ---------------------------------------------------------------------


def test_broker_rate_below_the_limit_does_not_wait():
    clock = Clock()
    quotas = quotas_for(clock, max_connection_creation_rate=5)
    blocked: list[int] = []
    for _ in range(5):
        quotas.inc(EXTERNAL, IP, blocked.append)
    assert blocked == [] and quotas.get(IP) == 5


def test_broker_rate_above_the_limit_waits_for_the_throttle_time():
    clock = Clock()
    quotas = quotas_for(clock, max_connection_creation_rate=5)
    for _ in range(5):
        quotas.inc(EXTERNAL, IP)
    waiter = Incrementer(quotas, EXTERNAL)      # the 6th: 200 ms by the clock
    assert waiting_for_slot(quotas)
    clock.ms += 199
    quotas.wake_waiters()
    assert not wait_until(lambda: not waiter.is_alive(), 0.3)   # still 1 ms to go
    clock.ms += 1
    quotas.wake_waiters()
    waiter.finish()
    assert waiter.error is None and waiter.blocked_ns and quotas.get(IP) == 6
    throttle, ip_throttle = quotas.listener_throttle_times(EXTERNAL)
    assert throttle == 200.0 and math.isnan(ip_throttle)


def test_the_inter_broker_listener_ignores_the_broker_rate():
    # Its listener rate would fall back to the broker's 5/s, so it gets its own.
    clock = Clock()
    quotas = quotas_for(clock, max_connection_creation_rate=5,
                        listener_max_connection_creation_rate=((REPLICATION, 1000),))
    blocked: list[int] = []
    for _ in range(20):
        quotas.inc(REPLICATION, IP, blocked.append)
    assert blocked == []
    assert quotas.broker_accept_rate() == 0.0   # not recorded there either


def test_listener_rate_above_its_limit_waits():
    clock = Clock()
    quotas = quotas_for(clock, listener_max_connection_creation_rate=((ADMIN, 2),))
    quotas.inc(ADMIN, IP)
    quotas.inc(ADMIN, IP)
    for _ in range(10):
        quotas.inc(EXTERNAL, IP)                # other listeners are not limited
    waiter = Incrementer(quotas, ADMIN)
    assert waiting_for_slot(quotas)
    clock.ms += 500                             # (3 - 2) / 2 * 1000 ms
    quotas.wake_waiters()
    waiter.finish()
    assert waiter.error is None


def test_ip_rate_below_and_above_the_limit():
    clock = Clock()
    quotas = quotas_for(clock)
    quotas.update_ip_connection_rate_quota(None, 5)
    for _ in range(5):
        quotas.inc(EXTERNAL, IP)
    with pytest.raises(ConnectionThrottledError) as info:
        quotas.inc(EXTERNAL, IP)
    assert (info.value.ip, info.value.start_throttle_time_ms,
            info.value.throttle_time_ms) == (IP, clock.ms, 200)
    assert quotas.get(IP) == 5                  # a throttled connection is not counted
    assert quotas.listener_throttle_times(EXTERNAL)[1] == 200.0
    assert quotas.ip_accept_rate(IP) == pytest.approx(5.0)   # and taken back out
    quotas.inc(EXTERNAL, OTHER_IP)              # each IP has its own rate
    clock.ms += 2000
    quotas.inc(EXTERNAL, IP)                    # the old samples expired


def test_rejected_ip_connection_is_unrecorded_from_every_rate():
    quotas = quotas_for(Clock())
    quotas.update_ip_connection_rate_quota(IP, 0)
    quotas.update_ip_connection_rate_quota(OTHER_IP, 0)
    with pytest.raises(ConnectionThrottledError):
        quotas.inc(EXTERNAL, IP)
    assert quotas.ip_accept_rate(IP) == 0.0
    assert quotas.listener_accept_rate(EXTERNAL) == 0.0
    assert quotas.broker_accept_rate() == 0.0
    with pytest.raises(ConnectionThrottledError):
        quotas.inc(REPLICATION, OTHER_IP)
    assert quotas.ip_accept_rate(OTHER_IP) == 0.0
    assert quotas.listener_accept_rate(REPLICATION) == 0.0
    assert quotas.broker_accept_rate() == 0.0


def test_ip_rate_quota_interface_for_client_quotas():
    quotas = quotas_for(Clock())
    assert quotas.ip_connection_rate_quotas() == {}
    quotas.update_ip_connection_rate_quota(None, 10)
    quotas.update_ip_connection_rate_quota(IP, 2.5)
    quotas.update_ip_connection_rate_quota("::ffff:10.0.0.1", 7)
    assert quotas.ip_connection_rate_quotas() == {None: 10.0, IP: 2.5, "10.0.0.1": 7.0}
    assert quotas.connection_rate_for_ip(OTHER_IP) == 10.0
    assert quotas.connection_rate_for_ip(IP) == 2.0   # enforced as Kafka's toInt
    quotas.update_ip_connection_rate_quota(IP, None)
    quotas.update_ip_connection_rate_quota(None, None)
    assert quotas.ip_connection_rate_quotas() == {"10.0.0.1": 7.0}
    with pytest.raises(ValueError):
        quotas.update_ip_connection_rate_quota("not-an-ip", 1)


def test_changing_a_quota_updates_a_live_ip_rate():
    clock = Clock()
    quotas = quotas_for(clock)
    quotas.update_ip_connection_rate_quota(None, 1)
    quotas.inc(EXTERNAL, IP)
    with pytest.raises(ConnectionThrottledError):
        quotas.inc(EXTERNAL, IP)
    quotas.update_ip_connection_rate_quota(IP, 100)   # the override replaces the default
    quotas.inc(EXTERNAL, IP)
    quotas.update_ip_connection_rate_quota(IP, None)  # back to the default (1/s)
    with pytest.raises(ConnectionThrottledError):
        quotas.inc(EXTERNAL, IP)
    quotas.update_ip_connection_rate_quota(None, None)  # no quota: no throttling at all
    for _ in range(10):
        quotas.inc(EXTERNAL, IP)


# --- the Processor's close paths that never reach the Selector ----------------------------


def processor_with_quotas():
    from kafka_net.network.processor import Processor
    from kafka_net.network.request_channel import RequestChannel

    config = make_config()
    quotas = ConnectionQuotas(config, Clock())
    quotas.add_listener("PLAINTEXT")
    processor = Processor(0, "PLAINTEXT", RequestChannel(10), lambda frame: None, config,
                          connection_quotas=quotas)
    return processor, quotas


def test_sockets_still_queued_at_shutdown_are_uncounted():
    processor, quotas = processor_with_quotas()   # never started: nothing drains the queue
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        for _, server_end in pairs:
            quotas.inc("PLAINTEXT", IP)
            assert processor.accept(server_end, may_block=False, ip=IP)
        assert quotas.get(IP) == 3
        processor._close_all()
        assert quotas.get(IP) == 0 and quotas.total_count == 0
        assert all(server_end.fileno() == -1 for _, server_end in pairs)
    finally:
        for client, server_end in pairs:
            client.close()
            server_end.close()


def test_a_socket_that_fails_to_register_is_uncounted():
    processor, quotas = processor_with_quotas()
    client, server_end = socket.socketpair()
    quotas.inc("PLAINTEXT", IP)
    assert processor.accept(server_end, may_block=False, ip=IP)
    server_end.close()            # registering a closed socket fails
    processor.start()
    try:
        assert wait_until(lambda: quotas.get(IP) == 0, TIMEOUT)
    finally:
        processor.begin_shutdown()
        processor.join(TIMEOUT)
        client.close()
    assert quotas.total_count == 0


def test_a_refused_offer_leaves_the_socket_to_the_acceptor():
    processor, quotas = processor_with_quotas()
    pairs = [socket.socketpair() for _ in range(21)]
    try:
        for i, (_, server_end) in enumerate(pairs):
            quotas.inc("PLAINTEXT", IP)
            accepted = processor.accept(server_end, may_block=False, ip=IP)
            assert accepted == (i < 20)   # the queue holds 20
        processor._close_all()
        # The 21st is still the Acceptor's to close and uncount.
        assert quotas.get(IP) == 1
        quotas.dec("PLAINTEXT", IP)
    finally:
        for client, server_end in pairs:
            client.close()
            server_end.close()


def test_lowest_priority_channel_is_a_closing_one_else_the_least_recently_active():
    from kafka_net.network.selector import Selector
    from kafka_net.network.wakeup import WakeupSocketpair

    wakeup = WakeupSocketpair()
    selector = Selector(1024, -1, wakeup)
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        assert selector.lowest_priority_channel() is None
        for i, (_, server_end) in enumerate(pairs):
            selector.register(f"c{i}", server_end)
        assert selector.lowest_priority_channel().id == "c0"   # registered first
        pairs[0][0].sendall(b"\0")
        selector.poll(TIMEOUT)                                  # c0 becomes the most recent
        assert selector.lowest_priority_channel().id == "c1"
        selector.channels["c2"].remote_closed = True
        assert selector.lowest_priority_channel().id == "c2"
    finally:
        selector.close_all()
        wakeup.close()
        for client, _ in pairs:
            client.close()


# --- dynamic broker config (AlterConfigs on BROKER: SocketServer.reconfigure) -----------


def reconfigured(quotas, **values):
    base = {"max.connections": INT_MAX, "max.connections.per.ip": INT_MAX,
            "max.connections.per.ip.overrides": (), "max.connection.creation.rate": INT_MAX}
    base.update({k.replace("_", "."): v for k, v in values.items()})
    quotas.reconfigure(base)


def test_reconfigure_changes_the_per_ip_limits_for_new_connections():
    quotas = quotas_for()
    for _ in range(3):
        quotas.inc(EXTERNAL, IP)
    reconfigured(quotas, max_connections_per_ip=3,
                 max_connections_per_ip_overrides=(("192.168.1.2", 1),))
    with pytest.raises(TooManyConnectionsError):
        quotas.inc(EXTERNAL, IP)   # the three open ones stay, a fourth is refused
    quotas.inc(EXTERNAL, OTHER_IP)
    with pytest.raises(TooManyConnectionsError):
        quotas.inc(EXTERNAL, OTHER_IP)
    reconfigured(quotas)
    quotas.inc(EXTERNAL, IP)


def test_reconfigure_raising_max_connections_releases_a_waiting_acceptor():
    quotas = quotas_for(max_connections=2)
    quotas.inc(EXTERNAL, IP)
    quotas.inc(EXTERNAL, IP)
    waiter = Incrementer(quotas, EXTERNAL)
    assert waiting_for_slot(quotas)
    reconfigured(quotas, max_connections=3)
    waiter.finish()
    assert waiter.error is None and quotas.get(IP) == 3
    reconfigured(quotas, max_connections=2)
    assert quotas.max_connections_exceeded(EXTERNAL)   # Processors close one


def test_reconfigure_leaves_a_listener_with_its_own_limit():
    quotas = quotas_for(listener_max_connections=((ADMIN, 1),))
    reconfigured(quotas, max_connections=5)
    quotas.inc(ADMIN, IP)
    waiter = Incrementer(quotas, ADMIN)
    assert waiting_for_slot(quotas)   # still ADMIN's own limit of 1
    waiter.stop.set()
    waiter.finish()
