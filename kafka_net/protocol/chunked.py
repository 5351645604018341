"""A response frame that is bytes *and* file regions: the sans-IO half of zero-copy Fetch.

Kafka's ``SendBuilder`` encodes a FetchResponse into byte buffers, but each
partition's records field is not copied: it writes the field's length prefix
and then hands over the ``BaseRecords`` itself (a ``FileRecords`` slice), so
the Send it builds (``MultiRecordsSend``) is header bytes, a region of a
segment file, more bytes, another region, and so on.

Here the same, without I/O: a :class:`Region` is anything with a ``size`` that
the codec must put on the wire as ``size`` bytes it never reads (the network
layer's ``FileRegion`` is one).  A compiled encoder meeting a Region in a
records field writes its length prefix and notes ``(offset, region)`` in a
:class:`ChunkBuffer` instead of copying it; :func:`chunk_frame` then cuts the
encoded bytes at those offsets into a :class:`ChunkedFrame`, the list of
chunks the network layer sends (bytes with ``send``, regions with
``sendfile``).  Only response schemas holding a records field (Fetch) are
encoded into a ChunkBuffer; every other response stays one ``bytes``.
"""

from __future__ import annotations


class Region:
    """Bytes the codec puts on the wire without reading them: ``size`` long.

    A marker base class; subclasses say where the bytes are (the network
    layer's ``FileRegion``: a descriptor, a position, a size)."""

    __slots__ = ()
    size: int

    def __len__(self) -> int:
        return self.size


class ChunkBuffer(bytearray):
    """The bytearray an encoder writes into, plus the regions spliced into it:
    ``regions`` holds ``(offset in this buffer, region)`` in wire order.

    No ``__init__`` of its own: made by bytearray's, in C, so a Fetch answered
    from memory (no region) pays no Python call for it; ``regions`` is the
    class's empty tuple until the first region comes."""

    regions: "tuple | list[tuple[int, Region]]" = ()


def splice_records(buf, value) -> None:
    """What a compiled encoder calls for a records value that is not ``bytes``
    (after writing its length prefix): a Region is noted, not copied; any other
    bytes-like value is appended as is."""
    if isinstance(value, Region):
        if buf.__class__ is not ChunkBuffer:
            # A plain bytearray: a request, or a tagged field's own buffer.  No
            # place to keep the region, and copying it here would read a file.
            raise ValueError("a records region can only be written into a ChunkBuffer")
        if not buf.regions:
            buf.regions = []
        buf.regions.append((len(buf), value))
    else:
        buf += value


def region_bytes(buf: ChunkBuffer) -> int:
    """Bytes the regions of ``buf`` add to the frame."""
    return sum(region.size for _, region in buf.regions)


class ChunkedFrame:
    """A whole response frame (size prefix included) as chunks: ``bytes`` and
    :class:`Region` in wire order, no empty chunk.  ``len()`` is the frame's
    size in bytes, as ``len()`` of a ``bytes`` frame is (request metrics and
    the Fetch quota read it)."""

    __slots__ = ("chunks", "size")

    def __init__(self, chunks: list, size: int) -> None:
        self.chunks = chunks
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"ChunkedFrame({len(self.chunks)} chunks, {self.size} bytes)"


def chunk_frame(buf: ChunkBuffer) -> ChunkedFrame:
    """Cut ``buf`` at its regions: [bytes, region, bytes, ...] (a frame whose
    size prefix already counts the regions' bytes)."""
    chunks: list = []
    start, size = 0, len(buf)
    view = memoryview(buf)
    for offset, region in buf.regions:
        if offset > start:
            chunks.append(bytes(view[start:offset]))
        if region.size:
            chunks.append(region)
            size += region.size
        start = offset
    if start < len(buf):
        chunks.append(bytes(view[start:]))
    view.release()
    return ChunkedFrame(chunks, size)
