"""Authenticators: what a channel does between connect and its first request
(Kafka's Authenticator, DefaultAuthenticator and SaslServerAuthenticator).

The Selector calls ``KafkaChannel.prepare()`` on every read or write event of
a channel that is not ``ready()``; ``prepare`` calls :meth:`authenticate`,
which reads at most one request frame, answers it, and returns.  It never
blocks: a frame not yet whole, or an answer the socket did not take, waits
for the next event.  Before authentication completes, only ApiVersions,
SaslHandshake and SaslAuthenticate are served, here, on the network thread;
the request handlers never see them.

SaslServerAuthenticator states (Kafka's SaslState)::

    INITIAL_REQUEST -> HANDSHAKE_OR_VERSIONS_REQUEST --ApiVersions--> HANDSHAKE_REQUEST
                       --SaslHandshake--> AUTHENTICATE --token(s)--> COMPLETE
    any state --failure--> FAILED (the failure answer is written, then the channel closes)
    COMPLETE --SaslHandshake (KIP-368)--> REAUTH_PROCESS_HANDSHAKE --> AUTHENTICATE ...

A request of any other kind before COMPLETE raises IllegalSaslStateError and
the connection closes: with no answer before the handshake, with that API's
error response (ILLEGAL_SASL_STATE) after a v1 handshake, as Kafka does.  SaslHandshake v0 means the tokens that
follow are bare size-prefixed frames; v1 means they come in SaslAuthenticate
requests (KIP-152), whose v1+ answer carries the session lifetime
(``connections.max.reauth.ms``, KIP-368).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Callable

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.codec import ParsedRequest, encode_response, parse_request
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.protocol.errors import InvalidReceiveError, InvalidRequestError
from kafka_net.protocol.framing import encode_frame, read_frame_size
from kafka_net.protocol.headers import peek_request_header
from kafka_net.security.errors import SaslAuthenticationError, SaslError

log = logging.getLogger(__name__)

ANONYMOUS = "User:ANONYMOUS"
# Kafka's sasl.server.max.receive.size default: the largest frame read before
# authentication completes.
DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE = 524288
MIN_REAUTH_INTERVAL_NS = 1_000_000_000   # Kafka: at most one re-authentication a second
_SASL_KEYS = (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)


class AuthenticationError(Exception):
    """Kafka's AuthenticationException: the channel closes, counted as a failed
    (re-)authentication; ``str(exc)`` is the reason logged."""


class IllegalSaslStateError(AuthenticationError):
    pass


class UnsupportedSaslMechanismError(AuthenticationError):
    pass


class DefaultAuthenticator:
    """PLAINTEXT and SSL: nothing to exchange, so complete at once; the principal
    comes from the transport (a mapped client-certificate DN on SSL), else
    User:ANONYMOUS, as Kafka's DefaultKafkaPrincipalBuilder."""

    def __init__(self, transport=None, principal_mapper=None) -> None:
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
        certificate = (self._transport.peer_certificate()
                       if self._transport is not None else None)
        if certificate is None or self._principal_mapper is None:
            return ANONYMOUS
        return "User:" + self._principal_mapper.get_name(certificate)

    def session_expiration_ns(self) -> int | None:
        return None   # no SASL session, nothing expires (KIP-368)

    def reauthenticate(self, frame: bytes) -> None:
        raise IllegalSaslStateError("re-authentication on a channel without SASL")

    def send_failure_response(self) -> None:
        pass

    def close(self) -> None:
        pass


