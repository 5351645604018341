"""Groups of every kind (classic, KIP-848 consumer, KIP-1071 streams; KIP-932
share groups are in kafka_net.server.share): the coordinators and what they
are made of.  Built by composition: each part is an object handed what it
needs (tests/server/group/test_structure.py keeps it so: no mixin, no import
circle).

* :mod:`.registry`: ``GroupRegistry``, the one owner of the groups and their
  offsets (Kafka's GroupMetadataManager role), held by every part below;
* :mod:`.state`: the five states and the table of legal transitions;
* :mod:`.group`: a group's and its members' data (``Group``, ``Member``);
* :mod:`.coordinator`: ``GroupCoordinator``, JoinGroup/SyncGroup/Heartbeat/
  LeaveGroup, in domain values (:mod:`.results`), and the door for the rest;
  its parts: :mod:`.admin` (Describe/List/Delete, offsets),
  :mod:`.static_membership` (KIP-345), :mod:`.offset_expiry`;
* :mod:`.rebalance`: the rebalance's timers and the protocol vote;
* :mod:`.offsets`: committed offsets; :mod:`.metadata_manager`: their and the
  groups' records in ``__consumer_offsets``;
* what consumer and streams groups share: :mod:`.modern_group` (lookup,
  member sessions, describe, epoch checks) and :mod:`.modern_data` (fields,
  static replacement, records);
* KIP-848: :mod:`.consumer_coordinator` (ConsumerGroupHeartbeat/Describe),
  :mod:`.migration` (classic members inside a consumer group),
  :mod:`.consumer_group` (epochs, members), :mod:`.current_assignment`
  (reconciling one member), :mod:`.assignors` (uniform and range);
* KIP-1071: :mod:`.streams_coordinator`, :mod:`.streams_group`,
  :mod:`.streams_assignor`.

The wire shapes live in the handlers (kafka_net/server/handlers/), one per API.

This package imports none of its modules: a caller imports the ones it needs
(``kafka_net.server.group.coordinator`` for the GroupCoordinator, ``.group``
for GroupConfig, ...).  Transactions need only :mod:`.offsets`, and a broker
builds streams groups on first use (``GroupCoordinator.streams``), so importing
one module must not import every coordinator (issue 28: time to listen).
"""
