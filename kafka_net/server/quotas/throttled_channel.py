"""ThrottledChannel and ThrottledChannelReaper (KIP-219).

A client over quota gets its response at once, carrying ``throttle_time_ms``,
and its connection is muted for that long.  The broker side is three steps:

1. the handler creates a :class:`ThrottledChannel`, whose constructor calls
   ``start_throttling()``: a StartThrottlingResponse goes to the connection's
   Processor (state MUTED_AND_RESPONSE_PENDING -> MUTED_AND_THROTTLED_AND_RESPONSE_PENDING);
2. the handler sends the response; once written, the channel is MUTED_AND_THROTTLED;
3. the reaper thread calls ``end_throttling()`` when the time is up: an
   EndThrottlingResponse, and the Processor unmutes the channel if the
   response has been written (whichever of 2 and 3 comes last unmutes).

Start before the response, as Kafka does: the other order would let the
Processor write the response and unmute the channel before the throttle
started, and a StartThrottling then arrives for a connection already reading
its next request.

Kafka's reaper polls a ``DelayQueue`` for at most a second; ours waits on a
condition until the earliest throttle ends (or a new, earlier one arrives),
so a channel is unmuted when its throttle ends, not up to a second later.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable, Protocol

from kafka_net.network.request_channel import EndThrottlingResponse, StartThrottlingResponse
from kafka_net.network.thread_name import set_os_thread_name

log = logging.getLogger(__name__)


class ThrottleCallback(Protocol):
    def start_throttling(self) -> None: ...

    def end_throttling(self) -> None: ...


class ChannelThrottleCallback:
    """Kafka's callback from ``RequestHandlerHelper.throttle``: tell the connection's
    Processor, through the RequestChannel, that its throttle started or ended."""

    __slots__ = ("request_channel", "request")

    def __init__(self, request_channel, request) -> None:
        self.request_channel, self.request = request_channel, request

    def start_throttling(self) -> None:
        self.request_channel.send_response(StartThrottlingResponse(self.request))

    def end_throttling(self) -> None:
        self.request_channel.send_response(EndThrottlingResponse(self.request))


class ThrottledChannel:
    """A throttle in progress; creating one starts it (Kafka's constructor does too)."""

    __slots__ = ("throttle_time_ms", "end_ns", "callback")

    def __init__(self, throttle_time_ms: int, callback: ThrottleCallback,
                 now_ns: int) -> None:
        self.throttle_time_ms = throttle_time_ms
        self.end_ns = now_ns + throttle_time_ms * 1_000_000
        self.callback = callback
        callback.start_throttling()

    def notify_throttling_done(self) -> None:
        self.callback.end_throttling()


class ThrottledChannelReaper(threading.Thread):
    """Ends each throttle when its time is up.  One thread serves every quota
    manager (Kafka runs one per manager; they all do the same thing)."""

    def __init__(self, clock_ns: Callable[[], int] = time.monotonic_ns,
                 name: str = "ThrottledChannelReaper") -> None:
        super().__init__(name=name, daemon=True)
        self.clock_ns = clock_ns
        self._heap: list[tuple[int, int, ThrottledChannel]] = []
        self._order = itertools.count()   # ties end in the order they started
        self._cond = threading.Condition()
        self._running = True

    def add(self, channel: ThrottledChannel) -> None:
        with self._cond:
            heapq.heappush(self._heap, (channel.end_ns, next(self._order), channel))
            if self._heap[0][2] is channel:
                self._cond.notify()   # it ends before whatever we were waiting for

    def queue_size(self) -> int:
        """Kafka's ``queue-size`` metric of the delay queue."""
        return len(self._heap)

    def run(self) -> None:
        set_os_thread_name("kn-throttle")
        while True:
            with self._cond:
                due = self._take_due()
                if due is None:
                    if not self._running:
                        return
                    self._cond.wait(self._wait_s())
                    continue
            _notify(due)

    def reap_due(self) -> int:
        """End every throttle that is due now; how many (Kafka's ``doWork``, for
        tests driving the reaper with their own clock instead of the thread)."""
        ended = 0
        while True:
            with self._cond:
                due = self._take_due()
            if due is None:
                return ended
            _notify(due)
            ended += 1

    def _take_due(self) -> ThrottledChannel | None:
        if self._heap and self._heap[0][0] <= self.clock_ns():
            return heapq.heappop(self._heap)[2]
        return None

    def _wait_s(self) -> float | None:
        if not self._heap:
            return None
        return max(self._heap[0][0] - self.clock_ns(), 0) / 1e9

    def shutdown(self) -> None:
        """Stop the thread and end every throttle still pending (their connections
        are closed by then; the Processors drop such responses)."""
        with self._cond:
            self._running = False
            pending = [entry[2] for entry in self._heap]
            self._heap.clear()
            self._cond.notify()
        if self.is_alive():
            self.join()
        for channel in pending:
            _notify(channel)
        if pending:
            log.debug("ended %d pending throttle(s) at shutdown", len(pending))


def _notify(channel: ThrottledChannel) -> None:
    try:
        channel.notify_throttling_done()
    except Exception:
        log.exception("ending a throttle failed")
