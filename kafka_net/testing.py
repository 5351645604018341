"""Helpers for tests of code that consumes a byte stream (framing, the Processor).

A socket may hand a reader its bytes in any chunking: all at once, one byte at
a time, or cut in the middle of the 4-byte size prefix or of the request
header.  A decoder is only correct if it gives the same frames for every one of
them.  :func:`chunkings` enumerates the chunkings worth trying so that a test
can loop over them instead of trusting whichever chunking the kernel happened
to produce on the developer's machine::

    for name, chunks in chunkings(wire):
        dec = FrameDecoder()
        frames = []
        for chunk in chunks:
            dec.receive_data(chunk)
            frames.extend(dec.frames())
        assert frames == expected, name

:func:`message_values` is the other helper: a Hypothesis strategy for message
bodies, derived from a schema so that it obeys the schema's version rules.

This module is public (the network tests and the benchmark may use it too) and
pure: no sockets, no threads, no clock, only a seeded :class:`random.Random`;
Hypothesis is imported only when :func:`message_values` is called.
"""

from __future__ import annotations

import random
from typing import Iterable, Iterator

__all__ = ["chunkings", "message_values", "split_at"]

# Offsets of interesting cuts in a single request frame:
# 1, 2, 3   inside the int32 size prefix;
# 4 + 2     between request_api_key and request_api_version;
# 4 + 6     inside correlation_id (after two of its four bytes);
# 4 + 9     inside client_id's int16 length (after one of its two bytes).
_SIZE_PREFIX_CUTS = (1, 2, 3)
_HEADER_CUTS = (4 + 2, 4 + 6, 4 + 9)
_RANDOM_CHUNKINGS = 4


def split_at(data: bytes, points: Iterable[int]) -> list[bytes]:
    """Cut ``data`` at each offset in ``points``; offsets outside (0, len) are ignored.

    The result is never empty chunks and always joins back to ``data``
    (``[data]`` for an empty ``data``).
    """
    cuts = sorted({p for p in points if 0 < p < len(data)})
    bounds = [0, *cuts, len(data)]
    chunks = [data[a:b] for a, b in zip(bounds, bounds[1:])]
    return chunks or [data]


def chunkings(data: bytes, split_points: Iterable[int] = (),
              seed: int = 0) -> Iterator[tuple[str, list[bytes]]]:
    """Yield ``(name, chunks)`` pairs; each ``chunks`` joins back to ``data``.

    In order:

    * ``"whole"``: one chunk;
    * ``"byte-by-byte"``: ``len(data)`` chunks of one byte;
    * ``"size-prefix@1"``, ``@2``, ``@3``: two chunks, cut inside the first
      frame's 4-byte size prefix;
    * ``"header@6"``, ``@10``, ``@13``: two chunks, cut inside the first
      request header (after the api key, inside the correlation id, inside
      the client id length);
    * ``"split@N"`` for each offset in ``split_points`` (for example the
      size-prefix offsets of later frames in a pipelined stream), and
      ``"split@all-given"`` with every given offset cut at once;
    * ``"random-K"``: a few chunkings with random cuts drawn from
      ``random.Random(seed)``, so a failure is reproducible from its name and
      the seed.

    Cuts beyond the end of ``data`` are dropped; a chunking that would repeat
    ``"whole"`` because of that is skipped.  Names are unique.
    """
    data = bytes(data)
    yield "whole", [data]
    if len(data) <= 1:
        return
    yield "byte-by-byte", [data[i:i + 1] for i in range(len(data))]
    for cut in _SIZE_PREFIX_CUTS:
        if cut < len(data):
            yield f"size-prefix@{cut}", split_at(data, [cut])
    for cut in _HEADER_CUTS:
        if cut < len(data):
            yield f"header@{cut}", split_at(data, [cut])
    given = sorted({p for p in split_points if 0 < p < len(data)})
    for cut in given:
        yield f"split@{cut}", split_at(data, [cut])
    if len(given) > 1:
        yield "split@all-given", split_at(data, given)
    rng = random.Random(seed)
    for k in range(_RANDOM_CHUNKINGS):
        n_cuts = rng.randint(1, min(len(data) - 1, 8))
        cuts = rng.sample(range(1, len(data)), n_cuts)
        yield f"random-{k}", split_at(data, cuts)


def message_values(schema, version: int, max_items: int = 3):
    """A Hypothesis strategy for bodies of ``schema`` (a :class:`~kafka_net.protocol.schema.Schema`
    or :class:`~kafka_net.protocol.schema.Struct`) that encode at ``version``.

    Derived from the schema itself, so it follows every version rule: a field
    absent at ``version`` (or tagged, at a non-flexible version) holds its
    default, exactly what decoding yields; strings, bytes, arrays and structs
    are null only in the field's ``nullable`` versions.  A generated value
    therefore round-trips: ``decode(encode(v)) == v``.

    Hypothesis is imported here, not at module level, so that importing
    :mod:`kafka_net.testing` needs no test dependencies.
    """
    from hypothesis import strategies as st

    from kafka_net.protocol import schema as s

    fixed = {
        s.INT8: st.integers(-(2**7), 2**7 - 1),
        s.INT16: st.integers(-(2**15), 2**15 - 1),
        s.UINT16: st.integers(0, 2**16 - 1),
        s.INT32: st.integers(-(2**31), 2**31 - 1),
        s.UINT32: st.integers(0, 2**32 - 1),
        s.INT64: st.integers(-(2**63), 2**63 - 1),
        s.FLOAT64: st.floats(allow_nan=False),
        s.BOOL: st.booleans(),
        s.UUID: st.uuids(),
        s.STRING: st.text(max_size=12),
        s.BYTES: st.binary(max_size=12),
        s.RECORDS: st.binary(max_size=12),
    }

    def of_type(t, flexible: bool, nullable: bool):
        if isinstance(t, s.Struct):
            inner = of_struct(t, flexible)
        elif isinstance(t, s.Array):
            inner = st.lists(of_type(t.item, flexible, False), max_size=max_items)
        elif t in fixed:
            inner = fixed[t]
        else:
            raise TypeError(f"message_values: no strategy for wire type {t!r}")
        return st.none() | inner if nullable else inner

    def of_struct(struct, flexible: bool):
        parts = {}
        for f in struct.fields:
            present = version in f.versions and (f.tag is None or flexible)
            if present:
                fflex = flexible if f.flexible is None else version in f.flexible
                parts[f.name] = of_type(f.type, fflex, version in f.nullable)
            else:
                parts[f.name] = st.builds(f.default_value)
        return st.fixed_dictionaries(parts)

    if isinstance(schema, s.Schema):
        return of_struct(schema.struct, schema.is_flexible(version))
    return of_struct(schema, False)
