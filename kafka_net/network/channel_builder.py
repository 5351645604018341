"""ChannelBuilder: a new socket -> a KafkaChannel with the transport layer and the
authenticator of its listener's security protocol (Kafka's ``ChannelBuilders``,
``PlaintextChannelBuilder``, ``SslChannelBuilder`` and ``SaslChannelBuilder`` in
one small class).

=================  ==========================  =========================
security protocol  transport layer             authenticator
=================  ==========================  =========================
PLAINTEXT          PlaintextTransportLayer     DefaultAuthenticator
SSL                SslTransportLayer           DefaultAuthenticator
SASL_PLAINTEXT     PlaintextTransportLayer     SaslServerAuthenticator
SASL_SSL           SslTransportLayer           SaslServerAuthenticator
=================  ==========================  =========================

A SASL listener's :class:`SaslSettings` carry its mechanisms (PLAIN users from
``listener.name.<l>.plain.sasl.jaas.config``, SCRAM credentials from the
broker's CredentialCache, shared with AlterUserScramCredentials) and the
:class:`AuthenticationHooks`: what the authenticator needs of the API layer
without importing it: ``api_versions_body(parsed)`` (the ApiVersions answer,
as KafkaApis gives it), ``supported_versions()`` (the table requests are
parsed against) and ``error_body(parsed, code)`` (any API's error response).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Callable

from kafka_net.config import sasl as sasl_config
from kafka_net.network.authenticator import DefaultAuthenticator, SaslServerAuthenticator
from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.network.transport_layer import PlaintextTransportLayer
from kafka_net.security import plain, scram
from kafka_net.security.credential_cache import CredentialCache
from kafka_net.security.scram_server import ScramSaslServer


@dataclass
class AuthenticationHooks:
    """What a SASL authenticator needs from the API layer: the SCRAM credentials, and the
    ApiVersions answer and error bodies it gives before authentication."""

    credential_cache: CredentialCache
    api_versions_body: Callable
    supported_versions: Callable[[], dict]
    error_body: Callable          # (parsed request, error code) -> that API's error body


@dataclass
class SaslSettings:
    """One SASL listener's settings, read from the ServerConfig once."""

    listener_name: str
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]
    connections_max_reauth_ms: int
    max_receive_size: int
    hooks: AuthenticationHooks

    @classmethod
    def of(cls, config, listener_name: str, hooks: AuthenticationHooks) -> "SaslSettings":
        return cls(listener_name, config.sasl_enabled_mechanisms,
                   sasl_config.plain_users(config, listener_name),
                   config.connections_max_reauth_ms, config.sasl_server_max_receive_size,
                   hooks)

    def new_sasl_server(self, mechanism: str):
        if mechanism == plain.MECHANISM:
            return plain.PlainSaslServer(self.plain_users)
        cache = self.hooks.credential_cache
        return ScramSaslServer(scram.MECHANISMS[mechanism], cache.get, cache.tokens)


class ChannelBuilder:
    def __init__(self, security_protocol: str = "PLAINTEXT", ssl_factory=None,
                 sasl: SaslSettings | None = None) -> None:
        if security_protocol in ("SSL", "SASL_SSL") and ssl_factory is None:
            raise ValueError(f"a {security_protocol} listener needs an SslFactory")
        if security_protocol in sasl_config.SASL_PROTOCOLS and sasl is None:
            raise ValueError(f"a {security_protocol} listener needs its SASL settings")
        self.security_protocol = security_protocol
        self.ssl_factory = ssl_factory
        self.sasl = sasl

    def build(self, connection_id: str, sock: socket.socket, max_frame_size: int,
              memory_pool=None) -> KafkaChannel:
        if self.ssl_factory is not None:
            transport = self.ssl_factory.create_transport(sock)
            mapper = self.ssl_factory.principal_mapper
        else:
            transport, mapper = PlaintextTransportLayer(sock), None
        channel = KafkaChannel(connection_id, sock, max_frame_size, memory_pool,
                               transport=transport,
                               authenticator=DefaultAuthenticator(transport, mapper))
        if self.sasl is not None:
            # The SASL authenticator answers through the channel, so it comes second.
            sasl = self.sasl
            channel.authenticator = SaslServerAuthenticator(
                channel, sasl.listener_name, sasl.mechanisms, sasl.new_sasl_server,
                sasl.hooks, sasl.connections_max_reauth_ms, sasl.max_receive_size)
        return channel


PLAINTEXT = ChannelBuilder()
