"""ShareSessionCache: the share sessions of ShareFetch and ShareAcknowledge (KIP-932).

Kafka's ``ShareSessionCache`` / ``ShareSession``.  A share session belongs to
one member of one share group (the key) and remembers the partitions that
member fetches, so a request after the first names only what changed:

* epoch 0 opens a session with the request's partitions (a member's earlier
  session is replaced: the records it held are released); acknowledgements are
  not allowed then (INVALID_REQUEST);
* epoch N > 0 must be the session's next epoch: the request's partitions are
  added, ``forgotten_topics_data`` removed, and the fetch covers all of them;
  no session: SHARE_SESSION_NOT_FOUND; another epoch: INVALID_SHARE_SESSION_EPOCH;
* epoch -1 closes the session once the request's acknowledgements are applied
  (a final ShareFetch fetches nothing); the records the member still holds in
  the session's partitions are released.

The next epoch after ``2**31 - 1`` is 1 (Kafka's ``ShareRequestMetadata.nextEpoch``).
At most ``group.share.max.share.sessions`` sessions exist; one more is
SHARE_SESSION_LIMIT_REACHED.  A session whose member is no longer in its group
and that was not used for the group's session timeout is dropped by the share
coordinator's sweep (Kafka drops it when its connection closes).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kafka_net.protocol.error_codes import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
_MAX_EPOCH = 2**31 - 1

TopicIdPartition = tuple[object, int]   # (topic id, partition)


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int   # the epoch the next request must carry
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)   # ordered set
    connection_id: str | None = None
    last_used: float = field(default_factory=time.monotonic)


class ShareSessionError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str, partitions: list[TopicIdPartition],
             connection_id: str | None = None) -> tuple[ShareSession, ShareSession | None]:
        """A new session at epoch 1 (the epoch of the next request); the one it
        replaced, if any."""
        key = (group_id, member_id)
        with self._lock:
            old = self._sessions.pop(key, None)
            if len(self._sessions) >= self.max_sessions:
                if old is not None:
                    self._sessions[key] = old
                raise ShareSessionError(
                    ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                    f"The share session cache is full ({self.max_sessions} sessions).")
            session = ShareSession(group_id, member_id, 1, dict.fromkeys(partitions),
                                   connection_id)
            self._sessions[key] = session
            return session, old

    def advance(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """Check a request's epoch against its session and move the session on
        (epoch -1: the session is removed and returned)."""
        key = (group_id, member_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                raise ShareSessionError(
                    ErrorCode.SHARE_SESSION_NOT_FOUND,
                    f"Share session for member {member_id} of group {group_id} not found.")
            if epoch == FINAL_EPOCH:
                del self._sessions[key]
                return session
            if epoch != session.epoch:
                raise ShareSessionError(
                    ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                    f"The share session epoch {epoch} does not match the expected "
                    f"epoch {session.epoch}.")
            session.epoch = next_epoch(epoch)
            session.last_used = time.monotonic()
            return session

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        with self._lock:
            return self._sessions.pop((group_id, member_id), None)

    def discard(self, session: ShareSession) -> bool:
        """Remove ``session`` if it is still its member's session."""
        key = (session.group_id, session.member_id)
        with self._lock:
            if self._sessions.get(key) is not session:
                return False
            del self._sessions[key]
            return True

    def sessions(self) -> list[ShareSession]:
        with self._lock:
            return list(self._sessions.values())

    def remove_group(self, group_id: str) -> list[ShareSession]:
        with self._lock:
            gone = [k for k in self._sessions if k[0] == group_id]
            return [self._sessions.pop(k) for k in gone]
