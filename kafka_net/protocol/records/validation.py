"""The broker's checks on a produced batch (Kafka's ``LogValidator`` path), sans-IO.

Errors: everything wrong with a batch raises a :class:`RecordError` whose
``error_code`` is what Kafka puts in that partition's Produce response
(CORRUPT_MESSAGE for framing, CRC and decompression-bound failures,
INVALID_RECORD for a batch that frames but breaks the rules, MESSAGE_TOO_LARGE,
UNSUPPORTED_COMPRESSION_TYPE).  They are per-partition answers: a bad batch
never closes the connection.  The checks and their order follow Kafka's
``ProduceRequest.validateRecords``, ``UnifiedLog.analyzeAndValidateRecords``,
``LogValidator.validateBatch`` and ``DefaultRecord.readPartiallyFrom``.

Cost: the header is one ``struct`` unpack and the CRC one C call; what is
left in Python is the record walk, the only per-record work, and it builds
no object per record.  It decodes the record length, skips the attributes
and timestamp delta, decodes the offset delta (compared only on request),
and skips key, value and each header by its length; a record must end
exactly where its length says (:func:`walk_records`).  Varints of one or two
bytes (every length under 8 KB) are decoded by a table lookup inline in
the loop; longer ones call :func:`_varint`: about 0.5 µs per record of 100
bytes on CPython 3.11.  The worst case a client can build is therefore many tiny
records or headers; ``bench/records_worst_case.py`` measures it, and
message.max.uncompressed.bytes bounds it for compressed batches: each
batch, and (through :class:`DecompressionBudget`) all compressed batches of
one Produce request together, since one 1 MB request can carry hundreds of
small partitions that each inflate to the bound.
"""

from __future__ import annotations

import itertools

from kafka_net.protocol.records.compression import decompress
from kafka_net.protocol.records.framing import (
    COMPRESSION_MASK, CONTROL_MASK, DEFAULT_MAX_UNCOMPRESSED_BYTES, MAGIC_OFFSET, MAGIC_V2,
    NO_PRODUCER_ID,
    RECORD_BATCH_OVERHEAD, BatchHeader, Buffer, Compression, DecompressionLimitError,
    InvalidRecordError, RecordError, RecordTooLargeError, UnsupportedCompressionTypeError,
    as_byte_view, check_compression_id, check_crc, complete_batch_size,
    frame_batch, read_attributes, read_header)


class DecompressionBudget:
    """What the compressed batches of one Produce request may still cost, in all.

    message.max.uncompressed.bytes bounds each batch; without a bound per
    request, one 1 MB request of a thousand tiny zstd batches, each inflating
    to that bound, would cost a thousand times the work.  The two costs that
    grow with what a batch inflates to are bounded separately, both derived
    from message.max.uncompressed.bytes (``bound``):

    * ``bytes_left``: decompressed bytes, ``BYTES_FACTOR * bound``.  Every
      batch takes off what it decompressed (on a failure: what it could have);
      decompressing runs in C at hundreds of MB/s, so this allows a lot.
    * ``items_left``: records and headers the record walk may step over,
      ``bound // ITEM_BYTES``, the walk's cost in Python.  A batch of N
      records is refused before it is decompressed if fewer are left.

    Honest traffic does not come near either: a full 1 MB request that
    compresses 10:1 is 10 MB and, with 100-byte records, 100,000 records.
    A refused batch gets CORRUPT_MESSAGE for its partition only.
    """

    BYTES_FACTOR = 16
    ITEM_BYTES = 4

    __slots__ = ("bytes_left", "items_left")

    def __init__(self, bound: int) -> None:
        self.bytes_left = self.BYTES_FACTOR * bound
        self.items_left = bound // self.ITEM_BYTES


def validate_batch(batch: Buffer, *, from_client: bool = True,
                   max_batch_size: int | None = None,
                   check_record_offsets: bool = False,
                   max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES,
                   budget: DecompressionBudget | None = None,
                   compacted: bool = False) -> BatchHeader:
    """Check one batch as Kafka's broker does before appending it; return its header.

    ``from_client`` applies the rules Kafka keeps for producer appends
    (``AppendOrigin.CLIENT``): base offset 0, a positive record count equal to
    ``last_offset_delta + 1``, no control batches, a sequence number when there
    is a producer id.  ``max_batch_size`` is the topic's max.message.bytes.

    The records of every batch are walked (structure, count, nothing left
    over); compressed ones after decompressing at most
    ``max_uncompressed_bytes``.  Kafka does not check each record's offset
    delta (only the count against ``last_offset_delta``);
    ``check_record_offsets`` additionally requires them to be 0, 1, 2, ...
    as every producer writes them.  ``budget``: the request's
    :class:`DecompressionBudget`, if any.  ``compacted``: the topic's
    cleanup.policy has compact, so every record needs a key
    (:class:`KeylessRecordsError` lists those without).
    """
    view = as_byte_view(batch)
    return _validate_framed(view, frame_batch(view), from_client, max_batch_size,
                            check_record_offsets, max_uncompressed_bytes, budget, compacted)


