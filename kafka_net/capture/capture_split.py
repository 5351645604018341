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
headers once, on the driver (about a second per million records).

Where the chain breaks (a corrupt length), cutting stops: the rest of the
file is the last range, whose reader meets the same break and reports it.
IP fragments of one datagram in two ranges are reported as incomplete by
both (ranges are tens of MiB; fragmented TCP is rare).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_net.capture.pcap import CaptureRead, Cuts, Resume, walk_records

# Ranges of about this size: big enough that a task's fixed cost (a Python
# worker's batch, a Spark task) is small against its work, small enough that
# a task's bytes and their Arrow copies fit an executor's memory many times.
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Range:
    """Bytes ``[start, end)`` of a file; ``resume`` None for the range that
    starts at the file's header."""

    start: int
    end: int
    resume: Resume | None = None


class _Skip:
    """A packet decoder that decodes nothing: the walk only follows lengths."""

    @staticmethod
    def decode(*_args) -> None:
        return None


def plan_ranges(data, split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Range]:
    """``data`` (bytes or an mmap of the whole file) cut into ranges of about
    ``split_bytes``; one range if it is smaller or not a pcap/pcapng file."""
    size = len(data)
    if size <= split_bytes:
        return [Range(0, size)]
    cuts = Cuts(split_bytes)
    walk_records(data, _Skip(), CaptureRead(None), cuts=cuts)
    bounds = [0] + [pos for pos, _ in cuts.at] + [size]
    states = [None] + [state for _, state in cuts.at]
    return [Range(bounds[i], bounds[i + 1], states[i]) for i in range(len(states))
            if bounds[i + 1] > bounds[i]]


__all__ = ["DEFAULT_SPLIT_BYTES", "Range", "plan_ranges"]
