"""FeatureControl: the feature levels this broker supports and has finalized (KIP-584).

Kafka's ``FeatureControlManager`` on the controller and ``FinalizedFeatures``
on the broker: each feature has a supported range (what this software can
run) and a finalized level (what the cluster runs now).  ApiVersions v3+
reports both with the finalized features' epoch; clients read them (the
Java producer uses transaction.version >= 2 to choose the KIP-890 protocol,
admin tools print them with describeFeatures).

The levels are Kafka 4.4's for what kafka-net serves:

* metadata.version 4.0-IV3 (25), supported from 3.3-IV3 (7), Kafka 4.0's range;
* kraft.version 1: a single voter formatted with ``--standalone`` (KIP-853);
* group.version 1: the consumer group protocol (KIP-848) is served;
* share.version 2: share groups (KIP-932) with dead-letter queues (KIP-1191),
  as Kafka 4.4 finalizes it on a new cluster; 1 serves share groups without
  dead-letter queues (Kafka 4.2's), 0 (UpdateFeatures) turns them off
  (UNSUPPORTED_VERSION);
* streams.version 1: the streams rebalance protocol (KIP-1071) is served, as
  a new Kafka 4.2 cluster finalizes it (its production default); at 0
  StreamsGroupHeartbeat and StreamsGroupDescribe answer UNSUPPORTED_VERSION,
  as Kafka's ``isStreamsGroupProtocolEnabled``;
* transaction.version 2, as a new Kafka 4.x cluster finalizes it (TV_2 is
  the latest production level): it tells clients they may use KIP-890's
  second part (EndTxn v5 bumping the epoch per transaction, Produce v12 and
  TxnOffsetCommit v5 adding partitions without AddPartitionsToTxn /
  AddOffsetsToTxn).  The broker serves those requests by their version, as
  Kafka does; the level only guides clients (the Java producer checks it, and
  caps its requests at Produce v11 / EndTxn v4 below 2).  Levels 0 and 1 are
  the classic protocol.

With ``as.version`` the supported ranges and the levels a fresh broker
finalizes are those of that Kafka release (:func:`release_features`): what
kafka-net supports, cut to what the release's broker supported and finalized
(:mod:`kafka_net.protocol.kafka_releases`); none before 3.3, whose brokers
advertised no feature (metadata.version came with KIP-778).

A feature at level 0 is not listed among the finalized ones, as Kafka omits
it.  UpdateFeatures writes FeatureLevelRecords through the Controller; their
replay (also at a restart) sets the levels.  :meth:`FeatureControl.snapshot`
is immutable and replaced whole on each change, so ApiVersions can cache its
answer per snapshot.
"""

from __future__ import annotations

import logging
import threading
from typing import NamedTuple

from kafka_net.protocol.kafka_releases import FEATURES as KAFKA_RELEASE_FEATURES

log = logging.getLogger(__name__)

METADATA_VERSION = "metadata.version"
TRANSACTION_VERSION = "transaction.version"

SUPPORTED: dict[str, tuple[int, int]] = {
    "group.version": (0, 1),
    "kraft.version": (0, 1),
    METADATA_VERSION: (7, 25),
    "share.version": (0, 2),
    "streams.version": (0, 1),
    "transaction.version": (0, 2),
}

DEFAULT_FINALIZED: dict[str, int] = {
    "group.version": 1,
    "kraft.version": 1,
    METADATA_VERSION: 25,
    "share.version": 2,
    "streams.version": 1,
    "transaction.version": 2,
}


UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3   # FeatureUpdate.UpgradeType
UPGRADE_TYPES = (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE)


class FeatureUpdateError(Exception):
    """INVALID_UPDATE_VERSION with Kafka's message (FeatureControlManager)."""


def release_features(release: str | None) -> tuple[dict[str, tuple[int, int]],
                                                   dict[str, int]]:
    """(supported ranges, default finalized levels): kafka-net's, or with
    ``as.version`` those of the features both it and Kafka ``release`` have, each
    range the overlap and each level the release's, within that overlap."""
    if release is None:
        return dict(SUPPORTED), dict(DEFAULT_FINALIZED)
    supported, finalized = {}, {}
    for name, (low, high, level) in KAFKA_RELEASE_FEATURES[release].items():
        ours_low, ours_high = SUPPORTED.get(name, (1, 0))   # (1, 0): none of ours
        low, high = max(low, ours_low), min(high, ours_high)
        if low <= high:
            supported[name] = (low, high)
            finalized[name] = min(max(level, low), high)
    return supported, finalized


class FeatureSnapshot(NamedTuple):
    levels: tuple[tuple[str, int], ...]   # finalized, name-sorted, level 0 left out
    epoch: int
    # name -> (min, max) supported, name-sorted: fixed per FeatureControl, carried
    # here so ApiVersions' answer, cached per snapshot, is cached per table too.
    supported: tuple[tuple[str, tuple[int, int]], ...] = ()


