"""CaptureWriter (kafka_net.capture.writer) and the Processor's capture hooks.

A writer appends one Processor's records to segment files named so that they
sort in write order, starts a new segment at ``capture.segment.bytes``, cuts
frames to ``capture.max.frame.bytes`` (recording the cut), and turns itself
off on a write error instead of raising into the network thread.  Segments
are memory mapped at their full size while open (a zero tail the reader
takes as the end) and cut to the bytes written when closed.  A live
server with ``capture_dir`` set records every request and response of a
conversation with the right header fields, one file series per Processor.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_net.capture import writer as writer_mod
from kafka_net.capture.format import (
    FILE_HEADER, REQUEST, RESPONSE, ZERO_TAIL_MIN, decode_segment, encode_record)
from kafka_net.capture.writer import SUFFIX, CaptureWriter
from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.protocol import ApiKey
from tests.support import API_VERSIONS_V3_BODY, RawClient, make_config, running_server

NAME = re.compile(r"^kafka-net-(\d+)-p(\d+)-(\d{6})\.kncap$")
CONN = "127.0.0.1:9092-127.0.0.1:40000-0-0"
PEER = "127.0.0.1:40000"


def read_dir(directory: str) -> list:
    """Every record in the directory's segments, in name order; asserts each is clean."""
    out = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as fh:
            result = decode_segment(fh.read())
        assert result.problems == [], (name, result.problems)
        out.extend(result.records)
    return out


def write_requests(w: CaptureWriter, n: int, size: int = 100) -> list[bytes]:
    frames = [bytes([i % 256]) * size for i in range(n)]
    for i, frame in enumerate(frames):
        w.request(CONN, PEER, frame, 3, 12, i, "c")
    return frames


# -- the readable switch ------------------------------------------------------------------

def test_readable_switch_encodes_each_record_whole_with_the_same_bytes(tmp_path, monkeypatch):
    """KAFKA_NET_READABLE (read when a writer is made) swaps the fast encoder
    (fields straight to bytes, strings cached per connection) for the
    reference (a CaptureRecord, format.encode_record): the segment's bytes are
    the same, and the reference is what ran."""
    from types import SimpleNamespace
    from kafka_net.protocol import readable
    written, calls = {}, []
    monkeypatch.setattr(writer_mod, "encode_record",
                        lambda rec: calls.append(rec) or encode_record(rec))
    monkeypatch.setattr(writer_mod, "time", SimpleNamespace(time_ns=lambda: 1234))
    for way in (False, True):
        monkeypatch.setattr(readable, "READABLE", way)
        directory = tmp_path / str(way)
        w = CaptureWriter(str(directory), 0, 1 << 16, 64, run_id=1)
        w.request(CONN, PEER, b"q" * 100, 3, 12, 7, "c")           # cut to 64 bytes
        w.request(CONN, PEER, memoryview(b"r" * 10), 3, 12, 8, None)
        w.response(CONN, PEER, b"s" * 20, 3, 12, 8, size=4000)
        w.fault(CONN, PEER, b'{"rule": "r"}', 3, 12, 9, timestamp_ns=5)
        w.close()
        [name] = os.listdir(directory)
        written[way] = (directory / name).read_bytes()
        assert len(calls) == (4 if way else 0), way
    assert written[True] == written[False]
    assert [r.correlation_id for r in read_dir(tmp_path / "True")] == [7, 8, 8, 9]


# -- segments and rotation ----------------------------------------------------------------

def test_first_segment_exists_at_once_and_is_named_by_run_processor_and_seq(tmp_path):
    w = CaptureWriter(str(tmp_path), processor_id=3, segment_bytes=1 << 20,
                      max_frame_bytes=1 << 20, run_id=1234)
    try:
        assert os.listdir(tmp_path) == ["kafka-net-1234-p3-000000.kncap"]
        with open(w.segment_path(0), "rb") as fh:
            result = decode_segment(fh.read())
        assert result.segment.processor_id == 3 and result.segment.segment_seq == 0
        assert result.records == [] and result.problems == []
    finally:
        w.close()


