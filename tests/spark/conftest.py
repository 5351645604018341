"""Fixtures and capture builders for the conformance-job tests.

One SparkSession for the whole test session (a JVM takes 10-30 s to start);
tests call :func:`kafka_net.spark_jobs.conformance.run` in-process.  The builders make
kafka-net capture files and small pcap files by hand, so that each test knows
exactly which frame is where.
"""

from __future__ import annotations

import importlib

import json
import os
import shutil
import struct

import pytest

from kafka_net.capture.format import CaptureRecord, encode_file_header, encode_record
from kafka_net.protocol import encode_request, encode_response
from kafka_net.protocol.headers import peek_frame_header
from tests.capture.packets import pcap_file

REQUEST, RESPONSE = 0, 1


# -- the session ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def spark():
    importlib.import_module("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("PySpark needs a Java runtime: run `make java-check`")
    from kafka_net.spark_jobs.session import get_spark, ship_code, stop_spark
    session = get_spark("local[2]")
    ship_code(session)
    yield session
    stop_spark(session)   # a pytest-xdist worker leaves without its exit handlers


def run_job(spark, inputs, out, broker_ports=None, split_bytes=None) -> dict:
    """conformance.run plus the report files, as the CLI writes them."""
    from kafka_net.spark_jobs import conformance
    from kafka_net.spark_jobs import report as report_mod
    inputs = [str(p) for p in inputs]
    summary = conformance.run(spark, inputs, str(out), broker_ports, split_bytes=split_bytes)
    report_mod.write_all(summary, str(out))
    return summary


def load_report(out) -> dict:
    with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
        return json.load(fh)


def parquet_rows(spark, out, table: str) -> list[dict]:
    return [r.asDict() for r in spark.read.parquet(os.path.join(out, f"{table}.parquet")).collect()]


# -- kafka-net capture builders -----------------------------------------------------------

def request_payload(api_key: int, version: int, corr: int, body: dict | None = None,
                    client_id: str | None = "tester") -> bytes:
    return encode_request(api_key, version, corr, body or {}, client_id=client_id)[4:]


def response_payload(api_key: int, version: int, corr: int, body: dict | None = None) -> bytes:
    return encode_response(api_key, version, corr, body or {})[4:]


def kncap_record(direction: int, payload: bytes, connection: str, ts: int,
                 peer: str = "127.0.0.1:40000", truncated_to: int | None = None) -> CaptureRecord:
    """A record with its header fields peeked from the payload, as the Processor does."""
    head = peek_frame_header(payload, direction == REQUEST)
    api_key, api_version, corr = (-1 if v is None else v for v in head[:3])
    client_id = head.client_id
    kept = payload if truncated_to is None else payload[:truncated_to]
    return CaptureRecord(ts, direction, api_key, api_version, corr, len(payload), connection,
                         peer, client_id, kept, len(kept) < len(payload))


def kncap_file(path, records, processor_id: int = 0, seq: int = 0) -> str:
    with open(path, "wb") as fh:
        fh.write(encode_file_header(processor_id, seq, 1))
        for rec in records:
            fh.write(encode_record(rec))
    return str(path)


# -- pcap builders ---------------------------------------------------------------------------

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def _ipv4(addr: str) -> bytes:
    return bytes(int(x) for x in addr.split("."))


def tcp_packet(src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int,
               payload: bytes = b"") -> bytes:
    """An Ethernet + IPv4 + TCP packet (checksums left 0: readers do not check them)."""
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq % 2**32, ack % 2**32, 5 << 4,
                      flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                     _ipv4(src[0]), _ipv4(dst[0]))
    eth = b"\x00" * 12 + b"\x08\x00"
    return eth + ip + tcp


def write_pcap(path, packets: list[tuple[int, bytes]], snaplen: int = 262144) -> str:
    """A classic microsecond pcap (Ethernet) of (timestamp_ns, packet bytes) at ``path``."""
    with open(path, "wb") as fh:
        fh.write(pcap_file(packets, snaplen=snaplen))
    return str(path)


class TcpConversation:
    """Builds the packets of one TCP connection: handshake, data, FIN.

    ``send(direction, data)`` adds one data segment (client -> server for
    REQUEST); timestamps advance 1 ms per packet.
    """

    def __init__(self, client: tuple[str, int], server: tuple[str, int], start_ns: int,
                 handshake: bool = True) -> None:
        self.client, self.server = client, server
        self.ts = start_ns
        self.seq = {REQUEST: 1000, RESPONSE: 5000}   # next sequence number per direction
        self.packets: list[tuple[int, bytes]] = []
        if handshake:
            self._add(REQUEST, SYN, b"", ack=0)
            self.seq[REQUEST] += 1
            self._add(RESPONSE, SYN | ACK, b"")
            self.seq[RESPONSE] += 1
            self._add(REQUEST, ACK, b"")
        else:
            self.seq = {REQUEST: 1001, RESPONSE: 5001}

    def _add(self, direction: int, flags: int, payload: bytes, ack: int | None = None) -> None:
        src, dst = self.client, self.server
        if direction == RESPONSE:
            src, dst = dst, src
        other = RESPONSE if direction == REQUEST else REQUEST
        ack = self.seq[other] if ack is None else ack
        self.ts += 1_000_000
        self.packets.append((self.ts, tcp_packet(src, dst, self.seq[direction], ack, flags,
                                                 payload)))

    def send(self, direction: int, data: bytes, segment: int | None = None) -> list[int]:
        """Send ``data`` in segments of at most ``segment`` bytes; their packet indexes."""
        segment = segment or len(data) or 1
        indexes = []
        for i in range(0, len(data), segment):
            chunk = data[i:i + segment]
            indexes.append(len(self.packets))
            self._add(direction, PSH | ACK, chunk)
            self.seq[direction] += len(chunk)
        return indexes

    def close(self) -> None:
        self._add(REQUEST, FIN | ACK, b"")
        self.seq[REQUEST] += 1
        self._add(RESPONSE, FIN | ACK, b"")
        self.seq[RESPONSE] += 1
        self._add(REQUEST, ACK, b"")
