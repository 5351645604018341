"""KafkaApis: the dispatch table, and turning a handler's answer into a Response.

``HANDLERS`` below is the single list of what this broker serves.  Three
things are derived from it, so they cannot disagree:

* which requests the Processor accepts (:meth:`KafkaApis.parse_request`, given
  to the Processors; a key or version outside the table closes the connection);
* which handler runs (:meth:`KafkaApis.build_response`);
* what ApiVersions advertises (:meth:`KafkaApis.supported_versions`).

Error policy for a request that parsed (the bad-input cases are in
:mod:`kafka_net.protocol.codec`): a handler that raises is logged with its
request, and the client gets the API's error response with
UNKNOWN_SERVER_ERROR, or the connection is closed where Kafka would close it
(``sendErrorOrCloseConnection``).  The handler thread goes on either way.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from types import ModuleType

from kafka_net.config import ServerConfig
from kafka_net.metrics import RequestMetrics
from kafka_net.network.request_channel import (
    CloseConnectionResponse, NoOpResponse, Request, RequestChannel, Response, SendResponse)
from kafka_net.protocol.codec import ParsedRequest, encode_response, parse_request
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.schema import Versions
from kafka_net.server.handlers import CLOSE_CONNECTION, NO_RESPONSE, api_versions, metadata
from kafka_net.server.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

# In API-key order.  Adding an API = writing its module and listing it here.
HANDLERS: dict[int, ModuleType] = {
    metadata.API_KEY: metadata,
    api_versions.API_KEY: api_versions,
}


@dataclass
class RequestContext:
    """What a handler may know about its request and the broker."""

    request: Request
    apis: "KafkaApis"

    @property
    def api_version(self) -> int:
        return self.request.header.api_version

    @property
    def unsupported_version(self) -> bool:
        return self.request.unsupported_version

    @property
    def listener_name(self) -> str:
        return self.request.listener_name

    @property
    def config(self) -> ServerConfig:
        return self.apis.config

    @property
    def metadata_cache(self) -> MetadataCache:
        return self.apis.metadata_cache

    @property
    def supported_versions(self) -> dict[int, Versions]:
        return self.apis.supported_versions()

    def create_topic(self, name: str, num_partitions: int):
        topic, created = self.metadata_cache.create_topic(name, num_partitions)
        if created:
            log.info("Created topic %s with %d partition(s) (auto-create, from %s)",
                     name, num_partitions, self.request.header.client_id or "-")
        return topic


class KafkaApis:
    def __init__(self, config: ServerConfig, metadata_cache: MetadataCache,
                 request_channel: RequestChannel | None = None,
                 handlers: dict[int, ModuleType] | None = None) -> None:
        self.config = config
        self.metadata_cache = metadata_cache
        self.request_channel = request_channel
        self.handlers: dict[int, ModuleType] = {}
        self._supported: dict[int, Versions] = {}
        self.set_handlers(HANDLERS if handlers is None else handlers)
        self.metrics = RequestMetrics()

    def set_handlers(self, handlers: dict[int, ModuleType]) -> None:
        """Replace the dispatch table (tests swap in slow or limited handlers).

        The served-versions table is rebuilt from it and swapped in one
        assignment, so a Processor never sees a half-updated table.
        """
        self.handlers = dict(handlers)
        self._supported = {key: mod.VERSIONS for key, mod in sorted(self.handlers.items())}

    def supported_versions(self) -> dict[int, Versions]:
        return self._supported

    def parse_request(self, frame: bytes) -> ParsedRequest:
        """Runs on the Processor thread, as Kafka parses on the network thread."""
        return parse_request(frame, self._supported)

    def handle(self, request: Request) -> None:
        """Runs on a handler thread."""
        response = self.build_response(request)
        request.api_local_complete_time_ns = time.monotonic_ns()
        self.request_channel.send_response(response)

    def build_response(self, request: Request) -> Response:
        """Pure: request in, Response out (the benchmark's reference server calls this)."""
        module = self.handlers[request.header.api_key]
        ctx = RequestContext(request, self)
        try:
            body = module.handle(ctx, request.body)
        except Exception:
            log.exception("Error handling request %s", request.describe())
            body = self._error_body(module, request)
        self.metrics.record(request.header.api_key, request.header.api_version,
                            _top_error(body))
        if body is NO_RESPONSE:
            return NoOpResponse(request)
        if body is CLOSE_CONNECTION:
            return CloseConnectionResponse(request)
        # An unsupported ApiVersions request is answered at v0 (KIP-511).
        version = 0 if request.unsupported_version else request.header.api_version
        try:
            data = encode_response(request.header.api_key, version,
                                   request.header.correlation_id, body)
        except Exception:
            log.exception("Error encoding the response to %s", request.describe())
            return CloseConnectionResponse(request)
        return SendResponse(request, data)

    @staticmethod
    def _error_body(module: ModuleType, request: Request):
        try:
            return module.error_response(request.body, request.header.api_version,
                                         ErrorCode.UNKNOWN_SERVER_ERROR)
        except Exception:
            log.exception("Error building the error response to %s; closing the connection",
                          request.describe())
            return CLOSE_CONNECTION


def _top_error(body) -> int | None:
    """The response-level error code, if the API has one (for ErrorsPerSec)."""
    return body.get("error_code") if isinstance(body, dict) else None
