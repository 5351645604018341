"""FrameDecoder: int32 size-prefixed frames, in whatever chunks the socket gives.

Kafka's ``NetworkReceive``: a size < 0 or > ``socket.request.max.bytes`` is
refused as soon as the four size bytes are in (the body is never read); a
size of 0 is a valid (empty) frame at this layer.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_net.protocol import (
    InvalidReceiveError, InvalidRequestError, encode_request, parse_request)
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.framing import FrameDecoder, encode_frame
from kafka_net.protocol.schema import Versions
from kafka_net.testing import chunkings, split_at

FAST = settings(max_examples=300, deadline=None)
SUPPORTED = {ApiKey.API_VERSIONS: Versions(0, 4), ApiKey.METADATA: Versions(0, 12)}


def feed(dec: FrameDecoder, chunks) -> list[bytes]:
    """Feed chunks one by one, collecting every frame as soon as it is complete."""
    frames = []
    for chunk in chunks:
        dec.receive_data(chunk)
        frames.extend(dec.frames())
    return frames


def frame_boundaries(payloads) -> list[int]:
    """Offsets of each frame's start in the concatenated stream."""
    offsets, pos = [], 0
    for p in payloads:
        offsets.append(pos)
        pos += 4 + len(p)
    return offsets


def interesting_cuts(payloads) -> list[int]:
    """Inside every frame's size prefix and header, and at every frame boundary."""
    cuts = []
    for start in frame_boundaries(payloads):
        cuts += [start, start + 1, start + 2, start + 3, start + 4, start + 6, start + 10]
    return cuts


# Real requests, pipelined as a client would send them, plus an empty frame.
PIPELINE = [
    encode_request(ApiKey.API_VERSIONS, 3, 1, {"client_software_name": "kafka-net-test",
                                              "client_software_version": "1.0"})[4:],
    encode_request(ApiKey.METADATA, 12, 2, {"topics": None})[4:],
    b"",
    encode_request(ApiKey.METADATA, 1, 3, {"topics": [{"name": "orders"}]},
                   client_id=None)[4:],
    encode_request(ApiKey.API_VERSIONS, 0, 4, {})[4:],
]
WIRE = b"".join(encode_frame(p) for p in PIPELINE)


# --- chunkings helper ----------------------------------------------------------------

def test_chunkings_cover_the_promised_splits():
    named = dict(chunkings(WIRE, split_points=[40, 41]))
    assert named["whole"] == [WIRE]
    assert named["byte-by-byte"] == [bytes([b]) for b in WIRE]
    for cut in (1, 2, 3):
        assert named[f"size-prefix@{cut}"] == [WIRE[:cut], WIRE[cut:]]
    for cut in (6, 10, 13):
        assert named[f"header@{cut}"] == [WIRE[:cut], WIRE[cut:]]
    assert named["split@40"] == [WIRE[:40], WIRE[40:]]
    assert named["split@all-given"] == [WIRE[:40], WIRE[40:41], WIRE[41:]]
    assert sum(name.startswith("random-") for name in named) >= 3
    for name, chunks in named.items():
        assert b"".join(chunks) == WIRE, name
        assert all(chunks), name  # no empty chunks


def test_chunkings_are_reproducible_and_seeded():
    assert list(chunkings(WIRE, seed=5)) == list(chunkings(WIRE, seed=5))
    random_of = lambda seed: [c for n, c in chunkings(WIRE, seed=seed) if n.startswith("random")]
    assert random_of(1) != random_of(2)


def test_chunkings_of_short_data():
    assert list(chunkings(b"")) == [("whole", [b""])]
    assert list(chunkings(b"x")) == [("whole", [b"x"])]
    names = [n for n, _ in chunkings(b"abcd")]
    assert "size-prefix@3" in names and "header@6" not in names
    assert len(names) == len(set(names))


def test_split_at_ignores_out_of_range_points():
    assert split_at(b"abcdef", [0, 2, 2, 6, 99, -1]) == [b"ab", b"cdef"]


# --- pipelined frames under every chunking ----------------------------------------------

@pytest.mark.parametrize("chunks", [
    pytest.param(chunks, id=name)
    for name, chunks in chunkings(WIRE, interesting_cuts(PIPELINE))])
