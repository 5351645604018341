"""Control records: the one record of a transaction marker batch, sans-IO.

A control batch (the control and transactional attribute bits set) holds one
record, written by the broker when a transaction ends:

* key: version int16 (0), type int16 (Kafka's ``ControlRecordType``: 0 ABORT,
  1 COMMIT; other types exist in Kafka's KRaft log, never in a partition here)
* value: version int16 (0), coordinator epoch int32 (``EndTransactionMarker``)

Every reader of a marker's type (the log's producer-state rebuild, the
cleaner, the group coordinator's load) goes through :func:`control_key_type`
or :func:`control_type`, and every writer through :func:`control_key`.
"""

from __future__ import annotations

import struct

from kafka_net.protocol.records.compaction import batch_records
from kafka_net.protocol.records.framing import BatchHeader, Buffer

ABORT = 0
COMMIT = 1
UNKNOWN_CONTROL = -1
CONTROL_RECORD_VERSION = 0

_KEY = struct.Struct(">hh")      # version, type
_VALUE = struct.Struct(">hi")    # version, coordinator epoch


def control_key(kind: int) -> bytes:
    """The key of a control record of type ``kind`` (ABORT or COMMIT)."""
    return _KEY.pack(CONTROL_RECORD_VERSION, kind)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """The value of a transaction marker (Kafka's ``EndTransactionMarker``)."""
    return _VALUE.pack(CONTROL_RECORD_VERSION, coordinator_epoch)


def control_key_type(key: bytes | None) -> int:
    """ABORT or COMMIT from a control record's key; UNKNOWN_CONTROL for a key too
    short to hold a type, or another type."""
    if key is None or len(key) < _KEY.size:
        return UNKNOWN_CONTROL
    kind = _KEY.unpack_from(key)[1]
    return kind if kind in (ABORT, COMMIT) else UNKNOWN_CONTROL


def control_type(batch: Buffer, header: BatchHeader | None = None) -> int | None:
    """The type of a control batch's marker (see :func:`control_key_type`), None
    for an empty control batch (one the cleaner emptied).  The batch is not
    checked again: it is a stored one."""
    records = batch_records(batch, header)
    if not records:
        return None
    return control_key_type(records[0].key)
