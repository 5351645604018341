"""GroupRegistry: the one owner of the groups and their offsets.

Kafka's ``GroupMetadataManager`` holds every group of a coordinator shard in
one map, whatever its kind, and the offsets with them.  Here that role is
this object: the classic coordinator, the consumer and streams coordinators,
the admin side (:mod:`.admin`), the offset expiry (:mod:`.offset_expiry`) and
the share coordinator all find a group through it.  What it writes to
``__consumer_offsets`` goes through the optional ``store`` (the
:class:`~kafka_net.server.group.metadata_manager.GroupMetadataManager`; None
keeps groups in memory only).

One id, one kind: a new group is made under ``id_claim``, which the share
coordinator (its groups live there, see ``share``) takes too before it makes
one, so that the check "no other kind holds this id" and the creation are
one step.
"""

from __future__ import annotations

import threading
from typing import Callable

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.group.group import Group
from kafka_net.server.group.offsets import OffsetManager
from kafka_net.server.group.state import GroupState


class GroupRegistry:
    def __init__(self, topic_partitions: Callable[[str], int | None],
                 offset_metadata_max_bytes: int, store=None) -> None:
        """``topic_partitions(topic)``: a partition count, or None if unknown;
        ``store``: a GroupMetadataManager, or None."""
        self._groups: dict[str, Group] = {}
        self._lock = threading.Lock()
        # Held (before any other group lock) while a new group of any kind is made.
        self.id_claim = threading.Lock()
        # Share groups (KIP-932): a ShareGroupCoordinator the broker sets; None serves none.
        self.share = None
        self.offsets = OffsetManager(self.group, topic_partitions, self.groups,
                                     offset_metadata_max_bytes, store,
                                     group_type=self.group_type)

    @property
    def store(self):
        return self.offsets.store

    def ready(self) -> None:
        """Load ``__consumer_offsets``, if it exists, before a group is touched: a
        request never holds a group's lock while the load runs (a load that starts
        later, at the topic's creation, takes no group lock)."""
        store = self.store
        if store is not None:
            store.ready()

    def group(self, group_id: str, create: bool = False) -> Group | None:
        """The classic, consumer-protocol or streams group ``group_id``; with
        ``create``, a new (classic, Empty) one unless a share group holds the id
        (None then)."""
        self.ready()
        with self._lock:
            group = self._groups.get(group_id)
        if group is not None or not create:
            return group
        with self.id_claim:
            share = self.share
            if share is not None and share.group(group_id) is not None:
                return None   # a share group holds the id: nothing is made
            with self._lock:
                return self._groups.setdefault(group_id, Group(group_id))

    def group_type(self, group_id: str) -> str | None:
        """Which kind of group holds ``group_id``: "classic", "consumer", "streams" or
        "share"; None when none does.  Kafka keeps every kind in one map (one id, one
        type: a request of another kind is refused); share groups live in the
        ShareGroupCoordinator here, so every entry point asks this one place."""
        group = self.group(group_id)
        if group is not None and group.state != GroupState.DEAD:
            return group.group_type
        share = self.share
        if share is not None and share.group(group_id) is not None:
            return "share"
        return None

    def groups(self) -> list[Group]:
        self.ready()
        with self._lock:
            return list(self._groups.values())

    def publish(self, group: Group) -> Group:
        """Add a group made elsewhere (loaded from ``__consumer_offsets``); the
        group already known under its id, if any, wins and is returned."""
        with self._lock:
            return self._groups.setdefault(group.group_id, group)

    def forget(self, group: Group) -> None:
        """Drop a deleted (Dead) group; its id may be reused."""
        with self._lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]

    # -- writes to __consumer_offsets (each under the group's lock; an error code) ------

    def store_group(self, group: Group) -> int:
        """Persist a classic group's metadata."""
        store = self.store
        return ErrorCode.NONE if store is None else store.store_group(group)

    def store_consumer_group(self, group: Group, member_id: str | None = None) -> int:
        """Persist what changed of a KIP-848 group (a failed write is logged; the
        next change writes it again)."""
        store = self.store
        if store is None or group.modern is None:
            return ErrorCode.NONE
        return store.store_consumer_group(group.modern, member_id)

    def store_streams_group(self, group: Group, member_id: str | None = None) -> int:
        """Persist what changed of a KIP-1071 group."""
        store = self.store
        if store is None or group.streams is None:
            return ErrorCode.NONE
        return store.store_streams_group(group.streams, member_id)
