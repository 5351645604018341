"""RequestChannel: the hand-off between Processor threads and request handler threads.

::

    Processor 0..N-1 --send_request()--> [ bounded request queue ] --receive_request()--> handler 0..M-1
    Processor k <--------------------- response queue of k <--send_response()---------- handler

* The request queue is one ``queue.Queue(maxsize=queued.max.requests)`` (a
  :class:`~.request_queue.RequestQueue`, which wakes fewer sleeping handlers).
  A Processor that finds it full **blocks** in ``put``, and so stops all I/O of
  its connections: that is Kafka's back-pressure (reference F1/C8), and what
  keeps a flood of requests from growing memory without bound.
* Responses go to the queue of the Processor that owns the connection (the
  request remembers ``processor_id``), which is then woken up.  Only that
  thread ever touches the connection's socket.
* Five kinds of response (Kafka's ``RequestChannel.Response`` subclasses):
  Send (bytes to write), NoOp (nothing to write, e.g. produce acks=0, but the
  connection must still be unmuted), CloseConnection (close instead of
  answering, e.g. acks=0 produce that failed), StartThrottling and
  EndThrottling (quota throttling, KIP-219).
* Shutdown: one ``SHUTDOWN`` sentinel per handler thread.
* Memory: a request holds its frame's bytes of the memory pool
  (``queued.max.request.bytes``) until :meth:`Request.release_buffer`: the
  handler thread calls it once ``handle`` returned (Kafka's
  ``KafkaRequestHandler`` ``finally``), ``clear`` for requests never handled.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from kafka_net.log_safety import escape
from kafka_net.network.request_queue import RequestQueue
from kafka_net.protocol.codec import ParsedRequest
from kafka_net.protocol.headers import RequestHeader

log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class Request:
    """A parsed request plus where it came from and when (Kafka's ``RequestChannel.Request``)."""

    processor_id: int
    connection_id: str
    listener_name: str
    client_address: tuple
    header: RequestHeader
    body: dict | None
    body_size: int
    unsupported_version: bool = False
    client_software: tuple[str, str] = ("unknown", "unknown")
    # Who sent it (Kafka's RequestContext.principal), from the channel's
    # authenticator: "User:<SASL name>", the mapped DN of an SSL client
    # certificate ("User:CN=..."), or User:ANONYMOUS.
    principal: str = "User:ANONYMOUS"
    # The listener's security protocol (RequestContext.securityProtocol): the
    # request log's securityProtocol field.
    security_protocol: str = "PLAINTEXT"
    # The principal logged in with a delegation token (KafkaPrincipal.tokenAuthenticated):
    # such a connection may not create, renew, expire or describe tokens.
    token_authenticated: bool = False
    start_time_ns: int = field(default_factory=time.monotonic_ns)
    request_dequeue_time_ns: int = 0
    api_local_complete_time_ns: int = 0
    # The rest of Kafka's timestamps (see request_metrics.py for the six timings):
    # the response put on the Processor's queue, taken off it, and done with.
    response_complete_time_ns: int = 0
    response_dequeue_time_ns: int = 0
    end_time_ns: int = 0
    api_throttle_time_ms: int = 0   # the client quota throttle, when one applied
    # Who touched it, for the request log: the handler thread that ran KafkaApis
    # and the thread that queued the response (another one if it was parked).
    handler_thread: str = ""
    response_thread: str = ""
    # Bytes of ``memory_pool`` this request holds (its frame's size; 0 without a
    # bounded pool) until release_buffer(): Kafka's Request.buffer and memoryPool.
    buffer_size: int = 0
    memory_pool: Any = None

    @classmethod
    def from_parsed(cls, processor_id: int, connection_id: str, listener_name: str,
                    client_address: tuple, parsed: ParsedRequest,
                    client_software: tuple[str, str] = ("unknown", "unknown"),
                    principal: str = "User:ANONYMOUS",
                    security_protocol: str = "PLAINTEXT") -> "Request":
        """The Request for a ``ParsedRequest``: the one place one is built from a
        parsed frame (the Processor's hot path, and the tests' and benchmarks'
        requests through ``BrokerCore.request_from_frame``)."""
        # All positional: keywords cost the Processor's hot path ~50 ns per request.
        return cls(processor_id, connection_id, listener_name, client_address,
                   parsed.header, parsed.body, parsed.body_size,
                   parsed.unsupported_version, client_software, principal,
                   security_protocol)

    def release_buffer(self) -> None:
        """Give the frame's bytes back to the pool; later calls do nothing."""
        size, self.buffer_size = self.buffer_size, 0
        if size:
            self.memory_pool.release(size)

    def describe(self) -> str:
        h = self.header
        return (f"api_key={h.api_key} api_version={h.api_version} "
                f"correlation_id={h.correlation_id} client_id='{escape(h.client_id)}' "
                f"principal={escape(self.principal)} connection={self.connection_id}")


class Response:
    """Base of the five response kinds; ``request`` says which connection it is for."""

    # Its times are on the request (response_complete_time_ns, ...), as in Kafka.
    __slots__ = ("request",)
    timed = True   # ends a request (the throttling two do not): send_response times it

    def __init__(self, request: Request) -> None:
        self.request = request


class SendResponse(Response):
    __slots__ = ("data", "on_complete")

    def __init__(self, request: Request, data: bytes,
                 on_complete: Callable[[], Any] | None = None) -> None:
        # Response.__init__'s fields set here: one per request, no super() call.
        self.request = request
        self.data = data
        self.on_complete = on_complete


class NoOpResponse(Response):
    __slots__ = ()


class CloseConnectionResponse(Response):
    __slots__ = ()


class StartThrottlingResponse(Response):
    __slots__ = ()
    timed = False


class EndThrottlingResponse(Response):
    __slots__ = ()
    timed = False


# Each sending thread's name, read per response without a Python call.
_this_thread = threading.local()


class _Shutdown:
    def __repr__(self) -> str:
        return "SHUTDOWN"


SHUTDOWN = _Shutdown()


class RequestChannel:
    """One bounded request queue; routes responses to the owning Processor."""

    def __init__(self, queue_size: int) -> None:
        # Wakes a handler per put only when needed (see request_queue.py).
        self._requests: RequestQueue = RequestQueue(maxsize=queue_size)
        self._processors: dict[int, Any] = {}
        self._lock = threading.Lock()

    # -- Processors --------------------------------------------------------------

    def add_processor(self, processor) -> None:
        with self._lock:
            if processor.id in self._processors:
                raise ValueError(f"processor {processor.id} already registered")
            self._processors[processor.id] = processor

    def remove_processor(self, processor_id: int) -> None:
        with self._lock:
            self._processors.pop(processor_id, None)

    def send_request(self, request: Request, timeout: float | None = None) -> bool:
        """Blocking put; raises ``queue.Full`` only when ``timeout`` runs out.  False:
        no handler was woken for it (then call :meth:`wake_if_stale`, request_queue.py)."""
        return self._requests.put(request, timeout=timeout)

    def wake_if_stale(self) -> bool:
        return self._requests.wake_if_stale()

    # -- handlers ----------------------------------------------------------------

    def receive_request(self, timeout: float) -> Request | _Shutdown | None:
        try:
            return self._requests.get(timeout=timeout)
        except queue.Empty:
            return None

    def send_response(self, response: Response) -> None:
        if response.timed:
            # Kafka's sendResponse: one of these per request, its response's enqueue time.
            request = response.request
            request.response_complete_time_ns = now = time.monotonic_ns()
            if not request.api_local_complete_time_ns:
                request.api_local_complete_time_ns = now
            try:
                request.response_thread = _this_thread.name
            except AttributeError:   # this thread's first response
                request.response_thread = _this_thread.name = threading.current_thread().name
        processor = self._processors.get(response.request.processor_id)
        if processor is None:
            # Kafka drops it silently too: the processor (and its connections) is gone.
            log.debug("dropping response for removed processor %d",
                      response.request.processor_id)
            return
        processor.enqueue_response(response)

    def send_shutdown_request(self) -> None:
        self._requests.put(SHUTDOWN, wake=True)

    # -- observability / shutdown ------------------------------------------------

    def request_queue_size(self) -> int:
        return self._requests.qsize()

    def response_queue_sizes(self) -> dict[int, int]:
        return {pid: p.response_queue_size() for pid, p in list(self._processors.items())}

    def clear(self) -> None:
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                return
            if isinstance(request, Request):
                request.release_buffer()   # never handled: its memory goes back here
