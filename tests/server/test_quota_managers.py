"""Client quota managers with an injected clock: the rate, the quota precedence
and the throttle times, ported from Kafka's ClientQuotaManagerTest,
ClientRequestQuotaManagerTest and QuotaUtilsTest (same numbers)."""

from __future__ import annotations

import math
import threading

import pytest

from kafka_net.server.quotas.client_quota_manager import (
    DEFAULT, LONG_MAX, ClientQuotaManager, ClientRequestQuotaManager)
from kafka_net.rate import Rate, bounded_throttle_time_ms, throttle_time_ms
from kafka_net.server.quotas.throttled_channel import ThrottledChannelReaper

START_MS = 1_700_000_000_000   # Kafka's MockTime starts at the wall clock


class Clock:
    def __init__(self) -> None:
        self.ms = START_MS

    def __call__(self) -> int:
        return self.ms

    def ns(self) -> int:
        return self.ms * 1_000_000

    def sleep(self, ms: int) -> None:
        self.ms += ms


class Callback:
    def __init__(self) -> None:
        self.started = self.ended = 0

    def start_throttling(self) -> None:
        self.started += 1

    def end_throttling(self) -> None:
        self.ended += 1


@pytest.fixture
def clock():
    return Clock()


def produce_manager(clock, samples=11, window_s=1):
    reaper = ThrottledChannelReaper(clock.ns)   # driven by reap_due(), never started
    return ClientQuotaManager("Produce", samples, window_s, reaper, clock)


def record(manager, user, client_id, value, clock):
    return manager.maybe_record_and_get_throttle_time_ms(user, client_id, value, clock())


# --- Rate and QuotaUtils ----------------------------------------------------------------

def test_rate_spreads_a_first_burst_over_samples_minus_one_windows():
    rate = Rate(11, 1000)
    rate.record(1000, START_MS)
    assert rate.window_size_ms(START_MS) == 10_000
    assert rate.measure(START_MS) == pytest.approx(100.0)
    # Once more than ten windows have passed, the real elapsed time counts: samples
    # whose last event is 11 windows old are dropped, so the oldest left began at 2 s.
    for i in range(1, 13):
        rate.record(0, START_MS + i * 1000)
    assert rate.window_size_ms(START_MS + 12_500) == 10_500


def test_rate_forgets_samples_older_than_the_whole_window():
    rate = Rate(2, 1000)
    rate.record(500, START_MS)
    assert rate.measure(START_MS + 1999) > 0
    assert rate.measure(START_MS + 2000) == 0


def test_throttle_time_formula():
    # QuotaUtilsTest: X = (O - T) / T * W, rounded; bounded by the cap.
    assert throttle_time_ms(600, 500, 10_500) == 2100
    assert throttle_time_ms(10.2, 10, 10_000) == 200
    assert bounded_throttle_time_ms(1000, 10, 10_000, 1000) == 1000
    assert throttle_time_ms(100.5, 100, 1000) == 5   # Java Math.round: half up


# --- ClientQuotaManagerTest ---------------------------------------------------------------

def test_quota_violation(clock):
    manager = produce_manager(clock)
    manager.update_quota(None, DEFAULT, 500)
    for _ in range(10):   # under the quota for ten windows: never throttled
        assert record(manager, "ANONYMOUS", "unknown", 400, clock) == 0
        clock.sleep(1000)
    # 400*10 + 2300 = 6300 bytes over 10.5 s = 600 B/s: (600-500)/500 * 10.5 s = 2100 ms
    clock.sleep(500)
    throttle = record(manager, "ANONYMOUS", "unknown", 2300, clock)
    assert throttle == 2100
    callback = Callback()
    manager.throttle("ANONYMOUS", "unknown", callback, throttle)
    assert (callback.started, manager.reaper.queue_size()) == (1, 1)
    assert manager.reaper.reap_due() == 0 and callback.ended == 0
    clock.sleep(throttle)
    assert manager.reaper.reap_due() == 1 and callback.ended == 1
    assert manager.reaper.queue_size() == 0
    for _ in range(10):
        record(manager, "ANONYMOUS", "unknown", 400, clock)
        clock.sleep(1000)
    assert record(manager, "ANONYMOUS", "unknown", 0, clock) == 0   # the burst rolled over


