"""Size-prefixed framing: Kafka's ``NetworkReceive``, without the socket.

Every Kafka request and response is ``int32 size`` (big-endian, signed)
followed by exactly ``size`` bytes.  The decoder is fed whatever the socket
returned, in any chunking, and hands back one complete frame at a time.

Why ``max_frame_size`` (``socket.request.max.bytes``, 100 MiB by default)
exists: the size prefix is the peer's claim, and a buffer is sized from it.
Without a cap four bytes (``0x7fffffff``) would make the broker try to hold
2 GiB.  Like Kafka, the decoder rejects a bad size as soon as the four size
bytes are in, before any body byte is read.

One frame at a time: the Processor mutes a connection after each request, so
it asks for the next frame only after the previous response was written.
Bytes of pipelined requests that arrived in the same read stay buffered here
(the size of one socket read at most, because a muted connection is not read).
"""

from __future__ import annotations

import struct

from kafka_net.protocol.errors import InvalidReceiveError

_SIZE = struct.Struct(">i")
# Compact the buffer once this much consumed data sits at its front.
_COMPACT_AT = 64 * 1024


class FrameDecoder:
    """Incremental frame splitter.  ``receive_data`` then ``next_frame`` until None."""

    def __init__(self, max_frame_size: int = 104857600) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._pos = 0

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf) - self._pos

    def has_frame(self) -> bool:
        """True if :meth:`next_frame` would return a frame or raise, without consuming."""
        avail = self.buffered()
        if avail < 4:
            return False
        size = _SIZE.unpack_from(self._buf, self._pos)[0]
        return size < 0 or size > self.max_frame_size or avail >= 4 + size

    def next_frame(self) -> bytes | None:
        """Return the next complete frame's payload, or None if it is not all here.

        Raises :class:`InvalidReceiveError` for a size < 0 or > ``max_frame_size``.
        """
        avail = self.buffered()
        if avail < 4:
            return None
        size = _SIZE.unpack_from(self._buf, self._pos)[0]
        if size < 0:
            raise InvalidReceiveError(f"Invalid receive (size = {size})")
        if size > self.max_frame_size:
            raise InvalidReceiveError(
                f"Invalid receive (size = {size} larger than {self.max_frame_size})")
        if avail < 4 + size:
            return None
        start = self._pos + 4
        frame = bytes(self._buf[start:start + size])
        self._pos = start + size
        self._compact()
        return frame

    def frames(self, data: bytes = b""):
        """Feed ``data`` and yield every complete frame now available."""
        if data:
            self.receive_data(data)
        while (frame := self.next_frame()) is not None:
            yield frame

    def _compact(self) -> None:
        if self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        elif self._pos >= _COMPACT_AT:
            del self._buf[:self._pos]
            self._pos = 0


def encode_frame(payload: bytes | bytearray) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return _SIZE.pack(len(payload)) + payload


def finish_frame(buf: bytearray) -> bytes:
    """A frame built in place: ``buf`` starts with 4 placeholder bytes for its size."""
    _SIZE.pack_into(buf, 0, len(buf) - 4)
    return bytes(buf)
