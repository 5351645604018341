"""KafkaRequestHandlerPool: M threads that take requests and call KafkaApis.

Kafka's ``KafkaRequestHandler.run``: wait up to 300 ms for a request; the
shutdown sentinel ends the thread; anything else goes to ``apis.handle``.
A handler thread never dies on a bad request: ``KafkaApis.handle`` turns an
exception into an error response (or a closed connection), and this loop
catches whatever might still escape.

The request's memory-pool bytes (``queued.max.request.bytes``) go back once
``handle`` returned, whatever happened (Kafka's ``finally
request.releaseBuffer()``).  Kafka releases most requests right after
parsing, on the network thread, and only those whose parsed form keeps
references into the buffer (Produce records) here.  Here the frame itself is
dropped after parsing, but the parsed body holds about as many bytes (records
and bytes fields are copied out of it) until the handler is done, for any
API; so every request is released here, the one point correct for all.  A
parked request (``DEFERRED``) is released too, as in Kafka: what a purgatory
keeps of it is small.
"""

from __future__ import annotations

import logging
import threading
import time

from kafka_net.network.request_channel import (
    SHUTDOWN, CloseConnectionResponse, RequestChannel)
from kafka_net.network.thread_name import set_os_thread_name

log = logging.getLogger(__name__)

RECEIVE_TIMEOUT_S = 0.3


class KafkaRequestHandler(threading.Thread):
    def __init__(self, handler_id: int, request_channel: RequestChannel, apis) -> None:
        # Kafka's handler threads are daemons: they never hold the process open.
        super().__init__(name=f"data-plane-kafka-request-handler-{handler_id}", daemon=True)
        self.id = handler_id
        self.thread_name = self.name   # read per request: an attribute, not the property
        self.request_channel = request_channel
        self.apis = apis
        self.idle_ns = 0
        self.handled = 0
        self.current_request = None   # what it works on now (kafka-net top shows it)

    def run(self) -> None:
        set_os_thread_name(f"kn-handler-{self.id}")
        while True:
            start = time.monotonic_ns()
            request = self.request_channel.receive_request(RECEIVE_TIMEOUT_S)
            now = time.monotonic_ns()   # the end of the idle wait is the dequeue time
            self.idle_ns += now - start
            if request is None:
                continue
            if request is SHUTDOWN:
                log.debug("%s: shut down", self.name)
                return
            request.request_dequeue_time_ns = now
            request.handler_thread = self.thread_name
            self.current_request = request
            try:
                self.apis.handle(request)
            except Exception:
                # KafkaApis already answers its own failures; this is the backstop
                # that keeps the thread alive if even that went wrong.
                log.exception("%s: unexpected error handling %s; closing its connection",
                              self.name, request.describe())
                # No response went out, and the connection stays muted until one does:
                # without this it would hang, unanswered, until idle expiry.
                try:
                    self.request_channel.send_response(CloseConnectionResponse(request))
                except Exception:
                    log.exception("%s: could not close %s", self.name,
                                  request.connection_id)
            finally:
                self.current_request = None
                if request.buffer_size:
                    request.release_buffer()
            self.handled += 1


class KafkaRequestHandlerPool:
    def __init__(self, request_channel: RequestChannel, apis, num_threads: int) -> None:
        self.request_channel = request_channel
        self.handlers = [KafkaRequestHandler(i, request_channel, apis)
                         for i in range(num_threads)]
        self._started_ns = 0

    def start(self) -> None:
        self._started_ns = time.monotonic_ns()
        for handler in self.handlers:
            handler.start()

    def avg_idle_fraction(self) -> float:
        """RequestHandlerAvgIdlePercent: mean idle fraction since start (0..1)."""
        elapsed = time.monotonic_ns() - self._started_ns
        if not self.handlers or elapsed <= 0:
            return 1.0
        return min(1.0, sum(h.idle_ns for h in self.handlers) / len(self.handlers) / elapsed)

    def shutdown(self) -> None:
        """One sentinel per running handler (a blocking put), then wait for each."""
        # Only for live threads: after a failed startup this is called a second time,
        # and sentinels nobody takes would block on a queue of queued.max.requests
        # smaller than the pool (queued.max.requests=1, num.io.threads=3 hung).
        for _ in [h for h in self.handlers if h.is_alive()]:
            self.request_channel.send_shutdown_request()
        for handler in self.handlers:
            if handler.is_alive():
                handler.join()
