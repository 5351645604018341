"""SharePartition's state machine (KIP-932): acquisition, acknowledgement, lock
expiry, the delivery count limit, the start offset, and the persisted form;
then Hypothesis drives random sequences of all of them against the invariants
Kafka's SharePartition keeps."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.share.share_partition import (
    AcknowledgeType, AcknowledgementError, AcquiredRecords, RecordState, SharePartition,
    SharePartitionConfig, StateBatch)

ACCEPT, RELEASE, REJECT, GAP, RENEW = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                       AcknowledgeType.REJECT, AcknowledgeType.GAP,
                                       AcknowledgeType.RENEW)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def partition(limit: int = 5, locks: int = 2000, lock_ms: int = 30000, start: int = 0):
    clock = Clock()
    sp = SharePartition("g", "t", uuid.uuid4(), 0,
                        SharePartitionConfig(lock_ms, limit, locks), start, clock)
    return sp, clock


def log(first: int, last: int, per_batch: int = 5) -> list[tuple[int, int]]:
    """The log's batches covering [first, last]."""
    return [(o, min(o + per_batch - 1, last)) for o in range(first, last + 1, per_batch)]


def test_acquire_takes_new_records_up_to_max_records_and_moves_the_end_offset():
    sp, _ = partition()
    assert sp.acquire("m1", log(0, 9), 4) == [AcquiredRecords(0, 3, 1)]
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (0, 4, 4)
    # Another member gets the next ones, never those m1 holds.
    assert sp.acquire("m2", log(0, 9), 100) == [AcquiredRecords(4, 9, 1)]
    assert sp.acquire("m3", log(0, 9), 100) == []


def test_accept_completes_records_and_the_start_offset_moves_past_them():
    sp, _ = partition()
    sp.acquire("m1", log(0, 9), 10)
    sp.acknowledge("m1", [(0, 4, [ACCEPT])])
    assert sp.start_offset == 5
    sp.acknowledge("m1", [(7, 9, [ACCEPT])])
    assert sp.start_offset == 5   # 5 and 6 are still held
    sp.acknowledge("m1", [(5, 6, [ACCEPT, REJECT])])
    assert (sp.start_offset, sp.end_offset) == (10, 10)
    assert sp.acquire("m2", log(0, 9), 10) == []


def test_release_makes_records_available_again_with_the_delivery_count_kept():
    sp, _ = partition()
    sp.acquire("m1", log(0, 4), 10)
    sp.acknowledge("m1", [(0, 4, [ACCEPT, RELEASE, ACCEPT, RELEASE, ACCEPT])])
    assert sp.next_fetch_offset() == 1
    assert sp.acquire("m2", log(0, 4), 10) == [AcquiredRecords(1, 1, 2), AcquiredRecords(3, 3, 2)]


def test_reject_and_gap_archive_records_never_to_be_delivered_again():
    sp, _ = partition()
    sp.acquire("m1", log(0, 2), 10)
    sp.acknowledge("m1", [(0, 2, [REJECT, GAP, RELEASE])])
    assert sp.record(0) is None and sp.start_offset == 2   # archived: behind the start
    assert sp.acquire("m1", log(0, 2), 10) == [AcquiredRecords(2, 2, 2)]


def test_an_expired_lock_makes_the_records_available_to_anyone():
    sp, clock = partition(lock_ms=30000)
    sp.acquire("m1", log(0, 2), 10)
    clock.now += 29.9
    assert sp.acquire("m2", log(0, 2), 10) == []
    clock.now += 0.2
    assert sp.acquire("m2", log(0, 2), 10) == [AcquiredRecords(0, 2, 2)]
    with pytest.raises(AcknowledgementError) as late:   # m1's lock is gone
        sp.acknowledge("m1", [(0, 0, [ACCEPT])])
    assert late.value.error_code == ErrorCode.INVALID_RECORD_STATE


def test_renew_starts_the_lock_again():
    sp, clock = partition(lock_ms=10000)
    sp.acquire("m1", log(0, 0), 10)
    clock.now += 9
    sp.acknowledge("m1", [(0, 0, [RENEW])], renew_allowed=True)
    clock.now += 9
    assert sp.expire_locks() == 0
    clock.now += 2
    assert sp.expire_locks() == 1
    with pytest.raises(AcknowledgementError) as refused:
        sp.acquire("m1", log(0, 0), 10)
        sp.acknowledge("m1", [(0, 0, [RENEW])], renew_allowed=False)
    assert refused.value.error_code == ErrorCode.INVALID_REQUEST


