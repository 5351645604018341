"""The offsets OffsetCommit v0 / OffsetFetch v0 keep (Kafka's ZooKeeper consumer offsets).

A ZooKeeper-mode Kafka broker (every release before 4.0 that kafka-net can
play) stored a v0 commit not with the group coordinator but in ZooKeeper, at
``/consumers/<group>/offsets/<topic>/<partition>``: the offset alone (no
metadata, no leader epoch, no commit time), with no check of the group, its
members or its generation (``KafkaZkClient.setOrCreateConsumerOffset``), and
OffsetFetch v0 read only that (``getConsumerOffset``).  The two stores never
met: a v0 commit is invisible to OffsetFetch v1+, DescribeGroups and
ListGroups, and a v1+ commit to OffsetFetch v0.  This class is that tree.

kafka-net runs no ZooKeeper.  With ``log.store=disk`` the tree is kept in one
JSON file, :data:`FILE_NAME` in the metadata log's directory, rewritten
whole (temporary file, fsync, rename) before a commit is answered, so it
survives a restart as ZooKeeper's did; with ``log.store=memory`` it lives and
dies with the process like everything else.  Deleting a topic leaves its
entries, as Kafka's topic deletion left ``/consumers`` alone; OffsetFetch v0
answers an unknown partition before looking.
"""

from __future__ import annotations

import json
import logging
import os
import threading

log = logging.getLogger(__name__)

FILE_NAME = "zookeeper-consumer-offsets.json"
_FORMAT_VERSION = 1


class ZooKeeperOffsets:
    def __init__(self, path: str | None = None) -> None:
        """``path``: the file that keeps the tree across restarts (None: memory only)."""
        self._lock = threading.Lock()
        self._path = path
        self._offsets: dict[tuple[str, str, int], int] = {} if path is None else _load(path)

    def set_or_create(self, group_id: str, offsets: list[tuple[str, int, int]]) -> None:
        """Write (topic, partition, offset) entries of ``group_id``; with a file, they
        are on disk when this returns.  Raises OSError if the file cannot be written
        (the entries are then not kept)."""
        with self._lock:
            updated = dict(self._offsets)
            for topic, partition, offset in offsets:
                updated[(group_id, topic, partition)] = offset
            if self._path is not None:
                _save(self._path, updated)
            self._offsets = updated

    def get(self, group_id: str, topic: str, partition: int) -> int | None:
        """The committed offset, or None where no v0 commit wrote one."""
        with self._lock:
            return self._offsets.get((group_id, topic, partition))


def _load(path: str) -> dict[tuple[str, str, int], int]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return {(group, topic, int(partition)): int(offset)
                for group, topic, partition, offset in data["offsets"]}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Written atomically, so only an outside hand breaks it: say so, start empty
        # (the next v0 commit replaces the file).
        log.error("Ignoring the OffsetCommit v0 offsets in %s, which cannot be read: %s",
                  path, exc)
        return {}


def _save(path: str, offsets: dict[tuple[str, str, int], int]) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump({"version": _FORMAT_VERSION, "offsets": [
            [group, topic, partition, offset]
            for (group, topic, partition), offset in sorted(offsets.items())]}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