class SaslServerAuthenticator:
    def __init__(self, channel, listener_name: str, mechanisms: tuple[str, ...],
                 sasl_server_factory: Callable[[str], object], hooks,
                 connections_max_reauth_ms: int = 0,
                 max_receive_size: int = DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE) -> None:
        self.channel = channel
        self.listener_name = listener_name
        self.enabled_mechanisms = list(mechanisms)
        self._new_sasl_server = sasl_server_factory
        # What the API layer lends: api_versions_body, supported_versions, error_body.
        self._api_versions_body = hooks.api_versions_body
        self._supported_versions = hooks.supported_versions
        self._error_body = hooks.error_body
        self._max_reauth_ms = connections_max_reauth_ms
        self._receive = NetworkReceive(max_receive_size)
        self.state = "INITIAL_REQUEST"
        self._pending: tuple[str, AuthenticationError | None] | None = None
        self._failure_send: bytes | None = None
        self._sasl_server = None
        self.mechanism: str | None = None
        self._kafka_headers = False       # SaslHandshake v1+: tokens in SaslAuthenticate
        self._principal = ANONYMOUS
        # A SCRAM login with a delegation token (KIP-48): no token requests then.
        self._token_authenticated = False
        self._expiration_ns: int | None = None
        # Re-authentication (KIP-368): what the first authentication settled.
        self._previous: tuple[str, str] | None = None   # (mechanism, principal)
        self._reauth_frame: bytes | None = None
        self.last_reauth_start_ns = 0
        self.client_supports_reauth = False

    # -- what the channel asks ---------------------------------------------------------

    def complete(self) -> bool:
        return self.state == "COMPLETE"

    def principal(self) -> str:
        return self._principal

    def token_authenticated(self) -> bool:
        return self._token_authenticated

    def session_expiration_ns(self) -> int | None:
        return self._expiration_ns

    def reauthenticating(self) -> bool:
        return self._previous is not None

    def close(self) -> None:
        pass

    def text(self) -> str:
        return "re-authentication" if self.reauthenticating() else "authentication"

    # -- the state machine ---------------------------------------------------------------

    def authenticate(self) -> None:
        self._authenticate_once()
        # Bytes pushed back by a re-authentication get no socket event of their own.
        while (self._receive.has_pushed() and self.state not in ("COMPLETE", "FAILED")
               and not self.channel.has_send()):
            self._authenticate_once()

    def _authenticate_once(self) -> None:
        if self.state == "REAUTH_PROCESS_HANDSHAKE":
            frame, self._reauth_frame = self._reauth_frame, None
        else:
            if self.channel.has_send() and not self._flush():
                return
            if self._sasl_server is not None and self._sasl_server.is_complete():
                self._set_state("COMPLETE")
                return
            frame = self._receive.read_from(self.channel.transport)
            if frame is None:
                return
        try:
            self._handle_frame(frame)
        except AuthenticationError as exc:
            self._set_state("FAILED", exc)   # raised once the answer is out

    def _handle_frame(self, frame: bytes) -> None:
        state = self.state
        if state in ("INITIAL_REQUEST", "HANDSHAKE_OR_VERSIONS_REQUEST", "HANDSHAKE_REQUEST",
                     "REAUTH_PROCESS_HANDSHAKE"):
            self._handle_kafka_request(frame)
        elif state == "REAUTH_BAD_MECHANISM":
            raise AuthenticationError(self._bad_mechanism_message)
        elif state == "AUTHENTICATE":
            self._handle_sasl_token(frame)
            if self._sasl_server.is_complete():
                self._set_state("COMPLETE")

    def _handle_kafka_request(self, frame: bytes) -> None:
        try:
            api_key = _api_key(frame)
        except InvalidRequestError as exc:
            if self.state == "INITIAL_REQUEST":
                # Kafka would take a non-Kafka first packet for a GSSAPI token
                # (0.9 clients); GSSAPI is never enabled here.
                raise UnsupportedSaslMechanismError(
                    "Exception handling first SASL packet from client, GSSAPI is not "
                    "supported by server") from exc
            raise
        if self.state == "INITIAL_REQUEST":
            self._set_state("HANDSHAKE_OR_VERSIONS_REQUEST")
        if api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
            raise IllegalSaslStateError(
                f"Unexpected Kafka request of type {_name(api_key)} during SASL handshake.")
        parsed = parse_request(frame, self._supported_versions())
        if api_key == ApiKey.API_VERSIONS:
            self._handle_api_versions(parsed)
            return
        mechanism = self._handle_handshake(parsed)
        if self.reauthenticating() and mechanism != self._previous[0]:
            self._bad_mechanism_message = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._previous[0]}'")
            self._set_state("REAUTH_BAD_MECHANISM")
            return
        self.mechanism = mechanism
        self._sasl_server = self._new_sasl_server(mechanism)
        self._set_state("AUTHENTICATE")

    def _handle_api_versions(self, parsed: ParsedRequest) -> None:
        if self.state != "HANDSHAKE_OR_VERSIONS_REQUEST":
            raise InvalidRequestError(
                "Unexpected ApiVersions request received during SASL authentication "
                f"state {self.state}")
        body = self._api_versions_body(parsed)
        if body["error_code"] == ErrorCode.NONE and parsed.body:
            self.channel.client_software = (parsed.body.get("client_software_name", "unknown"),
                                            parsed.body.get("client_software_version",
                                                            "unknown"))
        self._send(parsed, body)
        if body["error_code"] == ErrorCode.NONE:
            self._set_state("HANDSHAKE_REQUEST")

    def _handle_handshake(self, parsed: ParsedRequest) -> str:
        mechanism = parsed.body["mechanism"]
        if parsed.header.api_version >= 1:
            self._kafka_headers = True
        body = {"error_code": ErrorCode.NONE, "mechanisms": self.enabled_mechanisms}
        if mechanism in self.enabled_mechanisms:
            log.debug("Using SASL mechanism '%s' provided by client", mechanism)
            self._send(parsed, body)
            return mechanism
        body["error_code"] = ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self._failure_send = _response(parsed, body)
        raise UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {mechanism}")

    def _handle_sasl_token(self, frame: bytes) -> None:
        if not self._kafka_headers:
            # SaslHandshake v0: the token is the whole frame, the answer a bare frame.
            token = self._evaluate(frame)
            if self._sasl_server.is_complete():
                self._session_lifetime_ms()
            self._send_bytes(encode_frame(token))
            return
        parsed = parse_request(frame, self._supported_versions())
        api_key = parsed.header.api_key
        if api_key != ApiKey.SASL_AUTHENTICATE:
            # Kafka answers with that API's error response, then closes.
            self._failure_send = self._illegal_state_answer(parsed)
            raise IllegalSaslStateError(f"Unexpected Kafka request of type {_name(api_key)} "
                                        "during SASL authentication.")
        if parsed.header.api_version > 0:
            self.client_supports_reauth = True
        try:
            token = self._evaluate(parsed.body["auth_bytes"])
        except AuthenticationError as exc:
            self._failure_send = _response(parsed, {
                "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                "error_message": str(exc), "auth_bytes": b"", "session_lifetime_ms": 0})
            raise
        lifetime = self._session_lifetime_ms() if self._sasl_server.is_complete() else 0
        self._send(parsed, {"error_code": ErrorCode.NONE, "error_message": None,
                            "auth_bytes": token, "session_lifetime_ms": lifetime})

    def _illegal_state_answer(self, parsed: ParsedRequest) -> bytes | None:
        """``parsed``'s API's error response with ILLEGAL_SASL_STATE, or None where
        the API has none (a Produce with acks=0) or it cannot be built: the
        connection then closes without an answer.  Whatever the request, nothing
        here may raise but the IllegalSaslStateError that follows."""
        try:
            body = self._error_body(parsed, ErrorCode.ILLEGAL_SASL_STATE)
            if not isinstance(body, Mapping):   # a marker: CLOSE_CONNECTION, NO_RESPONSE
                return None
            return _response(parsed, body)
        except Exception as exc:
            log.debug("No error response to %s during SASL authentication: %r",
                      _name(parsed.header.api_key), exc)
            return None

    def _evaluate(self, token: bytes) -> bytes:
        """The SASL server's answer; its failures as AuthenticationError with the
        message the client may see (Kafka hides a SaslException's detail)."""
        try:
            answer = self._sasl_server.evaluate_response(bytes(token))
        except SaslAuthenticationError as exc:
            raise AuthenticationError(str(exc)) from exc
        except (SaslError, ValueError, TypeError, LookupError) as exc:
            # The detail (unknown user, bad proof, a token the mechanism could not
            # even read) is for the log only, as in Kafka.
            log.debug("SASL %s failed during %s: %r", self.mechanism, self.text(), exc)
            raise AuthenticationError(
                f"Authentication failed during {self.text()} due to invalid credentials "
                f"with SASL mechanism {self.mechanism}") from exc
        if self._sasl_server.is_complete():
            principal = f"User:{self._sasl_server.authorization_id}"
            if self.reauthenticating() and principal != self._previous[1]:
                old, new = self._previous[1], principal
                raise AuthenticationError(
                    "Cannot change principals during re-authentication from "
                    f"{old.replace(':', '.', 1)}: {new.replace(':', '.', 1)}")
            self._principal = principal
            self._token_authenticated = getattr(self._sasl_server, "token_authenticated", False)
        return answer or b""

    def _session_lifetime_ms(self) -> int:
        """KIP-368: the session ends connections.max.reauth.ms after it began (0: never);
        a delegation token's session ends at the token's expiry at the latest, as
        Kafka bounds it by the credential's lifetime."""
        token_expiry = getattr(self._sasl_server, "token_expiry_timestamp", None)
        lifetimes = [] if self._max_reauth_ms <= 0 else [self._max_reauth_ms]
        if token_expiry is not None:
            lifetimes.append(max(token_expiry - int(time.time() * 1000), 0))
        if not lifetimes:
            self._expiration_ns = None
            return 0
        lifetime = min(lifetimes)
        self._expiration_ns = time.monotonic_ns() + lifetime * 1_000_000
        return lifetime

    # -- re-authentication (KIP-368) -------------------------------------------------------

    def reauthenticate(self, frame: bytes) -> None:
        """Start over on a live channel with the SaslHandshake ``frame`` just received."""
        self._previous = (self.mechanism, self._principal)
        self._reauth_frame = frame
        self._sasl_server = None
        self.state = "REAUTH_PROCESS_HANDSHAKE"
        # Bytes the channel already read past the SaslHandshake (a client that
        # pipelines its SaslAuthenticate) belong to this exchange: Kafka's
        # NetworkReceive would have left them in the socket for the authenticator.
        self._receive.push(self.channel.decoder.take_buffered())
        self.authenticate()

    # -- writing -------------------------------------------------------------------------

    def _send(self, parsed: ParsedRequest, body: dict) -> None:
        self._send_bytes(_response(parsed, body))

    def _send_bytes(self, data: bytes) -> None:
        self.channel.set_send(data)
        self._flush()

    def _flush(self) -> bool:
        done = self.channel.write()
        if done and self._pending is not None:
            (state, exc), self._pending = self._pending, None
            self._set_state(state, exc)
        return done

    def _set_state(self, state: str, exc: AuthenticationError | None = None) -> None:
        # Kafka's setSaslState: a new state (and a failure) takes effect only once
        # the answer that goes with it is written.
        if self.channel.has_send():
            self._pending = (state, exc)
            return
        self.state = state
        if state == "COMPLETE":
            # What followed the exchange (pushed back by a re-authentication) is
            # the channel's next requests.
            self.channel.decoder.receive_data(self._receive.take_pushed())
        log.debug("Set SASL server state to %s during %s", state, self.text())
        if exc is not None:
            raise exc

    def send_failure_response(self) -> None:
        """The answer to a failed request, if it has one (SASL_AUTHENTICATION_FAILED,
        UNSUPPORTED_SASL_MECHANISM): written as far as the socket takes it at once,
        before the channel closes (Kafka's handleAuthenticationFailure)."""
        data, self._failure_send = self._failure_send, None
        if data is None or self.channel.has_send():
            return
        self.channel.set_send(data)
        try:
            self.channel.write()
        except OSError:
            pass


class NetworkReceive:
    """One size-prefixed frame, read exactly (Kafka's NetworkReceive): never a byte
    of the frame after it, so the first request after authentication stays in the
    socket for the channel's own decoder."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._pushed = b""     # bytes to read before the transport's
        self._size = bytearray()
        self._payload = bytearray()
        self._want = -1

    def read_from(self, transport) -> bytes | None:
        """The whole payload once read; None while it is not.  EOF raises
        ConnectionError; a size out of range raises AuthenticationError."""
        while True:
            need = 4 - len(self._size) if self._want < 0 else self._want - len(self._payload)
            if need == 0:
                break
            if self._pushed:
                data, self._pushed = self._pushed[:need], self._pushed[need:]
            else:
                try:
                    data = transport.read(need)
                except (BlockingIOError, InterruptedError):
                    return None
            if not data:
                raise ConnectionError("the peer closed the connection during authentication")
            if self._want < 0:
                self._size += data
                if len(self._size) == 4:
                    self._want = self._read_size()
            else:
                self._payload += data
        payload = bytes(self._payload)
        self._size, self._payload, self._want = bytearray(), bytearray(), -1
        return payload

    def _read_size(self) -> int:
        try:
            return read_frame_size(self._size, self.max_size)
        except InvalidReceiveError as exc:
            raise AuthenticationError(
                f"Failing SASL authentication due to invalid receive size: {exc}") from exc

    def has_pushed(self) -> bool:
        return bool(self._pushed)

    def push(self, data: bytes) -> None:
        """Bytes already read from the socket, to be read before it."""
        self._pushed += data

    def take_pushed(self) -> bytes:
        """Pushed bytes not read (and a partial frame of them): handed back."""
        data = bytes(self._size) + bytes(self._payload) + self._pushed
        self._size, self._payload, self._want, self._pushed = bytearray(), bytearray(), -1, b""
        return data


def _api_key(frame: bytes) -> int:
    key = peek_request_header(frame)[0]
    if key not in ApiKey._value2member_map_:
        raise InvalidRequestError(f"Error parsing request header. Unexpected api key: {key}")
    return key


def _name(api_key: int) -> str:
    return ApiKey(api_key).name


def _response(parsed: ParsedRequest, body: dict) -> bytes:
    header = parsed.header
    version = 0 if parsed.unsupported_version else header.api_version
    return encode_response(header.api_key, version, header.correlation_id, body)