def _validate_framed(view: memoryview, header: BatchHeader, from_client: bool,
                     max_batch_size: int | None, check_record_offsets: bool,
                     max_uncompressed_bytes: int, budget: DecompressionBudget | None,
                     compacted: bool = False) -> BatchHeader:
    """:func:`validate_batch` after :func:`frame_batch` (or its equivalent)."""
    if from_client and header.base_offset != 0:
        raise InvalidRecordError(
            f"the base offset of a produced record batch must be 0, but it is "
            f"{header.base_offset}")
    if max_batch_size is not None and len(view) > max_batch_size:
        raise RecordTooLargeError(
            f"the record batch is {len(view)} bytes, more than the maximum {max_batch_size}")
    check_crc(view, header)
    check_compression_id(header)
    _check_count(header, from_client)
    payload = view[RECORD_BATCH_OVERHEAD:]
    if not header.attributes & COMPRESSION_MASK:   # Compression.NONE
        # indexing bytes is the fastest walk; the copy is at most message.max.bytes
        records = bytes(payload)
        walk_records(records, header.records_count, check_record_offsets)
    else:
        records = _check_compressed(header, payload, max_uncompressed_bytes, budget,
                                    check_record_offsets)
    if compacted:   # a second walk, for compacted topics only: the hot path does not pay
        keyless = keyless_records(records, header.records_count)
        if keyless:
            raise KeylessRecordsError(keyless)
    return header


def _check_compressed(header: BatchHeader, payload: memoryview, limit: int,
                      budget: DecompressionBudget | None, check_record_offsets: bool) -> bytes:
    """Decompress and walk a compressed batch's records; return them."""
    if budget is None:
        records = decompress(header.compression, payload, limit)
        walk_records(records, header.records_count, check_record_offsets)
        return records
    if header.records_count > budget.items_left:
        raise _over_budget(f"{header.records_count} records, {budget.items_left} left")
    room = max(0, min(limit, budget.bytes_left))
    try:
        records = decompress(header.compression, payload, room)
    except DecompressionLimitError:
        budget.bytes_left -= room
        if room < limit:
            raise _over_budget(f"more than the {room} bytes left") from None
        raise
    except RecordError:
        budget.bytes_left -= room
        raise
    budget.bytes_left -= len(records)
    budget.items_left -= header.records_count
    walk_records(records, header.records_count, check_record_offsets, budget)
    return records


def _over_budget(what: str) -> DecompressionLimitError:
    return DecompressionLimitError(
        "the compressed batches of this produce request exceed its decompression budget "
        f"(from message.max.uncompressed.bytes): this one has {what}")


def _check_count(header: BatchHeader, from_client: bool) -> None:
    count = header.records_count
    if not from_client:
        if count < 0:
            raise InvalidRecordError(f"found invalid record count {count} in magic v2 batch")
        return
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordError(
            f"batch has an invalid offset range: [{header.base_offset}, {header.last_offset}]")
    if count <= 0:
        raise InvalidRecordError(f"invalid reported count for record batch: {count}")
    if count_from_offsets != count:
        raise InvalidRecordError(
            f"inconsistent batch offset range [{header.base_offset}, {header.last_offset}] "
            f"and count of records {count}")
    if header.attributes & CONTROL_MASK:   # is_control, without a property call
        raise InvalidRecordError("clients are not allowed to write control records")
    if header.producer_id > NO_PRODUCER_ID and header.base_sequence < 0:   # has_producer_id
        raise InvalidRecordError(
            f"invalid sequence number {header.base_sequence} in record batch with "
            f"producer id {header.producer_id}")


