"""The conformance job's throughput on a synthetic 1,000,000-frame capture, Spark local[2].

``python -m bench.spark_bench`` (``python -m bench --group spark`` runs it as a
subprocess, under a timeout):

1. **Generate** a kafka-net capture: ``--frames`` records (half requests,
   half responses) over ``--connections`` connections, dealt out to
   ``--processors`` Processors as kafka-net does (each Processor writes its
   own segment series), rotated at ``--segment-bytes``.  The frames are real:
   one request per API (ApiVersions v3, Metadata v12, Produce v9 acks=1 with
   one 100-byte record, Fetch v12, ListOffsets v7) is encoded once with
   kafka-net's codec and answered once by a ``KafkaApis`` in this process (no
   sockets); every pair then reuses those bytes with its correlation id
   patched in, and the records are written with
   :func:`kafka_net.capture.format.encode_record`, many to one ``write``.
   Each connection has one request in flight at a time; the connections of
   a Processor take turns, so a segment interleaves hundreds of connections,
   as a busy broker's does.  The mix per ten pairs: 4 Produce, 3 Fetch,
   1 Metadata, 1 ApiVersions, 1 ListOffsets.
2. **Start Spark**: :func:`kafka_net.spark_jobs.session.get_spark` with ``local[2]``
   plus :func:`ship_code`, timed on its own (a JVM start); with ``--standalone``,
   until the cluster's executors have registered (:func:`executors_registered`:
   their JVMs' start is the session's, as the driver's is in local mode).
3. **Run the job** end to end as the CLI does after its session exists:
   :func:`kafka_net.spark_jobs.conformance.run` (read, pair, Parquet tables, aggregates)
   then :func:`kafka_net.spark_jobs.report.write_all` (report.json, report.html,
   junit.xml).  Timed; frames/s = frames / that time.
4. **Check** report.json: the frame, request and pair counts the generator
   wrote, and 0 violations.  Anything else is an error, not a number.
5. **Per-frame Python cost outside Spark** (``--profile-frames``, default
   20,000; 0 skips it): the job's row functions
   (:func:`kafka_net.spark_jobs.transforms.file_units` on one segment's bytes, then
   :func:`kafka_net.spark_jobs.transforms.check_connection` per connection) on a
   slice, timed and under cProfile, to show where the executors' Python
   time goes.

6. With ``--python-profile DIR``: Spark's own Python UDF profiler
   (``spark.sql.pyspark.udf.profiler=perf``) is on for the job, its
   cProfile stats per Arrow stage (``mapInArrow``, ``applyInArrow``) are
   dumped to DIR (``spark.profile.dump``), and a summary (seconds per stage,
   top functions) goes to stderr and into the JSON: where the executors'
   Python time goes, per stage.  The profiler slows the job down about 2-3x, so the job time
   of such a run is not a figure.

``--capture real`` (what ``python -m bench --group spark`` runs) skips step 1:
the input is the real-client capture of :mod:`bench.spark_capture` (recorded
once, then reused), its .kncap segments or its pcap (``--input``); step 4 then
checks the frame count and 0 violations, and the group compares the totals of
every row.

Prints progress on stderr and, with ``--json-out PATH``, writes the figures
there.  Exit code 0 when the report checked out, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import struct
import sys
import tempfile
import time
from collections import Counter

from kafka_net.capture.format import (
    REQUEST, RESPONSE, CaptureRecord, encode_file_header, encode_record)
from kafka_net.capture.writer import SUFFIX
from kafka_net.config import ServerConfig, parse_listeners
from kafka_net.network.request_channel import SendResponse
from kafka_net.protocol.codec import encode_request
from kafka_net.protocol.records import build_batch
from kafka_net.protocol.schema import ZERO_UUID
from kafka_net.server.broker import BrokerCore

TOPIC = "bench-spark"
CLIENT_ID = "kafka-net-bench"
RUN_ID = 1_700_000_000_000_000_000
BASE_NS = 1_700_000_000_000_000_000
STEP_NS = 100_000            # between two records of one Processor
CHUNK_RECORDS = 4096         # records per os.write

# Per ten pairs, which request (index into the list request_templates() returns).
MIX = (0, 1, 0, 2, 0, 1, 3, 0, 1, 4)


def _requests() -> list[tuple[str, int, int, dict]]:
    batch = build_batch([(None, b"v" * 100, [], BASE_NS // 1_000_000)])
    return [
        ("Produce", 0, 9, {
            "transactional_id": None, "acks": 1, "timeout_ms": 30000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}),
        ("Fetch", 1, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1048576,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1048576}]}],
            "forgotten_topics_data": [], "rack_id": ""}),
        ("Metadata", 3, 12, {
            "topics": [{"topic_id": ZERO_UUID, "name": TOPIC}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}),
        ("ApiVersions", 18, 3, {
            "client_software_name": "kafka-net-bench", "client_software_version": "1.0"}),
        ("ListOffsets", 2, 7, {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": TOPIC, "partitions": [{
                "partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}),
    ]


def request_templates() -> list[tuple[str, bytes, bytes]]:
    """(name, request payload, response payload) per API, without size prefixes,
    correlation id 0: requests encoded by kafka-net's codec, answered by its KafkaApis."""
    config = ServerConfig(listeners=parse_listeners("PLAINTEXT://127.0.0.1:0"),
                          log_store="memory")
    core = BrokerCore(config)
    apis = core.apis
    apis.create_topic(TOPIC, 1)
    out = []
    for name, key, version, body in _requests():
        frame = encode_request(key, version, 0, body, client_id=CLIENT_ID)
        request = core.request_from_frame(frame[4:], "template", ("127.0.0.1", 50000))
        response = apis.build_response(request)
        if not isinstance(response, SendResponse):
            raise RuntimeError(f"{name}: no response to the template request ({response!r})")
        out.append((name, frame[4:], bytes(response.data[4:])))
    return out


