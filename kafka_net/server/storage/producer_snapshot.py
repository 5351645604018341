"""Producer state snapshots: ``<20-digit offset>.snapshot`` beside the segments.

Kafka's ``ProducerStateManager`` writes the state of every producer as of an
offset (the snapshot's file name) at each segment roll and at a clean
shutdown; on load it reads the latest snapshot at or below the log end and
replays the batches after it, so an idempotent producer's next sequence is
known after a restart.  The format is Kafka's (version 1), big-endian::

    Version            int16   1
    Crc                uint32  CRC32C of everything after this field
    ProducerEntries    int32 count, then per producer (46 bytes):
        ProducerId               int64
        Epoch                    int16
        LastSequence             int32   -1: no batch yet
        LastOffset               int64   -1: no batch yet
        OffsetDelta              int32   last offset - first offset of its last batch
        Timestamp                int64   max timestamp of its last batch
        CoordinatorEpoch         int32   -1 (kafka-net has one coordinator)
        CurrentTxnFirstOffset    int64   first offset of its open transaction, or -1

As in Kafka, only a producer's last batch survives a snapshot (the
duplicate window after a restart is that batch plus those replayed).
A snapshot with a bad CRC or length is ignored with a warning and the state
is rebuilt from an older one, or from the start of the log.
"""

from __future__ import annotations

import logging
import os
import struct

from kafka_net.protocol.records.framing import _crc32c
from kafka_net.server.producer_state import (
    BatchMetadata, ProducerEntry, ProducerStateManager, next_sequence)
from kafka_net.server.storage.checkpoint import fsync_path, write_atomically
from kafka_net.server.storage.segment import SNAPSHOT_SUFFIX, filename_prefix

log = logging.getLogger(__name__)

PRODUCER_SNAPSHOT_VERSION = 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshotError(Exception):
    pass


def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, filename_prefix(offset) + SNAPSHOT_SUFFIX)


def snapshot_offsets(directory: str) -> list[int]:
    """The offsets of the snapshot files in ``directory``, ascending."""
    offsets = []
    for name in os.listdir(directory):
        if name.endswith(SNAPSHOT_SUFFIX):
            try:
                offsets.append(int(name[:-len(SNAPSHOT_SUFFIX)]))
            except ValueError:
                continue
    return sorted(offsets)


def encode_snapshot(producers: ProducerStateManager, ongoing: dict[int, int]) -> bytes:
    body = [_COUNT.pack(len(producers.active_producers()))]
    for producer_id, entry in producers.active_producers():
        if entry.batches:
            last = entry.batches[-1]
            last_seq, last_offset = last.last_seq, last.last_offset
            delta = last.last_offset - last.first_offset
        else:
            last_seq, last_offset, delta = -1, -1, 0
        body.append(_ENTRY.pack(producer_id, entry.epoch, last_seq, last_offset, delta,
                                entry.last_timestamp, -1, ongoing.get(producer_id, -1)))
    payload = b"".join(body)
    return _HEAD.pack(PRODUCER_SNAPSHOT_VERSION, _crc32c(memoryview(payload))) + payload


def decode_snapshot(data: bytes) -> tuple[dict[int, ProducerEntry], dict[int, int]]:
    """(producer id -> entry, producer id -> first offset of its open transaction)."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is too short")
    version, crc = _HEAD.unpack_from(data)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    payload = memoryview(data)[_HEAD.size:]
    computed = _crc32c(payload)
    if computed != crc:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}")
    count = _COUNT.unpack_from(payload)[0]
    if count < 0 or len(payload) != _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot says {count} entries in {len(payload)} bytes")
    entries, ongoing = {}, {}
    for fields in _ENTRY.iter_unpack(payload[_COUNT.size:]):
        pid, epoch, last_seq, last_offset, delta, timestamp, _, txn_first = fields
        entry = ProducerEntry(epoch, last_timestamp=timestamp)
        if last_offset >= 0:
            first_seq = next_sequence(last_seq, -delta) if delta else last_seq
            entry.batches.append(BatchMetadata(first_seq, last_seq, last_offset - delta,
                                               last_offset))
        entries[pid] = entry
        if txn_first >= 0:
            ongoing[pid] = txn_first
    return entries, ongoing


def write_snapshot(directory: str, offset: int, producers: ProducerStateManager,
                   ongoing: dict[int, int], sync: bool = True) -> str:
    """Write the snapshot as of ``offset`` (to a temporary name, renamed: a crash
    leaves the old snapshot or the new one, never half of one).  ``sync=False``
    (at a roll) leaves the fsync to :func:`sync_file`, run by the roll's
    background flush, as Kafka flushes a roll's snapshot asynchronously."""
    path = snapshot_path(directory, offset)
    write_atomically(path, encode_snapshot(producers, ongoing), sync)
    return path


def sync_file(path: str) -> None:
    try:
        fsync_path(path)
    except FileNotFoundError:
        pass   # deleted with its segment meanwhile


def read_latest_snapshot(directory: str, max_offset: int, log_ident: str = ""):
    """(offset, entries, ongoing) of the newest readable snapshot at or below
    ``max_offset``, or None; newer snapshots (past a truncated log end) are deleted."""
    for offset in reversed(snapshot_offsets(directory)):
        path = snapshot_path(directory, offset)
        if offset > max_offset:
            os.unlink(path)
            continue
        try:
            with open(path, "rb") as fh:
                entries, ongoing = decode_snapshot(fh.read())
        except (OSError, CorruptSnapshotError) as exc:
            log.warning("%sFailed to load producer snapshot %s: %s; deleting it",
                        log_ident, path, exc)
            os.unlink(path)
            continue
        return offset, entries, ongoing
    return None


def delete_snapshots_before(directory: str, offset: int) -> None:
    """Remove snapshots older than ``offset`` (their segments are gone), keeping
    the newest one in any case."""
    offsets = snapshot_offsets(directory)
    for old in offsets[:-1]:
        if old < offset:
            try:
                os.unlink(snapshot_path(directory, old))
            except FileNotFoundError:
                pass
