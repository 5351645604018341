"""SslFactory: one SSL listener's ``ssl.SSLContext``, built from Kafka's ssl.* keys
(Kafka's ``SslFactory`` and ``DefaultSslEngineFactory``).

Built once per SSL listener when the SocketServer starts; a bad key store or
trust store is a :class:`ConfigError` naming the key (as the user wrote it:
``listener.name.<l>.ssl...`` when that form set it) and the file, and the
broker does not start.

Key stores and trust stores are read in PEM only (``ssl.keystore.type=PEM``):
a file (``ssl.keystore.location``, a private key and its certificate chain;
``ssl.truststore.location``, CA certificates) or the PEM text in the config
(``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``,
``ssl.truststore.certificates``).  JKS is a Java format; PKCS12 would need a
third-party reader in the broker; both are refused with a message saying so
(convert with ``openssl pkcs12 -nodes`` or ``keytool -importkeystore``).
"""

from __future__ import annotations

import os
import socket
import ssl
import tempfile
from typing import Any, Mapping

from kafka_net.config.errors import ConfigError
from kafka_net.network.ssl_principal_mapper import SslPrincipalMapper
from kafka_net.network.ssl_transport_layer import SslTransportLayer

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}
_TLS_VERSIONS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
                 "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_SSL_PROTOCOLS = ("TLS", "TLSv1.2", "TLSv1.3")   # ssl.protocol values kafka-net takes


class SslFactory:
    """``values``: ServerConfig.ssl_config(listener), {key: (name to report, value)}."""

    def __init__(self, values: Mapping[str, tuple[str, Any]]) -> None:
        self._values = values
        self.client_auth = self._value("ssl.client.auth")
        self.context = self._create_context()
        rules_key, rules = values["ssl.principal.mapping.rules"]
        self.principal_mapper = SslPrincipalMapper(rules, rules_key)

    def create_transport(self, sock: socket.socket) -> SslTransportLayer:
        return SslTransportLayer(sock, self.context)

    def _value(self, key: str) -> Any:
        return self._values[key][1]

    def _name(self, key: str) -> str:
        return self._values[key][0]

    # -- the context -------------------------------------------------------------------

    def _create_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._set_protocols(context)
        context.options |= getattr(ssl, "OP_NO_RENEGOTIATION", 0)  # Kafka refuses it too
        self._load_key_store(context)
        context.verify_mode = _CLIENT_AUTH[self.client_auth]
        if context.verify_mode != ssl.CERT_NONE:
            self._load_trust_store(context)
        return context

    def _set_protocols(self, context: ssl.SSLContext) -> None:
        protocol = self._value("ssl.protocol")
        if protocol not in _SSL_PROTOCOLS:
            raise ConfigError(f"{self._name('ssl.protocol')}: '{protocol}' is not one of "
                              f"{', '.join(_SSL_PROTOCOLS)}")
        enabled = self._value("ssl.enabled.protocols")
        unknown = [p for p in enabled if p not in _TLS_VERSIONS]
        if unknown or not enabled:
            raise ConfigError(f"{self._name('ssl.enabled.protocols')}: "
                              f"'{','.join(unknown)}' is not a TLS version "
                              f"(one of {', '.join(_TLS_VERSIONS)})")
        versions = sorted(_TLS_VERSIONS[p] for p in enabled)
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
        suites = [s for s in self._value("ssl.cipher.suites")
                  if not s.startswith("TLS_AES_") and not s.startswith("TLS_CHACHA20_")]
        if suites:
            try:
                context.set_ciphers(":".join(suites))
            except ssl.SSLError:
                raise ConfigError(f"{self._name('ssl.cipher.suites')}: none of "
                                  f"'{','.join(suites)}' is a cipher suite OpenSSL knows "
                                  "(give OpenSSL's names)") from None

    def _load_key_store(self, context: ssl.SSLContext) -> None:
        location = self._value("ssl.keystore.location")
        chain, key = (self._value("ssl.keystore.certificate.chain"),
                      self._value("ssl.keystore.key"))
        if not location and not (chain or key):
            raise ConfigError(f"{self._name('ssl.keystore.location')}: an SSL listener needs "
                              "a key store: a PEM file, or ssl.keystore.certificate.chain "
                              "and ssl.keystore.key")
        self._require_pem("ssl.keystore.type")
        password = self._value("ssl.key.password") or None
        if location:
            self._load_chain(context, "ssl.keystore.location", location, None, password)
            return
        if not (chain and key):
            missing = "ssl.keystore.key" if chain else "ssl.keystore.certificate.chain"
            raise ConfigError(f"{self._name(missing)}: needed with "
                              f"{'ssl.keystore.certificate.chain' if chain else 'ssl.keystore.key'}")
        # load_cert_chain reads files only: the PEM text goes through a private
        # temporary directory that is removed at once.
        with tempfile.TemporaryDirectory(prefix="kafka-net-ssl-") as tmp:
            chain_file, key_file = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
            for path, text in ((chain_file, chain), (key_file, key)):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as fh:
                    fh.write(text)
            self._load_chain(context, "ssl.keystore.certificate.chain", chain_file,
                             key_file, password, shown="(the PEM text in the config)")

    def _load_chain(self, context, key: str, certfile: str, keyfile: str | None,
                    password: str | None, shown: str | None = None) -> None:
        where = shown or certfile
        try:
            context.load_cert_chain(certfile, keyfile, password)
        except OSError as exc:
            if isinstance(exc, ssl.SSLError):
                raise ConfigError(
                    f"{self._name(key)}: {where} holds no usable PEM private key and "
                    f"certificate chain, or ssl.key.password is wrong ({exc.reason or exc})"
                ) from None
            raise ConfigError(f"{self._name(key)}: cannot read {where}: "
                              f"{exc.strerror or exc}") from None

    def _load_trust_store(self, context: ssl.SSLContext) -> None:
        location = self._value("ssl.truststore.location")
        certificates = self._value("ssl.truststore.certificates")
        if not location and not certificates:
            # Kafka falls back to the JVM's trust store; ours is the system's.
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
            return
        self._require_pem("ssl.truststore.type")
        key = "ssl.truststore.location" if location else "ssl.truststore.certificates"
        where = location or "(the PEM text in the config)"
        try:
            if location:
                context.load_verify_locations(cafile=location)
            else:
                context.load_verify_locations(cadata=certificates)
        except OSError as exc:
            detail = (exc.reason or str(exc)) if isinstance(exc, ssl.SSLError) else (
                exc.strerror or str(exc))
            raise ConfigError(f"{self._name(key)}: cannot load CA certificates from "
                              f"{where}: {detail}") from None

    def _require_pem(self, type_key: str) -> None:
        kind = self._value(type_key)
        if kind != "PEM":
            raise ConfigError(
                f"{self._name(type_key)}: {kind} is not supported; kafka-net reads PEM "
                f"only (set {type_key}=PEM; convert a {kind} store with keytool "
                "-importkeystore or openssl pkcs12 -nodes)")