def _with_cid(payload: bytes, offset: int, cid: int) -> bytes:
    return payload[:offset] + cid.to_bytes(4, "big", signed=True) + payload[offset + 4:]


class _Segments:
    """One Processor's rotated segment files, written in chunks."""

    def __init__(self, directory: str, processor_id: int, segment_bytes: int) -> None:
        self.directory, self.processor_id, self.segment_bytes = directory, processor_id, \
            segment_bytes
        self.seq = -1
        self.fd = -1
        self.written = 0
        self.pending: list[bytes] = []
        self.paths: list[str] = []
        self._roll()

    def _roll(self) -> None:
        self.flush()
        if self.fd >= 0:
            os.close(self.fd)
        self.seq += 1
        path = os.path.join(self.directory, f"kafka-net-{RUN_ID}-p{self.processor_id}-"
                                            f"{self.seq:06d}{SUFFIX}")
        self.paths.append(path)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        header = encode_file_header(self.processor_id, self.seq, BASE_NS)
        os.write(self.fd, header)
        self.written = len(header)

    def add(self, data: bytes) -> None:
        if self.written + len(data) > self.segment_bytes:
            self._roll()
        self.pending.append(data)
        self.written += len(data)
        if len(self.pending) >= CHUNK_RECORDS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            os.write(self.fd, b"".join(self.pending))
            self.pending.clear()

    def close(self) -> None:
        self.flush()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _prepare(directory: str, frames: int, connections: int) -> tuple[int, int, list]:
    """Both generators' start: pairs, connections (at most one per pair), templates."""
    if frames < 2 or frames % 2:
        raise ValueError("frames must be an even number >= 2")
    pairs = frames // 2
    os.makedirs(directory, exist_ok=True)
    return pairs, max(1, min(connections, pairs)), request_templates()


