"""StreamsGroupHeartbeat (key 88): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker, LONG


def typical(b: Broker, version: int) -> dict:
    return dict(group_id="sg", member_id="m-1", member_epoch=0, rebalance_timeout_ms=LONG,
                process_id="p-1", active_tasks=[], standby_tasks=[], warmup_tasks=[],
                topology={"epoch": 1, "subtopologies": [{
                    "subtopology_id": "0", "source_topics": ["t"], "source_topic_regex": [],
                    "state_changelog_topics": [], "repartition_sink_topics": [],
                    "repartition_source_topics": [], "copartition_groups": []}]})


def failing(b: Broker, version: int) -> dict:
    return dict(group_id="ghost", member_id="m", member_epoch=5, active_tasks=None)
