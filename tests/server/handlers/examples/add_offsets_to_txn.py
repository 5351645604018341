"""AddOffsetsToTxn (key 25): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker


def typical(b: Broker, version: int) -> dict:
    coordinator = b.transaction_coordinator
    init = coordinator.handle_init_producer_id("tx-typical", 60_000)
    ids = dict(transactional_id="tx-typical", producer_id=init.producer_id,
               producer_epoch=init.producer_epoch)
    return dict(ids, group_id="g")


def failing(b: Broker, version: int) -> dict:
    ids = dict(transactional_id="ghost", producer_id=7, producer_epoch=0)
    return dict(ids, group_id="g")
