"""The Selector's authentication half (Kafka's Selector.pollSelectionKeys for a
channel that is not ready, maybeDelayCloseOnAuthenticationFailure, and the
Processor's session-expiry check): a mixin, so that selector.py stays about I/O.

* :meth:`_prepare`: a read or write event of a channel still handshaking or
  authenticating calls ``channel.prepare()`` (TLS handshake first, then the
  SASL exchange); success counts successful-authentication-total (or
  successful-reauthentication-total) and lets the channel's requests in.
  Decrypted bytes the transport holds (a SASL token that came with the TLS
  Finished) are read next poll without waiting for select.
* :meth:`_authentication_failed`: counts failed-authentication-total (or
  failed-reauthentication-total), logs one rate-limited INFO line naming the
  peer ("Failed authentication with ..."), and closes the channel: at once
  after a failed TLS handshake (Kafka flushes the alert and closes), else
  after ``connection.failed.authentication.delay.ms`` (Kafka's brake on
  password guessing, its DelayedResponseAuthenticationException), writing
  the SASL failure answer first; reads and writes stop until then.
* :meth:`check_session`: KIP-368, for a request on an authenticated channel.
* The authentication deadline (``connection.authentication.timeout.ms``, a
  kafka-net key: Kafka has none, and a handshake that stalls lives there
  until ``connections.max.idle.ms``, 10 minutes): a channel not ready this
  long after it was registered, or after its re-authentication began, is
  closed with one rate-limited line.  A half-open TLS handshake holds
  OpenSSL's state (about 50 KB); this bounds how long.  Channels are kept
  in deadline order, so each poll looks at the first only; a PLAINTEXT
  channel is ready at once and never enters.
"""

from __future__ import annotations

import collections
import logging
import selectors
import time

from kafka_net.log_safety import RateLimitedLog, escape
from kafka_net.network.authenticator import AuthenticationError
from kafka_net.network.transport_layer import SslAuthenticationException
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.headers import peek_request_header

log = logging.getLogger("kafka_net.network.selector")
_auth_log = RateLimitedLog(log)
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
AUTH_COUNTERS = ("successful-authentication-total", "successful-reauthentication-total",
                 "successful-authentication-no-reauth-total", "failed-authentication-total",
                 "failed-reauthentication-total", "expired-connections-killed-count")