def test_directory_is_created(tmp_path):
    target = tmp_path / "a" / "b"
    w = CaptureWriter(str(target), 0, 1 << 20, 1 << 20)
    w.close()
    assert len(os.listdir(target)) == 1


def test_rotation_by_size_keeps_every_record_in_write_order(tmp_path):
    w = CaptureWriter(str(tmp_path), 1, segment_bytes=1024, max_frame_bytes=1 << 20,
                      run_id=99)
    frames = write_requests(w, 60)
    w.close()
    names = os.listdir(tmp_path)
    assert len(names) >= 5
    assert all(NAME.match(n) for n in names), names
    ordered = sorted(names)
    # Names sort in write order: the header's sequence number is the index.
    for index, name in enumerate(ordered):
        with open(tmp_path / name, "rb") as fh:
            data = fh.read()
        result = decode_segment(data)
        assert result.segment.segment_seq == index
        assert result.segment.processor_id == 1
        assert len(data) <= 1024, (name, len(data))
        assert result.records, name   # no empty segment is left behind
    records = read_dir(str(tmp_path))
    assert [r.frame for r in records] == frames
    assert [r.correlation_id for r in records] == list(range(60))
    assert w.records_written == 60


def test_segment_names_sort_in_write_order_past_ten_segments(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=200, max_frame_bytes=1 << 20, run_id=5)
    write_requests(w, 25)
    w.close()
    names = sorted(os.listdir(tmp_path))
    assert len(names) > 10
    seqs = [int(NAME.match(n).group(3)) for n in names]
    assert seqs == list(range(len(names)))
    assert [r.correlation_id for r in read_dir(str(tmp_path))] == list(range(25))


def test_record_bigger_than_a_segment_gets_a_segment_of_its_own(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=1024, max_frame_bytes=1 << 20)
    w.request(CONN, PEER, b"a" * 10, 3, 12, 1, "c")
    w.request(CONN, PEER, b"b" * 5000, 3, 12, 2, "c")
    w.request(CONN, PEER, b"c" * 10, 3, 12, 3, "c")
    w.close()
    assert len(os.listdir(tmp_path)) == 3
    assert [r.correlation_id for r in read_dir(str(tmp_path))] == [1, 2, 3]


def test_two_writers_of_one_run_never_share_a_file(tmp_path):
    a = CaptureWriter(str(tmp_path), 0, 300, 1 << 20, run_id=7)
    b = CaptureWriter(str(tmp_path), 1, 300, 1 << 20, run_id=7)
    for i in range(10):
        a.request("a", PEER, b"x" * 50, 3, 12, i, "a")
        b.request("b", PEER, b"y" * 50, 3, 12, i, "b")
    a.close()
    b.close()
    for name in os.listdir(tmp_path):
        pid = int(NAME.match(name).group(2))
        with open(tmp_path / name, "rb") as fh:
            result = decode_segment(fh.read())
        assert result.segment.processor_id == pid
        assert {r.connection_id for r in result.records} <= {"ab"[pid]}


# -- frame truncation ----------------------------------------------------------------------

def test_frames_longer_than_max_frame_bytes_are_cut_and_marked(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, 1 << 20, max_frame_bytes=100)
    long_frame = bytes(range(256)) * 20
    w.request(CONN, PEER, long_frame, 0, 9, 1, "c")
    w.response(CONN, PEER, b"r" * 100, 0, 9, 1)        # exactly the limit: kept whole
    w.response(CONN, PEER, memoryview(b"s" * 101), 0, 9, 2)  # the Processor passes views
    w.close()
    req, exact, over = read_dir(str(tmp_path))
    assert req.frame == long_frame[:100] and req.frame_size == len(long_frame)
    assert req.truncated
    assert exact.frame == b"r" * 100 and exact.frame_size == 100 and not exact.truncated
    assert over.frame == b"s" * 100 and over.frame_size == 101 and over.truncated


