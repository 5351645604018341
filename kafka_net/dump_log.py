"""``kafka-net dump-log``: a segment file as text (Kafka's ``kafka-dump-log.sh``).

Reads ``.log`` segment files without opening them as logs (nothing is
recovered, truncated or written) and prints one line per batch, as Kafka's
``DumpLogSegments`` does; ``--print-data-log`` adds a line per record with
its key and value, and ``--cluster-metadata-decoder`` (for
``__cluster_metadata-0``) a line per metadata record with its type and
fields.  A batch whose CRC does not match says ``isvalid: false``; bytes at
the end that do not make a whole batch (a write a crash cut short, which the
broker's recovery truncates) are reported, not an error.  A damaged batch
header (a size or magic no batch has) is reported with its position, and
the dump resumes at the next position holding a whole batch whose CRC
matches, so one damaged sector does not hide the rest of the file.
"""

from __future__ import annotations

import json
from typing import Iterator

from kafka_net.protocol.records import (
    Compression, RecordError, compute_crc, decode_records, read_header)
from kafka_net.protocol.records.framing import complete_batch_size, next_whole_batch
from kafka_net.server.metadata_log import decode_record


def dump_file(path: str, print_data: bool = False, metadata_decoder: bool = False,
              ) -> Iterator[str]:
    """The lines ``kafka-net dump-log`` prints for the segment file at ``path``."""
    with open(path, "rb") as f:
        data = f.read()
    yield f"Dumping {path}"
    view = memoryview(data)
    position = 0
    while position < len(data):
        try:
            size = complete_batch_size(view, position)
            problem = None if size else "the batch runs past the end of the file"
        except RecordError as exc:
            size, problem = 0, str(exc)
        if not size:
            resume = next_whole_batch(view, position + 1)
            if resume is None and problem.startswith("the batch runs past"):
                break   # a torn tail: reported below
            yield (f"Found a corrupt batch header at position {position} of {path}: {problem}; "
                   + (f"{resume - position} bytes skipped, resuming at position {resume}"
                      if resume is not None else "no whole batch after it"))
            if resume is None:
                return
            position = resume
            continue
        batch = view[position:position + size]
        yield _batch_line(batch, position)
        position += size
        if print_data or metadata_decoder:
            yield from _record_lines(batch, metadata_decoder)
    if position < len(data):
        yield (f"Found {len(data) - position} invalid bytes at the end of {path} "
               f"(position {position}): not a whole batch")


def _batch_line(batch, position: int) -> str:
    h = read_header(batch)
    valid = compute_crc(batch) == h.crc
    try:
        codec = Compression(h.compression).name.lower()
    except ValueError:
        codec = f"unknown({h.compression})"
    last_sequence = -1 if h.base_sequence < 0 else h.base_sequence + h.last_offset_delta
    return (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} "
            f"count: {h.records_count} baseSequence: {h.base_sequence} "
            f"lastSequence: {last_sequence} producerId: {h.producer_id} "
            f"producerEpoch: {h.producer_epoch} "
            f"partitionLeaderEpoch: {h.partition_leader_epoch} "
            f"isTransactional: {str(h.is_transactional).lower()} "
            f"isControl: {str(h.is_control).lower()} position: {position} "
            f"{_timestamp_type(h)}: {h.max_timestamp} "
            f"size: {h.size} magic: {h.magic} compresscodec: {codec} crc: {h.crc} "
            f"isvalid: {str(valid).lower()}")


def _timestamp_type(header) -> str:
    return "LogAppendTime" if header.timestamp_type == 1 else "CreateTime"


def _record_lines(batch, metadata_decoder: bool) -> Iterator[str]:
    try:
        records = decode_records(batch)
    except RecordError as exc:
        yield f"| records not readable: {exc}"
        return
    for record in records:
        line = (f"| offset: {record.offset} {_timestamp_type(read_header(batch))}: "
                f"{record.timestamp} keySize: {_size(record.key)} "
                f"valueSize: {_size(record.value)}")
        if metadata_decoder:
            try:
                kind, fields = decode_record(record)
            except (UnicodeDecodeError, ValueError) as exc:
                yield f"{line} payload: not a metadata record ({exc})"
                continue
            payload = json.dumps({"type": kind, "data": fields}, default=_bytes_text,
                                 separators=(",", ":"))
            yield f"{line} payload: {payload}"
        else:
            yield f"{line} key: {_text(record.key)} payload: {_text(record.value)}"


def _size(value: bytes | None) -> int:
    return -1 if value is None else len(value)


def _text(value: bytes | None) -> str:
    return "null" if value is None else value.decode("utf-8", "backslashreplace")


def _bytes_text(value):
    """Credential keys and salts: shown as their length only, never their bytes."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
