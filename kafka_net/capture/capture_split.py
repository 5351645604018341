"""Capture files cut into byte ranges at record boundaries, sans-IO, so that
one file of any size becomes many tasks (the conformance job's first stage).

A pcap or pcapng file is a chain of records (pcap) or blocks (pcapng), each
saying how long it is.  :func:`plan_ranges` walks that chain once, with the
same loop that reads packets (:func:`kafka_net.capture.pcap.walk_records`)
but decoding nothing, and cuts it at the first record boundary at or past
every ``split_bytes``.  Each range carries the reader's state at its start
(:class:`~kafka_net.capture.pcap.Resume`: the pcap header's byte order, link
type and timestamp unit; pcapng's section byte order, interfaces and last
timestamp; the number of packet records before it), so an executor reads
its bytes alone and numbers its packets as Wireshark numbers them in the
whole file.  Walking the lengths is exact where resynchronising on a guessed
boundary (RAPCAP's approach) is a heuristic; it reads the file's record
headers once, on the driver: a compiled loop for classic pcap
(``_flows.pcap_cuts``: 0.09 CPU s for a 333 MB file of 724k records, mostly
mapping its pages, where the Python walk takes 0.5 s), the Python walk for
pcapng and under ``KAFKA_NET_READABLE=1``.

Where the chain breaks (a corrupt length), cutting stops: the rest of the
file is the last range, whose reader meets the same break and reports it.
IP fragments of one datagram in two ranges are reported as incomplete by
both (ranges are tens of MiB; fragmented TCP is rare).

A kafka-net segment (``.kncap``) is a chain of length-prefixed records too,
and is cut the same way: :func:`kafka_net.capture.format.record_offsets`
follows the lengths (no CRC, nothing decoded) and stops exactly where the
segment reader stops (a zero length: the zero tail of an unclosed segment or
a torn record; an impossible length; one running past the end), so every
cut is a boundary a reader from the start also reaches, and all that comes
after the last plausible record (a zero tail, a torn tail, garbage) is in
the last range, whose reader sees it as the whole-file reader does.  A bad
CRC or an undecodable body in the middle does not stop the segment reader
(the length frames the record: it is reported and skipped), so the planner
need not check CRCs for the ranges to agree.  Each range carries the file
header's fields and the file's size
(:class:`~kafka_net.capture.format.RangeStart`, the first range's too): a
range ending before the file does holds no torn tail, and frames keep their
byte offsets in the file.

The driver follows a segment's lengths with a compiled loop too
(``_kncap_scan.record_cuts``: 0.29 -> 0.15-0.22 CPU s for the 920k records of
bench/RESULTS.md's capture, most of it mapping the pages), and in Python under
``KAFKA_NET_READABLE=1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_net.capture.format import (
    FILE_HEADER, MAX_RECORD_BYTES, MIN_RECORD_LENGTH, RangeStart, range_start, record_offsets)
from kafka_net.capture.pcap import CaptureRead, Cuts, Resume, _pcap_header, walk_records
from kafka_net.capture.reader import KNCAP, PCAP, sniff
from kafka_net.protocol import readable

COMPILED = not readable.READABLE    # read once (kafka_net/protocol/readable.py)
if COMPILED:     # a missing build is an ImportError, never the reference in its place
    from kafka_net.capture import _flows, _kncap_scan

# Ranges of about this size: big enough that a task's fixed cost (a Python
# worker's batch, a Spark task) is small against its work, small enough that
# a task's bytes and their Arrow copies fit an executor's memory many times.
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Range:
    """Bytes ``[start, end)`` of a file; ``resume`` where a reader stands at
    ``start``: a pcap/pcapng :class:`Resume` (None for the range that starts at
    the file's header) or a segment's :class:`RangeStart` (every range of a
    ``.kncap``)."""

    start: int
    end: int
    resume: Resume | RangeStart | None = None


class _Skip:
    """A packet decoder that decodes nothing: the walk only follows lengths."""

    @staticmethod
    def decode(*_args) -> None:
        return None


def plan_ranges(data, split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Range]:
    """``data`` (bytes or an mmap of the whole file) cut into ranges of about
    ``split_bytes``; one range if it is smaller or not a pcap, pcapng or
    kafka-net capture file."""
    size = len(data)
    if size <= split_bytes:
        return [Range(0, size)]
    kind = sniff(data)
    if kind == KNCAP:
        return _kncap_ranges(data, split_bytes)
    if COMPILED and kind == PCAP:
        at = _pcap_cuts(data, split_bytes)
    else:
        cuts = Cuts(split_bytes)
        walk_records(data, _Skip(), CaptureRead(None), cuts=cuts)
        at = cuts.at
    bounds = [0] + [pos for pos, _ in at] + [size]
    states = [None] + [state for _, state in at]
    return [Range(bounds[i], bounds[i + 1], states[i]) for i in range(len(states))
            if bounds[i + 1] > bounds[i]]


def _pcap_cuts(data, split_bytes: int) -> list[tuple[int, Resume]]:
    """:class:`Cuts`' list for a classic pcap file, by the compiled walk."""
    state = Resume(PCAP)
    if not _pcap_header(data, state, CaptureRead(None)):
        return []
    found = []
    for pos, index in _flows.pcap_cuts(data, 24, state.endian == ">", state.rec_size, 0,
                                       split_bytes):
        state.index = index
        found.append((pos, state.copy()))
    return found


def _kncap_ranges(data, split_bytes: int) -> list[Range]:
    """A segment cut at the first record boundary at or past every
    ``split_bytes``; one range (no resume: read whole) if its header is not one
    the reader reads."""
    start = range_start(data)
    if start is None:
        return [Range(0, len(data))]
    if COMPILED:
        bounds = [0, *_kncap_scan.record_cuts(data, FILE_HEADER.size, MIN_RECORD_LENGTH,
                                              MAX_RECORD_BYTES, split_bytes)]
    else:
        bounds, next_cut = [0], split_bytes
        for pos in record_offsets(data):
            if pos >= next_cut:
                bounds.append(pos)
                next_cut = pos + split_bytes
    bounds.append(len(data))
    return [Range(a, b, start) for a, b in zip(bounds, bounds[1:])]


__all__ = ["DEFAULT_SPLIT_BYTES", "Range", "plan_ranges"]