def test_a_response_given_as_its_first_bytes_records_its_full_size(tmp_path):
    # A Fetch sent from files: the Processor reads back only max_frame_bytes of it
    # and passes the frame's real size.
    w = CaptureWriter(str(tmp_path), 0, 1 << 20, max_frame_bytes=100)
    w.response(CONN, PEER, b"f" * 100, 1, 12, 1, size=5_000_000)
    w.response(CONN, PEER, b"g" * 60, 1, 12, 2, size=60)
    w.close()
    cut, whole = read_dir(str(tmp_path))
    assert cut.frame == b"f" * 100 and cut.frame_size == 5_000_000 and cut.truncated
    assert whole.frame == b"g" * 60 and whole.frame_size == 60 and not whole.truncated


def test_request_and_response_fields(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, 1 << 20, 1 << 20)
    w.request(CONN, PEER, b"req", 18, 3, 77, "my-client")
    w.request(CONN, PEER, b"req0", 7, 0, 78, None)
    w.response(CONN, PEER, b"resp", 18, 3, 77)
    w.close()
    req, req0, resp = read_dir(str(tmp_path))
    assert (req.direction, req.api_key, req.api_version, req.correlation_id, req.client_id,
            req.connection_id, req.peer, req.frame_size) == (
        REQUEST, 18, 3, 77, "my-client", CONN, PEER, 3)
    assert req0.client_id is None
    assert (resp.direction, resp.api_key, resp.api_version, resp.correlation_id,
            resp.client_id) == (RESPONSE, 18, 3, 77, None)
    assert req.timestamp_ns <= req0.timestamp_ns <= resp.timestamp_ns


def test_hostile_client_id_does_not_blind_the_segment(tmp_path):
    """The Processor decodes client ids with errors='replace', so 32767 bytes of
    0xFF become 32767 U+FFFD (98301 bytes of UTF-8).  Cutting that to the int16
    length limit must not split a character, or the record (and every record
    after it in the segment) becomes unreadable."""
    w = CaptureWriter(str(tmp_path), 0, 1 << 20, 1 << 20)
    w.request(CONN, PEER, b"x", 3, 12, 1, "\ufffd" * 32767)
    w.request(CONN, PEER, b"y", 3, 12, 2, "ok")
    w.close()
    with open(w.segment_path(0), "rb") as fh:
        result = decode_segment(fh.read())
    assert result.problems == []
    assert [r.correlation_id for r in result.records] == [1, 2]


# -- write errors never raise ---------------------------------------------------------------

def error_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == writer_mod.__name__ and r.levelno >= logging.ERROR]


