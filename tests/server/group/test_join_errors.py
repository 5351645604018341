"""JoinGroup errors, the bodies at every JoinGroup version, and answering
parked requests at shutdown (complete_parked)."""

from __future__ import annotations

import pytest

from kafka_net.protocol import decode_response, encode_response
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers import DEFERRED
from kafka_net.server.handlers import join_group as join_group_handler
from tests.server.conftest import FakeCtx
from tests.server.group.support import (
    join, join_req, make_coordinator, new_member_id, stable_group, sync_req)


# -- JoinGroup errors -------------------------------------------------------------------


def test_invalid_session_timeout():
    c = make_coordinator(min_session_timeout_ms=100, max_session_timeout_ms=1000)
    for session in (99, 1001, 0, -1):
        _, result = join(c, 5, session=session)
        assert result["error_code"] == ErrorCode.INVALID_SESSION_TIMEOUT, session
    for session in (100, 1000):
        _, result = join(c, 5, session=session, group=f"g{session}")
        assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED


def test_invalid_group_id(coord):
    _, result = join(coord, 5, group="")
    assert result["error_code"] == ErrorCode.INVALID_GROUP_ID
    assert coord.groups() == []


def test_inconsistent_group_protocol(coord):
    _, result = join(coord, 5, protocol_type="")
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, result = join(coord, 5, protocols=[])
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    stable_group(coord, group="g2", members=1)
    _, result = join(coord, 5, group="g2", protocol_type="connect")
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, result = join(coord, 5, group="g2",
                     protocols=[{"name": "cooperative-sticky", "metadata": b""}])
    assert result["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, result = join(coord, 5, group="g2", protocols=[{"name": "roundrobin", "metadata": b""}])
    assert result["error_code"] == ErrorCode.MEMBER_ID_REQUIRED


def test_unknown_member_id_on_join(coord):
    _, result = join(coord, 5, member_id="made-up")
    assert result["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert result["member_id"] == "made-up"


def test_group_max_size():
    c = make_coordinator(max_size=1)
    new_member_id(c)
    _, result = join(c, 5)
    assert result["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED


# -- encoding at every JoinGroup version --------------------------------------------------


def _roundtrip(version, body):
    frame = encode_response(ApiKey.JOIN_GROUP, version, 9, body)
    return decode_response(ApiKey.JOIN_GROUP, version, frame[4:])[1]


@pytest.mark.parametrize("version", range(0, 10))
def test_join_group_answers_encode_at_every_version(version):
    c = make_coordinator()
    c.start()
    try:
        bodies = []
        # Errors in the body.
        bodies.append(join(c, version, session=0)[1])
        bodies.append(join(c, version, group="")[1])
        bodies.append(join(c, version, member_id="nobody")[1])
        bodies.append(join(c, version, protocol_type="")[1])
        bodies.append(join_group_handler.error_response(
            join_req(), version, ErrorCode.UNKNOWN_SERVER_ERROR))
        # The join itself, and a parked request answered NOT_COORDINATOR.
        if version >= 4:
            member_id = new_member_id(c, version)
            ctx, _ = join(c, version, member_id=member_id)
        else:
            ctx, _ = join(c, version)
        bodies.extend(ctx.answers)
        # A join parked while another member's id is pending, then answered
        # NOT_COORDINATOR by a graceful stop.
        a, _ = new_member_id(c, 5, group="p"), new_member_id(c, 5, group="p")
        parked, result = join(c, version, group="p", member_id=a)
        assert result is DEFERRED and not parked.answers
        c.complete_parked()
        bodies.extend(parked.answers)
    finally:
        c.shutdown()
    errors = set()
    for body in bodies:
        decoded = _roundtrip(version, body)
        errors.add(decoded["error_code"])
        if decoded["error_code"] != ErrorCode.NONE:
            assert decoded["generation_id"] == -1
            if version < 7:
                assert decoded["protocol_name"] == ""
            else:
                assert decoded["protocol_name"] is None
        else:
            assert decoded["protocol_name"] == "range"
    assert ErrorCode.NONE in errors
    assert ErrorCode.INVALID_SESSION_TIMEOUT in errors
    assert ErrorCode.NOT_COORDINATOR in errors


# -- complete_parked --------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 5, 7])
def test_complete_parked_answers_a_parked_join_with_not_coordinator(coord, version):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, version, member_id=a)  # parked: waits for b
    assert not actx.answers
    coord.complete_parked()
    answer = actx.answer
    assert answer["error_code"] == ErrorCode.NOT_COORDINATOR
    assert answer["member_id"] == a
    _roundtrip(version, answer)
    # Nothing is answered twice.
    coord.complete_parked()
    assert len(actx.answers) == 1


def test_complete_parked_answers_a_parked_follower_sync(coord):
    a, b = new_member_id(coord), new_member_id(coord)
    actx, _ = join(coord, member_id=a)
    bctx, _ = join(coord, member_id=b)
    gen = actx.wait()["generation_id"]
    bsync = FakeCtx(4)
    assert coord.sync_group(bsync, sync_req("g", gen, b)) is DEFERRED
    coord.complete_parked()
    assert bsync.answer["error_code"] == ErrorCode.NOT_COORDINATOR
    encode_response(ApiKey.SYNC_GROUP, 4, 1, bsync.answer)
    encode_response(ApiKey.SYNC_GROUP, 5, 1, bsync.answer)