def test_the_delivery_count_limit_archives_a_record_released_once_too_often():
    sp, clock = partition(limit=3, lock_ms=1000)
    assert sp.acquire("m1", log(0, 0), 10) == [AcquiredRecords(0, 0, 1)]
    sp.acknowledge("m1", [(0, 0, [RELEASE])])
    assert sp.acquire("m2", log(0, 0), 10) == [AcquiredRecords(0, 0, 2)]
    clock.now += 2   # the lock lapses: a delivery all the same
    assert sp.acquire("m3", log(0, 0), 10) == [AcquiredRecords(0, 0, 3)]
    sp.acknowledge("m3", [(0, 0, [RELEASE])])   # the third delivery was the last
    assert sp.start_offset == 1 and sp.acquire("m4", log(0, 0), 10) == []
    # A lapsed lock on the last delivery archives too.
    assert sp.acquire("m1", log(1, 1), 10) == [AcquiredRecords(1, 1, 1)]
    for count in (2, 3):
        clock.now += 2
        assert sp.acquire("m1", log(1, 1), 10) == [AcquiredRecords(1, 1, count)]
    clock.now += 2
    assert sp.acquire("m1", log(1, 1), 10) == [] and sp.start_offset == 2


def test_only_the_holder_may_acknowledge_and_a_bad_batch_applies_nothing():
    sp, _ = partition()
    sp.acquire("m1", log(0, 4), 10)
    with pytest.raises(AcknowledgementError) as other:
        sp.acknowledge("m2", [(0, 0, [ACCEPT])])
    assert other.value.error_code == ErrorCode.INVALID_RECORD_STATE
    with pytest.raises(AcknowledgementError) as beyond:   # 5 was never acquired
        sp.acknowledge("m1", [(0, 1, [ACCEPT]), (4, 5, [ACCEPT])])
    assert beyond.value.error_code == ErrorCode.INVALID_RECORD_STATE
    assert sp.record(0).state == RecordState.ACQUIRED   # the good batch was not applied
    for bad in ([(2, 1, [ACCEPT])], [(0, 2, [ACCEPT, ACCEPT])], [(0, 0, [9])]):
        with pytest.raises(AcknowledgementError) as malformed:
            sp.acknowledge("m1", bad)
        assert malformed.value.error_code == ErrorCode.INVALID_REQUEST


def test_the_window_holds_at_most_max_record_locks_records():
    sp, _ = partition(locks=4)
    assert sp.acquire("m1", log(0, 9), 100) == [AcquiredRecords(0, 3, 1)]
    assert not sp.can_acquire()
    sp.acknowledge("m1", [(0, 1, [ACCEPT])])
    assert sp.acquire("m2", log(4, 9), 100) == [AcquiredRecords(4, 5, 1)]


def test_offsets_skipped_by_the_log_are_archived_as_gaps():
    sp, _ = partition()
    assert sp.acquire("m1", [(0, 1), (5, 6)], 10) == [AcquiredRecords(0, 1, 1),
                                                      AcquiredRecords(5, 6, 1)]
    sp.acknowledge("m1", [(0, 1, [ACCEPT])])
    assert sp.start_offset == 5


def test_offsets_compacted_away_while_in_flight_are_archived_as_gaps():
    # After a restart the window may hold offsets never delivered that compaction
    # has since removed: a read from there finds the next batch further on.
    sp, _ = partition()
    sp.restore(10, [StateBatch(16, 17, 0, 1)])
    assert sp.next_fetch_offset() == 10
    assert sp.acquire("m1", [(12, 13), (16, 17)], 10, read_from=10) == [
        AcquiredRecords(12, 13, 1), AcquiredRecords(16, 17, 2)]
    sp.acknowledge("m1", [(12, 13, [ACCEPT]), (16, 17, [ACCEPT])])
    assert sp.start_offset == 18   # 10, 11, 14, 15 were gaps


def test_the_persisted_form_round_trips_and_held_records_come_back_available():
    sp, _ = partition(limit=3)
    sp.acquire("m1", log(10, 19), 100)
    sp.acknowledge("m1", [(12, 12, [ACCEPT]), (13, 13, [REJECT]), (14, 14, [RELEASE])])
    batches = sp.state_batches()
    assert batches == [StateBatch(10, 11, 0, 1), StateBatch(12, 12, 2, 1),
                       StateBatch(13, 13, 4, 1), StateBatch(14, 19, 0, 1)]
    again, _ = partition(limit=3)
    again.restore(sp.start_offset, batches)
    assert (again.start_offset, again.end_offset) == (10, 20)
    assert again.acquire("m2", log(10, 19), 100) == [AcquiredRecords(10, 11, 2),
                                                     AcquiredRecords(14, 19, 2)]
    # A record whose last allowed delivery was in flight at the crash is archived.
    third, _ = partition(limit=2)
    third.restore(10, [StateBatch(10, 10, 0, 2), StateBatch(11, 11, 0, 1)])
    assert third.acquire("m3", log(10, 11), 10) == [AcquiredRecords(11, 11, 2)]


