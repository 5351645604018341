"""Reading a test broker's capture back: its records in time order."""

from __future__ import annotations

import glob
import json
import os

from kafka_net.capture.format import FAULT, REQUEST, decode_segment


def capture_records(capture_dir: str) -> list:
    records = []
    for path in sorted(glob.glob(os.path.join(capture_dir, "*.kncap"))):
        with open(path, "rb") as fh:
            records.extend(decode_segment(fh.read()).records)
    return sorted(records, key=lambda r: r.timestamp_ns)


def fault_notes(capture_dir: str) -> list[tuple]:
    """(record, its JSON) of each FAULT record."""
    return [(r, json.loads(r.frame)) for r in capture_records(capture_dir)
            if r.direction == FAULT]


def requests_after(capture_dir: str, timestamp_ns: int, connection: str | None = None) -> list:
    return [r for r in capture_records(capture_dir)
            if r.direction == REQUEST and r.timestamp_ns > timestamp_ns
            and (connection is None or r.connection_id == connection)]
