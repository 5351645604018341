"""StreamsGroupTopologyDescriptionUpdate (key 93): a typical request and a failing one."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from tests.server.conftest import Broker
from tests.server.handlers.examples import typical_request


def typical(b: Broker, version: int) -> dict:
    b.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, **typical_request(
        b, ApiKey.STREAMS_GROUP_HEARTBEAT, 0))
    return dict(group_id="sg", member_id="m-1", topology_epoch=1, topology_description={
        "subtopologies": [{"subtopology_id": "0", "nodes": [
            {"name": "KSTREAM-SOURCE-0000000000", "node_type": 1, "source_topics": ["t"],
             "stores": [], "successors": []}]}], "global_stores": []})


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", member_id="m", topology_epoch=1,
                topology_description={"subtopologies": [], "global_stores": []})
