"""OffsetCommit / OffsetFetch: the generation rules, per-partition errors, deletion."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.group.support import (
    COMPLETING, EMPTY, PREPARING, commit_errors, commit_req, join, make_coordinator,
    stable_group)


# -- OffsetCommit / OffsetFetch ---------------------------------------------------------


def test_simple_consumer_commits_to_an_unknown_group(coord):
    response = coord.commit_offsets(commit_req("simple", offsets=[("t", 0, 5), ("t", 3, 9)],
                                               metadata="meta"), 2)
    assert commit_errors(response) == {("t", 0): 0, ("t", 3): 0}
    group = coord.group("simple")
    assert group is not None and group.state == EMPTY
    fetched = coord.fetch_offsets("simple", [{"name": "t", "partition_indexes": [0, 1, 3]}])
    assert fetched == [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 3,
         "metadata": "meta", "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1,
         "metadata": "", "error_code": 0},
        {"partition_index": 3, "committed_offset": 9, "committed_leader_epoch": 3,
         "metadata": "meta", "error_code": 0}]}]


def test_commit_with_generation_to_unknown_group_is_illegal_generation(coord):
    response = coord.commit_offsets(commit_req("ghost", generation=1, member_id="m"), 2)
    assert commit_errors(response) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert coord.group("ghost") is None


def test_commit_rules_for_a_managed_group(coord):
    (a, b), gen = stable_group(coord)
    ok = coord.commit_offsets(commit_req("g", gen, a), 8)
    assert commit_errors(ok) == {("t", 0): ErrorCode.NONE}
    wrong_gen = coord.commit_offsets(commit_req("g", gen + 1, a), 8)
    assert commit_errors(wrong_gen) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    stranger = coord.commit_offsets(commit_req("g", gen, "stranger"), 8)
    assert commit_errors(stranger) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    simple = coord.commit_offsets(commit_req("g", -1, ""), 8)
    assert commit_errors(simple) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    # PreparingRebalance: the current generation may still commit.
    join(coord, member_id=a, protocols=[{"name": "range", "metadata": b"x"}])
    assert coord.group("g").state == PREPARING
    assert commit_errors(coord.commit_offsets(commit_req("g", gen, b), 8)) == \
        {("t", 0): ErrorCode.NONE}


def test_commit_in_completing_rebalance_is_rebalance_in_progress(coord):
    ctx, _ = join(coord, 3)
    answer = ctx.answer
    assert coord.group("g").state == COMPLETING
    response = coord.commit_offsets(
        commit_req("g", answer["generation_id"], answer["member_id"]), 5)
    assert commit_errors(response) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}


def test_commit_unknown_topic_or_partition(coord):
    response = coord.commit_offsets(commit_req(
        "simple", offsets=[("t", 3, 1), ("t", 4, 1), ("t", -1, 1), ("missing", 0, 1),
                           ("u", 0, 1)]), 2)
    assert commit_errors(response) == {
        ("t", 3): ErrorCode.NONE, ("t", 4): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("t", -1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("u", 0): ErrorCode.NONE}


def test_commit_offset_metadata_too_large():
    c = make_coordinator(offset_metadata_max_bytes=10)
    ok = c.commit_offsets(commit_req("s", metadata="x" * 10), 2)
    assert commit_errors(ok) == {("t", 0): ErrorCode.NONE}
    big = c.commit_offsets(commit_req("s", offsets=[("t", 1, 1)], metadata="x" * 11), 2)
    assert commit_errors(big) == {("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    fetched = c.fetch_offsets("s", None)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in fetched] == \
        [("t", [0])]


def test_commit_overwrites_and_null_metadata(coord):
    coord.commit_offsets(commit_req("s", offsets=[("t", 0, 1)], metadata="a"), 2)
    coord.commit_offsets(commit_req("s", offsets=[("t", 0, 7)], metadata=None), 2)
    [topic] = coord.fetch_offsets("s", [{"name": "t", "partition_indexes": [0]}])
    assert topic["partitions"][0]["committed_offset"] == 7
    assert topic["partitions"][0]["metadata"] is None


def test_fetch_offsets_null_topics_means_all(coord):
    coord.commit_offsets(commit_req("s", offsets=[("u", 0, 4), ("t", 2, 8), ("t", 0, 6)]), 2)
    fetched = coord.fetch_offsets("s", None)
    assert [(t["name"], [(p["partition_index"], p["committed_offset"]) for p in t["partitions"]])
            for t in fetched] == [("t", [(0, 6), (2, 8)]), ("u", [(0, 4)])]


def test_fetch_offsets_of_unknown_group(coord):
    assert coord.fetch_offsets("nobody", None) == []
    [topic] = coord.fetch_offsets("nobody", [{"name": "t", "partition_indexes": [0]}])
    assert topic["partitions"][0]["committed_offset"] == -1
    assert topic["partitions"][0]["error_code"] == ErrorCode.NONE


def test_delete_topic_offsets(coord):
    coord.commit_offsets(commit_req("s", offsets=[("u", 0, 4), ("t", 2, 8)]), 2)
    coord.delete_topic_offsets("t")
    assert [t["name"] for t in coord.fetch_offsets("s", None)] == ["u"]
