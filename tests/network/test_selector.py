"""Selector and wake-up socketpair, driven directly over socketpairs (no Processor).

These pin down the bookkeeping that replaced per-poll scans and eager epoll
changes: READ interest dropped lazily (only when a muted socket turns
readable), requests looked for only on channels read or unmuted since the
last poll, and idle expiry in least-recently-active order.  The wake-up
socketpair has its own tests: test_wakeup.py.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time

import pytest

from kafka_net.network import selector as selector_module
from kafka_net.network.memory_pool import SimpleMemoryPool
from kafka_net.network.mute_state import ChannelMuteEvent as Ev
from kafka_net.network.selector import _READ, _WRITE, Selector
from kafka_net.network.wakeup import WakeupSocketpair


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class CountingSelector(Selector):
    """Counts the epoll changes (register, modify, unregister) made for channels."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.changes = 0
        real_set = self._set_interest

        def counting(channel, events):
            before = self._interest[channel.id]
            real_set(channel, events)
            self.changes += before != events

        self._set_interest = counting


@contextlib.contextmanager
def connectable(selector):
    """``selector`` with a ``connect(name)`` that registers the server end of a new
    socketpair under ``name`` and returns the client end; all closed afterwards."""
    clients = []

    def connect(name: str) -> socket.socket:
        server_side, client = socket.socketpair()
        server_side.setblocking(False)
        clients.append(client)
        selector.register(name, server_side)
        return client

    selector.connect = connect
    try:
        yield selector
    finally:
        selector.close_all()
        selector._wakeup.close()
        for c in clients:
            c.close()


@pytest.fixture
def sel():
    with connectable(CountingSelector(1 << 20, -1, WakeupSocketpair(), name="test")) as s:
        yield s


