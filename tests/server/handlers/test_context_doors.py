"""Handlers reach the broker through their RequestContext's doors, never ``ctx.apis``."""

from __future__ import annotations

import ast
from pathlib import Path

from kafka_net.server.apis import RequestContext

SERVER = Path(__file__).resolve().parents[3] / "kafka_net" / "server"


def test_no_handler_reaches_past_its_context():
    """No ``<something>.apis`` attribute read in a handler (or config_admin, its helper)."""
    sources = [*sorted((SERVER / "handlers").glob("*.py")), SERVER / "config_admin.py"]
    reaching = [f"{path.name}:{node.lineno}" for path in sources
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Attribute) and node.attr == "apis"]
    assert reaching == []


def test_the_doors_lead_to_the_brokers_parts(broker):
    ctx = RequestContext(broker.make_request(18, 0, {}), broker.apis)
    assert ctx.replica_manager is broker.replica_manager
    assert ctx.group_coordinator is broker.group_coordinator
    assert ctx.config_repository is broker.replica_manager.config_repository
    assert ctx.quotas is broker.apis.quotas
    first, second = ctx.allocate_producer_id(), ctx.allocate_producer_id()
    assert second == first + 1
    topic, created = ctx.try_create_topic("doors", 2)
    assert created and topic.num_partitions == 2
    assert ctx.try_create_topic("doors", 2)[1] is False
    assert ctx.delete_topic("doors") and broker.metadata_cache.topic("doors") is None


def test_the_services_door_is_the_broker_itself(broker):
    """KafkaApis reads every part from one object (BrokerCore): a part added there
    is ``ctx.services.<name>`` without a constructor parameter or a door."""
    ctx = RequestContext(broker.make_request(18, 0, {}), broker.apis)
    assert ctx.services is broker
    assert ctx.services.log_manager is broker.log_manager
    for name in ("replica_manager", "group_coordinator", "quotas", "transaction_coordinator",
                 "credential_cache", "controller", "authorizer", "internal_topics"):
        assert getattr(broker.apis, name) is getattr(broker, name), name
