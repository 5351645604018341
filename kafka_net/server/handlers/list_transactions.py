"""ListTransactions (API key 66): serves v0-v2 (KIP-664).

Behaviour: every transactional id this coordinator knows (none in state
Dead), filtered by state names (any of them; unknown names are echoed in
``unknown_state_filters``), by producer ids, and (v1) by ``duration_filter``:
only transactions started more than that many milliseconds ago, and (v2,
KIP-1152) by ``transactional_id_pattern``: a regular expression the whole
transactional id must match (null or empty: no filter); one that does not
compile answers INVALID_REGULAR_EXPRESSION and nothing else.  The pattern is
read as Kafka 4.2 reads it, a ``java.util.regex.Pattern``: translated to
Python's ``re``, the backtracking engine closest to it
(:mod:`kafka_net.server.transaction.id_pattern` lists what differs).

With an authorizer: only the transactional ids the principal may DESCRIBE
are listed (Kafka's handleListTransactionsRequest; nothing is refused).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation, ResourceType
from kafka_net.server.transaction.id_pattern import (
    InvalidPattern, compile_transactional_id_pattern)

API_KEY = ApiKey.LIST_TRANSACTIONS


def handle(ctx, request: dict) -> dict:
    pattern = request.get("transactional_id_pattern")
    try:
        matcher = compile_transactional_id_pattern(pattern) if pattern else None
    except InvalidPattern:
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REGULAR_EXPRESSION)
    unknown, found = ctx.transaction_coordinator.handle_list_transactions(
        set(request["producer_id_filters"]), set(request["state_filters"]),
        request.get("duration_filter", -1))
    if matcher is not None:
        found = [m for m in found if matcher(m.transactional_id)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "unknown_state_filters": sorted(unknown),
            "transaction_states": [
                {"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                 "transaction_state": m.state.value}
                for m in sorted(found, key=lambda m: m.transactional_id)
                if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                 m.transactional_id, log_if_denied=False)]}


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"error_code": error_code, "unknown_state_filters": [], "transaction_states": []}
