"""FeatureControl: the feature levels this broker supports and has finalized (KIP-584).

Kafka's ``FeatureControlManager`` on the controller and ``FinalizedFeatures``
on the broker: each feature has a supported range (what this software can
run) and a finalized level (what the cluster runs now).  ApiVersions v3+
reports both with the finalized features' epoch; clients read them (the
Java producer uses transaction.version >= 2 to choose the KIP-890 protocol,
admin tools print them with describeFeatures).

The levels are Kafka 4.0's for what kafka-net serves:

* metadata.version 4.0-IV3 (25), supported from 3.3-IV3 (7), Kafka 4.0's range;
* kraft.version 1: a single voter formatted with ``--standalone`` (KIP-853);
* group.version 1: the consumer group protocol (KIP-848) is served;
* transaction.version 1: 2 would tell clients to use KIP-890's second part
  (EndTxn v5, Produce v12 without AddPartitionsToTxn), which kafka-net does
  not serve, so 1 is the most it supports.

A feature at level 0 is not listed among the finalized ones, as Kafka omits
it.  :meth:`FeatureControl.snapshot` is immutable and replaced whole on each
change, so ApiVersions can cache its answer per snapshot.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

METADATA_VERSION = "metadata.version"

SUPPORTED: dict[str, tuple[int, int]] = {
    "group.version": (0, 1),
    "kraft.version": (0, 1),
    METADATA_VERSION: (7, 25),
    "transaction.version": (0, 1),
}

DEFAULT_FINALIZED: dict[str, int] = {
    "group.version": 1,
    "kraft.version": 1,
    METADATA_VERSION: 25,
    "transaction.version": 1,
}


class FeatureSnapshot(NamedTuple):
    levels: tuple[tuple[str, int], ...]   # finalized, name-sorted, level 0 left out
    epoch: int


class FeatureControl:
    def __init__(self, finalized: dict[str, int] | None = None, epoch: int = 0) -> None:
        self._lock = threading.Lock()
        self.snapshot = _snapshot(dict(DEFAULT_FINALIZED if finalized is None else finalized),
                                  epoch)

    def finalized(self) -> dict[str, int]:
        return dict(self.snapshot.levels)

    def level(self, name: str) -> int:
        return self.finalized().get(name, 0)

    def set_levels(self, levels: dict[str, int], epoch: int | None = None) -> None:
        """Apply validated levels (UpdateFeatures, or a FeatureLevelRecord replayed);
        the epoch is the change's metadata offset when it has one, else the next."""
        with self._lock:
            current = self.finalized()
            current.update(levels)
            next_epoch = self.snapshot.epoch + 1 if epoch is None else epoch
            self.snapshot = _snapshot(current, next_epoch)


def _snapshot(levels: dict[str, int], epoch: int) -> FeatureSnapshot:
    return FeatureSnapshot(tuple(sorted((k, v) for k, v in levels.items() if v > 0)), epoch)
