"""What the conformance job's record-batch checks cost per batch, readable and
compiled (issue 29), on the batches of a real capture.

``python -m bench.record_batch_checks KNCAP_DIR [FRAMES] [--crc-table]``
(FRAMES default 200,000): reads the first FRAMES frames of the .kncap segments
in KNCAP_DIR (in name order), keeps the ``records`` fields of the Produce
requests and Fetch responses among them (found by the job's own walkers), and
times, in this process (CPU, best of three, the garbage collector off), the
checks the job runs on them:

* readable: ``validate_produce_records`` / ``_check_fetched_batches`` alone;
* as the job runs them: the compiled pass first, the readable one where it is
  not sure (``pairing_checks.check_produced`` / ``check_fetched``);
* the CRC32C calls alone (the crc32c package, once per batch).

``--crc-table`` also builds (Cython, in a temporary folder) a slice-by-8 table
CRC32C written in C and times it over the same batches against the package's
function: the choice the compiled pass made.  Prints a few lines.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections import Counter

from kafka_net.capture import pairing_checks, reader
from kafka_net.protocol.records.framing import (
    ATTRIBUTES_OFFSET, COMPRESSION_MASK, MAGIC_OFFSET, crc32c_function, iter_batches)
from kafka_net.protocol.records.validation import validate_produce_records

PRODUCE, FETCH = 0, 1


def _frames(directory: str, limit: int):
    """(connection, direction, frame) of the first ``limit`` frames."""
    count = 0
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".kncap"):
            continue
        path = os.path.join(directory, name)
        with open(path, "rb") as fh:
            cols, _ = reader.kncap_columns(path, fh.read())
        for row in zip(cols["connection"], cols["direction"], cols["frame"]):
            yield row
            count += 1
            if count >= limit:
                return


def collect(directory: str, limit: int) -> tuple[int, list, list]:
    """(frames read, [(records, version)] of Produce requests, [records] of Fetch
    responses), through the job's walkers with the record checks swapped out."""
    produced, fetched, asked = [], [], {}
    saved = pairing_checks.check_produced, pairing_checks.check_fetched
    pairing_checks.check_produced = lambda recs, v: produced.append((recs, v))
    pairing_checks.check_fetched = fetched.append
    frames = 0
    try:
        for conn, direction, frame in _frames(directory, limit):
            frames += 1
            if len(frame) < 8:
                continue
            if direction == 0:          # a request
                key = int.from_bytes(frame[0:2], "big")
                version = int.from_bytes(frame[2:4], "big")
                corr = int.from_bytes(frame[4:8], "big", signed=True)
                if key == FETCH:
                    asked[(conn, corr)] = version
                elif key == PRODUCE:
                    _, offset, why = pairing_checks.read_request(frame, key, version, corr,
                                                                 False)
                    if why is None:
                        pairing_checks.walk_request_body(frame, offset, key, version)
            elif direction == 1:        # a response
                version = asked.pop((conn, int.from_bytes(frame[0:4], "big", signed=True)),
                                    None)
                if version is not None:
                    pairing_checks.walk_response_body(frame, FETCH, version)
    finally:
        pairing_checks.check_produced, pairing_checks.check_fetched = saved
    return frames, produced, fetched


def cpu(fn) -> float:
    """CPU seconds of ``fn()``, best of three, the garbage collector off."""
    best = float("inf")
    for _ in range(3):
        gc.collect()
        gc.disable()
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
        gc.enable()
    return best


