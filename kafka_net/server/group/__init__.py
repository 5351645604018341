"""Consumer groups, classic and consumer protocol (KIP-848): the coordinator and
what it is made of.

* :mod:`.state`: the five states and the table of legal transitions;
* :mod:`.group`: a group's and its members' data (``Group``, ``Member``);
* :mod:`.coordinator`: ``GroupCoordinator``, JoinGroup/SyncGroup/Heartbeat/
  LeaveGroup/Describe/List, in domain values (:mod:`.results`);
* :mod:`.rebalance`: the rebalance's timers and the protocol vote;
* :mod:`.offsets`: committed offsets;
* KIP-848: :mod:`.consumer_coordinator` (ConsumerGroupHeartbeat/Describe),
  :mod:`.consumer_group` (epochs, members), :mod:`.current_assignment`
  (reconciling one member), :mod:`.assignors` (uniform and range).

The wire shapes live in the handlers (kafka_net/server/handlers/), one per API.
"""

from kafka_net.server.group.consumer_coordinator import ConsumerGroupConfig
from kafka_net.server.group.coordinator import GroupCoordinator
from kafka_net.server.group.group import GroupConfig
from kafka_net.server.group.state import GroupState, IllegalGroupTransition

__all__ = ["ConsumerGroupConfig", "GroupConfig", "GroupCoordinator", "GroupState", "IllegalGroupTransition"]
