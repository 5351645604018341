"""CaptureWriter: one Processor's append-only capture segments.

Each Processor owns one writer, so no lock is needed or shared.  Records
go to the OS with one ``os.write`` each (see :mod:`.format` on crash
safety).  A segment is closed and a new one started once it reaches
``capture.segment.bytes``.  Segment names sort in write order::

    kafka-net-<run start ns>-p<processor id>-<segment seq, 6 digits>.kncap

A failing disk never stops the broker: the first write error is logged and
capture is switched off for that Processor.
"""

from __future__ import annotations

import logging
import os
import time

from kafka_net.capture.format import (
    REQUEST, RESPONSE, CaptureRecord, encode_file_header, encode_record)

log = logging.getLogger(__name__)

SUFFIX = ".kncap"


class CaptureWriter:
    def __init__(self, directory: str, processor_id: int, segment_bytes: int,
                 max_frame_bytes: int, run_id: int | None = None) -> None:
        self.directory = directory
        self.processor_id = processor_id
        self.segment_bytes = segment_bytes
        self.max_frame_bytes = max_frame_bytes
        self.run_id = run_id if run_id is not None else time.time_ns()
        self._fd = -1
        self._seq = -1
        self._written = 0
        self.enabled = True
        self.records_written = 0
        os.makedirs(directory, exist_ok=True)
        self._roll()

    def segment_path(self, seq: int) -> str:
        return os.path.join(self.directory,
                            f"kafka-net-{self.run_id}-p{self.processor_id}-{seq:06d}{SUFFIX}")

    def request(self, connection_id: str, peer: str, frame: bytes, api_key: int,
                api_version: int, correlation_id: int, client_id: str | None) -> None:
        self._write(REQUEST, connection_id, peer, frame, api_key, api_version,
                    correlation_id, client_id)

    def response(self, connection_id: str, peer: str, frame: bytes, api_key: int,
                 api_version: int, correlation_id: int) -> None:
        self._write(RESPONSE, connection_id, peer, frame, api_key, api_version,
                    correlation_id, None)

    def _write(self, direction, connection_id, peer, frame, api_key, api_version,
               correlation_id, client_id) -> None:
        if not self.enabled:
            return
        kept = frame[:self.max_frame_bytes]
        data = encode_record(CaptureRecord(
            time.time_ns(), direction, api_key, api_version, correlation_id, len(frame),
            connection_id, peer, client_id, bytes(kept), len(kept) < len(frame)))
        try:
            if self._written + len(data) > self.segment_bytes and self._written > 0:
                self._roll()
            os.write(self._fd, data)
        except OSError as exc:
            log.error("capture: cannot write to %s (%s); capture is off for processor %d",
                      self.directory, exc, self.processor_id)
            self.close()
            self.enabled = False
            return
        self._written += len(data)
        self.records_written += 1

    def _roll(self) -> None:
        self.close()
        self._seq += 1
        path = self.segment_path(self._seq)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        header = encode_file_header(self.processor_id, self._seq, time.time_ns())
        os.write(self._fd, header)
        self._written = len(header)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
