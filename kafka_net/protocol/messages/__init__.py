"""Wire schemas, one module per Kafka API, indexed by API key.

``MESSAGES`` lists what the codec can read and write.  Which of these the
broker *serves*, and at which versions, is decided by the dispatch table in
:mod:`kafka_net.server.apis`; ApiVersions advertises exactly that table.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.messages import api_versions, metadata
from kafka_net.protocol.schema import Schema


@dataclass(frozen=True)
class ApiMessage:
    key: ApiKey
    request: Schema
    response: Schema


# In API-key order.
MESSAGES: dict[int, ApiMessage] = {
    ApiKey.METADATA: ApiMessage(ApiKey.METADATA, metadata.REQUEST, metadata.RESPONSE),
    ApiKey.API_VERSIONS: ApiMessage(
        ApiKey.API_VERSIONS, api_versions.REQUEST, api_versions.RESPONSE),
}
