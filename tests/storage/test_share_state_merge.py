"""merge_batches (the share coordinator's state update) works on runs, not
offset by offset (issue 30: replaying 39 MB of share state took 136 s); it must
answer exactly what the offset-by-offset definition answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.server.share.persister import merge_batches
from kafka_net.server.share.share_partition import StateBatch


def by_offset(old, new, start_offset: int) -> list[StateBatch]:
    """The definition: each offset takes its last batch's state, runs joined."""
    per_offset = {}
    for b in list(old) + list(new):
        for offset in range(max(b.first_offset, start_offset), b.last_offset + 1):
            per_offset[offset] = (b.delivery_state, b.delivery_count)
    out: list[StateBatch] = []
    for offset in sorted(per_offset):
        state, count = per_offset[offset]
        if out and out[-1].last_offset == offset - 1 and out[-1][2:] == (state, count):
            out[-1] = out[-1]._replace(last_offset=offset)
        else:
            out.append(StateBatch(offset, offset, state, count))
    return out


batch = st.builds(
    lambda first, length, state, count: StateBatch(first, first + length, state, count),
    st.integers(0, 60), st.integers(0, 12), st.integers(0, 2), st.integers(0, 2))


@settings(max_examples=400, deadline=None)
@given(st.lists(batch, max_size=8), st.lists(batch, max_size=8), st.integers(0, 40))
def test_merge_batches_is_the_offset_by_offset_definition(old, new, start_offset):
    assert merge_batches(old, new, start_offset) == by_offset(old, new, start_offset)


def test_a_long_run_is_one_step():
    # Two runs of ten million offsets: the definition would build a dict of them.
    old = [StateBatch(0, 9_999_999, 2, 1)]
    new = [StateBatch(5_000_000, 14_999_999, 4, 1)]
    assert merge_batches(old, new, 1000) == [StateBatch(1000, 4_999_999, 2, 1),
                                             StateBatch(5_000_000, 14_999_999, 4, 1)]
