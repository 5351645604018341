"""The SASL keys: ``sasl.enabled.mechanisms``, ``connections.max.reauth.ms``,
``listener.name.<l>.<mechanism>.sasl.jaas.config`` and kafka-net's
``scram.credentials`` (SCRAM users created at startup).

Kafka's default for ``sasl.enabled.mechanisms`` is GSSAPI (Kerberos), which
kafka-net does not implement; the default is kept, so that a properties
file means what it means to Kafka, and a SASL listener with GSSAPI enabled
is refused at startup with a message naming the mechanisms kafka-net has.
"""

from __future__ import annotations

import re

from kafka_net.config.errors import ConfigError
from kafka_net.security import jaas
from kafka_net.security import plain
from kafka_net.security.credential_cache import AddScramError, read_add_scram

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
JAAS_KEY_RE = re.compile(r"listener\.name\.(?P<listener>[^.]+)\."
                         r"(?P<mechanism>[a-z0-9-]+)\.sasl\.jaas\.config")
# One --add-scram spec: MECHANISM=[...], where quoted values may hold ']'.
_SPEC = re.compile(r'[A-Za-z0-9-]+=\[(?:"[^"]*"|[^\]"])*\]')


def mechanism_list(key: str, raw: str) -> tuple[str, ...]:
    names = tuple(part.strip().upper() for part in raw.split(",") if part.strip())
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: a mechanism appears twice in '{raw}'")
    return names


def scram_credentials(key: str, raw: str) -> tuple[str, ...]:
    """Specs as kafka-storage format --add-scram takes them, separated by ';' or
    blanks: ``SCRAM-SHA-256=[name=alice,password=alice-secret] SCRAM-SHA-512=[...]``.
    Each is checked now; the credentials are salted when the broker starts."""
    specs, pos = [], 0
    for m in _SPEC.finditer(raw):
        if raw[pos:m.start()].strip(" ;\t\n"):
            raise ConfigError(f"{key}: cannot read '{raw[pos:m.start()].strip()}'; each "
                              "entry looks like SCRAM-SHA-256=[name=alice,password=secret]")
        specs.append(m.group(0))
        pos = m.end()
    if raw[pos:].strip(" ;\t\n"):
        raise ConfigError(f"{key}: cannot read '{raw[pos:].strip()}'; each entry looks "
                          "like SCRAM-SHA-256=[name=alice,password=secret]")
    for spec in specs:
        try:
            read_add_scram(spec)
        except AddScramError as exc:
            raise ConfigError(f"{key}: {exc}") from None
    return tuple(specs)


def parse_jaas_key(m: re.Match, raw: str) -> tuple[str, str, str]:
    """(LISTENER, MECHANISM, text) from one listener.name.<l>.<mech>.sasl.jaas.config."""
    written, listener, mechanism = m.group(0), m["listener"], m["mechanism"]
    if listener != listener.lower():
        raise ConfigError(f"{written}: Kafka reads listener settings under the listener "
                          f"name in lower case: listener.name.{listener.lower()}."
                          f"{mechanism}.sasl.jaas.config")
    try:
        jaas.parse_single(raw)
    except jaas.JaasConfigError as exc:
        raise ConfigError(f"{written}: {exc}") from None
    return listener.upper(), mechanism.upper(), raw


def validate(cfg) -> None:
    """A SASL listener needs mechanisms kafka-net has, and PLAIN needs its users."""
    delay, idle = cfg.connection_failed_authentication_delay_ms, cfg.connections_max_idle_ms
    if idle >= 0 and delay >= idle:
        raise ConfigError(
            f"connection.failed.authentication.delay.ms={delay} should always be less than "
            f"connections.max.idle.ms={idle} to prevent failed authentication responses "
            "from timing out")
    timeout = cfg.connection_authentication_timeout_ms
    if timeout >= 0 and delay >= timeout:
        raise ConfigError(
            f"connection.failed.authentication.delay.ms={delay} should always be less than "
            f"connection.authentication.timeout.ms={timeout}, or failed authentications "
            "would time out before their answer")
    sasl_listeners = [e.listener_name for e in cfg.listeners
                      if e.security_protocol in SASL_PROTOCOLS]
    if not sasl_listeners:
        return
    unsupported = [m for m in cfg.sasl_enabled_mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported or not cfg.sasl_enabled_mechanisms:
        raise ConfigError(
            f"sasl.enabled.mechanisms: {', '.join(unsupported) or 'none'} cannot serve "
            f"listener(s) {', '.join(sasl_listeners)}: kafka-net implements "
            f"{', '.join(SUPPORTED_MECHANISMS)} (Kafka's default is GSSAPI, so set this key)")
    jaas_configs = {(listener, mech) for listener, mech, _ in cfg.listener_sasl_jaas_configs}
    for listener in sasl_listeners:
        if "PLAIN" in cfg.sasl_enabled_mechanisms and (listener, "PLAIN") not in jaas_configs:
            raise ConfigError(
                f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in "
                f"the JAAS configuration: set listener.name.{listener.lower()}.plain."
                f"sasl.jaas.config to {jaas.PLAIN_LOGIN_MODULE} required "
                'user_alice="alice-secret";')


def plain_users(cfg, listener: str) -> dict[str, str]:
    """The PLAIN users of ``listener``: its PlainLoginModule's user_<name> options."""
    for name, mechanism, text in cfg.listener_sasl_jaas_configs:
        if name == listener and mechanism == "PLAIN":
            return plain.users_from_jaas_options(jaas.parse_single(text).options)
    return {}
