"""Crash recovery over random damage: never loses a whole batch before the damage, never
keeps a damaged one.

A log of random batches over one or more segments is "crashed" (closed with no
flush, snapshot or checkpoint), then damaged at a random byte of its segment
files, taken in order: cut there (a torn write), or one byte flipped.  The
recovered log must hold exactly the batches that lay wholly before the
damage, byte for byte.

A flipped byte is drawn from what recovery can see: the batch length, magic
and everything the CRC covers.  The base offset and partition leader epoch
lie outside Kafka's CRC by design (the broker rewrites them), so a flip there
is not detectable by any batch check; the offsets check catches only an
offset going backwards (tested separately in test_unified_log.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import assume, given, settings, strategies as st

from kafka_net.protocol.records import build_batch
from kafka_net.server.storage.segment import SegmentConfig
from kafka_net.server.storage.unified_log import UnifiedLog
from tests.server.storage_support import read_all

# Bytes of a batch header outside the CRC and not validated: base offset (0-7)
# and partition leader epoch (12-15).
_UNCHECKED = set(range(0, 8)) | set(range(12, 16))


def build(directory: str, sizes: list[int], segment_bytes: int, interval: int):
    log = UnifiedLog(directory, SegmentConfig(segment_bytes=segment_bytes,
                                              index_interval_bytes=interval))
    for i, size in enumerate(sizes):
        count = 1 + i % 3
        log.append(bytearray(build_batch([(None, bytes([i % 251]) * size, (), 1000 + i)]
                                         * count)), count, 1000 + i)
    # (path, [(start, end) of each batch]) per segment, in offset order
    layout = [(s.log.path, [(b.position, b.position + b.size) for b in s.batches()])
              for s in log.segments()]
    originals = [s.log.read(0, s.size) for s in log.segments()]
    log.scheduler.shutdown(run_pending=False)
    log.local.close()          # a crash: nothing flushed, checkpointed or snapshotted
    return layout, originals


@settings(max_examples=100)
@given(sizes=st.lists(st.integers(0, 150), min_size=1, max_size=30),
       segment_bytes=st.sampled_from([250, 700, 1 << 20]),
       interval=st.sampled_from([0, 100, 4096]),
       cut=st.booleans(), where=st.floats(0, 1, exclude_max=True), xor=st.integers(1, 255))
def test_recovery_keeps_exactly_the_batches_before_the_damage(sizes, segment_bytes, interval,
                                                              cut, where, xor):
    root = tempfile.mkdtemp(prefix="kn-recovery-")
    try:
        directory = os.path.join(root, "t-0")
        layout, originals = build(directory, sizes, segment_bytes, interval)
        total = sum(len(o) for o in originals)
        target = int(where * total)
        # find the segment and the batch holding byte `target`
        before = 0
        for (path, batches), original in zip(layout, originals):
            if target < before + len(original):
                break
            before += len(original)
        local = target - before
        batch_index = next(i for i, (a, b) in enumerate(batches) if a <= local < b)
        start = batches[batch_index][0]
        if cut:
            with open(path, "r+b") as fh:
                fh.truncate(local)
            assume(local != start)      # a cut on a boundary is no damage at all
        else:
            assume(local - start not in _UNCHECKED)
            with open(path, "r+b") as fh:
                fh.seek(local)
                fh.write(bytes([original[local] ^ xor]))
        segment_number = [p for p, _ in layout].index(path)
        expected = b"".join(originals[:segment_number]) + original[:start]

        log = UnifiedLog(directory, SegmentConfig(segment_bytes=segment_bytes,
                                                  index_interval_bytes=interval),
                         recovery_point=0, had_clean_shutdown=False)
        try:
            assert read_all(log) == expected
            assert log.log_end_offset == sum(1 + i % 3 for i in range(
                len([1 for _, bs in layout[:segment_number] for _ in bs]) + batch_index))
            # and the log works on: an append lands right after the last good batch
            end = log.log_end_offset
            assert log.append(bytearray(build_batch([(None, b"x", (), 1)])), 1, 1).base_offset \
                == end
        finally:
            log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
