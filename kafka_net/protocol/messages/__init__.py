"""Wire schemas, one module per Kafka API, indexed by API key.

``MESSAGES`` lists what the codec can read and write.  Which of these the
broker *serves*, and at which versions, is decided by the dispatch table in
:mod:`kafka_net.server.apis`; ApiVersions advertises exactly that table.

Each API's schemas live in the module named after its key
(``ApiKey.LIST_OFFSETS`` -> ``list_offsets.py``, exporting ``REQUEST`` and
``RESPONSE``); adding an API is adding its key and that module.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.schema import Schema


@dataclass(frozen=True)
class ApiMessage:
    """One API's request and response schemas, by API key."""

    key: ApiKey
    request: Schema
    response: Schema


class LazyMessages(Mapping):
    """API key -> :class:`ApiMessage`, each API's schema module imported on its
    first lookup.

    Why lazy: building the ~95 schemas (thousands of ``Field`` objects) was a
    large share of a broker's start-up, and a broker sees only the few APIs its
    clients use.  The keys are known without importing anything (every
    :class:`ApiKey`), so iterating, ``len`` and ``in`` cost nothing; a lookup
    imports one module.  Threads may race on a first lookup: the import system
    runs the module once, and ``setdefault`` keeps one ApiMessage per key.
    """

    def __init__(self) -> None:
        self._loaded: dict[int, ApiMessage] = {}
        self._keys = tuple(sorted(ApiKey))      # in API-key order

    def __getitem__(self, key: int) -> ApiMessage:
        message = self._loaded.get(key)
        if message is None:
            message = self._load(key)
        return message

    def _load(self, key: int) -> ApiMessage:
        api = ApiKey._value2member_map_.get(key)
        if api is None:
            raise KeyError(key)
        module = importlib.import_module(f"{__name__}.{api.name.lower()}")
        return self._loaded.setdefault(key, ApiMessage(api, module.REQUEST, module.RESPONSE))

    def __contains__(self, key: object) -> bool:
        return key in ApiKey._value2member_map_

    def __iter__(self) -> Iterator[ApiKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def loaded(self) -> list[int]:
        """The keys whose schemas have been imported so far (tests read it)."""
        return sorted(self._loaded)


MESSAGES: Mapping[int, ApiMessage] = LazyMessages()


def find_api(text: str) -> ApiMessage:
    """An API's schemas by key (``"18"``) or by name, spelled as Kafka does or as
    this package does (``"ApiVersions"``, ``"api_versions"``, ``"API_VERSIONS"``);
    KeyError for an API there is none of."""
    if text.lstrip("-").isdigit():
        key = int(text)
    else:
        wanted = text.replace("_", "").replace("-", "").lower()
        key = next((k for k in ApiKey if k.name.replace("_", "").lower() == wanted), None)
        if key is None:
            raise KeyError(f"unknown API {text!r}")
    if key not in MESSAGES:
        raise KeyError(f"no schema for API key {key}")
    return MESSAGES[key]
