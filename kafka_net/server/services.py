"""The broker's parts the API layer reaches: one object, not one parameter each.

:class:`KafkaApis` takes them as ``services``: BrokerCore passes itself (it
builds each part, wired to the others and to the logs), and a KafkaApis built
alone (API tests, benchmarks) gets :func:`standalone_services`: in-memory
parts, a metadata log of its own, no group coordinator, no authorizer.
Handlers reach each part through their RequestContext (``ctx.replica_manager``,
``ctx.quotas``...), or a new one as ``ctx.services.<name>``: a part added to
BrokerCore needs no new KafkaApis parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kafka_net.config import ServerConfig
from kafka_net.network.request_channel import RequestChannel
from kafka_net.security.credential_cache import CredentialCache
from kafka_net.server.controller import Controller
from kafka_net.server.metadata_cache import MetadataCache
from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.quotas.quota_managers import QuotaManagers
from kafka_net.server.replica_manager import ReplicaManager
from kafka_net.server.transaction import TransactionConfig, TransactionCoordinator


class BrokerServices(Protocol):
    """What KafkaApis reads from its ``services`` (BrokerCore has each)."""

    replica_manager: ReplicaManager
    group_coordinator: Any            # GroupCoordinator, or None without groups
    quotas: QuotaManagers
    transaction_coordinator: TransactionCoordinator
    credential_cache: CredentialCache
    controller: Controller
    authorizer: Any                   # StandardAuthorizer, or None: allow all
    internal_topics: Any              # InternalTopics, or None without a BrokerCore
    # The ShareGroupCoordinator, or None; BrokerCore's is built when first read.
    share_coordinator: Any


@dataclass
class StandaloneServices:
    """The in-memory parts of a KafkaApis built without a BrokerCore."""

    replica_manager: ReplicaManager
    group_coordinator: Any
    quotas: QuotaManagers
    transaction_coordinator: TransactionCoordinator
    credential_cache: CredentialCache
    controller: Controller
    authorizer: Any = None
    internal_topics: Any = None

    @property
    def share_coordinator(self):
        """The group coordinator's share side: None here unless one was given."""
        return None if self.group_coordinator is None else self.group_coordinator.share


def standalone_services(config: ServerConfig, metadata_cache: MetadataCache,
                        request_channel: RequestChannel | None) -> StandaloneServices:
    """The parts of a KafkaApis built without a BrokerCore, in memory."""
    replica_manager = ReplicaManager()
    credential_cache = CredentialCache()
    quotas = QuotaManagers(config, request_channel)
    # Producer ids, transactional or not, come from the transaction coordinator.
    transactions = TransactionCoordinator(
        TransactionConfig(config.transaction_max_timeout_ms), replica_manager, None)
    controller = Controller(MetadataLog(), metadata_cache, replica_manager, credential_cache,
                            quotas.client_quotas, None, transactions)
    controller.register()
    return StandaloneServices(replica_manager, None, quotas, transactions, credential_cache,
                              controller)
