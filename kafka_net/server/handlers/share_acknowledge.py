"""ShareAcknowledge (API key 79): serves v1-v2 (KIP-932 share groups).

Behaviour: acknowledgements of records a member holds, without fetching
(Kafka's handleShareAcknowledgeRequest): 1 accept, 2 release, 3 reject,
0 gap, and from v2 with ``is_renew_ack`` 4 renew (the lock starts again).
The request must belong to the member's share session: epoch N > 0 is the
session's next epoch (else INVALID_SHARE_SESSION_EPOCH; no session
SHARE_SESSION_NOT_FOUND), -1 applies the acknowledgements and closes the
session (the records the member still holds are released); 0 opens no
session here: INVALID_SHARE_SESSION_EPOCH.  A null or empty group or member
id is INVALID_REQUEST; ``share.version`` below 1 UNSUPPORTED_VERSION.

Each partition answers its error: INVALID_RECORD_STATE for a record the
member does not hold (then none of that partition's acknowledgements is
applied), INVALID_REQUEST for a malformed batch, UNKNOWN_TOPIC_ID.
v2 answers ``acquisition_lock_timeout_ms``.

With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED; READ
on each topic, else TOPIC_AUTHORIZATION_FAILED in its partitions.
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.handlers.share_fetch import (
    apply_acknowledgements, current_leader, denied_topics, refuse, request_partitions,
    response_body, top_error)
from kafka_net.server.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError

API_KEY = ApiKey.SHARE_ACKNOWLEDGE


def handle(ctx, request: dict) -> dict:
    share = ctx.share_coordinator
    refused = refuse(ctx, share, request)
    if refused is not None:
        return refused
    group_id, member_id = request["group_id"], request["member_id"]
    epoch = request["share_session_epoch"]
    if epoch == INITIAL_EPOCH:
        return top_error(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                         "A share session cannot be opened by a ShareAcknowledge request.")
    try:
        session = share.sessions.advance(group_id, member_id, epoch)
    except ShareSessionError as exc:
        return top_error(exc.error_code, str(exc))
    requested, acks = request_partitions(request)
    answers = {tp: {} for tp in requested}
    renew = ctx.api_version >= 2 and request["is_renew_ack"]
    apply_acknowledgements(ctx, share, group_id, member_id, acks,
                           denied_topics(ctx, requested), renew, answers)
    if epoch == FINAL_EPOCH:
        share.partitions.release(group_id, member_id, set(session.partitions) | set(requested))
        share.notify_all(group_id)
    topics: dict = {}
    for (topic_id, partition), a in answers.items():
        meta = ctx.metadata_cache.topic_by_id(topic_id)
        topics.setdefault(topic_id, []).append({
            "partition_index": partition,
            "error_code": a.get("acknowledge_error_code", ErrorCode.NONE),
            "error_message": a.get("acknowledge_error_message"),
            "current_leader": current_leader(ctx, meta, partition)})
    return response_body(share, group_id, topics)


def error_response(request: dict, version: int, error_code: int) -> dict:
    return top_error(error_code)