def check_quota(manager, clock, user, client_id, bound, value, throttled):
    assert manager.quota(user, client_id) == bound
    expected_max = (manager.num_samples - 1) * bound if bound < LONG_MAX else math.inf
    assert manager.max_value_in_quota_window(user, client_id) == pytest.approx(expected_max)
    throttle = record(manager, user, client_id, value * manager.num_samples, clock)
    assert (throttle > 0) is throttled, (user, client_id, throttle)


def test_quota_config_precedence(clock):
    m = produce_manager(clock)
    m.update_quota(DEFAULT, None, 1000)
    m.update_quota(None, DEFAULT, 2000)
    m.update_quota(DEFAULT, DEFAULT, 3000)
    m.update_quota("userA", None, 4000)
    m.update_quota("userA", "client1", 5000)
    m.update_quota("userB", None, 6000)
    m.update_quota("userB", "client1", 7000)
    m.update_quota("userB", DEFAULT, 8000)
    m.update_quota("userC", None, 10000)
    m.update_quota(None, "client1", 9000)

    check = lambda *a: check_quota(m, clock, *a)  # noqa: E731
    check("userA", "client1", 5000, 4500, False)   # <user, client> before <user>
    check("userA", "client2", 4000, 4500, True)    # <user> before <client> and defaults
    check("userA", "client3", 4000, 0, True)       # <user> shared by the user's clients
    check("userA", "client1", 5000, 0, False)      # <user, client> is exclusive
    check("userB", "client1", 7000, 8000, True)
    check("userB", "client2", 8000, 7000, False)   # <user, default client> per client
    check("userB", "client3", 8000, 7000, False)
    check("userD", "client1", 3000, 3500, True)    # <default user, default client>
    check("userD", "client2", 3000, 2500, False)
    check("userE", "client1", 3000, 2500, False)

    m.update_quota(DEFAULT, DEFAULT, None)          # back to the <default user> quota
    check("userD", "client1", 1000, 0, False)      # tags changed: a new sensor
    check("userE", "client4", 1000, 1500, True)
    check("userF", "client4", 1000, 800, False)    # <default user> shared by its clients
    check("userF", "client5", 1000, 800, True)

    m.update_quota(DEFAULT, None, None)             # back to the <default client-id> quota
    check("userF", "client4", 2000, 0, False)
    check("userF", "client5", 2000, 0, False)
    check("userF", "client5", 2000, 2500, True)
    check("userG", "client5", 2000, 0, True)       # shared by that client-id of all users

    m.update_quota("userA", None, 8000)
    m.update_quota("userA", "client1", 10000)
    check("userA", "client2", 8000, 0, False)
    check("userA", "client2", 8000, 4500, True)    # new and earlier values add up
    check("userA", "client1", 10000, 0, False)
    check("userA", "client1", 10000, 6000, True)
    m.update_quota("userA", "client1", None)
    check("userA", "client6", 8000, 0, True)       # the shared user quota
    m.update_quota("userA", "client6", 11000)
    check("userA", "client6", 11000, 8500, False)
    m.update_quota("userA", DEFAULT, 12000)
    m.update_quota("userA", "client6", None)
    check("userA", "client6", 12000, 4000, True)


def test_no_quota_records_nothing(clock):
    m = produce_manager(clock)
    assert not m.quotas_enabled
    assert record(m, "ANONYMOUS", "c", 10**12, clock) == 0
    assert m.metrics() == {}
    assert m.max_value_in_quota_window("ANONYMOUS", "c") == math.inf


def test_quota_for_another_client_id_leaves_this_one_unthrottled(clock):
    m = produce_manager(clock)
    m.update_quota(None, "slow", 100)
    assert record(m, "ANONYMOUS", "fast", 10**9, clock) == 0
    assert record(m, "ANONYMOUS", "slow", 10_000, clock) > 0
    metrics = m.metrics()
    slow = "kafka.server:type=Produce,user=,client-id=slow"
    assert metrics[f"{slow},name=byte-rate"] == pytest.approx(1000.0)   # 10000 B / 10 s


def test_unrecord_takes_a_value_back(clock):
    m = ClientQuotaManager("Fetch", 11, 1, None, clock)
    m.update_quota(None, "c", 100)
    assert m.record_and_get_throttle_time_ms("ANONYMOUS", "c", 5000, clock()) > 0
    m.unrecord_quota_sensor("ANONYMOUS", "c", 5000, clock())
    assert m.record_and_get_throttle_time_ms("ANONYMOUS", "c", 0, clock()) == 0


