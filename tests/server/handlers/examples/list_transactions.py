"""ListTransactions (key 66): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples import UNCHECKED


def typical(b: Broker, version: int) -> dict:
    coordinator = b.transaction_coordinator
    init = coordinator.handle_init_producer_id("tx-typical", 60_000)
    ids = dict(transactional_id="tx-typical", producer_id=init.producer_id,
               producer_epoch=init.producer_epoch)
    coordinator.handle_add_partitions_to_transaction(
        "tx-typical", init.producer_id, init.producer_epoch, {("t", 0)})
    return dict(state_filters=["Ongoing"], producer_id_filters=[])


def failing(b: Broker, version: int) -> dict:
    ids = dict(transactional_id="ghost", producer_id=7, producer_epoch=0)
    return dict(state_filters=["Nonsense"], producer_id_filters=[])


def failing_may_answer_none(version: int) -> bool:
    return True   # an unknown state filter matches nothing


WITHOUT_ACLS = UNCHECKED   # listing shows only the transactional ids one may describe
