"""Where the conformance job's per-connection checks spend their Python time, and
what a vectorised pairing would give, measured before writing one (issue 21).

``python -m bench.spark_check_costs [FRAMES]`` (default 40,000): writes the
spark_bench kafka-net conversation (one Processor, 200 connections), then, in this
process, CPU per frame (best of three): ``transforms.check_connection`` as the job runs
it (bodies checked by the generated walkers, :mod:`kafka_net.protocol.walker`); the
same with the body checks stubbed out (every body "not decoded"); the same with the
bodies decoded whole instead (the decoders, as before the walkers); ``pair_connection``
alone (the walk, bodies checked, no rows in or out); and the in-order pairing case
(the k-th response of each connection answers its k-th request) checked with
numpy/pyarrow over the whole table at once.  Prints one line."""

from __future__ import annotations

import gc
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.spark_bench import generate
from kafka_net.capture import pairing, pairing_checks, reader
from kafka_net.spark_jobs import transforms


def _rows(frames: int, directory: str) -> list[dict]:
    written = generate(directory, frames, 200, processors=1)
    rows = []
    for path in written["paths"]:
        with open(path, "rb") as fh:
            cols, _ = reader.kncap_columns(path, fh.read())
        names = list(cols)
        rows += [dict(zip(names, values)) for values in zip(*cols.values())]
    return rows


def _in_order(table) -> bool:
    s = table.sort_by([("connection", "ascending"), ("seq", "ascending")])
    conn = pc.dictionary_encode(s["connection"]).combine_chunks().indices.to_numpy()
    direction = s["direction"].to_numpy()
    corr = s["correlation_id"].to_numpy()
    req = direction == 0
    return bool(req.sum() == (~req).sum() and np.array_equal(conn[req], conn[~req])
                and np.array_equal(corr[req], corr[~req]))


def main(argv: list[str]) -> int:
    frames = int(argv[0]) if argv else 40_000
    work = tempfile.mkdtemp(prefix="kafka-net-check-costs-")
    try:
        rows = _rows(frames, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_conn: dict[str, list[dict]] = {}
    for r in rows:
        by_conn.setdefault(r["connection"], []).append(r)

    def us_per_frame(fn) -> float:
        """CPU time of this process, best of three, the garbage collector off while
        timing (a full collection over the rows and frame objects alive here would
        land in one of them).  CPU, not wall-clock: on a shared machine the wall
        clock counts the time other processes held the core."""
        best = float("inf")
        for _ in range(3):
            gc.collect()
            gc.disable()
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
            gc.enable()
        return best / len(rows) * 1e6

    def check_all():
        for conn, conn_rows in by_conn.items():
            transforms.check_connection(conn, conn_rows)

    full = us_per_frame(check_all)
    saved = pairing.walk_request_body, pairing.walk_response_body
    pairing.walk_request_body = lambda *a: (None, "not decoded")
    pairing.walk_response_body = lambda *a: (None, "not decoded")
    try:
        no_bodies = us_per_frame(check_all)
        pairing.walk_request_body = pairing_checks.check_request_body
        pairing.walk_response_body = _decoded_codes
        decoders = us_per_frame(check_all)
    finally:
        pairing.walk_request_body, pairing.walk_response_body = saved
    models = [[transforms._frame(i, r) for i, r in enumerate(rs)] for rs in by_conn.values()]
    walk = us_per_frame(lambda: [pairing.pair_connection(f) for f in models])
    table = pa.Table.from_pylist([{"connection": r["connection"], "direction": r["direction"],
                                   "correlation_id": r["correlation_id"],
                                   "seq": r["order_key"][2]} for r in rows])
    vectorised = us_per_frame(lambda: _in_order(table))
    print(f"{len(rows):,} frames, CPU µs/frame: check_connection {full:.1f}; without body "
          f"checks {no_bodies:.1f} (body checks {full - no_bodies:.1f}, with the decoders "
          f"instead of the walkers {decoders - no_bodies:.1f}); pair_connection "
          f"alone {walk:.1f} (the walk without bodies {walk - (full - no_bodies):.1f}, rows "
          f"in and out {full - walk:.1f}); in-order pairing with numpy/pyarrow "
          f"{vectorised:.2f} (in order: {_in_order(table)})")
    return 0


def _decoded_codes(payload: bytes, api_key: int, api_version: int):
    """The body check as it was before the walkers: decode the whole body, then
    collect its error codes from the dicts."""
    body, why = pairing_checks.check_response_body(payload, api_key, api_version)
    return (None if body is None else pairing_checks.error_codes(body)), why


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