def run_selector_until(selector, predicate, timeout: float = 5.0):
    """Run the Selector's poll loop (as its Processor would) until ``predicate()``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        selector.poll(0.05)


def take_and_mute(selector, client: socket.socket, payload: bytes, connection_id="c1"):
    """The client sends one request; it is taken and its connection muted."""
    client.sendall(frame(payload))
    run_selector_until(selector, lambda: selector.completed_receives)
    selector.completed_receives.clear()
    selector.mute(connection_id)


def serve_one(selector, connection_id: str, one_call: bool = False) -> bytes:
    """What the Processor does for one request: take it, mute, answer, unmute
    (``one_call``: as the Processor does it, request_received and response_sent)."""
    run_selector_until(selector, lambda: selector.completed_receives)
    channel, request = selector.completed_receives.pop(0)
    assert channel.id == connection_id
    if one_call:
        channel.mute_state.request_received()
    else:
        selector.mute(connection_id)
        channel.mute_state.handle(Ev.REQUEST_RECEIVED)
    answer(selector, connection_id, b"re:" + request, one_call)
    return request


def answer(selector, connection_id: str, payload: bytes, one_call: bool = False) -> None:
    """The response to the request in the server goes out; the connection unmutes
    (``one_call``: through ``Selector.response_sent``, as the Processor does)."""
    channel = selector.channels[connection_id]
    selector.send(connection_id, frame(payload))
    run_selector_until(selector, lambda: connection_id in selector.completed_sends)
    selector.completed_sends.remove(connection_id)
    if one_call:
        selector.response_sent(channel)
        assert not channel.mute_state.muted
    else:
        channel.mute_state.handle(Ev.RESPONSE_SENT)
        assert selector.unmute(connection_id)


def test_request_response_client_costs_no_epoll_change(sel):
    client = sel.connect("c1")
    client.settimeout(5)
    for i in range(20):
        client.sendall(frame(b"req%d" % i))
        assert serve_one(sel, "c1") == b"req%d" % i
        assert client.recv(100) == frame(b"re:req%d" % i)
    assert sel.changes == 0


def test_muted_channel_is_not_read_and_read_interest_comes_back_on_unmute(sel):
    client = sel.connect("c1")
    take_and_mute(sel, client, b"first")
    client.sendall(frame(b"second"))            # pipelined behind the first
    sel.poll(0.2)
    assert sel.completed_receives == []
    assert sel._interest["c1"] == 0               # readable while muted: READ dropped
    sel.poll(0.05)                                # and it no longer wakes the poll
    assert sel.channels["c1"].decoder.buffered() == 0   # left in the socket
    sel.channels["c1"].mute_state.handle(Ev.REQUEST_RECEIVED)
    sel.send("c1", frame(b"ok"))
    run_selector_until(sel, lambda: sel.completed_sends)
    sel.completed_sends.clear()
    sel.channels["c1"].mute_state.handle(Ev.RESPONSE_SENT)
    assert sel.unmute("c1")
    assert sel._interest["c1"] == _READ
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives[0][1] == b"second"


def test_pipelined_requests_buffered_in_one_read_come_out_one_per_unmute(sel):
    client = sel.connect("c1")
    client.sendall(b"".join(frame(b"r%d" % i) for i in range(5)))
    got = []
    for _ in range(5):
        run_selector_until(sel, lambda: sel.completed_receives)
        (channel, request), = sel.completed_receives
        sel.completed_receives.clear()
        got.append(request)
        sel.mute("c1")
        sel.poll(0)
        assert sel.completed_receives == []       # muted: nothing more handed out
        sel.unmute("c1")
    assert got == [b"r%d" % i for i in range(5)]


def test_write_interest_only_while_a_send_is_unfinished(sel):
    client = sel.connect("c1")
    server_side = sel.channels["c1"].socket
    server_side.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    big = frame(b"x" * 1_000_000)
    sel.mute("c1")
    sel.send("c1", big)
    assert sel._interest["c1"] & _WRITE
    received = bytearray()
    client.settimeout(5)
    while len(received) < len(big):
        sel.poll(0)
        try:
            received += client.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass
    run_selector_until(sel, lambda: sel.completed_sends)
    assert bytes(received) == big
    assert not sel._interest["c1"] & _WRITE


def test_idle_expiry_closes_the_least_recently_active_first(sel):
    sel._idle_ns = 200_000_000                     # 200 ms
    old = sel.connect("old")
    sel.connect("new")
    time.sleep(0.15)
    old.sendall(frame(b"keep me"))                 # "old" becomes the most recent
    run_selector_until(sel, lambda: sel.completed_receives)
    sel.completed_receives.clear()
    run_selector_until(sel, lambda: sel.disconnected)
    assert sel.disconnected[0] == ("new", "idle for longer than connections.max.idle.ms")
    assert "old" in sel.channels


def test_peer_close_while_muted_is_seen_after_unmute(sel):
    client = sel.connect("c1")
    take_and_mute(sel, client, b"last")
    client.close()
    sel.poll(0.1)
    assert "c1" in sel.channels and sel.disconnected == []
    sel.unmute("c1")
    run_selector_until(sel, lambda: sel.disconnected)
    assert sel.disconnected == [("c1", "peer closed the connection")]


# --- memory pressure (queued.max.request.bytes; reference D2, D11, I3) ------------------

def take_into_server(selector, client: socket.socket, payload: bytes, connection_id="c1"):
    """As the Processor: the request is taken, its connection muted, it is in the server."""
    take_and_mute(selector, client, payload, connection_id)
    selector.channels[connection_id].mute_state.handle(Ev.REQUEST_RECEIVED)


def test_a_pipelined_request_is_read_ahead_but_handed_out_only_after_the_answer(sel):
    client = sel.connect("c1")
    client.settimeout(5)
    take_into_server(sel, client, b"first")
    client.sendall(frame(b"second"))             # pipelined behind the first
    run_selector_until(sel, lambda: sel.channels["c1"].decoder.buffered())
    sel.poll(0.05)
    assert sel.completed_receives == []          # read, but not handed out: muted
    assert sel._interest["c1"] == _READ and sel.changes == 0   # no epoll change
    answer(sel, "c1", b"re:first")
    assert client.recv(100) == frame(b"re:first")
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives[0][1] == b"second"
    assert sel.changes == 0


def test_reading_ahead_stops_at_its_limit(sel, monkeypatch):
    monkeypatch.setattr(selector_module, "READ_AHEAD_BYTES", 100)
    client = sel.connect("c1")
    take_into_server(sel, client, b"first")
    pipelined = [frame(b"p%d" % i + b"x" * 60) for i in range(4)]   # 66 bytes each
    client.sendall(b"".join(pipelined))
    size = len(b"".join(pipelined))
    run_selector_until(sel, lambda: sel.channels["c1"].decoder.buffered() == size)
    # Over the limit now: whatever comes next stays in the socket until the unmute.
    client.sendall(frame(b"later"))
    run_selector_until(sel, lambda: sel._interest["c1"] == 0)       # READ dropped
    sel.poll(0.05)
    assert sel.channels["c1"].decoder.buffered() == size
    answer(sel, "c1", b"ok")
    assert sel._interest["c1"] == _READ
    got = []
    for _ in range(5):
        run_selector_until(sel, lambda: sel.completed_receives)
        got.append(sel.completed_receives.pop()[1])
        sel.mute("c1")
        sel.unmute("c1")
    assert got == [p[4:] for p in pipelined] + [b"later"]


def test_a_throttled_channel_is_not_read_ahead(sel):
    client = sel.connect("c1")
    take_into_server(sel, client, b"first")
    sel.channels["c1"].mute_state.handle(Ev.THROTTLE_STARTED)
    client.sendall(frame(b"second"))
    run_selector_until(sel, lambda: sel._interest["c1"] == 0)
    assert sel.channels["c1"].decoder.buffered() == 0   # left in the socket


def test_a_close_read_ahead_comes_after_the_answer(sel):
    client = sel.connect("c1")
    client.settimeout(5)
    take_into_server(sel, client, b"first")
    client.sendall(frame(b"second"))
    client.shutdown(socket.SHUT_WR)               # pipelined, then gone
    run_selector_until(sel, lambda: sel.channels["c1"].remote_closed)
    assert "c1" in sel.channels and not sel.disconnected
    answer(sel, "c1", b"re:first")
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives.pop()[1] == b"second"
    sel.mute("c1")
    sel.channels["c1"].mute_state.handle(Ev.REQUEST_RECEIVED)
    answer(sel, "c1", b"re:second")              # the last answer: the close follows
    assert [c for c, _ in sel.disconnected] == ["c1"]
    assert client.recv(100) == frame(b"re:first") + frame(b"re:second")


@pytest.fixture
def pooled():
    """A Selector with a 1000-byte pool (max single allocation 1000)."""
    pool = SimpleMemoryPool(1000, 1000)
    with connectable(Selector(1000, -1, WakeupSocketpair(), name="test",
                              memory_pool=pool)) as s:
        yield s, pool


def test_a_refused_channel_is_muted_for_memory_and_unmuted_when_memory_returns(pooled):
    sel, pool = pooled
    assert pool.try_allocate(1000)               # someone else holds it all
    client = sel.connect("c1")
    client.sendall(frame(b"x" * 10))
    run_selector_until(sel, lambda: "c1" in sel._memory_muted)
    assert sel.completed_receives == []
    assert sel._interest["c1"] & _READ == 0      # not read while waiting
    assert not sel.channels["c1"].mute_state.muted   # not the request mute
    sel.poll(0)
    assert "c1" in sel._memory_muted              # still out of memory
    pool.release(1000)
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives[0][1] == b"x" * 10
    assert pool.used == 10                       # the grant went with the frame
    assert not sel._memory_muted and sel._interest["c1"] & _READ
    sel.release_frame(sel.completed_receives.pop()[1])
    assert pool.used == 0


def test_closing_a_channel_gives_back_its_partial_frames_grant(pooled):
    sel, pool = pooled
    client = sel.connect("c1")
    client.sendall(struct.pack(">i", 500) + b"y" * 100)
    run_selector_until(sel, lambda: pool.used == 500)
    sel.close("c1")
    assert pool.used == 0


def test_frames_left_untaken_at_close_all_are_given_back(pooled):
    sel, pool = pooled
    client = sel.connect("c1")
    client.sendall(frame(b"z" * 300))
    run_selector_until(sel, lambda: sel.completed_receives)
    assert pool.used == 300
    sel.close_all()
    assert pool.used == 0


def test_no_more_is_read_while_a_complete_frame_waits(pooled):
    # Kafka reads no further while a completed receive is pending, so what a
    # pipelining client sent stays in the socket, not in the broker's memory.
    sel, _ = pooled
    client = sel.connect("c1")
    first, second = frame(b"a" * 10), frame(b"b" * 10)
    client.sendall(first + second)
    run_selector_until(sel, lambda: sel.completed_receives)
    sel.completed_receives.clear()               # taken, and (graceful stop) not muted
    client.sendall(b"c" * 300)
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives[0][1] == b"b" * 10
    assert sel.bytes_in == len(first + second)   # the 300 bytes were not read


def test_ready_channels_are_shuffled_only_when_memory_is_low(pooled, monkeypatch):
    sel, pool = pooled
    shuffled = []
    monkeypatch.setattr(selector_module.random, "shuffle", lambda seq: shuffled.append(len(seq)))
    clients = [sel.connect(f"c{i}") for i in range(3)]
    for client in clients:
        client.sendall(frame(b"q"))
    run_selector_until(sel, lambda: len(sel.completed_receives) == 3)
    assert shuffled == []                        # 997 of 1000 bytes free
    for channel, request in sel.completed_receives:
        sel.release_frame(request)
    sel.completed_receives.clear()
    assert pool.try_allocate(950)                # 50 left: below 10%
    clients[0].sendall(frame(b"r"))
    run_selector_until(sel, lambda: sel.completed_receives)
    assert shuffled and all(n >= 1 for n in shuffled)


def test_a_closed_peers_complete_request_waits_for_memory_then_is_delivered(pooled):
    sel, pool = pooled
    assert pool.try_allocate(1000)
    client = sel.connect("c1")
    client.sendall(frame(b"last words"))
    client.close()                                # graceful close: still to be answered
    run_selector_until(sel, lambda: "c1" in sel._memory_muted)
    sel.poll(0.05)
    assert "c1" in sel.channels and sel.completed_receives == []
    pool.release(1000)
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives[0][1] == b"last words"


def test_mute_on_oom():
    """Kafka's SelectorTest.testMuteOnOOM: a 900-byte pool, two 900-byte requests."""
    pool = SimpleMemoryPool(900, 900)
    with connectable(Selector(1000, -1, WakeupSocketpair(), name="test",
                              memory_pool=pool)) as sel:
        for name in ("x", "y"):
            sel.connect(name).sendall(frame(bytes(range(100)) * 9))
        run_selector_until(sel, lambda: sel.completed_receives)
        (first, request), = sel.completed_receives
        sel.completed_receives.clear()
        assert pool.available == 0 and sel._out_of_memory
        sel.poll(0.01)
        assert sel.completed_receives == []
        assert pool.available == 0 and sel._out_of_memory
        sel.release_frame(request)
        assert pool.available == 900              # released back to the pool
        run_selector_until(sel, lambda: sel.completed_receives)
        (second, _), = sel.completed_receives
        assert second.id != first.id
        assert pool.available == 0 and not sel._out_of_memory


