"""Whose a finding is, how bad, and why it may be waived, sans-IO.

Every finding of the per-connection checks (:mod:`.pairing`) names a *party*
and a *severity*:

* party ``client``: bytes the client wrote (a request, its id, its version);
  ``broker``: bytes the broker wrote or did not write (a response, its order,
  an answer it owed); ``capture``: what the capture itself explains.  Today
  every check's finding is the client's or the broker's: what the capture
  lost or cut is never a finding, it is coverage (unverifiable, header only).
* severity ``violation``: breaks a rule of Kafka's protocol that the peer
  cannot work around (pairing, order, a body that does not decode, corrupt
  records); ``deviation``: departs from the message definitions in a way
  Kafka's own peer tolerates (Kafka's broker parses a request and ignores
  bytes after its body, RequestContext.parseRequest; answers a reused
  correlation id in order; closes a connection that uses a version it does
  not serve); ``note``: worth knowing, never a fault.

The verdict is about one party, the *subject* (``--subject``, the broker by
default): FAIL if a finding of the subject that is a violation or a deviation
is not waived; the other parties' findings are listed and counted, and never
decide the verdict.

**Versions against ApiVersions** (KIP-35, KIP-511): a client must use a version
within the range the broker advertised on that connection.  A request outside
it is the client's ``unadvertised_version`` deviation (ApiVersions itself is
exempt: a client probes it at its newest version, and the broker answers what
it serves).  Kafka's broker refuses such a request by closing the connection
(SocketServer: "... which is not enabled", an InvalidRequestException); an
answer carrying UNSUPPORTED_VERSION is a refusal too.  A broker that answers
it otherwise served a version it said it does not serve: the broker's
``unadvertised_version_served`` violation, at the response.  A request so
refused is never ``unanswered_before_close``.

**Known client deviations** (:data:`KNOWN_DEVIATIONS`): deviations seen from
real clients, each with its evidence (the client software as it names itself
in ApiVersions v3+, the API and version, the bytes).  A finding that matches
one says so (``known_deviation``); ``--waive CHECK[=CLIENT-SOFTWARE][:REASON]``
waives findings of a check (optionally only from clients whose software name
starts with CLIENT-SOFTWARE), and the report records why: the catalogue's
evidence for the findings it explains, else the reason given (a waiver the
catalogue does not explain must state one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CLIENT, BROKER, CAPTURE = "client", "broker", "capture"
# What a fault the broker was asked to inject caused (kafka_net.capture.injected).
INJECTED = "injected"
PARTIES = (CLIENT, BROKER, CAPTURE, INJECTED)
VIOLATION, DEVIATION, NOTE = "violation", "deviation", "note"
SEVERITIES = (VIOLATION, DEVIATION, NOTE)
FAILING = (VIOLATION, DEVIATION)   # severities that fail the verdict for the subject

UNSUPPORTED_VERSION = 35           # Kafka's ErrorCode.UNSUPPORTED_VERSION

# check -> (party, severity), or by direction: {"request": ..., "response": ...}
_ATTRIBUTION: dict[str, tuple | dict] = {
    "correlation_mismatch": (BROKER, VIOLATION),
    "unanswered_request": (BROKER, VIOLATION),
    "response_without_request": (BROKER, VIOLATION),
    "duplicate_response": (BROKER, VIOLATION),
    "acks0_answered": (BROKER, VIOLATION),
    "response_before_request": (BROKER, VIOLATION),   # an id no request had used yet
    "undecodable_response": (BROKER, VIOLATION),
    "unanswered_before_close": (BROKER, VIOLATION),
    "unadvertised_version_served": (BROKER, VIOLATION),
    "undecodable_request": (CLIENT, VIOLATION),
    "duplicate_correlation_id_in_flight": (CLIENT, DEVIATION),
    "unadvertised_version": (CLIENT, DEVIATION),
    # Both parties' parsers stop at a body's end and ignore what follows.
    "trailing_bytes": {"request": (CLIENT, DEVIATION), "response": (BROKER, DEVIATION)},
    "corrupt_records": {"request": (CLIENT, VIOLATION), "response": (BROKER, VIOLATION)},
}


def attribute(check: str, direction: str) -> tuple[str, str]:
    """(party, severity) of a finding of ``check`` at a frame of ``direction``
    ("request" or "response").  A check not in the table is the broker's
    violation: a new check is never silently harmless."""
    rule = _ATTRIBUTION.get(check, (BROKER, VIOLATION))
    if isinstance(rule, dict):
        return rule[direction]
    return rule


def attribution_table() -> dict[str, dict[str, list[str]]]:
    """{check: {"request"|"response": [party, severity]}}, for the report and docs."""
    return {check: {d: list(attribute(check, d)) for d in ("request", "response")}
            for check in _ATTRIBUTION}


# --- the catalogue of known client deviations --------------------------------------------


@dataclass(frozen=True)
class KnownDeviation:
    """A deviation seen from a real client, with its evidence."""

    id: str
    check: str
    software: str            # regex on "name version" from the client's ApiVersions v3+
    api_key: int
    api_versions: tuple[int, ...]
    trailing: bytes | None   # the exact bytes after the body (trailing_bytes), if known
    evidence: str

    def matches(self, row: dict, fault: bytes | None) -> bool:
        return (row["check"] == self.check and row.get("direction") == "request"
                and row.get("api_key") == self.api_key
                and row.get("api_version") in self.api_versions
                and re.search(self.software, row.get("client_software") or "") is not None
                and (self.trailing is None or fault == self.trailing))


KNOWN_DEVIATIONS: tuple[KnownDeviation, ...] = (
    KnownDeviation(
        id="librdkafka-2.16.0-metadata-v12-trailing",   # v13 alike, where it is served
        check="trailing_bytes",
        software=r"(^librdkafka 2\.16\.0$|rdkafka-2\.16\.0$)",
        api_key=3, api_versions=(12, 13), trailing=bytes.fromhex("010000"),
        evidence="librdkafka 2.16.0 (confluent-kafka-python 2.16.1, client software "
                 "'confluent-kafka-python 2.16.1-rdkafka-2.16.0') sends a Metadata v12 "
                 "request for all topics (topics null) with 3 bytes after the body: "
                 "01 00 00 (a 25-byte frame whose body ends at byte 22); its Metadata v12 "
                 "request with an empty topic list is exact.  Seen against kafka-net with "
                 "AdminClient.list_topics(), in the broker's capture and in tcpdump's "
                 "(tests/capture/test_live_findings.py).  It sends Metadata v13, the same "
                 "body and the same 3 bytes, to a broker that serves v13 (Kafka 4.2, kafka-net "
                 "by default).  Kafka's broker ignores bytes "
                 "after a request body, so it is a deviation, not a violation."),
)


def known_deviation(row: dict, fault: bytes | None) -> KnownDeviation | None:
    """The catalogue entry explaining a finding row (``fault``: its trailing bytes)."""
    return next((k for k in KNOWN_DEVIATIONS if k.matches(row, fault)), None)


def catalogue() -> list[dict]:
    return [{"id": k.id, "check": k.check, "client_software": k.software,
             "api_key": k.api_key, "api_versions": list(k.api_versions),
             "trailing": k.trailing.hex(" ") if k.trailing is not None else None,
             "evidence": k.evidence} for k in KNOWN_DEVIATIONS]


# --- waivers ------------------------------------------------------------------------------


class WaiverError(ValueError):
    """A --waive that names no check, or explains nothing and gives no reason."""


@dataclass
class Waiver:
    """One --waive: a check to stop counting as a violation, for which clients, and
    why."""

    check: str
    client_software: str = ""    # prefix of "name version"; "" = any client
    reason: str = ""             # the user's; "" = the catalogue's evidence
    matched: int = 0

    @classmethod
    def parse(cls, text: str, checks) -> "Waiver":
        """``CHECK[=CLIENT-SOFTWARE][:REASON]``."""
        spec, _, reason = text.partition(":")
        check, _, software = spec.partition("=")
        check, software, reason = check.strip(), software.strip(), reason.strip()
        if check not in checks:
            raise WaiverError(f"--waive {text}: no check named {check!r} (checks: "
                              f"{', '.join(sorted(checks))})")
        if not reason and not any(k.check == check for k in KNOWN_DEVIATIONS):
            raise WaiverError(f"--waive {text}: no known deviation explains it; say why: "
                              f"--waive {spec}:REASON")
        return cls(check, software, reason)

    def covers(self, row: dict) -> bool:
        return row["check"] == self.check and (row.get("client_software") or "").lower(
        ).startswith(self.client_software.lower())

    def to_dict(self) -> dict:
        return {"check": self.check, "client_software": self.client_software,
                "reason": self.reason, "findings": self.matched}


def apply_waivers(rows: list[dict], waivers: list[Waiver]) -> None:
    """Mark each finding row a waiver covers: ``waived`` True and ``waiver`` the reason
    (the catalogue's evidence when the finding is a known deviation, else the
    user's reason; both when both exist)."""
    evidence = {k.id: k.evidence for k in KNOWN_DEVIATIONS}
    for row in rows:
        row.setdefault("waived", False)
        row.setdefault("waiver", "")
        for w in waivers:
            if not w.covers(row):
                continue
            known = evidence.get(row.get("known_deviation") or "")
            if not known and not w.reason:
                continue    # the waiver leans on the catalogue, which does not explain this
            why = [f"known deviation {row['known_deviation']}: {known}"] if known else []
            if w.reason:
                why.append(f"waived by the user: {w.reason}")
            row["waived"], row["waiver"] = True, "; ".join(why)
            w.matched += 1
            break


def counts_against(row: dict, subject: str) -> bool:
    """Does this finding decide the verdict about ``subject``?"""
    return (row.get("party") == subject and row.get("severity") in FAILING
            and not row.get("waived"))


__all__ = ["BROKER", "CAPTURE", "CLIENT", "DEVIATION", "FAILING", "KNOWN_DEVIATIONS",
           "KnownDeviation", "NOTE", "PARTIES", "SEVERITIES", "UNSUPPORTED_VERSION",
           "VIOLATION", "Waiver", "WaiverError", "apply_waivers", "attribute",
           "attribution_table", "catalogue", "counts_against", "known_deviation"]
