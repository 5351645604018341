"""IP fragment reassembly (IPv4, and IPv6's fragment header), sans-IO, for
:mod:`.packet`.

A datagram is keyed as RFC 791 / RFC 8200 key it: source, destination,
protocol (IPv4) and identification.  Each fragment brings the bytes at its
offset; the one without "more fragments" says where the datagram ends.
When every byte from 0 to that end has arrived, the datagram is complete:
its payload (the TCP segment) is what the fragments held, in offset order,
with the timestamp and record number of the fragment that completed it.
Overlapping fragments: the first copy of a byte wins (as in TCP reassembly).

What the capture's snap length cut from a fragment is missing from the
datagram too: the payload keeps the bytes up to the first cut and the wire
length says how long it really was (the TCP layer then marks it truncated).
Datagrams still incomplete at the end of the capture are counted, not
guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _Datagram:
    """The fragments of one IP datagram received so far."""

    pieces: list[tuple[int, int, bytes]] = field(default_factory=list)  # offset, wire len,
    end: int | None = None                                             # captured bytes


@dataclass
class Reassembled:
    """An IP datagram put back together from its fragments."""

    payload: bytes        # the captured bytes of the datagram's payload, from offset 0
    wire_len: int         # its length on the wire


class FragmentReassembler:
    """Collects fragments; :meth:`add` returns the datagram a fragment completed."""

    def __init__(self) -> None:
        self.open: dict[tuple, _Datagram] = {}
        self.completed = 0

    def add(self, key: tuple, offset: int, more: bool, wire_len: int, data: bytes
            ) -> Reassembled | None:
        dgram = self.open.setdefault(key, _Datagram())
        dgram.pieces.append((offset, wire_len, data))
        if not more:
            dgram.end = offset + wire_len
        if dgram.end is None:
            return None
        whole = _assemble(dgram)
        if whole is not None:
            del self.open[key]
            self.completed += 1
        return whole

    @property
    def incomplete(self) -> int:
        return len(self.open)


def _assemble(dgram: _Datagram) -> Reassembled | None:
    """The datagram if every byte of [0, end) arrived, else None."""
    covered = 0
    captured = bytearray()
    cut = False
    for offset, wire_len, data in sorted(dgram.pieces, key=lambda p: p[0]):
        if offset > covered:
            return None                     # a hole: wait for more
        new_from = covered - offset
        if offset + wire_len > covered:
            if not cut:
                if len(data) >= wire_len:
                    captured += data[new_from:wire_len]
                else:
                    captured += data[new_from:]
                    cut = True              # the rest of the payload was not captured
            covered = offset + wire_len
    if covered < dgram.end:
        return None
    return Reassembled(bytes(captured[:dgram.end]), dgram.end)