def test_response_sent_unmutes_and_keeps_a_throttled_channel_muted(sel):
    client = sel.connect("c1")
    take_and_mute(sel, client, b"first")
    channel = sel.channels["c1"]
    channel.mute_state.handle(Ev.REQUEST_RECEIVED)
    channel.mute_state.handle(Ev.THROTTLE_STARTED)
    sel.response_sent(channel)                      # the throttle still holds it
    assert channel.mute_state.muted and "c1" in sel.channels
    client.sendall(frame(b"second"))
    sel.poll(0.05)
    assert sel.completed_receives == []
    channel.mute_state.handle(Ev.THROTTLE_ENDED)
    assert sel.unmute("c1")
    run_selector_until(sel, lambda: sel.completed_receives)
    assert sel.completed_receives[0][1] == b"second"


def test_pipelined_requests_then_a_close_are_served_and_the_channel_closed(sel):
    """Two pipelined requests, then the client closes its side: both are answered
    (Kafka's closingChannels) through request_received / response_sent, then the
    channel goes."""
    client = sel.connect("c1")
    client.sendall(frame(b"r1") + frame(b"r2"))
    client.shutdown(socket.SHUT_WR)
    assert [serve_one(sel, "c1", one_call=True) for _ in range(2)] == [b"r1", b"r2"]
    run_selector_until(sel, lambda: sel.disconnected)
    assert [cid for cid, _ in sel.disconnected] == ["c1"] and "c1" not in sel.channels
    client.settimeout(5)
    received = b""
    while chunk := client.recv(100):   # up to the server's close
        received += chunk
    assert received == frame(b"re:r1") + frame(b"re:r2")


def test_response_sent_of_a_remote_closed_channel_closes_it_at_once(sel):
    """The branch itself: the peer's close was seen while a request of it was inside
    the server (set directly here); the response's response_sent closes the channel,
    with no poll in between."""
    client = sel.connect("c1")
    take_and_mute(sel, client, b"only")
    channel = sel.channels["c1"]
    channel.mute_state.handle(Ev.REQUEST_RECEIVED)
    channel.remote_closed = True
    sel.send("c1", frame(b"answer"))
    sel.completed_sends.clear()
    sel.response_sent(channel)
    assert "c1" not in sel.channels
    assert [cid for cid, _ in sel.disconnected] == ["c1"]