class FeatureControl:
    def __init__(self, finalized: dict[str, int] | None = None, epoch: int = 0,
                 release: str | None = None) -> None:
        self._lock = threading.Lock()
        self.supported, self.defaults = release_features(release)
        self._supported_items = tuple(sorted(self.supported.items()))
        self.snapshot = self._snapshot(
            dict(self.defaults if finalized is None else finalized), epoch)

    def finalized(self) -> dict[str, int]:
        return dict(self.snapshot.levels)

    def level(self, name: str) -> int:
        """The finalized level of ``name`` (0 if not finalized); no copy: the
        consumer group heartbeat asks on every request."""
        for feature, level in self.snapshot.levels:
            if feature == name:
                return level
        return 0

    def check(self, updates: list[tuple[str, int, int]], node_id: int) -> dict[str, int]:
        """UpdateFeatures' checks of (feature, level, upgrade type) triples, all or none
        (Kafka's ``FeatureControlManager.updateFeatures``); raises FeatureUpdateError.
        Returns the levels to finalize; :meth:`set_levels` applies them (the
        Controller's FeatureLevelRecords, replayed)."""
        current = self.finalized()
        for name, level, upgrade_type in updates:
            _check_update(name, level, upgrade_type, current.get(name, 0), node_id,
                          self.supported.get(name, (0, 0)))
        return {name: level for name, level, _ in updates}

    def changed_levels(self) -> dict[str, int]:
        """The finalized levels that differ from the defaults (a metadata snapshot's
        FeatureLevelRecords)."""
        current = self.finalized()
        defaults = self.defaults
        return {name: current.get(name, 0) for name in set(current) | set(defaults)
                if current.get(name, 0) != defaults.get(name, 0)}

    def set_levels(self, levels: dict[str, int], epoch: int | None = None) -> None:
        """Apply validated levels (UpdateFeatures, or a FeatureLevelRecord replayed);
        the epoch is the change's metadata offset when it has one, else the next."""
        with self._lock:
            current = self.finalized()
            current.update(self._runnable(levels))
            next_epoch = self.snapshot.epoch + 1 if epoch is None else epoch
            self.snapshot = self._snapshot(current, next_epoch)

    def _runnable(self, levels: dict[str, int]) -> dict[str, int]:
        """``levels`` less those this broker cannot run: a metadata log written at
        another as.version may hold them (a Kafka broker would refuse to start on
        incompatible finalized features; kafka-net keeps its release's levels)."""
        kept = {}
        for name, level in levels.items():
            low, high = self.supported.get(name, (0, 0))
            if level == 0 or low <= level <= high:
                kept[name] = level
            else:
                log.warning("Ignoring the finalized level %d of feature %s: this broker "
                            "(as.version) supports %s", level, name,
                            f"versions {low}-{high}" if high else "no such feature")
        return kept

    def _snapshot(self, levels: dict[str, int], epoch: int) -> FeatureSnapshot:
        return FeatureSnapshot(tuple(sorted((k, v) for k, v in levels.items() if v > 0)),
                               epoch, self._supported_items)


def _check_update(name: str, level: int, upgrade_type: int, current: int, node_id: int,
                  supported: tuple[int, int]) -> None:
    def invalid(message: str) -> FeatureUpdateError:
        return FeatureUpdateError(f"Invalid update version {level} for feature {name}. {message}")
    if upgrade_type not in UPGRADE_TYPES:
        raise invalid("The controller does not support the given upgrade type.")
    if level < 0:
        raise invalid("A feature version cannot be less than 0.")
    low, high = supported
    if not low <= level <= high:
        what = f"Local controller {node_id}"
        if high == 0:
            raise invalid(f"{what} does not support this feature.")
        raise invalid(f"{what} only supports versions {low}-{high}")
    if level < current and upgrade_type == UPGRADE:
        raise invalid("Can't downgrade the version of this feature without setting the "
                      "upgrade type to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        raise invalid("Can't downgrade to a newer version.")
    if name == METADATA_VERSION and level < current:
        # Every metadata.version kafka-net supports changed the metadata format on
        # the way to 4.0-IV3 (MetadataVersion.checkIfMetadataChanged).
        reason = ("Unsafe metadata downgrade is not supported in this version."
                  if upgrade_type == UNSAFE_DOWNGRADE else
                  "Refusing to perform the requested downgrade because it might delete "
                  "metadata information.")
        raise FeatureUpdateError(f"Invalid metadata.version {level}. {reason}")
    if name == "kraft.version" and level != current:
        # KRaft version changes go through the Raft client (KIP-853), not FeatureLevelRecords.
        raise invalid("kraft.version cannot be changed with UpdateFeatures on this node.")
