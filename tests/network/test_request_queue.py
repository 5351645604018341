"""RequestQueue: FIFO, bounded, and which put wakes a sleeping handler (no timing asserted:
the stall rule is switched off or forced with ``stall_ns``)."""

from __future__ import annotations

import threading

from kafka_net.network.request_queue import BACKLOG_PER_AWAKE, RequestQueue
from tests.support import wait_until

NEVER = 10**18       # stall_ns: the stall rule never fires


class Handler(threading.Thread):
    """A handler thread that takes one item per ``go`` and records what it took."""

    def __init__(self, q: RequestQueue) -> None:
        super().__init__(daemon=True)
        self.q, self.taken, self.go = q, [], threading.Semaphore(0)

    def run(self) -> None:
        while True:
            self.go.acquire()
            item = self.q.get(5)
            self.taken.append(item)
            if item == "stop":
                return


def asleep(q: RequestQueue) -> Handler:
    """A started handler thread, waiting in get() (the only sleeper)."""
    h = Handler(q)
    h.start()
    h.go.release()
    assert wait_until(lambda: len(q._sleepers) == 1, 5)
    return h


def busy_here_and_one_asleep(q: RequestQueue) -> Handler:
    """This thread holds a request (a busy handler); another handler sleeps."""
    q.put("mine")
    assert q.get(1) == "mine"
    return asleep(q)


def test_a_put_wakes_a_sleeper_when_no_handler_is_awake():
    q = RequestQueue(10, stall_ns=NEVER)
    h = asleep(q)
    q.put("a")
    assert wait_until(lambda: h.taken == ["a"], 5)
    h.go.release()
    q.put("stop")
    h.join(5)


def test_a_busy_handler_keeps_the_next_request_and_the_sleeper_sleeps_on():
    q = RequestQueue(10, stall_ns=NEVER)
    other = busy_here_and_one_asleep(q)
    q.put("second")
    assert len(q._sleepers) == 1          # not woken: the busy handler comes back for it
    assert q.get(1) == "second"           # ... and does
    q.put("third")                        # still busy (holding "second"): kept for it
    assert len(q._sleepers) == 1 and q.get(1) == "third"
    assert len(q._sleepers) == 1 and other.taken == []


def test_a_backlog_wakes_a_sleeper():
    q = RequestQueue(20, stall_ns=NEVER)
    other = busy_here_and_one_asleep(q)
    for i in range(BACKLOG_PER_AWAKE):
        q.put(i)
    assert len(q._sleepers) == 1          # as many as the busy handler is left
    q.put(BACKLOG_PER_AWAKE)              # one more than BACKLOG_PER_AWAKE per awake one
    assert wait_until(lambda: other.taken == [0], 5)
    other.go.release()
    q.put("stop")


def test_a_stalled_handler_lets_a_sleeper_help():
    q = RequestQueue(10, stall_ns=0)      # every take is already "too long ago"
    other = busy_here_and_one_asleep(q)
    q.put("help")
    assert wait_until(lambda: other.taken == ["help"], 5)


def test_a_sleeper_that_times_out_leaves_the_list_and_gets_none():
    q = RequestQueue(10)
    assert q.get(0.01) is None
    assert len(q._sleepers) == 0 and q._woken == 0