@pytest.mark.parametrize("failing", ["mmap", "posix_fallocate"])
def test_error_starting_a_segment_turns_capture_off_once(tmp_path, monkeypatch, caplog,
                                                         failing):
    """No mapping (ENOMEM) or no disk space (ENOSPC from the reservation) for the
    next segment: one log line, capture off, the records before it intact."""
    w = CaptureWriter(str(tmp_path), 4, segment_bytes=400, max_frame_bytes=1 << 20)
    w.request(CONN, PEER, b"before", 3, 12, 1, "c")
    err = errno.ENOMEM if failing == "mmap" else errno.ENOSPC

    def refuse(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    target = writer_mod.mmap if failing == "mmap" else writer_mod.os
    monkeypatch.setattr(target, failing, refuse)
    with caplog.at_level(logging.ERROR, logger=writer_mod.__name__):
        for i in range(5):   # the first needs a new segment; none may raise
            w.request(CONN, PEER, b"lost" * 100, 3, 12, 2 + i, "c")
            w.response(CONN, PEER, b"lost too", 3, 12, 2 + i)
    assert not w.enabled
    assert w.records_written == 1
    (line,) = error_lines(caplog)       # one line, not one per refused record
    assert "capture is off for processor 4" in line and os.strerror(err) in line
    monkeypatch.undo()
    w.request(CONN, PEER, b"after", 3, 12, 9, "c")      # stays off
    w.close()
    # The failed segment's file is gone; the first was closed and cut.
    assert os.listdir(tmp_path) == [os.path.basename(w.segment_path(0))]
    assert [r.frame for r in read_dir(str(tmp_path))] == [b"before"]
    assert len(error_lines(caplog)) == 1


def test_error_on_the_first_segment_leaves_a_writer_that_is_off(tmp_path, monkeypatch,
                                                                caplog):
    def full_disk(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_mod.os, "posix_fallocate", full_disk, raising=False)
    with caplog.at_level(logging.ERROR, logger=writer_mod.__name__):
        w = CaptureWriter(str(tmp_path), 0, 1 << 20, 1 << 20)   # must not raise
        w.request(CONN, PEER, b"x", 3, 12, 1, "c")
    assert not w.enabled and w.records_written == 0
    assert len(error_lines(caplog)) == 1
    assert os.listdir(tmp_path) == []
    w.close()


@pytest.mark.parametrize("how", [errno.EOPNOTSUPP, errno.EINVAL, "missing"])
def test_without_posix_fallocate_the_file_is_extended_sparse(tmp_path, monkeypatch, how):
    """File systems that cannot reserve space (and macOS, which has no
    posix_fallocate): the segment is sized with ftruncate instead."""
    if how == "missing":
        monkeypatch.delattr(writer_mod.os, "posix_fallocate", raising=False)
    else:
        def unsupported(fd, offset, length):
            raise OSError(how, os.strerror(how))
        monkeypatch.setattr(writer_mod.os, "posix_fallocate", unsupported, raising=False)
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=1000, max_frame_bytes=1 << 20)
    assert os.path.getsize(w.segment_path(0)) == 1000 + ZERO_TAIL_MIN
    frames = write_requests(w, 20)
    w.close()
    assert w.enabled is False and w.records_written == 20
    assert [r.frame for r in read_dir(str(tmp_path))] == frames


def test_directory_removed_before_rotation_turns_capture_off(tmp_path):
    directory = tmp_path / "caps"
    w = CaptureWriter(str(directory), 0, segment_bytes=300, max_frame_bytes=1 << 20)
    shutil.rmtree(directory)
    for i in range(10):  # the second or third needs a new segment: open() fails
        w.request(CONN, PEER, b"z" * 100, 3, 12, i, "c")
    assert not w.enabled
    w.close()
    w.close()  # closing twice is harmless


def test_close_is_idempotent_and_writes_after_close_do_not_raise(tmp_path, caplog):
    w = CaptureWriter(str(tmp_path), 0, 1 << 20, 1 << 20)
    w.close()
    w.close()
    with caplog.at_level(logging.ERROR, logger=writer_mod.__name__):
        w.request(CONN, PEER, b"late", 3, 12, 1, "c")   # a closed writer is off, quietly
    assert not w.enabled and w.records_written == 0
    assert error_lines(caplog) == []
    assert read_dir(str(tmp_path)) == []


def test_close_after_a_write_error_cuts_the_segment_and_is_harmless(tmp_path, monkeypatch):
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=300, max_frame_bytes=1 << 20)
    w.request(CONN, PEER, b"a" * 100, 3, 12, 1, "c")
    def no_memory(*args, **kwargs):
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(writer_mod.mmap, "mmap", no_memory)
    w.request(CONN, PEER, b"b" * 200, 3, 12, 2, "c")    # needs a new segment: fails
    assert not w.enabled
    w.close()
    w.close()
    (name,) = os.listdir(tmp_path)
    with open(tmp_path / name, "rb") as fh:
        data = fh.read()
    result = decode_segment(data)
    assert [r.correlation_id for r in result.records] == [1] and result.problems == []
    assert len(data) == closed_size(result)      # cut when the roll closed it


# -- the mapping: zero tail while open, none once closed, crashes -----------------------------

def closed_size(result) -> int:
    """What a closed segment holding exactly these records measures."""
    return FILE_HEADER.size + sum(len(encode_record(r)) for r in result.records)


def test_closed_segments_are_exactly_the_bytes_written(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=2000, max_frame_bytes=1 << 20)
    write_requests(w, 40, size=150)
    w.close()
    names = sorted(os.listdir(tmp_path))
    assert len(names) >= 3
    for name in names:
        with open(tmp_path / name, "rb") as fh:
            data = fh.read()
        result = decode_segment(data)
        assert result.problems == []
        assert len(data) == closed_size(result) <= 2000, name    # no zero tail