def generate(directory: str, frames: int, connections: int, processors: int = 2,
             segment_bytes: int = 32 * 1024 * 1024) -> dict:
    """Write the capture; returns what was written (files, bytes, per-API pairs)."""
    pairs, connections, templates = _prepare(directory, frames, connections)
    per_api: Counter = Counter()
    writers = [_Segments(directory, p, segment_bytes) for p in range(processors)]
    # connection c belongs to processor c % processors, as the Acceptor deals them out
    conns = [[c for c in range(connections) if c % processors == p] for p in range(processors)]
    ids = {c: (f"127.0.0.1:9092-127.0.0.1:{20000 + c}-{c % processors}-{c}",
               f"127.0.0.1:{20000 + c}") for c in range(connections)}
    base, extra = divmod(pairs, connections)   # the first `extra` connections get one more
    done = Counter()
    clock = [BASE_NS] * processors
    tick = 0
    written_pairs = 0
    while written_pairs < pairs:
        for p, writer in enumerate(writers):
            active = [c for c in conns[p] if done[c] < base + (1 if c < extra else 0)]
            if not active:
                continue
            sent = []
            for c in active:     # every connection of this Processor sends a request ...
                cid = done[c]
                name, req, resp = templates[MIX[(c + cid) % len(MIX)]]
                clock[p] += STEP_NS
                conn_id, peer = ids[c]
                writer.add(encode_record(CaptureRecord(
                    clock[p], REQUEST, int.from_bytes(req[0:2], "big"),
                    int.from_bytes(req[2:4], "big"), cid, len(req), conn_id, peer, CLIENT_ID,
                    _with_cid(req, 4, cid))))
                sent.append((c, cid, name, resp))
            for c, cid, name, resp in sent:    # ... and then each gets its answer
                clock[p] += STEP_NS
                conn_id, peer = ids[c]
                writer.add(encode_record(CaptureRecord(
                    clock[p], RESPONSE, -1, -1, cid, len(resp), conn_id, peer, None,
                    _with_cid(resp, 0, cid))))
                done[c] += 1
                per_api[name] += 1
                written_pairs += 1
        tick += 1
    for w in writers:
        w.close()
    files = [path for w in writers for path in w.paths]
    return {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files),
            "frames": 2 * written_pairs, "pairs": written_pairs, "connections": connections,
            "processors": processors, "segment_bytes": segment_bytes,
            "per_api": dict(per_api), "paths": files}


# -- the same conversation as pcap files (--input pcap) ------------------------------------

_PCAP_HEADER = struct.Struct("<IHHiIII")     # classic pcap, microseconds, Ethernet
_PCAP_RECORD = struct.Struct("<IIII")
_ETH_IPV4 = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
_SYN, _FIN, _PSH, _ACK = 0x02, 0x01, 0x08, 0x10
BROKER = ("127.0.0.1", 9092)


