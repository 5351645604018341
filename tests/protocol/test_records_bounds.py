"""Record batches against a hostile producer: bounded decompression, request budgets, mutations.

Every codec a producer may use (gzip, snappy, lz4, zstd) is decompressed at
most up to message.max.uncompressed.bytes; past it the batch is
CORRUPT_MESSAGE.  The batches are real: compressed by the codec libraries
the way producers compress them (``build_batch`` / ``compress``).
"""

from __future__ import annotations

import struct

import cramjam
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_net.protocol import records as R
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.records import (
    Compression, CorruptRecordError, DecompressionBudget, DecompressionLimitError,
    InvalidRecordError, Record)
from tests.protocol.test_records import _records  # any records, with keys, values, headers

CODECS = [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
TINY = bytes([12, 0, 0, 0, 1, 1, 0])  # a 7-byte record: null key and value, no headers
BOUND = 64 * 1024


def tiny_batch(codec: int, count: int) -> bytes:
    return R.batch_from_payload(R.compress(codec, TINY * count), count, compression=codec)


def bomb(codec: int, size: int = 4 * BOUND) -> bytes:
    """One 'record' of ``size`` zeros: inflates far past BOUND."""
    return R.batch_from_payload(R.compress(codec, bytes(size)), 1, compression=codec)


# --- one batch ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_bomb_of_each_codec_is_corrupt_message(codec):
    batch = bomb(codec)
    assert len(batch) < BOUND  # small on the wire ...
    with pytest.raises(DecompressionLimitError, match="message.max.uncompressed.bytes") as info:
        R.validate_batch(batch, max_uncompressed_bytes=BOUND)  # ... refused inflated
    assert info.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert isinstance(info.value, CorruptRecordError)
    with pytest.raises(DecompressionLimitError):
        R.decode_records(batch, max_uncompressed_bytes=BOUND)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_batch_exactly_at_the_bound_is_accepted_one_byte_less_refused(codec):
    count = 10_000  # 70,000 bytes inflated: several xerial snappy blocks
    batch = tiny_batch(codec, count)
    exact = count * len(TINY)
    assert R.validate_batch(batch, max_uncompressed_bytes=exact).records_count == count
    assert len(R.decode_records(batch, max_uncompressed_bytes=exact)) == count
    with pytest.raises(DecompressionLimitError):
        R.validate_batch(batch, max_uncompressed_bytes=exact - 1)


def test_raw_snappy_without_xerial_framing_is_read_and_bounded():
    raw = TINY * 1000
    batch = R.batch_from_payload(bytes(cramjam.snappy.compress_raw(raw)), 1000,
                                 compression=Compression.SNAPPY)
    assert R.validate_batch(batch, max_uncompressed_bytes=len(raw)).records_count == 1000
    # The block's declared length is checked before it is decompressed.
    with pytest.raises(DecompressionLimitError, match="snappy"):
        R.validate_batch(batch, max_uncompressed_bytes=len(raw) - 1)


def test_xerial_block_that_claims_more_bytes_than_there_are_is_corrupt():
    batch = tiny_batch(Compression.SNAPPY, 10)
    payload = bytearray(batch[R.RECORD_BATCH_OVERHEAD:])
    struct.pack_into(">i", payload, 16, 10_000)  # the first block's length
    bad = R.batch_from_payload(bytes(payload), 10, compression=Compression.SNAPPY)
    with pytest.raises(CorruptRecordError, match="xerial"):
        R.validate_batch(bad)


def test_zstd_frame_asking_for_a_huge_window_is_refused():
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=28)
    packer = zstandard.ZstdCompressor(compression_params=params).compressobj()
    payload = packer.compress(TINY * 10) + packer.flush()
    batch = R.batch_from_payload(payload, 10, compression=Compression.ZSTD)
    with pytest.raises(CorruptRecordError, match="zstd.*memory"):
        R.validate_batch(batch, max_uncompressed_bytes=BOUND)


