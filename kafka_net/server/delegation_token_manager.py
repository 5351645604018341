"""DelegationTokenManager: delegation tokens (KIP-48) as KRaft Kafka keeps them.

In KRaft Kafka a token is a metadata record: the controller's
``DelegationTokenControlManager`` checks Create/Renew/Expire against the
tokens it knows and answers with records::

    DelegationTokenRecord        owner, requester, renewers, issueTimestamp,
                                 maxTimestamp, expirationTimestamp, tokenId
    RemoveDelegationTokenRecord  tokenId

and each broker's ``DelegationTokenPublisher`` replays them into its
``DelegationTokenCache``, recomputing the HMAC from the token id and its own
``delegation.token.secret.key`` (the HMAC is never written down: a broker
restarted with another secret holds tokens nobody can use).  Principals are
written as ``Type:name`` text.  One node here, so this class does both, through
the Controller's lock and commit (server/controller.py): what a client was
told is on disk, and a restart with ``log.store=disk`` replays it.

Every ``delegation.token.expiry.check.interval.ms`` a background task removes
the tokens past their expiry or max timestamp (the controller's
``sweepExpiredDelegationTokens``): one RemoveDelegationTokenRecord each.

Tokens are enabled only with a secret key (``isEnabled``); without it the
records are still replayed and kept for snapshots, but no token
authenticates and the APIs answer DELEGATION_TOKEN_AUTH_DISABLED.
"""

from __future__ import annotations

import logging
import threading
import time

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.security.delegation_token import (
    USER_TYPE, DelegationToken, DelegationTokenCache, TokenInformation, create_hmac,
    new_token_id, split_principal)
from kafka_net.server.scheduler import BackgroundTask

log = logging.getLogger(__name__)

LONG_MAX = (1 << 63) - 1


def _sum(now: int, duration: int) -> int:
    """now + duration, saturating at Long.MAX_VALUE as the controller's ``sum``."""
    return LONG_MAX if now > LONG_MAX - duration else now + duration


def token_record(info: TokenInformation) -> tuple[str, dict]:
    return "DelegationTokenRecord", {
        "owner": info.owner, "requester": info.token_requester,
        "renewers": list(info.renewers), "issueTimestamp": info.issue_timestamp,
        "maxTimestamp": info.max_timestamp, "expirationTimestamp": info.expiry_timestamp,
        "tokenId": info.token_id}


def remove_token_record(token_id: str) -> tuple[str, dict]:
    return "RemoveDelegationTokenRecord", {"tokenId": token_id}


