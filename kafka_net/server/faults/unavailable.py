"""The fault that fires on no request, and the timer of faults that act later.

``unavailable``: every listener stops listening (a connect is refused) and
every client connection is closed; after the duration the listeners listen
again on the same ports.  Topics, offsets and groups are kept: only the
network went away.  The registry fires it when the rule is added.

:func:`later` runs a function after a delay on a daemon timer: a delayed or
throttled answer (:mod:`.actions`) and the broker's return here.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from kafka_net.network.processor import ProcessorTask

log = logging.getLogger(__name__)


def broker_unavailable(server, seconds: float, rule_id: str) -> None:
    """Stop listening and close every client connection; listen again after ``seconds``."""
    socket_server = server.socket_server
    log.warning("Fault %s: the broker is unavailable for %.3f s", rule_id, seconds)
    for acceptor in socket_server.acceptors:
        acceptor.set_listening(False)
    note = json.dumps({"rule": rule_id, "action": "unavailable", "error_code": None,
                       "duration_ms": int(seconds * 1000), "api_key": -1,
                       "correlation_id": -1}).encode()
    stamp = time.time_ns()

    def close_all(processor, _channel) -> None:
        for conn in list(processor.selector.channels.values()):
            if processor.capture is not None:
                processor.capture.fault(conn.id, conn.peer_text, note, -1, -1, -1, stamp)
            processor.close_connection(conn.id)

    for processor in socket_server.processors:
        processor.enqueue_response(ProcessorTask.for_processor(processor.id, close_all))

    def back() -> None:
        for acceptor in socket_server.acceptors:
            acceptor.set_listening(True)
        log.warning("Fault %s: the broker is available again", rule_id)
    later(int(seconds * 1000), lambda _arg: back(), None)


def later(delay_ms: int, fn, arg) -> None:
    timer = threading.Timer(delay_ms / 1000, _quietly, (fn, arg))
    timer.daemon = True
    timer.name = "kafka-net-fault-timer"
    timer.start()


def _quietly(fn, arg) -> None:
    # The broker may have stopped while a delayed answer or the broker's return
    # waited: its Processors' wakeups are closed then, and nothing is owed.
    try:
        fn(arg)
    except OSError as exc:
        log.debug("fault timer: the broker is gone (%s)", exc)