def test_lz4_stream_cut_short_is_refused():
    batch = tiny_batch(Compression.LZ4, 1000)
    payload = bytes(batch[R.RECORD_BATCH_OVERHEAD:])
    cut = R.batch_from_payload(payload[:len(payload) // 2], 1000, compression=Compression.LZ4)
    with pytest.raises(InvalidRecordError, match="lz4 record stream ends early"):
        R.validate_batch(cut)


# --- one request: the budget ----------------------------------------------------------


def test_a_bomb_does_not_cost_the_requests_other_partitions():
    budget = DecompressionBudget(BOUND)
    good = tiny_batch(Compression.GZIP, 1000)
    for codec in CODECS:
        with pytest.raises(DecompressionLimitError):
            R.validate_batch(bomb(codec), max_uncompressed_bytes=BOUND, budget=budget)
    assert R.validate_batch(good, max_uncompressed_bytes=BOUND, budget=budget)


def test_bombs_past_the_byte_budget_are_refused_without_decompressing():
    budget = DecompressionBudget(BOUND)
    for _ in range(DecompressionBudget.BYTES_FACTOR):
        with pytest.raises(DecompressionLimitError, match="message.max.uncompressed.bytes \\("):
            R.validate_batch(bomb(Compression.GZIP), max_uncompressed_bytes=BOUND, budget=budget)
    assert budget.bytes_left == 0
    with pytest.raises(DecompressionLimitError, match="this produce request"):
        R.validate_batch(tiny_batch(Compression.GZIP, 10), max_uncompressed_bytes=BOUND,
                         budget=budget)


def test_records_of_one_request_share_the_item_budget():
    budget = DecompressionBudget(BOUND)  # BOUND // 4 = 16,384 records and headers
    batch = tiny_batch(Compression.ZSTD, 9000)
    R.validate_batch(batch, max_uncompressed_bytes=BOUND, budget=budget)
    assert budget.items_left == BOUND // 4 - 9000
    with pytest.raises(DecompressionLimitError, match="records"):
        R.validate_batch(batch, max_uncompressed_bytes=BOUND, budget=budget)
    # Uncompressed batches are bounded by the request's size, not by the budget.
    assert R.validate_batch(tiny_batch(Compression.NONE, 9000), budget=budget)


def test_headers_count_against_the_item_budget():
    record = Record(None, None, tuple((f"h{i}", None) for i in range(100)))
    batch = R.build_batch([record], compression=Compression.LZ4)
    budget = DecompressionBudget(404)  # 101 items: one record and its 100 headers
    R.validate_batch(batch, max_uncompressed_bytes=BOUND, budget=budget)
    assert budget.items_left == 0
    budget = DecompressionBudget(400)
    with pytest.raises(DecompressionLimitError, match="headers"):
        R.validate_batch(batch, max_uncompressed_bytes=BOUND, budget=budget)


# --- Hypothesis: builder output passes, mutations are refused with the right error ----

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=_records, codec=st.sampled_from(list(Compression)), data=st.data())
def test_validation_accepts_built_batches_and_refuses_mutations(records, codec, data):
    batch = R.build_batch(records, compression=codec,
                          producer_id=data.draw(st.sampled_from([-1, 7])), base_sequence=0)
    header = R.validate_batch(batch, check_record_offsets=True, budget=DecompressionBudget(BOUND))
    assert header.records_count == len(records) and header.compression == codec

    flipped = bytearray(batch)
    flipped[data.draw(st.integers(R.ATTRIBUTES_OFFSET, len(batch) - 1))] ^= \
        data.draw(st.integers(1, 255))
    with pytest.raises(CorruptRecordError, match="crc"):
        R.validate_batch(flipped)

    cut = data.draw(st.integers(0, len(batch) - 1))
    with pytest.raises(CorruptRecordError):
        R.validate_batch(batch[:cut])

    count = data.draw(st.integers(-2, len(records) + 3).filter(lambda n: n != len(records)))
    recounted = bytearray(batch)
    struct.pack_into(">i", recounted, 23, count - 1)  # last_offset_delta, kept consistent
    struct.pack_into(">i", recounted, R.RECORDS_COUNT_OFFSET, count)
    struct.pack_into(">I", recounted, R.CRC_OFFSET, R.compute_crc(recounted))
    with pytest.raises(InvalidRecordError):
        R.validate_batch(recounted)