def test_records_released_by_a_leaving_member_do_not_spend_a_delivery():
    """Kafka's releaseAcquiredRecords (a share session closed, a member left): the
    records were fetched but never handed to the application, so the delivery
    count goes back down and the limit archives none of them; a lapsed lock or a
    RELEASE still counts."""
    sp, clock = partition(limit=2)
    assert sp.acquire("m1", log(0, 2), 10) == [AcquiredRecords(0, 2, 1)]
    sp.acknowledge("m1", [(0, 0, [RELEASE])])
    assert sp.acquire("m2", log(0, 0), 10) == [AcquiredRecords(0, 0, 2)]
    assert sp.release_member("m1") == 2              # 1 and 2, never processed
    assert sp.release_member("m2") == 1              # 0 at the limit: still available
    assert [(o, r.state, r.delivery_count) for o, r in sorted(sp.in_flight().items())] == [
        (0, RecordState.AVAILABLE, 1), (1, RecordState.AVAILABLE, 0),
        (2, RecordState.AVAILABLE, 0)]
    assert sp.acquire("m3", log(0, 2), 10) == [AcquiredRecords(0, 0, 2),
                                                AcquiredRecords(1, 2, 1)]
    clock.now += 31                                  # a lapsed lock counts: 0 archived
    sp.expire_locks()
    assert sp.record(0) is None and sp.start_offset == 1


# -- random sequences against the invariants ------------------------------------------

MEMBERS = ("m1", "m2", "m3")

operations = st.lists(st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 8)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 30),
              st.sampled_from([ACCEPT, RELEASE, REJECT, GAP, RENEW])),
    st.tuples(st.just("tick"), st.floats(0, 2.5)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("restart")),
), max_size=60)


@settings(max_examples=200, deadline=None)
@given(operations, st.integers(2, 4), st.integers(3, 12))
def test_random_operations_keep_kafkas_invariants(ops, limit, locks):
    sp, clock = partition(limit=limit, locks=locks, lock_ms=2000)
    log_end = 25
    delivered: dict[int, int] = {}   # offset -> deliveries seen by members
    done: set[int] = set()           # offsets accepted or archived (never again)
    for op in ops:
        before = sp.start_offset
        if op[0] == "acquire":
            held = {o for o, r in sp.in_flight().items()
                    if r.state == RecordState.ACQUIRED and r.lock_deadline > clock.now}
            got = sp.acquire(op[1], log(sp.next_fetch_offset(), log_end - 1), op[2])
            offsets = [o for a in got for o in range(a.first_offset, a.last_offset + 1)]
            assert len(offsets) <= op[2]
            for a in got:
                for o in range(a.first_offset, a.last_offset + 1):
                    # Never handed out while another member holds it, nor once done.
                    assert o not in held and o not in done
                    delivered[o] = delivered.get(o, 0) + 1
                    assert a.delivery_count == delivered[o] <= limit
        elif op[0] == "ack":
            _, member, offset, ack = op
            rec = sp.record(offset)
            try:
                sp.acknowledge(member, [(offset, offset, [ack])], renew_allowed=True)
            except AcknowledgementError as exc:
                assert exc.error_code == ErrorCode.INVALID_RECORD_STATE
                assert rec is None or rec.state != RecordState.ACQUIRED \
                    or rec.member_id != member or rec.lock_deadline <= clock.now
            else:
                if ack in (ACCEPT, REJECT, GAP):
                    done.add(offset)
        elif op[0] == "tick":
            clock.now += op[1]
        elif op[0] == "leave":
            # What it held (lock not lapsed) was never processed: that acquisition
            # does not count (Kafka's DeliveryCountOps.DECREASE).
            sp.expire_locks()
            for o, r in sp.in_flight().items():
                if r.state == RecordState.ACQUIRED and r.member_id == op[1]:
                    delivered[o] -= 1
            sp.release_member(op[1])
        else:   # the broker restarts: the persisted form, read back
            batches, start = sp.state_batches(), sp.start_offset
            sp, _ = partition(limit=limit, locks=locks, lock_ms=2000)
            sp._clock = clock
            sp.restore(start, batches)
        for o, r in sp.in_flight().items():
            assert r.delivery_count <= limit
            if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                done.add(o)
            if r.state == RecordState.AVAILABLE:
                assert r.delivery_count < limit
        assert sp.start_offset >= before
        # Everything before the start is done with: nothing there is ever delivered.
        assert all(o >= sp.start_offset for o, r in sp.in_flight().items())