def test_throttle_time_sensor_averages_throttles(clock):
    m = produce_manager(clock)
    m.update_quota(None, "c", 100)
    m.throttle("ANONYMOUS", "c", Callback(), 100)
    m.throttle("ANONYMOUS", "c", Callback(), 300)
    assert m.metrics()["kafka.server:type=Produce,user=,client-id=c,name=throttle-time"] == 200


# --- ClientRequestQuotaManagerTest --------------------------------------------------------

def millis_to_thread_ns(millis: float) -> int:
    return round(millis * 1_000_000)


def test_request_percentage_quota_violation(clock):
    m = ClientRequestQuotaManager(11, 1, ThrottledChannelReaper(clock.ns), clock)
    m.update_quota("ANONYMOUS", "test-client", 1)   # 1% = 10 ms of handler time per second

    def rec(millis):
        return m.maybe_record_thread_time("ANONYMOUS", "test-client",
                                          millis_to_thread_ns(millis), clock())

    for _ in range(10):
        assert rec(4) == 0
        clock.sleep(1000)
    # 4*10 + 67.1 = 107.1 ms over 10.5 s = 10.2 ms/s: (10.2-10)/10 * 10.5 s = 210 ms
    clock.sleep(500)
    throttle = rec(67.1)
    assert throttle == 210
    callback = Callback()
    m.throttle("ANONYMOUS", "test-client", callback, throttle)
    assert m.reaper.reap_due() == 0
    clock.sleep(throttle)
    assert m.reaper.reap_due() == 1 and callback.ended == 1
    for _ in range(11):
        rec(4)
        clock.sleep(1000)
    assert rec(0) == 0
    # A spike needing more than one window: capped at the window size.
    assert rec(500) == 1000
    for _ in range(10):
        clock.sleep(1000)
        assert rec(0) == 1000
    clock.sleep(1000)
    assert rec(0) == 0


# --- the reaper thread --------------------------------------------------------------------

def test_reaper_thread_ends_throttles_in_deadline_order_and_stops():
    reaper = ThrottledChannelReaper()
    reaper.start()
    order, done = [], threading.Event()

    class Named(Callback):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def end_throttling(self):
            order.append(self.name)
            if len(order) == 3:
                done.set()

    m = ClientQuotaManager("Produce", 11, 1, reaper)
    for name, ms in (("late", 60), ("early", 10), ("middle", 30)):
        m.throttle("ANONYMOUS", name, Named(name), ms)
    assert done.wait(10)
    assert order == ["early", "middle", "late"]
    reaper.shutdown()
    assert not reaper.is_alive()


def test_reaper_shutdown_ends_pending_throttles():
    reaper = ThrottledChannelReaper()
    reaper.start()
    callback = Callback()
    ClientQuotaManager("Produce", 11, 1, reaper).throttle("ANONYMOUS", "c", callback, 3_600_000)
    reaper.shutdown()
    assert not reaper.is_alive()
    assert (callback.started, callback.ended) == (1, 1)


# --- the hook in KafkaApis ----------------------------------------------------------------

def test_a_failing_quota_hook_still_answers(monkeypatch, caplog):
    from kafka_net.config import ServerConfig
    from kafka_net.network.request_channel import RequestChannel, SendResponse
    from kafka_net.protocol import decode_response, encode_request
    from kafka_net.server.broker import BrokerCore
    from kafka_net.server.quotas import request_helper

    def broken(*args):
        raise RuntimeError("quota bug")

    core = BrokerCore(ServerConfig(log_store="memory"), RequestChannel(10))
    apis = core.apis
    apis.quotas.enabled = True
    monkeypatch.setattr(request_helper, "throttle_response", broken)
    request = core.request_from_frame(encode_request(18, 3, 5, {
        "client_software_name": "t", "client_software_version": "1"})[4:])
    response = apis.build_response(request)
    assert isinstance(response, SendResponse)
    correlation_id, body = decode_response(18, 3, response.data[4:])
    assert (correlation_id, body["error_code"]) == (5, 0)
    assert "Error applying client quotas" in caplog.text