def test_pipelined_frames_survive_every_chunking(chunks):
    dec = FrameDecoder(max_frame_size=1024)
    assert feed(dec, chunks) == PIPELINE
    assert dec.buffered() == 0 and not dec.has_frame()
    # And the frames are the requests that were sent, in order.
    ids = [parse_request(f, SUPPORTED).header.correlation_id for f in PIPELINE if f]
    assert ids == [1, 2, 3, 4]


def test_frames_are_returned_one_at_a_time():
    dec = FrameDecoder()
    dec.receive_data(WIRE)
    assert dec.has_frame()
    first = dec.next_frame()
    assert first == PIPELINE[0]
    assert dec.buffered() == len(WIRE) - 4 - len(PIPELINE[0])
    rest = list(dec.frames())
    assert rest == PIPELINE[1:]
    assert dec.next_frame() is None


# --- sizes ----------------------------------------------------------------------------

def test_size_zero_frame_is_allowed():
    dec = FrameDecoder(max_frame_size=10)
    dec.receive_data(b"\x00\x00\x00\x00")
    assert dec.has_frame()
    assert dec.next_frame() == b""
    assert dec.buffered() == 0


def test_size_equal_to_max_is_allowed():
    dec = FrameDecoder(max_frame_size=10)
    dec.receive_data(encode_frame(b"0123456789"))
    assert dec.next_frame() == b"0123456789"


@pytest.mark.parametrize("size, message", [
    (-1, "Invalid receive (size = -1)"),
    (-(2**31), "Invalid receive (size = -2147483648)"),
    (11, "Invalid receive (size = 11 larger than 10)"),
    (2**31 - 1, "larger than 10"),
])
def test_bad_size_rejected_as_soon_as_prefix_arrives(size, message):
    prefix = struct.pack(">i", size)
    dec = FrameDecoder(max_frame_size=10)
    # Three of the four size bytes: nothing to say yet.
    dec.receive_data(prefix[:3])
    assert not dec.has_frame()
    assert dec.next_frame() is None
    # The fourth byte: refused now, without any body byte having arrived.
    dec.receive_data(prefix[3:])
    assert dec.has_frame()  # "next_frame would return or raise"
    with pytest.raises(InvalidReceiveError) as err:
        dec.next_frame()
    assert message in str(err.value)
    assert isinstance(err.value, InvalidRequestError)  # the close-the-connection kind


def test_bad_size_after_good_frames_still_delivers_the_good_ones():
    dec = FrameDecoder(max_frame_size=100)
    dec.receive_data(encode_frame(b"ok") + struct.pack(">i", 101))
    assert dec.next_frame() == b"ok"
    with pytest.raises(InvalidReceiveError):
        dec.next_frame()


def test_default_max_is_kafka_default():
    assert FrameDecoder().max_frame_size == 104857600  # socket.request.max.bytes


# --- has_frame / buffered --------------------------------------------------------------

def test_has_frame_and_buffered_track_partial_input():
    frame = encode_frame(b"hello")
    dec = FrameDecoder()
    assert dec.buffered() == 0 and not dec.has_frame()
    for i, byte in enumerate(frame[:-1], start=1):
        dec.receive_data(bytes([byte]))
        assert dec.buffered() == i
        assert not dec.has_frame()
        assert dec.next_frame() is None
        assert dec.buffered() == i  # a None from next_frame consumes nothing
    dec.receive_data(frame[-1:])
    assert dec.has_frame()
    assert dec.buffered() == len(frame)  # has_frame does not consume
    assert dec.next_frame() == b"hello"
    assert dec.buffered() == 0 and not dec.has_frame()


def test_buffered_counts_bytes_of_the_next_frames():
    dec = FrameDecoder()
    dec.receive_data(encode_frame(b"abc") + encode_frame(b"de")[:3])
    assert dec.next_frame() == b"abc"
    assert dec.buffered() == 3 and not dec.has_frame()


def test_receive_data_accepts_bytes_like():
    dec = FrameDecoder()
    dec.receive_data(bytearray(b"\x00\x00"))
    dec.receive_data(memoryview(b"\x00\x02hi"))
    assert dec.next_frame() == b"hi"


