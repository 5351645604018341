"""AddPartitionsToTxn (key 24): a typical request and a failing one."""

from __future__ import annotations

from tests.server.conftest import Broker
from tests.server.handlers.examples.support import add_partitions_body


def typical(b: Broker, version: int) -> dict:
    coordinator = b.transaction_coordinator
    init = coordinator.handle_init_producer_id("tx-typical", 60_000)
    ids = dict(transactional_id="tx-typical", producer_id=init.producer_id,
               producer_epoch=init.producer_epoch)
    return add_partitions_body(version, ids, [{"name": "t", "partitions": [0, 1]}])


def failing(b: Broker, version: int) -> dict:
    ids = dict(transactional_id="ghost", producer_id=7, producer_epoch=0)
    return add_partitions_body(version, ids, [{"name": "t", "partitions": [0]},
                                              {"name": "missing", "partitions": [0]}])