def test_open_segment_has_a_zero_tail_the_reader_takes_as_the_end(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=1 << 16, max_frame_bytes=1 << 20)
    try:
        frames = write_requests(w, 30)
        w.response(CONN, PEER, memoryview(b"resp" * 10), 3, 12, 99)
        with open(w.segment_path(0), "rb") as fh:     # the writer is still open
            data = fh.read()
        assert len(data) == (1 << 16) + ZERO_TAIL_MIN
        result = decode_segment(data)
        assert result.problems == [] and result.torn_tail_bytes == 0
        assert [r.frame for r in result.records] == frames + [b"resp" * 10]
        assert not any(data[closed_size(result):])
    finally:
        w.close()
    assert os.path.getsize(w.segment_path(0)) == closed_size(result)


def test_crash_while_a_record_is_being_copied_is_a_torn_tail(tmp_path):
    """What a copy of the file taken mid-copy (or after a crash mid-copy) holds:
    the written records, part of the next one, the zero tail."""
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=1 << 16, max_frame_bytes=1 << 20)
    write_requests(w, 5)
    with open(w.segment_path(0), "rb") as fh:
        live = fh.read()
    end = closed_size(decode_segment(live))
    w.request(CONN, PEER, b"\xee" * 100, 3, 12, 5, "c")
    with open(w.segment_path(0), "rb") as fh:
        after = fh.read()
    w.close()
    whole = after[end:closed_size(decode_segment(after))]
    for kept in (5, 8, 9, len(whole) // 2, len(whole) - 1):
        half = live[:end] + whole[:kept] + live[end + kept:]
        result = decode_segment(half)
        assert [r.correlation_id for r in result.records] == [0, 1, 2, 3, 4], kept
        assert result.torn_tail_bytes == len(whole), kept
        assert "torn tail" in result.problems[0], kept


_CRASHING_WRITER = """
import os, sys
from kafka_net.capture.writer import CaptureWriter
w = CaptureWriter(sys.argv[1], 7, segment_bytes=4096, max_frame_bytes=1 << 20, run_id=1)
for i in range(50):
    w.request("conn", "peer", bytes([i]) * 200, 3, 12, i, "c")
os._exit(3)     # no close, no unmap, no flush: the process just dies
"""


def test_records_copied_before_a_process_crash_survive_it(tmp_path):
    root = str(Path(writer_mod.__file__).resolve().parents[2])     # imports this checkout
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run([sys.executable, "-c", _CRASHING_WRITER, str(tmp_path)],
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    names = sorted(os.listdir(tmp_path))
    results = [decode_segment((tmp_path / n).read_bytes()) for n in names]
    assert all(r.problems == [] for r in results)
    assert [r.correlation_id for res in results for r in res.records] == list(range(50))
    # Closed segments were cut; the one open at the crash kept its zero tail.
    assert [os.path.getsize(tmp_path / n) for n in names[:-1]] == \
        [closed_size(r) for r in results[:-1]]
    assert os.path.getsize(tmp_path / names[-1]) == 4096 + ZERO_TAIL_MIN


def test_record_bigger_than_a_segment_as_the_very_first_record(tmp_path):
    """The first segment is empty and too small: it grows instead of being left
    behind with nothing in it."""
    w = CaptureWriter(str(tmp_path), 0, segment_bytes=1024, max_frame_bytes=1 << 20)
    w.request(CONN, PEER, b"B" * 5000, 3, 12, 1, "c")
    w.request(CONN, PEER, b"s" * 10, 3, 12, 2, "c")
    w.request(CONN, PEER, b"B" * 3000, 3, 12, 3, "c")
    w.close()
    names = sorted(os.listdir(tmp_path))
    sizes = [os.path.getsize(tmp_path / n) for n in names]
    assert len(names) == 3 and sizes[1] <= 1024 and min(sizes[0], sizes[2]) > 3000
    assert [r.correlation_id for r in read_dir(str(tmp_path))] == [1, 2, 3]
    assert w.records_written == 3


def test_record_exactly_filling_a_segment_stays_in_it(tmp_path):
    probe = CaptureWriter(str(tmp_path / "probe"), 0, 1 << 20, 1 << 20)
    probe.request(CONN, PEER, b"q" * 100, 3, 12, 1, "c")
    probe.close()
    full = os.path.getsize(probe.segment_path(0))
    w = CaptureWriter(str(tmp_path / "w"), 0, segment_bytes=full, max_frame_bytes=1 << 20)
    w.request(CONN, PEER, b"q" * 100, 3, 12, 1, "c")
    w.request(CONN, PEER, b"q" * 100, 3, 12, 2, "c")
    w.close()
    assert [os.path.getsize(w.segment_path(i)) for i in (0, 1)] == [full, full]


# -- encoding shortcuts ------------------------------------------------------------------

def test_strings_cache_is_bounded_and_keyed_by_every_string(tmp_path):
    w = CaptureWriter(str(tmp_path), 0, 1 << 20, 1 << 20)
    n = writer_mod._STRINGS_CACHE_MAX + 50
    for i in range(n):
        w.request(f"conn-{i}", f"peer-{i}", b"f", 3, 12, i, "c")
        assert len(w._strings) <= writer_mod._STRINGS_CACHE_MAX
    w.request("conn-0", "peer-0", b"f", 3, 12, n, "other-client")
    w.request("conn-0", "another-peer", b"f", 3, 12, n + 1, "c")
    w.close()
    records = read_dir(str(tmp_path))
    assert [(r.connection_id, r.peer, r.client_id) for r in records[:n]] == [
        (f"conn-{i}", f"peer-{i}", "c") for i in range(n)]
    assert [(r.peer, r.client_id) for r in records[n:]] == [
        ("peer-0", "other-client"), ("another-peer", "c")]


def test_channel_formats_its_peer_once_for_logs_and_captures():
    tcp_server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(tcp_server.getsockname())
    accepted, _ = tcp_server.accept()
    a, b = socket.socketpair()
    try:
        channel = KafkaChannel("c", accepted, 1024)
        host, port = client.getsockname()
        assert channel.peer_text == f"{host}:{port}"
        assert KafkaChannel("u", a, 1024).peer_text == ""   # AF_UNIX: as before
    finally:
        for s in (tcp_server, client, accepted, a, b):
            s.close()


# -- a live server ---------------------------------------------------------------------------

def captured(directory: str) -> list:
    return read_dir(directory)


def test_live_server_records_every_request_and_response(tmp_path):
    cap = str(tmp_path / "cap")
    config = make_config(capture_dir=cap, num_network_threads=1)
    sent, received = [], []
    with running_server(config) as server:
        port = server.bound_port()
        with RawClient(port) as client:
            peer = "%s:%d" % client.sock.getsockname()[:2]
            for api_key, version, body in [(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY),
                                           (ApiKey.METADATA, 12, {"topics": None}),
                                           (ApiKey.METADATA, 1, {"topics": []})]:
                corr, frame = client.request_frame(api_key, version, body)
                client.send_raw(frame)
                sent.append((api_key, version, corr, frame[4:]))
                received.append(client.recv_frame())
            # Pipelined: two requests before reading either answer.
            pipelined = [client.request_frame(ApiKey.API_VERSIONS, v, {}) for v in (0, 1)]
            client.send_raw(b"".join(f for _, f in pipelined))
            sent += [(ApiKey.API_VERSIONS, v, c, f[4:]) for v, (c, f) in zip((0, 1), pipelined)]
            received += [client.recv_frame(), client.recv_frame()]
    records = captured(cap)
    requests = [r for r in records if r.direction == REQUEST]
    responses = [r for r in records if r.direction == RESPONSE]
    assert [(r.api_key, r.api_version, r.correlation_id, r.frame) for r in requests] == sent
    assert all(r.client_id == "kafka-net" for r in requests)
    assert all(r.peer == peer for r in records)
    assert len({r.connection_id for r in records}) == 1
    assert records[0].connection_id.endswith(f"-{peer}-0-0")
    # Responses carry their request's API key and version, and exactly the bytes sent.
    assert [(r.api_key, r.api_version, r.correlation_id) for r in responses] == [
        (k, v, c) for k, v, c, _ in sent]
    assert [r.frame for r in responses] == received
    assert all(r.frame_size == len(r.frame) and not r.truncated for r in records)
    # Each request is on record before its response.
    order = [(r.direction, r.correlation_id) for r in records]
    for _, _, corr, _ in sent:
        assert order.index((REQUEST, corr)) < order.index((RESPONSE, corr))
    ts = [r.timestamp_ns for r in records]
    assert ts == sorted(ts)


def test_live_server_records_a_request_it_refuses(tmp_path):
    """Frames are captured before parsing: a request the broker closes the
    connection on is on record, with whatever header fields could be read."""
    cap = str(tmp_path / "cap")
    with running_server(make_config(capture_dir=cap, num_network_threads=1)) as server:
        with RawClient(server.bound_port()) as client:
            bogus = (1000).to_bytes(2, "big", signed=True) + b"\x00\x00" + b"\x00\x00\x00\x2a"
            client.send_raw(len(bogus).to_bytes(4, "big") + bogus)
            assert client.is_closed_by_server()
    (rec,) = captured(cap)
    assert (rec.direction, rec.api_key, rec.api_version, rec.correlation_id, rec.client_id) \
        == (REQUEST, 1000, 0, 42, None)


def test_live_server_cuts_big_frames_and_rotates(tmp_path):
    cap = str(tmp_path / "cap")
    config = make_config(capture_dir=cap, num_network_threads=1,
                         capture_segment_bytes=2048, capture_max_frame_bytes=64)
    with running_server(config) as server:
        with RawClient(server.bound_port()) as client:
            for _ in range(20):
                client.call(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_BODY)
    names = sorted(os.listdir(cap))
    assert len(names) > 1
    records = captured(cap)
    assert len(records) == 40
    assert [r.correlation_id for r in records] == [i // 2 for i in range(40)]
    responses = [r for r in records if r.direction == RESPONSE]
    assert all(r.truncated and len(r.frame) == 64 and r.frame_size > 64 for r in responses)


def test_one_file_series_per_processor(tmp_path):
    cap = str(tmp_path / "cap")
    config = make_config(capture_dir=cap, num_network_threads=2)
    with running_server(config) as server:
        port = server.bound_port()
        clients = [RawClient(port) for _ in range(4)]
        try:
            for c in clients:
                c.call(ApiKey.METADATA, 12, {"topics": None})
        finally:
            for c in clients:
                c.close()
        processors = {p.id for p in server.socket_server.processors}
    names = os.listdir(cap)
    runs = {NAME.match(n).group(1) for n in names}
    assert len(runs) == 1
    by_processor: dict[int, set[str]] = {}
    for name in names:
        pid = int(NAME.match(name).group(2))
        with open(os.path.join(cap, name), "rb") as fh:
            result = decode_segment(fh.read())
        assert result.problems == [] and result.segment.processor_id == pid
        by_processor.setdefault(pid, set()).update(r.connection_id for r in result.records)
    assert set(by_processor) == processors
    # Connections are spread over the processors, and none is in two series.
    assert all(by_processor[p] for p in processors)
    assert set.isdisjoint(*by_processor.values())
    assert sum(len(c) for c in by_processor.values()) == 4
    for pid, conns in by_processor.items():
        assert all(c.split("-")[-2] == str(pid) for c in conns)


def test_no_capture_files_without_capture_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with running_server(make_config()) as server:
        assert all(p.capture is None for p in server.socket_server.processors)
        with RawClient(server.bound_port()) as client:
            client.call(ApiKey.API_VERSIONS, 0, {})
    assert not [n for n in os.listdir(tmp_path) if n.endswith(SUFFIX)]
