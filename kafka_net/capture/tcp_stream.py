"""One direction of a captured TCP connection rebuilt as a byte stream, sans-IO
(the receiver half of :mod:`kafka_net.capture.tcp`; :mod:`.tcp_frames` splits
the stream into Kafka frames).

Byte streams
------------
Per direction, data segments are placed by sequence number relative to the
stream start and unwrapped across the 2**32 wraparound.  The stream start is
the SYN's sequence number + 1 (the client's can also be read from the
broker's SYN+ACK); with neither captured, the lowest sequence number among
the first 256 data segments.  Bytes are delivered as a TCP receiver would,
in capture order: a segment that arrives early waits until the bytes before
it are in, bytes already delivered are dropped (retransmissions, overlaps,
keepalive probes: the first captured copy wins).  What is missing leaves a
*hole*:

* a **lost** hole: bytes that never appear in the capture (dropped by the
  capture, or a rotated file that was not given).  At the end of a stream
  they are found from the FIN's sequence number, or from the peer's ACKs
  (bytes acknowledged but never captured; one byte is not counted, it may be
  a FIN that was not captured).
* a **cut** hole: bytes the snap length cut off (the IP header says they
  were sent).  Frame boundaries stay known; the frame is marked truncated.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from heapq import heappop, heappush

from kafka_net.capture.packet import ACK, FIN, SYN, Packet

_EARLY_WINDOW = 1 << 20                 # no SYN: how far before the first segment to start
_SEQ_MOD, _SEQ_HALF = 1 << 32, 1 << 31


@dataclass
class FlowStats:
    """One direction of a connection (client -> broker carries the requests)."""

    segments: int = 0                # data-carrying segments
    bytes: int = 0                   # distinct payload bytes captured
    retransmitted_segments: int = 0  # data segments that brought nothing new
    retransmitted_bytes: int = 0     # duplicate bytes dropped (incl. partial overlaps)
    out_of_order_segments: int = 0   # captured before bytes that precede them
    gaps: int = 0                    # holes of bytes missing from the capture
    gap_bytes: int = 0
    cut_bytes: int = 0               # bytes the snap length cut off
    skipped_bytes: int = 0           # bytes not framed (before a boundary was found ...)
    frames: int = 0
    truncated_frames: int = 0
    dropped_frames: int = 0          # frames left out (see tcp_frames)
    incomplete_tail_bytes: int = 0   # bytes of a frame still unfinished at the end
    unverifiable: str | None = None  # why this direction cannot be checked (first reason)


class ByteStream:
    """One direction: its packets (:meth:`add`), then its byte stream
    (:meth:`assemble`), with the queries framing needs."""

    def __init__(self) -> None:
        self.stats = FlowStats()
        self.segs: list[tuple[int, int, bytes, int, int | None, Packet]] = []  # seq, ts,
        # payload, length, the ACK it carried (None: no ACK flag), the packet
        self.isn: int | None = None
        self.syn_ts: int | None = None
        self.fin_seq: int | None = None
        self.fin_off: int | None = None       # its stream offset (after assemble)
        self.fin_ts: int | None = None
        self.fin_ack: int | None = None
        self.acked_isn: int | None = None     # the peer's ISN, from our SYN+ACK
        self.peer_acks: list[tuple[int, int]] = []   # (ts, ack) the peer sent us
        self.peer_acks_reliable = True        # every peer segment carried an ACK
        self.acked_ts: list[int] = []         # the same, unwrapped: by then the peer had
        self.acked_off: list[int] = []        # all bytes before acked_off (running max)
        # the stream, filled by assemble()
        self.run_starts: list[int] = []
        self.run_data: list[bytes] = []
        self.holes: list[list] = []               # [start, end, lost]
        self.piece_starts: list[int] = []     # per delivered segment: [start, end) of
        self.piece_ends: list[int] = []       # its new bytes, when they became
        self.piece_ts: list[int] = []         # deliverable, and when it was captured
        self.piece_own_ts: list[int] = []
        self.piece_acks: list[int | None] = []   # the ACK its packet carried (raw)
        self.piece_packets: list[Packet] = []    # its packet (file, record number)
        self.seg_starts: list[int] = []
        self.end = 0
        self.first_data_ts = 0
        self.ref_seq, self.ref_off = 0, 0

    def add(self, p: Packet) -> None:
        seq = p.seq
        if p.flags & SYN:
            if self.isn is None:
                self.isn, self.syn_ts = p.seq, p.timestamp_ns
                if p.flags & ACK:
                    self.acked_isn = (p.ack - 1) % _SEQ_MOD
            seq = (seq + 1) % _SEQ_MOD      # data on a SYN (TCP Fast Open) follows it
        if p.payload_len:
            self.segs.append((seq, p.timestamp_ns, p.payload, p.payload_len,
                              p.ack if p.flags & ACK else None, p))
        if p.flags & FIN and self.fin_seq is None:
            self.fin_seq = (seq + p.payload_len) % _SEQ_MOD
            self.fin_ts = p.timestamp_ns
            self.fin_ack = p.ack if p.flags & ACK else None

    def assemble(self) -> None:
        """Rebuild the byte stream like a TCP receiver would, in capture order: bytes
        are delivered when everything before them is in (a segment that arrives early
        waits in a heap); bytes already delivered are dropped.  Whatever is still
        waiting at the end lies beyond lost bytes: holes."""
        st = self.stats
        segs = self.segs
        st.segments = len(segs)
        if self.isn is not None:
            base = (self.isn + 1) % _SEQ_MOD
        elif segs:
            # No SYN: start at the lowest sequence number among the first segments
            # (the very first captured one may have overtaken its predecessors).
            first = segs[0][0]
            back = [(seq - first + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF for seq, *_ in segs[:256]]
            base = (first + min(0, min(d for d in back if d >= -_EARLY_WINDOW))) % _SEQ_MOD
        else:
            return
        self.ref_seq = base
        if segs:
            self.first_data_ts = segs[0][1]
        ref_seq, ref_off = base, 0
        self._rcv = 0
        self._run_start, self._run_end, self._parts = 0, -1, []
        waiting: list = []
        acks, next_ack, acked = self.peer_acks, 0, 0
        for rank, (seq, ts, payload, length, seg_ack, packet) in enumerate(segs):
            while next_ack < len(acks) and acks[next_ack][0] <= ts:
                ack_ts, ack = acks[next_ack]
                acked = max(acked, ref_off + (ack - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF)
                self.acked_ts.append(ack_ts)
                self.acked_off.append(acked)
                next_ack += 1
            off = ref_off + (seq - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF
            if off > ref_off:
                ref_seq, ref_off = seq, off
            if off + length <= self._rcv:
                st.retransmitted_segments += 1
                st.retransmitted_bytes += length
            elif off <= self._rcv:
                self._deliver(off, ts, ts, payload, length, seg_ack, packet)
                while waiting and waiting[0][0] <= self._rcv:
                    w_off, _rank, w_ts, *rest = heappop(waiting)
                    st.out_of_order_segments += 1
                    self._deliver(w_off, ts, w_ts, *rest)
            else:
                heappush(waiting, (off, rank, ts, payload, length, seg_ack, packet))
        while waiting:     # beyond lost bytes
            w_off, _rank, w_ts, *rest = heappop(waiting)
            if w_off > self._rcv:
                self._hole(self._rcv, w_off, True)
                self._rcv = w_off
            self._deliver(w_off, w_ts, w_ts, *rest)
        if self._parts:
            self.run_starts.append(self._run_start)
            self.run_data.append(b"".join(self._parts))
        end = self._rcv
        for ack_ts, ack in acks[next_ack:]:
            acked = max(acked, ref_off + (ack - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF)
            self.acked_ts.append(ack_ts)
            self.acked_off.append(acked)
        if self.fin_seq is not None:
            fin_off = ref_off + (self.fin_seq - ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF
            self.fin_off = fin_off
            if fin_off > end:
                self._hole(end, fin_off, True)
                end = fin_off
        elif acked > end + 1:
            # The peer acknowledged bytes the capture does not have (one byte more may
            # just be a FIN that was not captured).
            self._hole(end, acked, True)
            end = acked
        self.end = end
        self.ref_seq, self.ref_off = ref_seq, ref_off
        for start, stop, lost in self.holes:
            if lost:
                st.gaps += 1
                st.gap_bytes += stop - start
        self.segs = []   # no longer needed
        del self._parts

    def _deliver(self, off: int, ts: int, own_ts: int, payload: bytes, length: int,
                 ack: int | None = None, packet: Packet | None = None) -> None:
        """Append a segment's new bytes (``off <= self._rcv`` holds) to the stream;
        ``ts`` is when they became deliverable, ``own_ts`` when they were captured."""
        st = self.stats
        rcv = self._rcv
        end = off + length
        if end <= rcv:
            st.retransmitted_segments += 1
            st.retransmitted_bytes += length
            return
        if off < rcv:
            st.retransmitted_bytes += rcv - off
            start = rcv
        else:
            start = off
            self.seg_starts.append(off)
        known_end = off + len(payload)
        if known_end > start:
            chunk = payload if start == off else payload[start - off:]
            if start == self._run_end:
                self._parts.append(chunk)
            else:
                if self._parts:
                    self.run_starts.append(self._run_start)
                    self.run_data.append(b"".join(self._parts))
                self._run_start, self._parts = start, [chunk]
            self._run_end = known_end
            st.bytes += known_end - start
        cut_from = max(known_end, start)
        if end > cut_from:
            self._hole(cut_from, end, False)
            st.cut_bytes += end - cut_from
        self.piece_starts.append(start)
        self.piece_ends.append(end)
        self.piece_ts.append(ts)
        self.piece_own_ts.append(own_ts)
        self.piece_acks.append(ack)
        self.piece_packets.append(packet)
        self._rcv = end

    def offset_of(self, seq: int) -> int:
        """Stream offset of sequence number ``seq`` (an ACK the peer sent us)."""
        return self.ref_off + (seq - self.ref_seq + _SEQ_HALF) % _SEQ_MOD - _SEQ_HALF

    def ack_at(self, pos: int) -> int | None:
        """The raw ACK carried by the packet that brought the byte at ``pos``."""
        i = bisect_right(self.piece_starts, pos) - 1
        return self.piece_acks[i] if i >= 0 else None

    def _sent_after(self, pos: int) -> int:
        """A time the bytes at ``pos`` were sent after: when the byte before them was."""
        i = bisect_right(self.piece_starts, pos) - 1
        if i >= 0:
            return self.piece_own_ts[i] + (0 if pos < self.piece_ends[i] else 1)
        return self.syn_ts + 1 if self.syn_ts is not None else self.first_data_ts

    def _hole(self, start: int, end: int, lost: bool) -> None:
        if self.holes and self.holes[-1][1] == start:
            self.holes[-1][1] = end
            self.holes[-1][2] = self.holes[-1][2] or lost
        else:
            self.holes.append([start, end, lost])

    def _run_at(self, pos: int) -> int | None:
        i = bisect_right(self.run_starts, pos) - 1
        if i >= 0 and pos < self.run_starts[i] + len(self.run_data[i]):
            return i
        return None

    def _known(self, pos: int, n: int) -> bytes:
        """Up to ``n`` captured bytes from ``pos`` on (fewer at a hole or the end)."""
        i = self._run_at(pos)
        if i is None:
            return b""
        at = pos - self.run_starts[i]
        return self.run_data[i][at:at + n]

    def _ts(self, start: int, end: int) -> int:
        """Timestamp of the latest packet holding bytes of [start, end)."""
        i = max(bisect_right(self.piece_starts, start) - 1, 0)
        j = max(bisect_left(self.piece_starts, end) - 1, i)
        if i == j:              # a frame in one packet: the common case
            return self.piece_ts[i]
        return max(self.piece_ts[i:j + 1])

    def completing_packet(self, start: int, end: int) -> Packet | None:
        """The packet that completed the bytes [start, end): the last one captured
        among those holding them (Wireshark shows a reassembled PDU there)."""
        i = max(bisect_right(self.piece_starts, start) - 1, 0)
        j = max(bisect_left(self.piece_starts, end) - 1, i)
        if not self.piece_own_ts:
            return None
        if i == j:              # a frame in one packet: the common case
            return self.piece_packets[i]
        last = max(range(i, j + 1), key=lambda k: (self.piece_own_ts[k], k))
        return self.piece_packets[last]

    def _loss_ts(self, pos: int) -> int | None:
        """The earliest capture time of a frame (either direction) that can depend on
        the bytes at ``pos``; None if no captured frame can.

        Bytes that are there but unusable (not Kafka, a header cut by the snap
        length): the capture time of their packet.  Lost bytes: they were sent after
        the byte before them, and the peer can answer them only once it has them, so
        only in packets acknowledging them (TCP puts the current cumulative ACK in
        every segment): the later of the two.  A peer that never acknowledged them
        never answered them.  (If some peer segment carried no ACK, only the first
        bound is used.)
        """
        i = bisect_right(self.piece_starts, pos) - 1
        if i >= 0 and pos < self.piece_ends[i]:
            return self.piece_own_ts[i]
        if i >= 0:
            sent_after = self.piece_own_ts[i] + 1
        elif self.syn_ts is not None:
            sent_after = self.syn_ts + 1
        else:
            sent_after = self.first_data_ts
        if not self.peer_acks_reliable:
            return sent_after        # segments without ACKs: nothing better to go by
        j = bisect_right(self.acked_off, pos)
        if j == len(self.acked_off):
            return None
        return max(sent_after, self.acked_ts[j])

    def _known_bytes(self, start: int, end: int) -> int:
        """How many bytes of [start, end) were captured."""
        i = max(bisect_right(self.run_starts, start) - 1, 0)
        n = 0
        for rs, rd in zip(self.run_starts[i:], self.run_data[i:]):
            if rs >= end:
                break
            n += max(0, min(rs + len(rd), end) - max(rs, start))
        return n

    def _first_lost_hole(self, start: int, end: int) -> int | None:
        """Start of the first lost hole overlapping [start, end), if any."""
        i = bisect_right(self.holes, [start, float("inf"), True]) - 1
        for h in self.holes[max(i, 0):]:
            if h[0] >= end:
                break
            if h[1] > start and h[2]:
                return max(h[0], start)
        return None

    def _gap_bytes(self, start: int, end: int) -> int:
        return sum(min(h[1], end) - max(h[0], start) for h in self.holes
                   if h[2] and h[0] < end and h[1] > start)