def validate_produce_records(records: Buffer | None, api_version: int, *,
                             max_batch_size: int | None = None,
                             check_record_offsets: bool = False,
                             max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES,
                             budget: DecompressionBudget | None = None,
                             compacted: bool = False,
                             ) -> tuple[BatchHeader, memoryview]:
    """Check one partition's ``records`` from a Produce request; return the batch.

    Kafka's rules for Produce v3+ (``ProduceRequest.validateRecords``): exactly
    one complete batch, magic 2, no zstd before v7; then :func:`validate_batch`
    with the client rules.  Bytes after the batch that do not form a second
    complete batch are ignored, as Kafka trims them; the returned slice is the
    batch alone.  Versions 0-2 carry legacy message sets in Kafka 3.9 and are
    refused outright by Kafka 4.0; this broker only stores magic 2, so they get
    the same INVALID_RECORD as a legacy message set in v3+.
    """
    view = as_byte_view(b"" if records is None else records)
    size = complete_batch_size(view, 0)
    if not size:
        raise InvalidRecordError(
            f"produce requests with version {api_version} must have at least one record "
            "batch per partition")
    first = view[:size]
    if first[MAGIC_OFFSET] != MAGIC_V2:   # complete_batch_size refused magics outside 0..2
        raise InvalidRecordError(
            f"produce requests with version {api_version} are only allowed to contain "
            "record batches with magic version 2")
    attributes = read_attributes(first)
    if api_version < 7 and attributes is not None \
            and attributes & COMPRESSION_MASK == Compression.ZSTD:
        raise UnsupportedCompressionTypeError(
            f"produce requests with version {api_version} are not allowed to use "
            "ZStandard compression")
    if len(view) > size and complete_batch_size(view, size):
        raise InvalidRecordError(
            f"produce requests with version {api_version} are only allowed to contain "
            "exactly one record batch per partition")
    # complete_batch_size checked the frame, and the magic is 2: frame_batch's checks
    header = _validate_framed(first, read_header(first), True, max_batch_size,
                              check_record_offsets, max_uncompressed_bytes, budget, compacted)
    return header, first


# --- keys on compacted topics -----------------------------------------------------------


class KeylessRecordsError(InvalidRecordError):
    """Records without a key in a batch for a compacted topic (Kafka's
    ``LogValidator.validateKey``): INVALID_RECORD, with one record error per
    keyless record (its index in the batch), as Produce v8+ reports them."""

    def __init__(self, indexes: list[int]) -> None:
        super().__init__(f"{len(indexes)} of the batch's records have no key")
        self.indexes = indexes


def keyless_records(buf: bytes, count: int) -> list[int]:
    """Indexes of the records with a null key among ``count`` records that
    :func:`walk_records` has checked."""
    out = []
    pos = 0
    for index in range(count):
        size, pos = _varint(buf, pos, 5)
        end = pos + size
        p = _varint(buf, pos + 1, 10)[1]          # attributes, then the timestamp delta
        p = _varint(buf, p, 5)[1]                 # the offset delta
        if _varint(buf, p, 5)[0] < 0:             # the key's length: negative = null
            out.append(index)
        pos = end
    return out


# --- the record walk ------------------------------------------------------------------


# ZigZag varints of one or two bytes (every value in -8192..8191), decoded by
# lookup in the hot loop: one byte ``b`` is ``_ZIGZAG[b]``; two bytes ``b, c``
# (``b`` with its continuation bit set) are ``_ZIGZAG[b & 0x7F | c << 7]``.
# Lengths of keys and values up to 8 KB take one of these; longer ones call _varint.
# The table (16,384 ints, about 0.6 MB) saves 0.6 µs per batch of 10 x 100 B records
# over decoding two bytes inline.  ZigZag maps 2n to n and 2n + 1 to -n - 1, so the
# table is 0, -1, 1, -2, ... : built by interleaving two ranges in C, a third of
# the time a per-entry Python expression took at every import (issue 28).
_ZIGZAG = tuple(itertools.chain.from_iterable(
    zip(range(1 << 13), range(-1, -(1 << 13) - 1, -1))))


