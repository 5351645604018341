"""ChannelBuilder: a new socket -> a KafkaChannel with the transport layer and the
authenticator of its listener's security protocol (Kafka's ``ChannelBuilders``,
``PlaintextChannelBuilder`` and ``SslChannelBuilder`` in one small class).

=================  ==========================  ======================
security protocol  transport layer             authenticator
=================  ==========================  ======================
PLAINTEXT          PlaintextTransportLayer     DefaultAuthenticator
SSL                SslTransportLayer           DefaultAuthenticator
=================  ==========================  ======================
"""

from __future__ import annotations

import socket

from kafka_net.network.authenticator import DefaultAuthenticator
from kafka_net.network.kafka_channel import KafkaChannel
from kafka_net.network.transport_layer import PlaintextTransportLayer


class ChannelBuilder:
    def __init__(self, security_protocol: str = "PLAINTEXT", ssl_factory=None) -> None:
        if security_protocol == "SSL" and ssl_factory is None:
            raise ValueError("an SSL listener needs an SslFactory")
        self.security_protocol = security_protocol
        self.ssl_factory = ssl_factory

    def build(self, connection_id: str, sock: socket.socket, max_frame_size: int,
              memory_pool=None) -> KafkaChannel:
        if self.ssl_factory is not None:
            transport = self.ssl_factory.create_transport(sock)
            mapper = self.ssl_factory.principal_mapper
        else:
            transport, mapper = PlaintextTransportLayer(sock), None
        authenticator = DefaultAuthenticator(transport, mapper)
        return KafkaChannel(connection_id, sock, max_frame_size, memory_pool,
                            transport=transport, authenticator=authenticator)


PLAINTEXT = ChannelBuilder()
