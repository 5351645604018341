"""SslPrincipalMapper: a client certificate's DN -> a principal name
(``ssl.principal.mapping.rules``, Kafka's ``SslPrincipalMapper``).

Rules, comma-separated, tried in order; the first that applies wins:

* ``DEFAULT``: the full distinguished name, as Java's
  ``X500Principal.getName()`` writes it (RFC 2253: most specific RDN first,
  ``CN=client,OU=eng,O=acme``);
* ``RULE:pattern/replacement/`` (``/L`` or ``/U`` after it: lower or upper
  case the result): applies if ``pattern`` matches the whole DN; the result is
  ``replacement`` with ``$1``, ``$2``... standing for the pattern's groups.

A DN no rule applies to fails the authentication, as in Kafka ("No rules
apply to ...").  Java and Python regular expressions agree on the patterns
these rules use (groups, classes, quantifiers, anchors).
"""

from __future__ import annotations

import re

from kafka_net.config.errors import ConfigError
from kafka_net.network.transport_layer import SslAuthenticationException

_RULE = re.compile(r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/"
                   r"(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?))\s*(?:,|$)")
_JAVA_GROUP = re.compile(r"\$(\d)")

# getpeercert() names -> the keywords X500Principal.getName() (RFC 2253) uses.
_RFC2253_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L",
    "stateOrProvinceName": "ST", "organizationName": "O",
    "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID",
}


class SslPrincipalMapper:
    def __init__(self, rules: str, key: str = "ssl.principal.mapping.rules") -> None:
        self.rules = _parse_rules(rules, key)
        self._text = rules

    def get_name(self, certificate: dict) -> str:
        dn = distinguished_name(certificate)
        for rule in self.rules:
            name = rule(dn)
            if name is not None:
                return name
        raise SslAuthenticationException(
            f"No rules apply to {dn}, rules {self._text}")


def distinguished_name(certificate: dict) -> str:
    """The subject of ``ssl.getpeercert()``'s dict as an RFC 2253 string."""
    rdns = certificate.get("subject", ())
    return ",".join("+".join(f"{_RFC2253_KEYWORDS.get(k, k)}={_escape(v)}" for k, v in rdn)
                    for rdn in reversed(rdns))


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if out[:1] in ("#", " "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _parse_rules(text: str, key: str) -> list:
    rules, position = [], 0
    while position < len(text.rstrip()):
        m = _RULE.match(text, position)
        if m is None or m.end() == position:
            raise ConfigError(f"{key}: invalid rule at '{text[position:].strip()}' "
                              "(expected DEFAULT or RULE:pattern/replacement/[LU])")
        rules.append(_default if m["default"] else _rule(m, key))
        position = m.end()
    if not rules:
        raise ConfigError(f"{key}: no rules (use DEFAULT for the full DN)")
    return rules


def _default(dn: str) -> str:
    return dn


def _rule(m: re.Match, key: str):
    try:
        pattern = re.compile(m["pattern"])
    except re.error as exc:
        raise ConfigError(f"{key}: invalid pattern '{m['pattern']}': {exc}") from None
    replacement = _JAVA_GROUP.sub(r"\\g<\1>", m["replacement"])
    case = m["case"]

    def apply(dn: str) -> str | None:
        match = pattern.fullmatch(dn)
        if match is None:
            return None
        name = match.expand(replacement)
        return name.lower() if case == "L" else name.upper() if case == "U" else name
    return apply