def _tcp_packet(ts_ns: int, src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int,
                flags: int, payload: bytes = b"") -> bytes:
    """One pcap record: Ethernet + IPv4 + TCP (checksums 0: readers do not check them)."""
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq % 2**32, ack % 2**32, 5 << 4, flags,
                      65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0,
                     src[0], dst[0])
    n = len(_ETH_IPV4) + len(ip) + len(tcp) + len(payload)
    sec, usec = divmod(ts_ns // 1000, 1_000_000)
    return b"".join((_PCAP_RECORD.pack(sec, usec, n, n), _ETH_IPV4, ip, tcp, payload))


class _PcapFiles:
    """Rotated pcap files, as ``tcpdump -C`` writes them: a connection's packets
    end up in several files, so the job must group flows across files."""

    def __init__(self, directory: str, file_bytes: int) -> None:
        self.directory, self.file_bytes = directory, file_bytes
        self.paths: list[str] = []
        self.fh = None
        self.written = 0

    def add(self, record: bytes) -> None:
        if self.fh is None or self.written + len(record) > self.file_bytes:
            self._roll()
        self.fh.write(record)
        self.written += len(record)

    def _roll(self) -> None:
        if self.fh is not None:
            self.fh.close()
        path = os.path.join(self.directory, f"bench-{len(self.paths):03d}.pcap")
        self.paths.append(path)
        self.fh = open(path, "wb", buffering=1 << 20)
        self.fh.write(_PCAP_HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.written = _PCAP_HEADER.size

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def generate_pcap(directory: str, frames: int, connections: int,
                  file_bytes: int = 32 * 1024 * 1024) -> dict:
    """The conversation :func:`generate` writes, as a broker's traffic captured by
    tcpdump: one TCP connection per client (handshake, one segment per frame, each
    acknowledging the other side's bytes, FINs), connections taking turns."""
    pairs, connections, templates = _prepare(directory, frames, connections)
    out = _PcapFiles(directory, file_bytes)
    broker = (bytes(int(x) for x in BROKER[0].split(".")), BROKER[1])
    clients = [(bytes((127, 0, 1 + c // 60000, 1)), 10000 + c % 60000)
               for c in range(connections)]
    seq = [[1001, 5001] for _ in range(connections)]
    clock = BASE_NS
    for c, client in enumerate(clients):
        for src, dst, s, a, flags in ((client, broker, 1000, 0, _SYN),
                                      (broker, client, 5000, 1001, _SYN | _ACK),
                                      (client, broker, 1001, 5001, _ACK)):
            clock += STEP_NS
            out.add(_tcp_packet(clock, src, dst, s, a, flags))
    base, extra = divmod(pairs, connections)
    per_api: Counter = Counter()
    done = [0] * connections
    written = 0
    while written < pairs:
        for c, client in enumerate(clients):
            if done[c] >= base + (1 if c < extra else 0):
                continue
            cid = done[c]
            name, req, resp = templates[MIX[(c + cid) % len(MIX)]]
            for src, dst, d, payload in ((client, broker, 0, _with_cid(req, 4, cid)),
                                         (broker, client, 1, _with_cid(resp, 0, cid))):
                data = len(payload).to_bytes(4, "big") + payload
                clock += STEP_NS
                out.add(_tcp_packet(clock, src, dst, seq[c][d], seq[c][1 - d], _PSH | _ACK,
                                    data))
                seq[c][d] += len(data)
            done[c] += 1
            per_api[name] += 1
            written += 1
    for c, client in enumerate(clients):
        s_c, s_b = seq[c]
        for src, dst, s, a, flags in ((client, broker, s_c, s_b, _FIN | _ACK),
                                      (broker, client, s_b, s_c + 1, _FIN | _ACK),
                                      (client, broker, s_c + 1, s_b + 1, _ACK)):
            clock += STEP_NS
            out.add(_tcp_packet(clock, src, dst, s, a, flags))
    out.close()
    return {"files": len(out.paths), "bytes": sum(os.path.getsize(f) for f in out.paths),
            "frames": 2 * written, "pairs": written, "connections": connections,
            "processors": 0, "segment_bytes": file_bytes, "per_api": dict(per_api),
            "paths": out.paths, "input": "pcap"}


def profile_rows(paths: list[str], frames: int) -> dict:
    """The job's per-row Python on about ``frames`` frames of the first segment(s),
    without Spark: file_units, then check_connection per connection."""
    from kafka_net.spark_jobs import transforms
    units = []
    t0 = time.perf_counter()
    for path in paths:
        with open(path, "rb") as fh:
            units.extend(transforms.file_units(path, fh.read()))
        if len(units) >= frames:
            break
    t_units = time.perf_counter() - t0
    rows = [u[1] for u in units if u[0] == "frame"]
    flows: dict = {}
    for u in units:
        if u[0] == "packet":
            flows.setdefault(u[1], []).append(u[2])
    t0 = time.perf_counter()
    for packets in flows.values():
        rows += [u[1] for u in transforms.frames_of_flow(packets) if u[0] == "frame"]
    t_flows = time.perf_counter() - t0
    by_conn: dict[str, list] = {}
    for r in rows[:frames]:
        by_conn.setdefault(r["connection"], []).append(r)
    t0 = time.perf_counter()
    for conn, conn_rows in by_conn.items():
        transforms.check_connection(conn, conn_rows)
    t_check = time.perf_counter() - t0
    profiler = cProfile.Profile()       # again, under the profiler, for where it goes
    profiler.enable()
    for conn, conn_rows in by_conn.items():
        transforms.check_connection(conn, conn_rows)
    profiler.disable()
    checked = sum(len(v) for v in by_conn.values())
    stats = pstats.Stats(profiler, stream=io.StringIO())
    top = []
    for (filename, line, func), (cc, nc, tt, ct, _) in sorted(
            stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:10]:
        rel = filename.split("/work/main/")[-1] if "/work/main/" in filename else \
            os.path.basename(filename)
        top.append({"function": f"{rel}:{line}({func})", "calls": nc,
                    "tottime_us_per_frame": tt / checked * 1e6,
                    "cumtime_us_per_frame": ct / checked * 1e6})
    return {"frames_read": len(rows), "file_units_us_per_frame": t_units / len(rows) * 1e6,
            "frames_of_flow_us_per_frame": t_flows / len(rows) * 1e6,
            "frames_checked": checked, "connections_checked": len(by_conn),
            "check_connection_us_per_frame": t_check / checked * 1e6,
            "top_tottime": top}


def summarise_python_profiles(directory: str, top: int = 3) -> list[dict]:
    """Per Arrow stage dumped by ``spark.profile.dump`` (``udf_<id>_perf.pstats``):
    its Python seconds (own time of every function) and the functions with most
    own time."""
    rows = []
    for name in os.listdir(directory):
        if not name.endswith(".pstats"):
            continue
        stats = pstats.Stats(os.path.join(directory, name), stream=io.StringIO())
        funcs = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
        rows.append({"udf": name[:-len(".pstats")], "seconds": stats.total_tt, "top": [
            {"function": f"{os.path.basename(fn)}:{line}({func})", "calls": nc,
             "own_s": tt, "cum_s": ct}
            for (fn, line, func), (_, nc, tt, ct, _) in funcs]})
    return sorted(rows, key=lambda r: r["seconds"], reverse=True)


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and every descendant: the
    driver, Spark's JVM, its Python daemon and workers (and children they reaped)."""
    return sum(tree_cpu_by_kind().values())


def tree_cpu_by_kind() -> dict[str, float]:
    """:func:`tree_cpu_seconds` split: this (driver) process, the JVM, and the
    Python workers (the JVM's Python descendants, with the children they reaped)."""
    import psutil
    me = psutil.Process()
    out = {"driver": 0.0, "jvm": 0.0, "python_workers": 0.0}
    for proc in [me] + me.children(recursive=True):
        try:
            t = proc.cpu_times()
            name = proc.name()
        except psutil.Error:
            continue
        own = t.user + t.system
        kids = t.children_user + t.children_system
        if proc.pid == me.pid:
            out["driver"] += own
        elif name == "java":
            out["jvm"] += own            # its reaped children are Python workers
            out["python_workers"] += kids
        else:
            out["python_workers"] += own + kids
    return out


# A JVM's role, by the main class on its command line; the rest is the driver's
# (local mode: the executors run in it).
_JVM_ROLES = (("executors", "CoarseGrainedExecutorBackend"),
              ("master", "deploy.master.Master"), ("worker daemons", "deploy.worker.Worker"))


def jvm_cpu_by_role() -> dict[str, float]:
    """The JVMs' own CPU seconds (user + system) of :func:`tree_cpu_by_kind`,
    by role: the driver's JVM, a standalone cluster's executors, its master and
    worker daemons (which only schedule)."""
    import psutil
    out = {"driver jvm": 0.0, **{role: 0.0 for role, _ in _JVM_ROLES}}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.name() != "java":
                continue
            t = proc.cpu_times()
            cmdline = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        role = next((r for r, cls in _JVM_ROLES if cls in cmdline), "driver jvm")
        out[role] += t.user + t.system
    return out


class _NoSpark:
    """Stands for the session in an --in-process run (the job starts none)."""

    version = "none"

    def stop(self) -> None:
        pass


def executors_registered(spark, executors: int, timeout_s: float = 120.0) -> float:
    """Wait until ``executors`` executors have registered with the driver (a
    standalone cluster launches them once the session has started); returns the
    seconds waited.  Part of the session's start, as the driver's own JVM is in
    local mode: the job is timed from a session whose executors are up."""
    t0 = time.perf_counter()
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
    while status.size() < executors + 1:          # the driver's block manager is one
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"{status.size() - 1} of {executors} executors registered "
                               f"after {timeout_s:.0f} s")
        time.sleep(0.05)
        status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
    return time.perf_counter() - t0


def _say(*words) -> None:
    print("spark_bench:", *words, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--processors", type=int, default=2)
    parser.add_argument("--segment-bytes", type=int, default=32 * 1024 * 1024)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--standalone", type=int, metavar="WORKERS",
                        help="start a standalone master and this many workers (1 core, "
                             "3g each) on loopback and run the job there (--master ignored)")
    parser.add_argument("--in-process", action="store_true",
                        help="no Spark: the job in this process, as for a small input "
                             "(conformance --in-process-below-mb above the input's size)")
    parser.add_argument("--tshark", action="store_true",
                        help="instead of the job: tshark -Y kafka over the same files "
                             "(pcap input), for scale; its PDU count is not checked")
    parser.add_argument("--input", choices=("kncap", "pcap"), default="kncap",
                        help="write the conversation as kafka-net captures or as pcap files")
    parser.add_argument("--capture", choices=("synthetic", "real"), default="synthetic",
                        help="synthetic: the generated conversation (--frames); real: the "
                             "real-client capture of bench/spark_capture.py (--scale), "
                             "recorded once and reused")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="--capture real: the workload's scale (1.0: about 1,000,000 "
                             "frames)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed)")
    parser.add_argument("--profile-frames", type=int, default=20_000,
                        help="frames for the per-row Python profile outside Spark (0: skip)")
    parser.add_argument("--split-mb", type=int, default=0, metavar="MIB",
                        help="the job's range size (conformance --split-mb); 0: its default, "
                             "4-64 MiB; more than a file's size: each file read whole")
    parser.add_argument("--json-out", help="write the figures here as JSON")
    parser.add_argument("--python-profile", metavar="DIR",
                        help="profile the executors' Python per RDD (spark.python.profile) "
                             "and dump the stats here; slows the job down")
    args = parser.parse_args(argv)

    work = args.dir or tempfile.mkdtemp(prefix="kafka-net-spark-bench-")
    stack = contextlib.ExitStack()
    captures, out = os.path.join(work, "captures"), os.path.join(work, "out")
    result: dict = {"master": args.master, "ok": False, "problems": []}
    try:
        t0 = time.perf_counter()
        if args.capture == "real":
            written = real_input(args.input, args.scale)
        elif args.input == "pcap":
            written = generate_pcap(captures, args.frames, args.connections,
                                    args.segment_bytes)
        else:
            _say(f"writing {args.frames:,} frames to {captures}")
            written = generate(captures, args.frames, args.connections, args.processors,
                               args.segment_bytes)
            written["input"] = "kncap"
        port = written.pop("port", BROKER[1])
        result["generate_s"] = time.perf_counter() - t0
        paths = written.pop("paths")
        result["capture"] = written
        _say(f"{'input' if written.get('real') else 'wrote'} {written['frames']:,} frames, "
             f"{written['files']} files, "
             f"{written['bytes'] / 1e6:.0f} MB in {result['generate_s']:.1f} s")

        if args.profile_frames:
            result["profile"] = profile_rows(paths, args.profile_frames)
            _say("per-row Python outside Spark: "
                 f"file_units {result['profile']['file_units_us_per_frame']:.1f} us/frame, "
                 f"frames_of_flow {result['profile']['frames_of_flow_us_per_frame']:.1f} "
                 "us/frame, "
                 f"check_connection {result['profile']['check_connection_us_per_frame']:.1f} us/frame")

        if args.tshark:
            result.update(tshark_run(sorted(paths), written["frames"], port))
            result["ok"] = not result["problems"]
            return _finish(result, args)
        from kafka_net.spark_jobs import conformance
        from kafka_net.spark_jobs import report as report_mod
        from kafka_net.spark_jobs.session import get_spark, ship_code
        if args.standalone:
            from kafka_net.spark_jobs.standalone import LoopbackCluster
            t0 = time.perf_counter()
            cluster = stack.enter_context(LoopbackCluster(
                os.path.join(work, "cluster"), workers=args.standalone, cores=1, memory="3g"))
            args.master = result["master"] = cluster.url
            result["cluster_start_s"] = time.perf_counter() - t0
            _say(f"standalone master and {args.standalone} workers up in "
                 f"{result['cluster_start_s']:.1f} s at {cluster.url}")
        t0 = time.perf_counter()
        if args.in_process:
            spark = _NoSpark()
            args.master = result["master"] = "in-process"
            # as `kafka-net conformance` does in its own process when it runs no Spark
            from kafka_net.spark_jobs.without_pandas import arrow_without_pandas
            arrow_without_pandas()
        else:
            # as `kafka-net conformance` starts it in its own process: its workers
            # refuse pandas (session.get_spark's job_only)
            spark = get_spark(args.master, job_only=True)
            ship_code(spark)
            if args.standalone:
                result["executors_wait_s"] = executors_registered(spark, args.standalone)
        result["session_s"] = time.perf_counter() - t0
        result["spark_version"] = spark.version
        if args.python_profile:
            spark.conf.set("spark.sql.pyspark.udf.profiler", "perf")
        _say(f"Spark {spark.version} {args.master} started in {result['session_s']:.1f} s")
        try:
            cpu0, roles0 = tree_cpu_by_kind(), jvm_cpu_by_role()
            t0 = time.perf_counter()
            summary = conformance.run(spark if not args.in_process else None, sorted(paths),
                                      out, broker_ports={port},
                                      split_bytes=(args.split_mb << 20) or None,
                                      small_input_bytes=1 << 62 if args.in_process else None)
            summary["job"]["seconds"] = round(time.perf_counter() - t0, 3)
            report_mod.write_all(summary, out)
            result["job_s"] = time.perf_counter() - t0
            cpu1, roles1 = tree_cpu_by_kind(), jvm_cpu_by_role()
            result["job_cpu_by_kind_s"] = {k: cpu1[k] - cpu0[k] for k in cpu1}
            result["job_jvm_by_role_s"] = {k: roles1[k] - roles0[k] for k in roles1}
            result["job_cpu_s"] = sum(result["job_cpu_by_kind_s"].values())
            # the first stage's tasks: byte ranges as the job planned them (untimed)
            if not args.in_process:
                plan = conformance.planned_ranges(spark, sorted(paths),
                                                  (args.split_mb << 20) or None)
                result["ranges"] = len(plan.kncap) + len(plan.other)
            if args.python_profile:
                spark.profile.dump(args.python_profile)
                result["python_profile"] = summarise_python_profiles(args.python_profile)
                for row in result["python_profile"]:
                    _say(f"stage {row['udf']}: {row['seconds']:.1f} s of Python; top: "
                         + ", ".join(f"{t['function']} {t['own_s']:.1f} s"
                                     for t in row["top"]))
        finally:
            spark.stop()
        with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
            report = json.load(fh)
        totals = report["totals"]
        result["report_totals"] = totals
        result["report_files"] = sorted(os.listdir(out))
        result["frames_per_s"] = totals["frames"] / result["job_s"]
        result["cpu_us_per_frame"] = result["job_cpu_s"] / totals["frames"] * 1e6
        _say(f"job: {totals['frames']:,} frames in {result['job_s']:.1f} s = "
             f"{result['frames_per_s']:,.0f} frames/s; {result['job_cpu_s']:.1f} CPU s "
             f"({result['cpu_us_per_frame']:.1f} us/frame: "
             + ", ".join(f"{k} {v:.1f} s" for k, v in result["job_cpu_by_kind_s"].items())
             + f"); {totals['violations']} violations")
        if result["job_cpu_by_kind_s"]["jvm"]:
            _say("job JVM CPU by role: " + ", ".join(
                f"{k} {v:.1f} s" for k, v in result["job_jvm_by_role_s"].items()))
        expected = {"frames": written["frames"], "violations": 0}
        if args.capture == "synthetic":
            expected.update({"requests": written["pairs"], "pairs": written["pairs"],
                             "connections": written["connections"], "in_flight_at_end": 0})
        for key, want in expected.items():
            if totals.get(key) != want:
                result["problems"].append(f"report.json totals.{key} = {totals.get(key)}, "
                                          f"expected {want}")
        if report.get("unreadable"):
            result["problems"].append(f"unreadable: {report['unreadable'][:3]}")
        if args.standalone:
            result["standalone_workers"] = args.standalone
            result["executors_launched"] = len(cluster.executor_dirs())
            result["executor_failures"] = cluster.executor_failures()
            if result["executors_launched"] != args.standalone or result["executor_failures"]:
                result["problems"].append(
                    f"executors launched {result['executors_launched']} for "
                    f"{args.standalone} workers; failures: {result['executor_failures'][:3]}")
        result["ok"] = not result["problems"]
    except Exception as exc:  # reported, not a traceback in RESULTS.md
        result["problems"].append(f"{type(exc).__name__}: {exc}")
        _say(f"failed: {type(exc).__name__}: {exc}")
    finally:
        stack.close()
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    return _finish(result, args)


def _finish(result: dict, args) -> int:
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    for p in result["problems"]:
        _say("problem:", p)
    return 0 if result["ok"] else 1


def real_input(kind: str, scale: float) -> dict:
    """The real-client capture's files of one kind (recorded first if not cached),
    described as the generators describe theirs; frames: the .kncap record count,
    which the pcap's report must match too."""
    from bench.spark_capture import real_capture
    m = real_capture(scale)
    paths = m[kind]
    _say(f"real-client capture {m['key']} (made {m['made_at']} in {m['seconds']} s): "
         f"{m['kncap_frames']:,} frames, {kind}: {len(paths)} files")
    return {"files": len(paths), "bytes": sum(os.path.getsize(p) for p in paths),
            "frames": m["kncap_frames"], "input": kind, "real": True, "key": m["key"],
            "paths": paths, "port": m["port"], "workers": {
                k: {x: v for x, v in w.items() if x != "error"} for k, w in m["workers"].items()}}


def tshark_run(paths: list[str], frames: int, port: int = BROKER[1]) -> dict:
    """``tshark -r F -d tcp.port==P,kafka -Y kafka`` over each file, output
    discarded: its wall time and CPU (its process, from the kernel's child
    accounting), per frame of the conversation."""
    import resource
    import subprocess
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    problems = []
    for path in paths:
        code = subprocess.run(["tshark", "-r", path, "-d", f"tcp.port=={port},kafka",
                               "-Y", "kafka"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if code:
            problems.append(f"tshark exited with {code} on {path}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    _say(f"tshark: {frames:,} frames in {wall:.1f} s, {cpu:.1f} CPU s "
         f"({cpu / frames * 1e6:.1f} us/frame)")
    return {"master": "tshark", "job_s": wall, "job_cpu_s": cpu, "session_s": 0.0,
            "job_cpu_by_kind_s": {"jvm": 0.0, "python_workers": 0.0, "driver": cpu},
            "frames_per_s": frames / wall, "cpu_us_per_frame": cpu / frames * 1e6,
            "report_totals": {"frames": frames}, "problems": problems}


if __name__ == "__main__":
    sys.exit(main())
