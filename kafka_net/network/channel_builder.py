"""ChannelBuilder: makes each new connection's KafkaChannel for one listener, with
the transport and authenticator its security protocol calls for (Kafka's
ChannelBuilders.serverChannelBuilder: PlaintextChannelBuilder, SaslChannelBuilder).

* PLAINTEXT: plain transport, DefaultAuthenticator (User:ANONYMOUS).
* SASL_PLAINTEXT: plain transport, a SaslServerAuthenticator per connection,
  with the listener's mechanisms: PLAIN users from
  ``listener.name.<l>.plain.sasl.jaas.config``, SCRAM credentials from the
  broker's CredentialCache (shared with AlterUserScramCredentials).

``hooks`` is what the authenticator needs of the API layer without importing
it: ``api_versions_body(parsed)`` (the ApiVersions answer, as KafkaApis
gives it), ``supported_versions()`` (the table requests are parsed
against) and ``error_body(parsed, code)`` (any API's error response).  SSL transports come from the SSL listener work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kafka_net.config import sasl as sasl_config
from kafka_net.network.authenticator import SaslServerAuthenticator
from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.security import plain, scram
from kafka_net.security.credential_cache import CredentialCache
from kafka_net.security.scram_server import ScramSaslServer


@dataclass
class AuthenticationHooks:
    credential_cache: CredentialCache
    api_versions_body: Callable
    supported_versions: Callable[[], dict]
    error_body: Callable          # (parsed request, error code) -> that API's error body


class ChannelBuilder:
    def __init__(self, listener_name: str, security_protocol: str = "PLAINTEXT",
                 config=None, hooks: AuthenticationHooks | None = None) -> None:
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self._sasl = security_protocol in sasl_config.SASL_PROTOCOLS
        if self._sasl:
            if hooks is None:
                raise ValueError(f"listener {listener_name}: SASL needs authentication hooks")
            self._hooks = hooks
            self._mechanisms = config.sasl_enabled_mechanisms
            self._max_reauth_ms = config.connections_max_reauth_ms
            self._max_receive_size = config.sasl_server_max_receive_size
            self._plain_users = sasl_config.plain_users(config, listener_name)

    def build(self, connection_id: str, sock, max_frame_size: int,
              memory_pool=None) -> KafkaChannel:
        authenticator = self._new_authenticator if self._sasl else None
        return KafkaChannel(connection_id, sock, max_frame_size, memory_pool,
                            authenticator=authenticator)

    def _new_authenticator(self, channel: KafkaChannel) -> SaslServerAuthenticator:
        hooks = self._hooks
        return SaslServerAuthenticator(channel, self.listener_name, self._mechanisms,
                                       self._new_sasl_server, hooks, self._max_reauth_ms,
                                       self._max_receive_size)

    def _new_sasl_server(self, mechanism: str):
        if mechanism == plain.MECHANISM:
            return plain.PlainSaslServer(self._plain_users)
        return ScramSaslServer(scram.MECHANISMS[mechanism], self._hooks.credential_cache.get)


PLAINTEXT = ChannelBuilder("PLAINTEXT")
