"""Helpers the raw tests of ``as.version`` share (not a test module): a server
playing a release, what it advertises, and fresh topics on it."""

from __future__ import annotations

import itertools

from kafka_net.config.topic_keys import parse_value
from kafka_net.protocol.api_keys import ApiKey
from tests.support import make_config, running_server

_topics = itertools.count()


def server_playing(release: str | None, **overrides):
    """A running server (context manager) playing ``release`` (None: unset), one
    network and one handler thread unless ``overrides`` say otherwise."""
    settings = {"num_network_threads": 1, "num_io_threads": 1, **overrides}
    return running_server(make_config(as_version=release, **settings))


def advertised(client) -> dict[int, tuple[int, int]]:
    """{api key: (min, max)} from the broker's ApiVersions answer."""
    body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                "client_software_version": "1"})
    return {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}


def new_topic(server, partitions: int = 1, **configs) -> str:
    """A topic no other test uses; ``configs`` as keyword names (retention_ms=...)."""
    name = f"as-version-{next(_topics)}"
    server.apis.create_topic(name, partitions, {
        k.replace("_", "."): parse_value(k.replace("_", "."), v) for k, v in configs.items()})
    return name
