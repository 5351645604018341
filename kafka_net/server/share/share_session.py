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
SHARE_SESSION_LIMIT_REACHED.

A session belongs to the connection that opened it (Kafka's
``connectionIdToSessionMap``): when that connection closes, the Processor calls
:meth:`ShareSessionCache.connection_disconnect_listener`'s ``on_disconnect``,
which removes the session and tells the share group listener
(``on_member_leave``), which releases the records the member holds.  A session
reopened from another connection belongs to that one.  A session whose member
is no longer in its group and that was not used for the group's session
timeout is also dropped by the share coordinator's sweep.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

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
    """A member's share session (ShareFetch): its partitions and the epoch its next
    request carries."""

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


class ShareGroupListener(Protocol):
    """Kafka's ShareGroupListener, as far as a closed connection needs it."""

    def on_member_leave(self, group_id: str, member_id: str) -> None: ...


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        # connection id -> the keys of the sessions it opened (kept in step with
        # _sessions, so it never outgrows it).
        self._by_connection: dict[str, set[tuple[str, str]]] = {}
        self._lock = threading.Lock()
        self.share_group_listener: ShareGroupListener | None = None
        self._disconnect_listener = _ClientConnectionDisconnectListener(self)

    def register_share_group_listener(self, listener: ShareGroupListener) -> None:
        self.share_group_listener = listener

    def connection_disconnect_listener(self) -> "_ClientConnectionDisconnectListener":
        """What the SocketServer's Processors call when a connection closes."""
        return self._disconnect_listener

    def _index(self, session: ShareSession) -> None:
        if session.connection_id is not None:
            self._by_connection.setdefault(session.connection_id, set()).add(
                (session.group_id, session.member_id))

    def _unindex(self, session: ShareSession | None) -> None:
        if session is None or session.connection_id is None:
            return
        keys = self._by_connection.get(session.connection_id)
        if keys is not None:
            keys.discard((session.group_id, session.member_id))
            if not keys:
                del self._by_connection[session.connection_id]

    def remove_connection(self, connection_id: str) -> list[ShareSession]:
        """Remove the sessions ``connection_id`` opened; those removed."""
        with self._lock:
            keys = self._by_connection.pop(connection_id, ())
            return [self._sessions.pop(key) for key in keys]

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
            self._unindex(old)
            if len(self._sessions) >= self.max_sessions:
                if old is not None:
                    self._sessions[key] = old
                    self._index(old)
                raise ShareSessionError(
                    ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                    f"The share session cache is full ({self.max_sessions} sessions).")
            session = ShareSession(group_id, member_id, 1, dict.fromkeys(partitions),
                                   connection_id)
            self._sessions[key] = session
            self._index(session)
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
                self._unindex(session)
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
            session = self._sessions.pop((group_id, member_id), None)
            self._unindex(session)
            return session

    def discard(self, session: ShareSession) -> bool:
        """Remove ``session`` if it is still its member's session."""
        key = (session.group_id, session.member_id)
        with self._lock:
            if self._sessions.get(key) is not session:
                return False
            del self._sessions[key]
            self._unindex(session)
            return True

    def sessions(self) -> list[ShareSession]:
        with self._lock:
            return list(self._sessions.values())

    def remove_group(self, group_id: str) -> list[ShareSession]:
        with self._lock:
            gone = [self._sessions.pop(k) for k in list(self._sessions) if k[0] == group_id]
            for session in gone:
                self._unindex(session)
            return gone


class _ClientConnectionDisconnectListener:
    """Kafka's ShareSessionCache.ClientConnectionDisconnectListener: a closed
    connection's sessions go, and their members are reported gone (on the
    Processor thread: dict work here, the releasing is the listener's)."""

    def __init__(self, cache: ShareSessionCache) -> None:
        self._cache = cache

    def on_disconnect(self, connection_id: str) -> None:
        if not self._cache._by_connection:
            return   # no session ever opened here, the usual close: no lock taken
        listener = self._cache.share_group_listener
        for session in self._cache.remove_connection(connection_id):
            if listener is not None:
                listener.on_member_leave(session.group_id, session.member_id)