def test_returned_frame_is_immutable_copy():
    data = bytearray(encode_frame(b"abc"))
    dec = FrameDecoder()
    dec.receive_data(data)
    frame = dec.next_frame()
    data[4:7] = b"xyz"
    assert frame == b"abc" and isinstance(frame, bytes)


def test_many_frames_through_one_decoder():
    # Enough traffic to make the decoder drop consumed bytes from its buffer.
    payload = bytes(range(256)) * 40               # 10 KiB frames
    wire = encode_frame(payload) * 20
    dec = FrameDecoder()
    frames = feed(dec, split_at(wire, range(0, len(wire), 777)))
    assert frames == [payload] * 20
    assert dec.buffered() == 0


def test_encode_frame_prefixes_big_endian_size():
    assert encode_frame(b"") == b"\x00\x00\x00\x00"
    assert encode_frame(b"ab") == b"\x00\x00\x00\x02ab"
    assert encode_frame(b"x" * 258) == b"\x00\x00\x01\x02" + b"x" * 258


# --- arbitrary input ---------------------------------------------------------------------

@FAST
@given(data=st.binary(max_size=200), cuts=st.lists(st.integers(0, 200), max_size=8),
       max_size=st.integers(0, 64))
def test_arbitrary_bytes_only_ever_raise_invalid_receive(data, cuts, max_size):
    dec = FrameDecoder(max_frame_size=max_size)
    frames: list[bytes] = []
    fed = 0
    try:
        for chunk in split_at(data, cuts):
            dec.receive_data(chunk)
            fed += len(chunk)
            while dec.has_frame():
                frame = dec.next_frame()
                assert frame is not None  # has_frame promised a frame (or a raise)
                frames.append(frame)
    except InvalidRequestError as exc:
        assert isinstance(exc, InvalidReceiveError)
    assert all(len(f) <= max_size for f in frames)
    consumed = b"".join(encode_frame(f) for f in frames)
    assert data.startswith(consumed)
    assert dec.buffered() == fed - len(consumed)  # nothing lost, nothing invented


@FAST
@given(payloads=st.lists(st.binary(max_size=40), max_size=6), cuts=st.lists(st.integers(0, 300)))
def test_valid_streams_decode_exactly_under_any_chunking(payloads, cuts):
    wire = b"".join(encode_frame(p) for p in payloads)
    dec = FrameDecoder(max_frame_size=40)
    assert feed(dec, split_at(wire, cuts)) == payloads
    assert dec.buffered() == 0


@FAST
@given(sizes=st.lists(st.sampled_from([0, 1, 4095, 4096, 4097, 70_000]), max_size=5),
       cuts=st.lists(st.integers(0, 160_000), max_size=6))
def test_large_and_small_frames_decode_exactly_and_the_buffer_empties(sizes, cuts):
    """Frames below and above the size copied through a memoryview, and past the
    compaction point; ``not dec.buffer`` is exactly ``buffered() == 0`` throughout."""
    payloads = [bytes([n % 251]) * n for n in sizes]
    wire = b"".join(encode_frame(p) for p in payloads)
    dec = FrameDecoder(max_frame_size=100_000)
    out = []
    for chunk in split_at(wire, cuts):
        dec.receive_data(chunk)
        while (frame := dec.next_frame()) is not None:
            out.append(frame)
            assert (not dec.buffer) == (dec.buffered() == 0)
        assert (not dec.buffer) == (dec.buffered() == 0)
    assert out == payloads and not dec.buffer


# --- with a memory pool (queued.max.request.bytes; Kafka's NetworkReceive + MemoryPool) --

class ScriptedPool:
    """A pool-like object: grants while ``room`` allows (non-strict: any room at all),
    records every call; ``refuse`` forces refusals."""

    def __init__(self, room: int = 10**9) -> None:
        self.room = room
        self.used = 0
        self.asked: list[int] = []
        self.refuse = False

    def try_allocate(self, size: int) -> bool:
        assert size >= 1
        self.asked.append(size)
        if self.refuse or self.room - self.used < 1:
            return False
        self.used += size
        return True

    def release(self, size: int) -> None:
        assert 1 <= size <= self.used
        self.used -= size