def main(argv: list[str]) -> int:
    table = "--crc-table" in argv
    args = [a for a in argv if a != "--crc-table"]
    directory = args[0]
    limit = int(args[1]) if len(args) > 1 else 200_000
    frames, produced, fetched = collect(directory, limit)
    batches = [b for recs, _ in produced for b in iter_batches(recs, allow_partial_tail=True)]
    batches += [b for recs in fetched for b in iter_batches(recs, allow_partial_tail=True)]
    kinds = Counter("compressed" if b[ATTRIBUTES_OFFSET + 1] & COMPRESSION_MASK
                    else f"magic {b[MAGIC_OFFSET]}" for b in batches)
    n = len(batches)
    size = sum(len(b) for b in batches) / max(n, 1)
    print(f"{frames:,} frames: {len(produced):,} Produce records fields, {len(fetched):,} "
          f"Fetch ones; {n:,} batches ({dict(kinds)}), {size:.0f} bytes on average")

    check_fetched_batches = pairing_checks._check_fetched_batches

    def readable():
        for recs, version in produced:
            validate_produce_records(recs, version)
        for recs in fetched:
            check_fetched_batches(recs)

    check_produced, check_fetched = pairing_checks.check_produced, pairing_checks.check_fetched

    def as_run():
        for recs, version in produced:
            check_produced(recs, version)
        for recs in fetched:
            check_fetched(recs)

    crc = crc32c_function()
    tails = [b[ATTRIBUTES_OFFSET:] for b in batches]

    def crcs(function=crc):
        for tail in tails:
            function(tail)

    before, after, crc_time = cpu(readable), cpu(as_run), cpu(crcs)
    per = 1e6 / max(n, 1)
    print(f"CPU µs per batch: readable {before * per:.2f}, compiled first {after * per:.2f} "
          f"(of which the crc32c package's call {crc_time * per:.2f}); per frame read: "
          f"{before * 1e6 / frames:.2f} -> {after * 1e6 / frames:.2f}, saved "
          f"{(before - after) * 1e6 / frames:.2f} µs")
    if table:
        function = _table_crc()
        assert all(function(t) == crc(t) for t in tails[:1000])
        big = [bytes(16384)] * 1000
        print(f"CRC32C µs per batch, called from Python: crc32c package {crc_time * per:.2f}, "
              f"slice-by-8 table in C {cpu(lambda: crcs(function)) * per:.2f} (the loop and "
              f"call alone, len() in their place: {cpu(lambda: crcs(len)) * per:.2f}); "
              f"per 16 KiB batch: package {cpu(lambda: [crc(b) for b in big]) * 1e3:.2f}, "
              f"table {cpu(lambda: [function(b) for b in big]) * 1e3:.2f}")
    return 0


_TABLE_PYX = r'''
# cython: boundscheck=False, wraparound=False
from libc.stdint cimport uint32_t
cdef uint32_t T[8][256]
cdef int i, j
cdef uint32_t c
for i in range(256):
    c = i
    for j in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    T[0][i] = c
for i in range(256):
    for j in range(1, 8):
        T[j][i] = (T[j - 1][i] >> 8) ^ T[0][T[j - 1][i] & 0xFF]

def crc32c(const unsigned char[::1] data):
    cdef uint32_t c = 0xFFFFFFFF, lo, hi
    cdef Py_ssize_t i = 0, n = data.shape[0]
    while i + 8 <= n:
        lo = c ^ (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16)
                  | (<uint32_t>data[i + 3] << 24))
        hi = data[i + 4] | (data[i + 5] << 8) | (data[i + 6] << 16) | (<uint32_t>data[i + 7] << 24)
        c = (T[7][lo & 0xFF] ^ T[6][(lo >> 8) & 0xFF] ^ T[5][(lo >> 16) & 0xFF] ^ T[4][lo >> 24]
             ^ T[3][hi & 0xFF] ^ T[2][(hi >> 8) & 0xFF] ^ T[1][(hi >> 16) & 0xFF] ^ T[0][hi >> 24])
        i += 8
    while i < n:
        c = (c >> 8) ^ T[0][(c ^ data[i]) & 0xFF]
        i += 1
    return c ^ 0xFFFFFFFF
'''


def _table_crc():
    """A table CRC32C compiled here, for the comparison only (the kept module does
    not carry one: see bench/RESULTS.md)."""
    import importlib.util
    import subprocess
    import tempfile
    work = tempfile.mkdtemp(prefix="kafka-net-crc-table-")
    with open(os.path.join(work, "crc_table.pyx"), "w") as fh:
        fh.write(_TABLE_PYX)
    subprocess.run([sys.executable, "-c", "from setuptools import setup; "
                    "from Cython.Build import cythonize; "
                    "setup(ext_modules=cythonize('crc_table.pyx', quiet=True), "
                    "script_args=['build_ext', '--inplace', '-q'])"],
                   cwd=work, check=True, capture_output=True)
    so = next(f for f in os.listdir(work) if f.startswith("crc_table") and f.endswith(".so"))
    spec = importlib.util.spec_from_file_location("crc_table", os.path.join(work, so))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.crc32c


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
