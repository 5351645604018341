"""What several APIs' examples set up the same way (delegation tokens, share
groups, AddPartitionsToTxn's two request shapes)."""

from __future__ import annotations

from kafka_net.server.share.coordinator import ShareHeartbeatRequest
from tests.server.conftest import Broker


def token_broker(b: Broker) -> Broker:
    """``b`` serving tokens: a secret, and alice on a SASL connection."""
    b.apis.delegation_tokens.secret_key = "token-secret"
    b.security_protocol, b.principal = "SASL_PLAINTEXT", "User:alice"
    return b


def share_join(b: Broker, group: str, member: str) -> None:
    b.share_coordinator.heartbeat(ShareHeartbeatRequest(group, member, 0, None, ["t"]))


def empty_share_group(b: Broker, group: str) -> None:
    """A share group with no members left: one joins, then leaves (epoch -1), as the
    share-group offsets admin APIs need."""
    share_join(b, group, "m-1")
    b.share_coordinator.heartbeat(ShareHeartbeatRequest(group, "m-1", -1, None, None))


def add_partitions_body(version: int, ids: dict, topics: list) -> dict:
    """AddPartitionsToTxn in its batched (v4+) or single-transaction form."""
    if version >= 4:
        return dict(transactions=[{**ids, "verify_only": False, "topics": topics}])
    return {**{f"v3_and_below_{k}": v for k, v in ids.items()}, "v3_and_below_topics": topics}