def test_a_frame_is_granted_as_soon_as_its_size_is_known_before_the_body():
    pool = ScriptedPool()
    dec = FrameDecoder(1024, pool)
    wire = encode_frame(b"x" * 100)
    dec.receive_data(wire[:3])
    assert pool.asked == []
    dec.receive_data(wire[3:5])            # size complete, one body byte
    assert pool.asked == [100] and pool.used == 100
    assert dec.next_frame() is None
    dec.receive_data(wire[5:])
    assert dec.next_frame() == b"x" * 100
    assert pool.used == 100                # the grant went with the frame to the caller
    assert pool.asked == [100]             # asked once


def test_a_refused_frame_waits_for_memory_and_is_not_handed_out():
    pool = ScriptedPool()
    pool.refuse = True
    dec = FrameDecoder(1024, pool)
    dec.receive_data(encode_frame(b"abc"))   # all of it is here, but no grant
    assert dec.waiting_for_memory()
    assert dec.next_frame() is None
    assert not dec.reserve()
    pool.refuse = False
    assert dec.reserve() and not dec.waiting_for_memory()
    assert dec.next_frame() == b"abc" and pool.used == 3


def test_close_gives_back_the_grant_of_a_partial_frame():
    pool = ScriptedPool()
    dec = FrameDecoder(1024, pool)
    dec.receive_data(encode_frame(b"y" * 50)[:20])
    assert pool.used == 50
    dec.close()
    assert pool.used == 0
    dec.close()                            # twice is harmless
    assert pool.used == 0


def test_empty_and_invalid_frames_ask_for_nothing():
    pool = ScriptedPool()
    dec = FrameDecoder(10, pool)
    dec.receive_data(encode_frame(b""))
    assert dec.next_frame() == b"" and pool.asked == []
    dec.receive_data(struct.pack(">i", 11))
    assert not dec.waiting_for_memory() and pool.asked == []
    with pytest.raises(InvalidReceiveError):
        dec.next_frame()
    assert pool.asked == []


def test_the_next_frame_is_asked_for_only_when_it_is_next():
    # Pipelined frames in one read: the second one's memory is not taken while
    # the first is in the server (Kafka does not read it at all until then).
    pool = ScriptedPool()
    dec = FrameDecoder(1024, pool)
    dec.receive_data(encode_frame(b"a" * 10) + encode_frame(b"b" * 20))
    assert pool.asked == [10]
    assert dec.next_frame() == b"a" * 10
    assert pool.asked == [10]
    assert dec.next_frame() == b"b" * 20
    assert pool.asked == [10, 20] and pool.used == 30


@FAST
@given(payloads=st.lists(st.binary(max_size=40), max_size=6),
       cuts=st.lists(st.integers(0, 300)),
       refusals=st.lists(st.booleans(), max_size=40),
       close_at=st.integers(0, 300))
def test_with_a_refusing_pool_frames_are_exact_and_every_grant_comes_back(
        payloads, cuts, refusals, close_at):
    wire = b"".join(encode_frame(p) for p in payloads)[:close_at]
    pool = ScriptedPool()
    script = iter(refusals)
    dec = FrameDecoder(40, pool)
    frames: list[bytes] = []

    def take_all():
        while True:
            pool.refuse = next(script, False)
            frame = dec.next_frame()
            if frame is None:
                assert dec.waiting_for_memory() or not dec.has_frame()
                if not dec.waiting_for_memory():
                    return
                continue   # refused: the owner waits for memory, then tries again
            frames.append(frame)
            assert pool.used == len(frame)   # one grant held, the one handed out
            if frame:
                pool.release(len(frame))

    for chunk in split_at(wire, cuts):
        pool.refuse = next(script, False)
        dec.receive_data(chunk)
        take_all()
    complete, end = 0, 0
    for p in payloads:
        end += 4 + len(p)
        complete += end <= len(wire)
    assert frames == payloads[:complete]      # every complete frame, exact, in order
    dec.close()                               # the connection goes: nothing leaks
    assert pool.used == 0
