"""TransactionIndex: a partition's open transactions, LSO and aborted index."""

from __future__ import annotations

from hypothesis import given, strategies as st

from kafka_net.server.storage.txn_index import AbortedTxn, TransactionIndex


def test_lso_is_the_oldest_open_transaction_or_the_high_watermark():
    index = TransactionIndex()
    assert index.last_stable_offset(10) == 10
    index.on_transactional_append(1, 3)
    index.on_transactional_append(2, 5)
    index.on_transactional_append(1, 7)       # same transaction: first offset stays 3
    assert index.last_stable_offset(10) == 3
    index.on_marker(1, commit=True, marker_offset=8)
    assert index.last_stable_offset(10) == 5
    index.on_marker(2, commit=False, marker_offset=9)
    assert index.last_stable_offset(10) == 10 and not index.has_ongoing


def test_aborted_transactions_by_range():
    index = TransactionIndex()
    for pid, first, marker in ((1, 0, 2), (2, 3, 6), (1, 7, 9)):
        index.on_transactional_append(pid, first)
        index.on_marker(pid, commit=False, marker_offset=marker)
    assert index.aborted_between(0, 100) == [
        AbortedTxn(1, 0, 2), AbortedTxn(2, 3, 6), AbortedTxn(1, 7, 9)]
    assert index.aborted_between(3, 7) == [AbortedTxn(2, 3, 6)]
    assert index.aborted_between(10, 100) == []
    index.truncate_before(7)
    assert index.aborted_between(0, 100) == [AbortedTxn(1, 7, 9)]


def test_a_marker_without_a_transaction_here_records_nothing():
    index = TransactionIndex()
    index.on_marker(1, commit=False, marker_offset=0)
    assert index.aborted_between(0, 10) == [] and index.last_stable_offset(1) == 1


# (producer id, is a marker, commit) events, appended at consecutive offsets.
events = st.lists(st.tuples(st.integers(1, 3), st.booleans(), st.booleans()), max_size=40)


@given(events)
def test_lso_never_passes_a_record_of_an_open_transaction(evs):
    index = TransactionIndex()
    open_records: dict[int, list[int]] = {}
    for offset, (pid, marker, commit) in enumerate(evs):
        if marker:
            index.on_marker(pid, commit, offset)
            open_records.pop(pid, None)
        else:
            index.on_transactional_append(pid, offset)
            open_records.setdefault(pid, []).append(offset)
        lso = index.last_stable_offset(offset + 1)
        unstable = [o for offsets in open_records.values() for o in offsets]
        assert lso == (min(unstable) if unstable else offset + 1)