def walk_records(buf: bytes, count: int, check_record_offsets: bool = False,
                 budget: DecompressionBudget | None = None) -> None:
    """Check that ``count`` well-formed records fill ``buf`` exactly; build nothing.

    Each record: length varint, attributes int8, timestamp delta varlong,
    offset delta varint, key and value (varint length, negative = null),
    header count varint, headers (key length >= 0, value length).  As Kafka's
    ``DefaultRecord.readFrom``, the fields are read up to the end of the
    records and the record must end exactly where its length says: a field
    that runs past its record's end is Kafka's BufferUnderflowException,
    reported as "found invalid record structure", one that stops short "expected
    to read N bytes".  The loop below is the per-record cost of every produced
    batch, so the common case (varints of one or two bytes, no headers) is
    written out inline, and anything else goes to a helper.  With a ``budget``,
    each record's headers are taken off its ``items_left`` before they are
    walked (the records were, by the caller).
    """
    end = len(buf)
    pos = 0
    zigzag = _ZIGZAG
    try:
        for index in range(count):
            if pos >= end:
                raise InvalidRecordError(
                    f"incorrect declared batch size, premature EOF reached after {index} of "
                    f"{count} records")
            b = buf[pos]  # the record's length
            if b < 0x80:
                size, pos = zigzag[b], pos + 1
            elif buf[pos + 1] < 0x80:
                size, pos = zigzag[b & 0x7F | buf[pos + 1] << 7], pos + 2
            else:
                size, pos = _varint(buf, pos, 5)
            if size < 0 or size > end - pos:
                raise InvalidRecordError(
                    f"invalid record size: expected {size} bytes in record payload, "
                    f"{end - pos} remaining")
            rec_end = pos + size
            # attributes (unused in v2) at pos, then the timestamp delta, a varlong
            p = pos + 2 if buf[pos + 1] < 0x80 else _varint(buf, pos + 1, 10)[1]
            if buf[p] < 0x80 and not check_record_offsets:  # the offset delta
                p += 1
            else:
                p = _check_offset_delta(buf, p, index, check_record_offsets)
            for _ in (0, 1):  # key, then value: a length (negative = null) and its bytes
                # the record length's decode again, inline: a call would cost what it saves
                b = buf[p]
                if b < 0x80:
                    n, p = zigzag[b], p + 1
                elif buf[p + 1] < 0x80:
                    n, p = zigzag[b & 0x7F | buf[p + 1] << 7], p + 2
                else:
                    n, p = _varint(buf, p, 5)
                if n > 0:
                    p += n
            if buf[p]:  # a header count other than 0
                p = _skip_headers(buf, p, rec_end, budget)
            else:
                p += 1
            if p != rec_end:
                if p > rec_end:
                    raise _underflow()
                raise InvalidRecordError(
                    f"invalid record size: expected to read {size} bytes in record payload, "
                    f"but instead read {size - (rec_end - p)}")
            pos = rec_end
    except IndexError:  # a field ran off the end of the records
        raise _underflow() from None
    if pos != end:
        raise InvalidRecordError(
            f"incorrect declared batch size, {end - pos} bytes of records still remaining")


def _check_offset_delta(buf: bytes, p: int, index: int, check: bool) -> int:
    offset_delta, p = _varint(buf, p, 5)
    if check and offset_delta != index:
        raise InvalidRecordError(
            f"record {index} has offset delta {offset_delta}, expected {index}")
    return p


def _skip_headers(buf: bytes, p: int, rec_end: int,
                  budget: DecompressionBudget | None) -> int:
    """Skip a record's header count and headers; a header key may not be null."""
    header_count, p = _varint(buf, p, 5)
    _check_header_count(header_count, rec_end - p, budget)
    zigzag = _ZIGZAG
    for i in range(2 * header_count):  # key, value, key, value, ...
        if p >= rec_end:
            raise _underflow()
        b = buf[p]
        if b < 0x80:
            n, p = zigzag[b], p + 1
        elif buf[p + 1] < 0x80:  # also the worst case: empty headers in 2-byte varints
            n, p = zigzag[b & 0x7F | buf[p + 1] << 7], p + 2
        else:
            n, p = _varint(buf, p, 5)
        if n > 0:
            p += n
        elif n < 0 and not i & 1:
            raise InvalidRecordError(f"invalid negative header key size {n}")
    return p


def _check_header_count(header_count: int, room: int,
                        budget: DecompressionBudget | None) -> None:
    if header_count < 0:
        raise InvalidRecordError(f"found invalid number of record headers {header_count}")
    if header_count > room:
        raise InvalidRecordError(
            f"found invalid number of record headers: {header_count} is larger than "
            "the remaining size of the record")
    if budget is not None:
        if header_count > budget.items_left:
            raise _over_budget(f"a record of {header_count} headers, {budget.items_left} left")
        budget.items_left -= header_count


def _varint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """A ZigZag varint (5 bytes, 32 bits) or varlong (10 bytes, 64 bits) at ``pos``."""
    bits = 32 if max_bytes == 5 else 64
    value = shift = 0
    for i in range(pos, pos + max_bytes):
        b = buf[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value >> bits:
                raise InvalidRecordError(
                    f"found invalid record structure: varint {value} does not fit {bits} bits")
            return (value >> 1) ^ -(value & 1), i + 1
        shift += 7
    raise InvalidRecordError(
        f"found invalid record structure: varint longer than {max_bytes} bytes")


def _underflow() -> InvalidRecordError:
    return InvalidRecordError("found invalid record structure: a record ends before its fields")

