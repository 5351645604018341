"""DescribeGroups and ListGroups."""

from __future__ import annotations

from kafka_net.protocol.error_codes import ErrorCode
from tests.server.group.support import commit_req, join, stable_group


# -- DescribeGroups ---------------------------------------------------------------------


def test_describe_unknown_group_is_dead(coord):
    d = coord.describe("nobody")
    assert d["error_code"] == ErrorCode.NONE and d["group_state"] == "Dead"
    assert d["members"] == [] and d["protocol_type"] == "" and d["protocol_data"] == ""


def test_describe_stable_group(coord):
    (a, b), gen = stable_group(coord)
    d = coord.describe("g")
    assert d["group_state"] == "Stable" and d["protocol_type"] == "consumer"
    assert d["protocol_data"] == "range"
    assert [(m["member_id"], m["client_id"], m["client_host"], m["member_metadata"],
             m["member_assignment"]) for m in d["members"]] == [
        (a, "consumer", "/10.9.8.7", b"range-meta", f"assign-{a}".encode()),
        (b, "consumer", "/10.9.8.7", b"range-meta", f"assign-{b}".encode())]


def test_describe_group_not_stable_hides_metadata(coord):
    ctx, _ = join(coord, 3)
    d = coord.describe("g")
    assert d["group_state"] == "CompletingRebalance"
    assert d["protocol_data"] == ""
    assert [(m["member_metadata"], m["member_assignment"]) for m in d["members"]] == [(b"", b"")]


def test_groups_lists_every_known_group(coord):
    stable_group(coord, group="g1", members=1)
    coord.commit_offsets(commit_req("simple"), 2)
    assert sorted(g.group_id for g in coord.groups()) == ["g1", "simple"]