class SelectorAuthentication:
    def _init_authentication(self, failed_authentication_delay_ms: int,
                             authentication_timeout_ms: int) -> None:
        # Kafka's authentication sensors, as totals; and expired-connections-killed-count.
        self.auth_counts = dict.fromkeys(AUTH_COUNTERS, 0)
        self._failed_auth_delay_ns = max(0, failed_authentication_delay_ms) * 1_000_000
        # connection id -> (channel, close deadline, reason), deadlines in order.
        self._delayed_closes: collections.OrderedDict = collections.OrderedDict()
        self._auth_timeout_ns = (authentication_timeout_ms * 1_000_000
                                 if authentication_timeout_ms >= 0 else -1)
        # connection id -> (channel, deadline): channels handshaking or authenticating,
        # deadlines in order (one timeout for all, so insertion order is deadline order).
        self._auth_deadlines: collections.OrderedDict = collections.OrderedDict()

    def _authentication_began(self, channel) -> None:
        """A channel that is not ready yet (registered, or re-authenticating) gets
        its deadline."""
        if self._auth_timeout_ns >= 0:
            self._auth_deadlines.pop(channel.id, None)   # a re-authentication: to the end
            self._auth_deadlines[channel.id] = (
                channel, time.monotonic_ns() + self._auth_timeout_ns)

    def _expire_authentications(self) -> None:
        now = self._now_ns
        while self._auth_deadlines:
            connection_id, (channel, deadline) = next(iter(self._auth_deadlines.items()))
            if deadline > now:
                return
            del self._auth_deadlines[connection_id]
            if (connection_id not in self.channels or channel.ready()
                    or connection_id in self._delayed_closes):   # failed: closing anyway
                continue
            self._log_failed_handshake(
                channel, "closing connection from %s: its %s did not finish within "
                "connection.authentication.timeout.ms=%d", _stage(channel),
                self._auth_timeout_ns // 1_000_000)
            self._disconnect(channel, "authentication did not finish within "
                                      "connection.authentication.timeout.ms")

    def _prepare(self, channel) -> None:
        try:
            channel.prepare()
        except SslAuthenticationException as exc:
            self._authentication_failed(channel, exc, delay=False)
            return
        except AuthenticationError as exc:
            self._authentication_failed(channel, exc)
            return
        except InvalidRequestError as exc:
            _auth_log.log(logging.WARNING, ("invalid", channel.peer[:1]),
                          "%s: closing connection %s from %s during authentication: %s",
                          self.name, channel.id, channel.peer_text, escape(exc))
            self._disconnect(channel, f"invalid request during authentication: {exc}")
            return
        except OSError:
            raise   # the peer is gone or the transport broke: the Selector's I/O error
        except Exception as exc:
            self._unexpected_authentication_error(channel, exc)
            return
        self._after_prepare(channel)

    def _unexpected_authentication_error(self, channel, exc: Exception) -> None:
        """A bug reached by a client that has not authenticated: close that one
        connection with one rate-limited line (no traceback, which a client could
        repeat at will), as Kafka closes a channel whose authenticate() threw."""
        _auth_log.log(logging.ERROR, ("unexpected", channel.peer[:1]),
                      "%s: closing connection %s from %s: unexpected error during "
                      "authentication: %s", self.name, channel.id, channel.peer_text,
                      escape(repr(exc)))
        self._disconnect(channel, f"unexpected error during authentication: {exc!r}")

    def _after_prepare(self, channel) -> None:
        self._touch(channel)   # progress: only a handshake that stalls expires
        if channel.has_bytes_buffered():
            # e.g. SASL tokens that came with the TLS Finished: no select says so.
            self._buffered_reads[channel.id] = channel
        else:
            self._buffered_reads.pop(channel.id, None)
        if channel.ready():
            self._authenticated(channel)
        # WRITE while an answer or encrypted handshake records wait for the socket.
        writing = channel.has_send() or channel.transport.has_pending_writes()
        self._set_interest(channel, _READ | (_WRITE if writing else 0))

    def _authenticated(self, channel) -> None:
        self._auth_deadlines.pop(channel.id, None)
        reauth = channel.successful_authentications > 1
        counts = self.auth_counts
        if reauth:
            counts["successful-reauthentication-total"] += 1
        else:
            counts["successful-authentication-total"] += 1
            if not getattr(channel.authenticator, "client_supports_reauth", True):
                counts["successful-authentication-no-reauth-total"] += 1
        log.debug("%s: Successfully %sauthenticated with %s (channelId=%s) as %s", self.name,
                  "re-" if reauth else "", channel.peer_text, channel.id,
                  escape(channel.principal()))
        self._maybe_ready[channel.id] = channel   # a request may already be buffered

    def _authentication_failed(self, channel, exc: Exception, delay: bool = True) -> None:
        reauth = channel.successful_authentications > 0
        self.auth_counts["failed-reauthentication-total" if reauth
                         else "failed-authentication-total"] += 1
        _auth_log.log(logging.INFO, ("auth", channel.peer[:1]),
                      "%s: Failed %sauthentication with %s (channelId=%s) (%s)", self.name,
                      "re-" if reauth else "", channel.peer_text, channel.id, escape(exc))
        reason = f"failed {'re-' if reauth else ''}authentication: {exc}"
        if not delay or not self._failed_auth_delay_ns:
            self._close_on_authentication_failure(channel, reason)
            return
        self._set_interest(channel, 0)   # nothing more is read or written until the close
        self._delayed_closes[channel.id] = (
            channel, time.monotonic_ns() + self._failed_auth_delay_ns, reason)

    def _log_failed_handshake(self, channel, msg: str, *args) -> None:
        # One line per peer address every 10 s, so a scanner cannot flood the log.
        _auth_log.log(logging.INFO, ("auth", channel.peer[:1]),
                      "%s: " + msg, self.name, channel.peer_text, *args)

    def _close_on_authentication_failure(self, channel, reason: str) -> None:
        channel.authenticator.send_failure_response()
        self._disconnect(channel, reason)

    def _complete_delayed_closes(self) -> None:
        now = time.monotonic_ns()
        while self._delayed_closes:
            connection_id, (channel, deadline, reason) = next(iter(self._delayed_closes.items()))
            if deadline > now:
                return
            del self._delayed_closes[connection_id]
            if connection_id in self.channels:
                self._close_on_authentication_failure(channel, reason)

    def _delayed_close_timeout(self, timeout: float) -> float:
        """The poll timeout, shortened so the next delayed close is on time."""
        if not self._delayed_closes:
            return timeout
        _, deadline, _ = next(iter(self._delayed_closes.values()))
        return max(0.0, min(timeout, (deadline - time.monotonic_ns()) / 1e9))

    def check_session(self, channel, frame: bytes) -> bool:
        """KIP-368, for a request just received on an authenticated channel: True if
        the frame was taken for a re-authentication (a SaslHandshake) or the channel
        was closed because its session expired; False: serve the request."""
        if channel.authenticator.session_expiration_ns() is None:
            return False
        if len(frame) >= 8 and peek_request_header(frame)[0] == ApiKey.SASL_HANDSHAKE:
            try:
                if channel.maybe_begin_server_reauthentication(frame):
                    if not channel.is_ready:
                        self._authentication_began(channel)
                    self._after_prepare(channel)
                    return True
            except AuthenticationError as exc:
                self._authentication_failed(channel, exc)
                return True
            except InvalidRequestError as exc:
                _auth_log.log(logging.WARNING, ("invalid", channel.peer[:1]),
                              "%s: closing connection %s from %s during re-authentication:"
                              " %s", self.name, channel.id, channel.peer_text, escape(exc))
                self._disconnect(channel, f"invalid request during re-authentication: {exc}")
                return True
            except OSError as exc:
                self._disconnect(channel, f"I/O error: {exc}")
                return True
            except Exception as exc:
                self._unexpected_authentication_error(channel, exc)
                return True
        if channel.server_authentication_session_expired(time.monotonic_ns()):
            self.auth_counts["expired-connections-killed-count"] += 1
            _auth_log.log(logging.INFO, ("expired", channel.peer[:1]),
                          "%s: Disconnecting expired channel %s from %s (%s): its SASL "
                          "session ended (connections.max.reauth.ms) without "
                          "re-authentication", self.name, channel.id, channel.peer_text,
                          escape(channel.principal()))
            self.close(channel.id)
            return True
        return False


def _stage(channel) -> str:
    """What a channel that is not ready is still doing, for the log."""
    if not channel.transport.ready():
        return "TLS handshake"
    reauth = getattr(channel.authenticator, "reauthenticating", None)
    return "SASL re-authentication" if reauth and reauth() else "SASL authentication"
