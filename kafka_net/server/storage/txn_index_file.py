"""A segment's ``.txnindex``: the aborted transactions whose ABORT marker it holds.

Kafka's ``TransactionIndex`` file, one 34-byte entry per aborted
transaction, big-endian: version int16 (0), producer id int64, first offset
int64, last offset int64 (the marker's), last stable offset int64.  The file
exists only for segments that hold an ABORT marker.  The partition's
in-memory :class:`~kafka_net.server.storage.txn_index.TransactionIndex`
(what read_committed Fetches consult) is rebuilt from these files on load.
"""

from __future__ import annotations

import os
import struct

from kafka_net.server.storage.txn_index import AbortedTxn

_ENTRY = struct.Struct(">hqqqq")
VERSION = 0


def append_aborted(path: str, txn: AbortedTxn, last_stable_offset: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, _ENTRY.pack(VERSION, txn.producer_id, txn.first_offset,
                                 txn.last_offset, last_stable_offset))
        os.fsync(fd)   # aborts are rare; keeping them costs one fsync each
    finally:
        os.close(fd)


def read_aborted(path: str, before: int | None = None) -> list[AbortedTxn]:
    """The entries of ``path`` (none if it does not exist); with ``before``, only
    those whose marker is below it, the file cut to them (a partial entry at
    the end, a torn write, is dropped either way)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return []
    usable = len(raw) - len(raw) % _ENTRY.size
    entries = [AbortedTxn(pid, first, last)
               for version, pid, first, last, _ in _ENTRY.iter_unpack(raw[:usable])
               if version == VERSION]
    if before is not None:
        entries = [t for t in entries if t.last_offset < before]
    if before is not None or usable != len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(len(entries) * _ENTRY.size if before is not None else usable)
    return entries
