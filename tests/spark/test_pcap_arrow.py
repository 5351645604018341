"""The compiled passes over a pcap (kafka_net.spark_jobs.pcap_arrow over
kafka_net.capture._flows: a range's records to each flow's index records, a
flow's index records to its frame columns) against the references they sit
beside (transforms.file_units and task_reads.index_rows; the flow's packets
reassembled by kafka_net.capture.tcp, a row dict per frame): each range's index
rows, and the units table of a capture (every column of every row, in order,
problems and range counts included), are the same whichever runs, whole or in
ranges, on generated captures with retransmissions, reordering,
lost and cut packets, mid-stream starts, several flows interleaved, FIN and RST,
files cut short and bytes mutated.  Flows the pass does not take go to the
reference; the clean ones must be taken (else this would compare the reference
with itself)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from kafka_net.capture.packet import ACK, RST
from kafka_net.spark_jobs import conformance, pcap_arrow, task_reads
from kafka_net.spark_jobs.arrow_stages import read_range
from tests.capture.packets import ip_packet, link_frame, pcap_file
from tests.capture.tcp_wire import Wire, conversation, shuffle_within_bursts

compiled = pytest.mark.skipif(not pcap_arrow.ENABLED,
                              reason="KAFKA_NET_READABLE=1: the reference alone runs")


def _records(packets, linktype: int = 1) -> list[tuple]:
    return [(p.timestamp_ns, link_frame(linktype, ip_packet(
        p.src_ip, p.src_port, p.dst_ip, p.dst_port, p.seq % 2**32, p.ack % 2**32, p.flags,
        p.payload))) for p in sorted(packets, key=lambda p: p.timestamp_ns)]


def _both(path, monkeypatch, ranges=None) -> tuple[list, list, int]:
    """(compiled rows, reference rows, flows the compiled pass took) of one file,
    read whole or in ``ranges``."""
    taken = []
    real = pcap_arrow.flow_table

    def counting(parts, files, schema):
        table = real(parts, files, schema)
        taken.append(table is not None)
        return table

    ranges = ranges or [(str(path), 0, -1, None, False)]
    monkeypatch.setattr(pcap_arrow, "flow_table", counting)
    fast = found_rows(ranges)
    monkeypatch.setattr(pcap_arrow, "ENABLED", False)
    reference = found_rows(ranges)
    monkeypatch.setattr(pcap_arrow, "ENABLED", True)
    return fast, reference, sum(taken)


def found_rows(ranges: list[tuple]) -> list[dict]:
    """What the pcap tasks find in range rows: each range's notes (problems,
    range counts) from its index (task_reads.range_index), then each flow's
    problems and frame rows (task_reads.flow_frames), the flows in order."""
    notes, flows = [], {}
    for path, start, end, resume, split in ranges:
        for r in task_reads.range_index(path, read_range(path, start, end),
                                        resume and json.loads(resume), start, split):
            if r["kind"] == task_reads.INDEX:
                flows.setdefault(r["flow"], []).append(r)
            else:
                notes.append(r)
    found = []
    with task_reads.PayloadReader() as files:
        for flow in sorted(flows):
            table, problems = task_reads.flow_frames(flows[flow], files, None)
            found += problems + (table.to_pylist() if table is not None else [])
    return notes + found


def _assert_same(fast: list, reference: list) -> None:
    assert len(fast) == len(reference)
    for i, (a, b) in enumerate(zip(fast, reference)):
        assert a == b, (i, a, b)


def _conversation(rng: random.Random, port: int, t0: int, n: int, mss: int, pipeline: int,
                  handshake: bool, close: bool):
    wire = Wire(client=("10.0.0.1", port), isn_c=rng.randrange(2**32),
                isn_b=rng.randrange(2**32), t0=t0, step=rng.choice((1, 1000)))
    return conversation(n, mss, pipeline, wire, handshake, close)[0].packets


@compiled
def test_a_clean_connection_is_taken_and_equal(tmp_path, monkeypatch):
    packets = conversation(n=6, mss=40, pipeline=2)[0].packets
    path = tmp_path / "clean.pcap"
    path.write_bytes(pcap_file(_records(packets)))
    fast, reference, taken = _both(path, monkeypatch)
    assert taken == 1 and any(r["marker"] == "close" for r in fast)
    _assert_same(fast, reference)
    assert pcap_arrow.range_index(str(path), path.read_bytes(), None, 0, False) is not None


@compiled
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), flows=st.integers(1, 3), n=st.integers(1, 6),
       mss=st.integers(1, 300), pipeline=st.integers(1, 4),
       handshake=st.booleans(), close=st.booleans(),
       chunk=st.sampled_from([None, None, 100, 300, 1000, 4000]),
       linktype=st.sampled_from([1, 1, 113, 276, 101]),
       damage=st.sampled_from(["none", "none", "reorder", "duplicate", "drop", "rst",
                               "snaplen", "cut", "mutate", "noise", "fields"]))
def test_compiled_flows_equal_the_reference(tmp_path_factory, monkeypatch, seed, flows, n,
                                            mss, pipeline, handshake, close, chunk, linktype,
                                            damage):
    rng = random.Random(seed)
    packets = []
    for k in range(flows):   # interleaved in time: each starts while the last runs
        packets += _conversation(rng, 50000 + k, 1_000_000_000 + k * 1500, n, mss, pipeline,
                                 handshake, close)
    snaplen = 262144
    if damage == "reorder":
        packets = shuffle_within_bursts(packets, rng)
    elif damage == "duplicate":
        packets = shuffle_within_bursts(packets, rng, dups=rng.randint(1, 3)) \
            if rng.random() < 0.5 else packets + [
                _later(p, 1) for p in rng.sample(packets, min(3, len(packets)))]
    elif damage == "drop" and len(packets) > 1:
        packets.remove(rng.choice(packets[1:]))
    elif damage == "rst":
        p = rng.choice(packets)
        packets.append(_later(p, 1, flags=RST | ACK, payload=b""))
    elif damage == "snaplen":
        snaplen = rng.randint(54, 120)
    elif damage == "fields":
        packets = [_mutated(p, rng) if rng.random() < 0.15 else p for p in packets]
    data = pcap_file(_records(packets, linktype), linktype, snaplen=snaplen)
    if damage == "cut":
        data = data[:rng.randint(24, len(data))]
    elif damage == "mutate":
        data = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(24, len(data))] = rng.randrange(256)
        data = bytes(data)
    elif damage == "noise":
        data = data[:24] + rng.randbytes(rng.randint(0, 400))
    path = tmp_path_factory.mktemp("pcap") / "flows.pcap"
    path.write_bytes(data)
    ranges = conformance.plan_inputs([str(path)], chunk) if chunk else None
    indexed = _assert_same_index(ranges or [(str(path), 0, -1, None, False)], monkeypatch)
    event(f"{damage}: {'some' if indexed else 'no'} range indexed by the compiled loop")
    fast, reference, taken = _both(path, monkeypatch, ranges)
    _assert_same(fast, reference)
    event(f"{damage}: {'some' if taken else 'no'} flow compiled")
    if damage == "none" and handshake:
        assert taken == flows     # clean connections go the compiled way
    if damage == "none" and linktype != 101:
        assert indexed            # Ethernet, SLL, SLL2: the compiled record loop


@compiled
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), n=st.integers(1, 5), mss=st.integers(1, 200),
       pipeline=st.integers(1, 3), close=st.booleans(), changes=st.integers(1, 2))
def test_a_changed_packet_field_never_makes_them_differ(tmp_path_factory, monkeypatch, seed,
                                                        n, mss, pipeline, close, changes):
    """One connection with one or two packets changed (flags, numbers, time, payload):
    the compiled pass takes it only where the reference gives the same rows."""
    rng = random.Random(seed)
    packets = _conversation(rng, 50000, 1_000_000_000, n, mss, pipeline, True, close)
    for _ in range(changes):
        i = rng.randrange(len(packets))
        packets[i] = _mutated(packets[i], rng)
    path = tmp_path_factory.mktemp("pcap") / "changed.pcap"
    path.write_bytes(pcap_file(_records(packets)))
    fast, reference, taken = _both(path, monkeypatch)
    _assert_same(fast, reference)
    event(f"{'compiled' if taken else 'reference'}")


def test_readable_runs_never_import_the_compiled_module(tmp_path):
    """KAFKA_NET_READABLE=1: the reference reads the capture, and the compiled
    module is not even loaded (a missing build cannot matter there)."""
    path = tmp_path / "clean.pcap"
    path.write_bytes(pcap_file(_records(conversation(n=3)[0].packets)))
    script = ("import sys\n"
              "from tests.spark.test_pcap_arrow import found_rows\n"
              f"t = found_rows([({str(path)!r}, 0, -1, None, False)])\n"
              "assert len(t) == 7, len(t)\n"
              "assert 'kafka_net.capture._flows' not in sys.modules\n")
    env = {**os.environ, "KAFKA_NET_READABLE": "1"}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)


def _assert_same_index(ranges, monkeypatch) -> int:
    """Each range's index rows: the compiled record loop's are the reference's;
    how many ranges it read."""
    indexed = 0
    for path, start, end, resume, split in ranges:
        data = read_range(path, start, end)
        resume = resume and json.loads(resume)
        indexed += pcap_arrow.range_index(path, data, resume, start, split) is not None
        fast = task_reads.range_index(path, data, resume, start, split)
        monkeypatch.setattr(pcap_arrow, "ENABLED", False)
        reference = task_reads.range_index(path, data, resume, start, split)
        monkeypatch.setattr(pcap_arrow, "ENABLED", True)
        assert fast == reference
    return indexed


def _mutated(p, rng: random.Random):
    """One packet with a field changed: flags, sequence or acknowledgement number,
    time, or payload (bytes cut off or changed)."""
    from dataclasses import replace
    what = rng.choice(("flags", "seq", "ack", "ts", "payload"))
    if what == "flags":
        return replace(p, flags=rng.randrange(64))
    if what == "seq":
        return replace(p, seq=(p.seq + rng.choice((-1, 1, -40, 40, 2**31))) % 2**32)
    if what == "ack":
        return replace(p, ack=(p.ack + rng.choice((-1, 1, 1000, 2**31))) % 2**32)
    if what == "ts":
        return replace(p, timestamp_ns=p.timestamp_ns + rng.choice((-5000, -1, 1, 5000)))
    payload = bytearray(p.payload)
    if payload and rng.random() < 0.5:
        payload[rng.randrange(len(payload))] = rng.randrange(256)
    else:
        del payload[rng.randrange(len(payload) + 1):]
    return replace(p, payload=bytes(payload), payload_len=len(payload))


def _later(p, dt: int, **changes):
    from dataclasses import replace
    return replace(p, timestamp_ns=p.timestamp_ns + dt, **changes)