class DelegationTokenManager:
    def __init__(self, config, cache: DelegationTokenCache, controller,
                 clock_ms=lambda: int(time.time() * 1000)) -> None:
        self.secret_key: str = config.delegation_token_secret_key
        self.max_lifetime_ms: int = config.delegation_token_max_lifetime_ms
        self.renew_lifetime_ms: int = config.delegation_token_expiry_time_ms
        self.check_interval_ms: int = config.delegation_token_expiry_check_interval_ms
        self.cache = cache
        self.controller = controller
        self.clock_ms = clock_ms
        # Every token the log holds (also while disabled): the snapshot's source.
        self._infos: dict[str, TokenInformation] = {}
        self._task = BackgroundTask("delegation-token-expiry", "kn-token-expiry",
                                    self._run_expiry_check)

    @property
    def enabled(self) -> bool:
        """Kafka's ``tokenAuthEnabled``: a secret key is set."""
        return bool(self.secret_key)

    # -- wiring --------------------------------------------------------------------------

    def register(self, metadata_log) -> None:
        handlers = {"DelegationTokenRecord": self._replay_token,
                    "RemoveDelegationTokenRecord": self._replay_remove}
        for record_type, handler in handlers.items():
            metadata_log.register(record_type, handler)
        metadata_log.register_snapshot(self.snapshot_records, handlers)

    def snapshot_records(self) -> list[tuple[str, dict]]:
        return [token_record(info) for _, info in sorted(self._infos.items())]

    def startup(self) -> None:
        if self.enabled:
            self._task.startup()

    def shutdown(self) -> None:
        self._task.shutdown()

    # -- replay (DelegationTokenPublisher) -------------------------------------------------

    def _replay_token(self, fields: dict) -> None:
        info = TokenInformation(
            fields["tokenId"], fields["owner"], fields["requester"],
            tuple(fields["renewers"]), fields["issueTimestamp"], fields["maxTimestamp"],
            fields["expirationTimestamp"])
        self._infos[info.token_id] = info
        if self.enabled:
            self.cache.update(DelegationToken(info, create_hmac(info.token_id,
                                                                self.secret_key)))

    def _replay_remove(self, fields: dict) -> None:
        self._infos.pop(fields["tokenId"], None)
        self.cache.remove(fields["tokenId"])

    # -- the controller's checks (DelegationTokenControlManager) ---------------------------

    def create(self, owner: str, requester: str, renewers: list[str],
               max_lifetime_ms: int) -> tuple[int, DelegationToken | None]:
        """(error code, the new token or None)."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, None
        if any(split_principal(r)[0] != USER_TYPE for r in renewers):
            return ErrorCode.INVALID_PRINCIPAL_TYPE, None
        now = self.clock_ms()
        lifetime = self.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_timestamp = _sum(now, lifetime)
        expiry = min(max_timestamp, _sum(now, self.renew_lifetime_ms))
        token_id = new_token_id()
        info = TokenInformation(token_id, owner, requester, tuple(renewers), now,
                                max_timestamp, expiry)
        with self.controller.lock:
            self.controller.commit([token_record(info)])
        return ErrorCode.NONE, DelegationToken(info, create_hmac(token_id, self.secret_key))

    def renew(self, principal: str, token_hmac: bytes, renew_period_ms: int
              ) -> tuple[int, int]:
        """(error code, the new expiry timestamp; 0 on an error)."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
        with self.controller.lock:
            now = self.clock_ms()
            token = self.cache.token_for_hmac(token_hmac)
            if token is None:
                return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
            info = token.info
            if info.expired(now):
                return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
            if not info.owner_or_renewer(principal):
                return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
            period = self.renew_lifetime_ms
            if renew_period_ms > 0:
                period = min(period, renew_period_ms)
            expiry = min(info.max_timestamp, _sum(now, period))
            self.controller.commit([token_record(_with_expiry(info, expiry))])
            return ErrorCode.NONE, expiry

    def expire(self, principal: str, token_hmac: bytes, expiry_period_ms: int
               ) -> tuple[int, int]:
        """(error code, the new expiry timestamp; 0 on an error).  A negative
        period removes the token at once."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
        with self.controller.lock:
            now = self.clock_ms()
            token = self.cache.token_for_hmac(token_hmac)
            if token is None:
                return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
            info = token.info
            if not info.owner_or_renewer(principal):
                return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
            if expiry_period_ms < 0:
                self.controller.commit([remove_token_record(info.token_id)])
                return ErrorCode.NONE, now
            if info.expired(now):
                return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
            expiry = min(info.max_timestamp, _sum(now, expiry_period_ms))
            self.controller.commit([token_record(_with_expiry(info, expiry))])
            return ErrorCode.NONE, expiry

    def tokens(self) -> list[DelegationToken]:
        return sorted(self.cache.tokens(), key=lambda t: (t.info.issue_timestamp,
                                                          t.info.token_id))

    # -- the expiry check ------------------------------------------------------------------

    def sweep_expired(self) -> int:
        """Remove every token past its expiry or max timestamp; how many."""
        with self.controller.lock:
            now = self.clock_ms()
            expired = [info for info in self._infos.values() if info.expired(now)]
            for info in expired:
                log.info("Delegation token expired for token: %s for owner: %s",
                         info.token_id, info.owner)
            self.controller.commit([remove_token_record(info.token_id) for info in expired])
            return len(expired)

    def _run_expiry_check(self, stop: threading.Event) -> None:
        while not stop.wait(self.check_interval_ms / 1000):
            try:
                self.sweep_expired()
            except Exception:
                log.exception("Error removing expired delegation tokens")


def _with_expiry(info: TokenInformation, expiry: int) -> TokenInformation:
    return TokenInformation(info.token_id, info.owner, info.token_requester, info.renewers,
                            info.issue_timestamp, info.max_timestamp, expiry)
