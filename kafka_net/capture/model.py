"""The frame model shared by TCP reassembly (:mod:`.tcp`), pairing
(:mod:`.pairing`) and the Spark job's rows: one connection's frames and
markers in order, and what the per-connection checks found."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_net.capture.pairing_checks import HEADER_ONLY, STATES, UNVERIFIABLE

REQUEST, RESPONSE = 0, 1
# Markers: bytes lost here; the client's FIN; framing of this direction found by
# searching here (the capture started mid-stream), not yet confirmed.
GAP, CLOSE, SYNC = "gap", "close", "sync"
# A fault the broker injected (a .kncap FAULT record): its frame is the fault's
# JSON; pairing passes over it, kafka_net.capture.injected reads it.
FAULT = "fault"


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a connection, in order, or a marker (see :mod:`.pairing`)."""

    position: int            # index within the connection's frames
    direction: int           # REQUEST or RESPONSE
    timestamp_ns: int
    frame: bytes             # payload without the size prefix (maybe cut)
    frame_size: int          # a SYNC marker's: how many frames its gap holds
    truncated: bool = False
    after_gap: bool = False  # bytes of this frame were lost from the capture
    gap: tuple[int, int] | None = None   # those bytes' stream range (or a gap marker's)
    marker: str | None = None            # None (a Kafka frame), GAP, CLOSE, SYNC or FAULT
    # Where to find it: a pcap/pcapng file and the 1-based number Wireshark gives the
    # packet that completed the frame; or a .kncap segment and the record's offset.
    file: str = ""
    frame_number: int = 0                # 0: not from a pcap (or unknown)
    file_offset: int = -1                # -1: not from a .kncap


@dataclass(slots=True)
class Pair:
    """A request and its response, matched by correlation id."""

    correlation_id: int
    api_key: int
    api_version: int
    client_id: str | None
    request_position: int
    response_position: int
    request_ns: int
    response_ns: int
    error_codes: tuple[int, ...] = ()

    @property
    def latency_ns(self) -> int:
        return self.response_ns - self.request_ns


@dataclass(frozen=True, slots=True)
class Violation:
    """A protocol check that failed, and where in the capture."""

    check: str
    position: int
    timestamp_ns: int
    correlation_id: int
    detail: str
    offset: int = -1         # where in the frame the fault is (after the size prefix)


@dataclass(frozen=True, slots=True)
class FrameState:
    """How far one frame was checked (one of pairing_checks.STATES)."""

    position: int
    state: str
    reason: str = ""                      # header_only: why; unverifiable: which gap
    gap: tuple[int, int] | None = None


@dataclass
class ConnectionReport:
    """What checking one connection's frames found."""

    pairs: list[Pair] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    requests: list = field(default_factory=list)
    in_flight_at_end: int = 0
    acks0_requests: int = 0
    unverifiable_from: int | None = None  # position of the first gap, if any
    unchecked_frames: int = 0
    responses: int = 0                    # response frames (an answered acks=0 counts)
    unverifiable_requests: int = 0        # their answers may have been lost in a gap
    gaps: list[tuple[int, int, int]] = field(default_factory=list)  # direction, start, end
    states: dict[int, FrameState] = field(default_factory=dict)      # by position
    # Frames before the first boundary of a capture that started mid-stream: the
    # end of the one it started inside, and whole ones the search passed.
    # Unverifiable, with no position of their own (their bytes are in ``gaps``).
    skipped_frames: int = 0

    def state_counts(self) -> dict[str, int]:
        """Frames per coverage state, the skipped frames among the unverifiable."""
        counts = dict.fromkeys(STATES, 0)
        for s in self.states.values():
            counts[s.state] += 1
        counts[UNVERIFIABLE] += self.skipped_frames
        return counts

    def header_only_reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.states.values():
            if s.state == HEADER_ONLY:
                out[s.reason] = out.get(s.reason, 0) + 1
        return out


__all__ = ["CLOSE", "FAULT", "ConnectionReport", "Frame", "FrameState", "GAP", "Pair", "REQUEST",
           "RESPONSE", "SYNC", "Violation"]
