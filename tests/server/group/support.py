"""Helpers for the GroupCoordinator tests.

Requests are plain dicts (the schema's defaults plus the fields a test sets),
and each goes through its real handler module (kafka_net/server/handlers/)
with a :class:`FakeCtx` that records what a parked request is answered with:
:class:`GroupApi` gives the coordinator the request-dict face the tests speak,
so they exercise the coordinator and its handlers' translation together.
Timer-driven behaviour (session expiry, rebalance timeout, initial delay)
uses timeouts of tens of milliseconds and polls with a bounded deadline; no
test asserts on elapsed time.
"""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.coordinator import GroupCoordinator
from kafka_net.server.group.group import GroupConfig
from kafka_net.server.group.state import GroupState
from kafka_net.server.handlers import (
    DEFERRED, describe_groups, heartbeat, join_group, leave_group, offset_commit, offset_fetch,
    sync_group)
from tests.server.conftest import FakeCtx, request_body

EMPTY, PREPARING, COMPLETING, STABLE = (
    GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE)
TOPICS = {"t": 4, "u": 1}
LONG = 60_000
PROTOCOLS = [{"name": "range", "metadata": b"range-meta"},
             {"name": "roundrobin", "metadata": b"rr-meta"}]


class GroupApi:
    """A GroupCoordinator driven through the group API handlers.

    ``join_group(ctx, req)`` / ``sync_group(ctx, req)`` return the handler's
    answer (a body, or DEFERRED and later ``ctx.answers``); the others return
    the response body (or the part of it a test looks at).  Everything else
    (``_group``, ``groups``, ``complete_parked``...) is the coordinator's own.
    """

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    def __getattr__(self, name):
        return getattr(self.coordinator, name)

    def _ctx(self, version: int, ctx: FakeCtx | None = None) -> FakeCtx:
        ctx = ctx or FakeCtx(version)
        ctx.group_coordinator = self.coordinator
        return ctx

    def join_group(self, ctx: FakeCtx, req: dict):
        return join_group.handle(self._ctx(ctx.api_version, ctx), req)

    def sync_group(self, ctx: FakeCtx, req: dict):
        return sync_group.handle(self._ctx(ctx.api_version, ctx), req)

    def heartbeat(self, req: dict) -> int:
        return heartbeat.handle(self._ctx(4), req)["error_code"]

    def leave_group(self, req: dict, version: int) -> dict:
        return leave_group.handle(self._ctx(version), req)

    def commit_offsets(self, req: dict, version: int) -> dict:
        return offset_commit.handle(self._ctx(version), req)

    def fetch_offsets(self, group_id: str, topics: list[dict] | None) -> list[dict]:
        return offset_fetch.handle(self._ctx(7), {"group_id": group_id, "topics": topics})[
            "topics"]

    def describe(self, group_id: str) -> dict:
        [described] = describe_groups.handle(self._ctx(5), {"groups": [group_id]})["groups"]
        return described


def make_coordinator(**config) -> GroupApi:
    config.setdefault("min_session_timeout_ms", 1)
    config.setdefault("initial_rebalance_delay_ms", 0)
    return GroupApi(GroupCoordinator(GroupConfig(**config), TOPICS.get))


# -- request builders -------------------------------------------------------------------


def join_req(group="g", member_id="", session=LONG, rebalance=LONG, protocols=None,
             protocol_type="consumer", **kw) -> dict:
    return request_body(ApiKey.JOIN_GROUP, 0, group_id=group, member_id=member_id,
                        session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                        protocol_type=protocol_type,
                        protocols=PROTOCOLS if protocols is None else protocols, **kw)


def sync_req(group, generation, member_id, assignments=(), **kw) -> dict:
    return request_body(ApiKey.SYNC_GROUP, 0, group_id=group, generation_id=generation,
                        member_id=member_id,
                        assignments=[{"member_id": m, "assignment": a} for m, a in assignments],
                        **kw)


def hb_req(group, generation, member_id) -> dict:
    return request_body(ApiKey.HEARTBEAT, 0, group_id=group, generation_id=generation,
                        member_id=member_id)


def commit_req(group, generation=-1, member_id="", offsets=(("t", 0, 10),), metadata=None):
    topics = {}
    for topic, partition, offset in offsets:
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset,
             "committed_metadata": metadata, "committed_leader_epoch": 3})
    return request_body(ApiKey.OFFSET_COMMIT, 0, group_id=group,
                        generation_id_or_member_epoch=generation, member_id=member_id,
                        topics=[{"name": n, "partitions": p} for n, p in topics.items()])


def commit_errors(response) -> dict:
    return {(t["name"], p["partition_index"]): p["error_code"]
            for t in response["topics"] for p in t["partitions"]}


# -- flows ------------------------------------------------------------------------------


def join(coord, version=5, **kw):
    """(ctx, immediate result): the result is DEFERRED or an answer dict."""
    ctx = FakeCtx(version, client_id=kw.pop("client_id", "consumer"))
    return ctx, coord.join_group(ctx, join_req(**kw))


def new_member_id(coord, version=5, **kw) -> str:
    """KIP-394 step one: ask for a member id."""
    ctx, result = join(coord, version, **kw)
    assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert result["member_id"] and not ctx.answers
    return result["member_id"]


def stable_group(coord, group="g", members=2, version=5, session=LONG, rebalance=LONG):
    """A Stable group of ``members``: ids (leader first) and the generation."""
    ids = [new_member_id(coord, version, group=group, session=session, rebalance=rebalance)
           for _ in range(members)]
    ctxs = []
    for member_id in ids:
        ctx, result = join(coord, version, group=group, member_id=member_id,
                           session=session, rebalance=rebalance)
        assert result is DEFERRED
        ctxs.append(ctx)
    answers = [ctx.wait() for ctx in ctxs]
    generation = answers[0]["generation_id"]
    leader = answers[0]["leader"]
    assert leader == ids[0]
    syncs = []
    for member_id in ids[1:]:
        sctx = FakeCtx(version)
        assert coord.sync_group(sctx, sync_req(group, generation, member_id)) is DEFERRED
        syncs.append(sctx)
    lctx = FakeCtx(version)
    assert coord.sync_group(lctx, sync_req(
        group, generation, leader, [(m, f"assign-{m}".encode()) for m in ids])) is DEFERRED
    for sctx in [lctx, *syncs]:
        assert sctx.wait()["error_code"] == ErrorCode.NONE
    assert coord.group(group).state == STABLE
    return ids, generation
