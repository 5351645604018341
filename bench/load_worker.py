"""One worker of ``bench/loadgen.py``: a share of the connections in one ``selectors``
loop, in its own process (or in the caller's with ``workers=0``)."""

from __future__ import annotations

import selectors
import socket
import time
from array import array
from collections import deque

from bench.load_spec import (
    APIS, DRAIN_S, RECV_CHUNK, SAMPLE_EVERY, CID_MAX, CID_OFFSET, INT32, LoadSpec,
    has_error, request_template)
from kafka_net.protocol.codec import decode_response


class _Conn:
    __slots__ = ("sock", "index", "buf", "inflight", "next_cid", "sent", "received", "out",
                 "open", "head", "tail")

    def __init__(self, sock: socket.socket, index: int) -> None:
        self.sock = sock
        self.index = index                # over all workers' connections
        self.head = self.tail = b""       # the request template around the correlation id
        self.buf = bytearray()
        self.inflight: deque = deque()    # (correlation_id, send time ns), oldest first
        self.next_cid = 0
        self.sent = 0
        self.received = 0
        self.out = bytearray()            # requests the socket did not take yet
        self.open = True


def connect(spec: LoadSpec, count: int, first_index: int = 0) -> list[_Conn]:
    conns = []
    for i in range(count):
        sock = socket.create_connection((spec.host, spec.port), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conns.append(_Conn(sock, first_index + i))
    return conns


def worker_run(spec: LoadSpec, conns: list[_Conn], start_ns: int) -> dict:
    """The measuring loop.  ``start_ns`` is a time.monotonic_ns() value (one clock
    for every process on the machine), when every worker begins sending."""
    cpu_start = cpu_seconds()
    api_key, api_version, body = APIS[spec.api]
    shared = None if callable(body) else request_template(spec, 0)
    for c in conns:
        template = shared or request_template(spec, c.index)
        c.head, c.tail = template[:CID_OFFSET], template[CID_OFFSET + 4:]
    pack_cid = INT32.pack
    unpack_from = INT32.unpack_from
    now_ns = time.monotonic_ns

    if spec.duration is not None:
        window_start = start_ns + int(spec.warmup * 1e9)
        window_end = window_start + int(spec.duration * 1e9)
        stop_sending = window_end
        give_up = min(window_end + int(DRAIN_S * 1e9), start_ns + int(spec.timeout * 1e9))
        per_conn = None
    else:
        window_start, window_end = start_ns, None
        stop_sending = None
        give_up = start_ns + int(spec.timeout * 1e9)
        per_conn = spec.requests

    latencies = array("q")
    record = latencies.append
    counted = mismatches = errors = sampled = disconnects = unanswered = 0
    outstanding = 0          # requests sent and neither answered nor given up on
    last_counted = 0

    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)

    def send(c: _Conn, n: int, t: int) -> None:
        nonlocal outstanding
        if per_conn is not None:
            n = min(n, per_conn - c.sent)
        if n <= 0:
            return
        cid = c.next_cid
        head, tail = c.head, c.tail
        parts = []
        for _ in range(n):
            parts.append(head + pack_cid(cid) + tail)
            c.inflight.append((cid, t))
            cid = 0 if cid == CID_MAX else cid + 1
        c.next_cid = cid
        c.sent += n
        outstanding += n
        c.out += b"".join(parts)
        _flush(c)

    def _flush(c: _Conn) -> None:
        try:
            sent = c.sock.send(c.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        del c.out[:sent]
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0)
        if sel.get_key(c.sock).events != want:
            sel.modify(c.sock, want, c)

    def close(c: _Conn) -> None:
        nonlocal unanswered, outstanding
        unanswered += len(c.inflight)
        outstanding -= len(c.inflight)
        c.inflight.clear()
        c.open = False
        sel.unregister(c.sock)
        c.sock.close()

    # Go: every connection gets its first `depth` requests.
    while now_ns() < start_ns:
        time.sleep(min(0.01, max(0.0, (start_ns - now_ns()) / 1e9)))
    t0 = now_ns()
    for c in conns:
        try:
            send(c, spec.depth, t0)
        except OSError:
            disconnects += 1
            close(c)

    # Every answer is followed at once by the next request (until the count or the
    # time is up), so nothing in flight means there is nothing left to do.
    while outstanding > 0:
        t = now_ns()
        if t >= give_up:
            break
        for key, mask in sel.select(min(0.1, (give_up - t) / 1e9)):
            c = key.data
            if not c.open:
                continue
            try:
                if mask & selectors.EVENT_WRITE and c.out:
                    _flush(c)
                if not mask & selectors.EVENT_READ:
                    continue
                data = c.sock.recv(RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                disconnects += 1
                close(c)
                continue
            t = now_ns()
            buf = c.buf
            buf += data
            pos, end, got = 0, len(buf), 0
            in_window = t >= window_start and (window_end is None or t < window_end)
            while end - pos >= 8:
                size = unpack_from(buf, pos)[0]
                if end - pos < 4 + size:
                    break
                cid = unpack_from(buf, pos + 4)[0]
                expected, sent_at = c.inflight.popleft() if c.inflight else (None, t)
                if cid != expected:
                    mismatches += 1
                if c.received % SAMPLE_EVERY == 0:
                    sampled += 1
                    _, decoded = decode_response(api_key, api_version,
                                                 bytes(buf[pos + 4:pos + 4 + size]))
                    if has_error(decoded):
                        errors += 1
                c.received += 1
                got += 1
                if in_window:
                    record(t - sent_at)
                pos += 4 + size
            if pos:
                del buf[:pos]
            outstanding -= got
            if in_window and got:
                counted += got
                last_counted = t
            if got and (stop_sending is None or t < stop_sending):
                try:
                    send(c, got, t)
                except OSError:
                    disconnects += 1
                    close(c)

    for c in conns:
        if c.open:
            close(c)
    sel.close()
    return {
        "latencies": latencies.tobytes(), "counted": counted,
        "t0": t0, "last_counted": last_counted,
        "sent": sum(c.sent for c in conns), "received": sum(c.received for c in conns),
        "mismatches": mismatches, "errors": errors, "sampled": sampled,
        "unanswered": unanswered, "disconnects": disconnects,
        "cpu_s": cpu_seconds() - cpu_start,
    }


def cpu_seconds() -> float:
    """CPU time of this thread (the measuring loop), so an in-process run
    (workers=0) does not count a server running in the same process."""
    return time.thread_time()


def worker_main(spec: LoadSpec, count: int, first_index: int, ready, go, start_at,
                 results) -> None:
    """Entry point of a worker process."""
    try:
        conns = connect(spec, count, first_index)
    except OSError as exc:
        ready.put(f"connect failed: {exc}")
        return
    ready.put("ready")
    if not go.wait(spec.timeout):
        for c in conns:
            c.sock.close()
        return
    results.put(worker_run(spec, conns, start_at.value))
