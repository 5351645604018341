"""Authenticators: who the peer of a KafkaChannel is (Kafka's ``Authenticator``).

:class:`DefaultAuthenticator` is Kafka's for PLAINTEXT and SSL listeners: there
is nothing to exchange (for SSL the handshake of the transport layer was the
authentication), so ``complete()`` is True at once and ``principal()`` comes
from the transport: the mapped DN of a verified client certificate
(ssl.principal.mapping.rules), else ``User:ANONYMOUS``, as Kafka's
DefaultKafkaPrincipalBuilder does.

The interface KafkaChannel uses: ``authenticate()`` (one non-blocking step),
``complete()``, ``principal()`` (a string such as ``"User:ANONYMOUS"``), ``close()``.
"""

from __future__ import annotations

ANONYMOUS = "User:ANONYMOUS"   # Kafka's KafkaPrincipal.ANONYMOUS


class DefaultAuthenticator:
    def __init__(self, transport, principal_mapper=None) -> None:
        self._transport = transport
        self._principal_mapper = principal_mapper   # an SslPrincipalMapper, for SSL
        self._principal: str | None = None

    def authenticate(self) -> None:
        pass

    def complete(self) -> bool:
        return True

    def principal(self) -> str:
        # Built once, after the handshake (the Processor asks only then).
        if self._principal is None:
            self._principal = self._build_principal()
        return self._principal

    def _build_principal(self) -> str:
        certificate = self._transport.peer_certificate()
        if certificate is None or self._principal_mapper is None:
            return ANONYMOUS
        return "User:" + self._principal_mapper.get_name(certificate)

    def close(self) -> None:
        pass
