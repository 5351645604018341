"""What reading costs per frame, .kncap against pcap: the part of the conformance
job before the per-connection checks, in one process (issue 29, "Cheaper reassembly").

``python -m bench.spark_read_costs [FRAMES] [--profile N]`` (default 40,000 frames,
the spark_bench conversation over 200 connections, written both ways): per frame,
best of three, the garbage collector off while timing,

* kncap: ``reader.kncap_columns`` over each segment (decode, CRC, columns);
* pcap: ``pcap.read_capture`` over each file (records, link, IP, TCP headers),
  then ``transforms.frames_of_flow`` per flow (TCP reassembly, framing, the
  frame rows), and the two apart;
* both: ``transforms.check_connection`` over the frame rows (the same work for
  either input, for scale).

With ``--profile N``: the pcap read under cProfile, the top N functions by own time.
Prints one line per measure."""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import shutil
import sys
import tempfile
import time

from bench.spark_bench import generate, generate_pcap
from kafka_net.capture import reader
from kafka_net.capture.pcap import read_capture
from kafka_net.spark_jobs import transforms


def _best(fn, frames: int) -> float:
    best = float("inf")
    for _ in range(3):
        gc.collect()
        gc.disable()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        gc.enable()
    return best / frames * 1e6


def _files(paths: list[str]) -> list[tuple[str, bytes]]:
    out = []
    for path in sorted(paths):
        with open(path, "rb") as fh:
            out.append((path, fh.read()))
    return out


def kncap_read(files) -> list[dict]:
    rows = []
    for path, data in files:
        cols, _ = reader.kncap_columns(path, data)
        names = list(cols)
        rows += [dict(zip(names, values)) for values in zip(*cols.values())]
    return rows


def pcap_packets(files) -> dict[tuple, list]:
    flows: dict[tuple, list] = {}
    for path, data in files:
        for p in read_capture(data).packets:
            a, b = (p.src_ip, p.src_port), (p.dst_ip, p.dst_port)
            flows.setdefault((a, b) if a <= b else (b, a), []).append((path, p))
    return flows


def pcap_frames(flows) -> list[dict]:
    rows = []
    for packets in flows.values():
        rows += [u[1] for u in transforms.frames_of_flow(packets) if u[0] == "frame"]
    return rows


def check_all(rows: list[dict]) -> None:
    by_conn: dict[str, list[dict]] = {}
    for r in rows:
        by_conn.setdefault(r["connection"], []).append(r)
    for conn, conn_rows in by_conn.items():
        transforms.check_connection(conn, conn_rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_read_costs")
    parser.add_argument("frames", type=int, nargs="?", default=40_000)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="kafka-net-read-costs-")
    try:
        kncap = _files(generate(work + "/k", args.frames, 200, processors=1)["paths"])
        pcap = _files(generate_pcap(work + "/p", args.frames, 200)["paths"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    k_rows = kncap_read(kncap)
    flows = pcap_packets(pcap)
    p_rows = pcap_frames(flows)
    n = len(k_rows)
    assert len([r for r in p_rows if r["marker"] is None]) == n, (len(p_rows), n)
    k = _best(lambda: kncap_read(kncap), n)
    packets = _best(lambda: pcap_packets(pcap), n)
    frames = _best(lambda: pcap_frames(flows), n)
    check = _best(lambda: check_all(k_rows), n)
    print(f"{n:,} frames, {sum(len(v) for v in flows.values()):,} TCP packets; µs/frame:")
    print(f"  kncap read (kncap_columns, rows)           {k:6.2f}")
    print(f"  pcap read  (read_capture + frames_of_flow) {packets + frames:6.2f}"
          f"  = packets {packets:.2f} + reassembly and frame rows {frames:.2f}")
    print(f"  check_connection (either input)            {check:6.2f}")
    print(f"  pcap / kncap, read + check: {(packets + frames + check) / (k + check):.2f}x")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        pcap_frames(pcap_packets(pcap))
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(args.profile)
        print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
