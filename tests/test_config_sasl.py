"""The SASL keys: sasl.enabled.mechanisms, listener.name.<l>.<mechanism>.sasl.jaas.config,
connections.max.reauth.ms, connection.failed.authentication.delay.ms, scram.credentials."""

from __future__ import annotations

from kafka_net.config import ServerConfig
from tests.support import config, config_error

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')
SASL = {"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"}


def test_a_sasl_plaintext_listener_with_plain_and_scram():
    cfg = ServerConfig.from_properties({
        **SASL, "sasl.enabled.mechanisms": "plain, SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "60000", "sasl.server.max.receive.size": "1000",
        "scram.credentials": "SCRAM-SHA-512=[name=bob,password=b];"})
    assert cfg.listeners[0].security_protocol == "SASL_PLAINTEXT"
    assert cfg.sasl_enabled_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert cfg.listener_sasl_jaas_configs == (("SASL_PLAINTEXT", "PLAIN", JAAS),)
    assert cfg.connections_max_reauth_ms == 60000
    assert cfg.sasl_server_max_receive_size == 1000
    assert cfg.scram_credentials == ("SCRAM-SHA-512=[name=bob,password=b]",)


def test_kafkas_default_gssapi_is_refused_on_a_sasl_listener():
    message = config_error(SASL)
    assert message.startswith("sasl.enabled.mechanisms: GSSAPI cannot serve listener(s) "
                              "SASL_PLAINTEXT")
    assert "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512" in message


def test_gssapi_is_fine_without_a_sasl_listener():
    assert ServerConfig.from_properties({"sasl.enabled.mechanisms": "GSSAPI"})


def test_plain_needs_the_listeners_jaas_config():
    message = config_error({**SASL, "sasl.enabled.mechanisms": "PLAIN"})
    assert "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry" in message
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config" in message


def test_scram_alone_needs_no_jaas_config():
    assert ServerConfig.from_properties({**SASL, "sasl.enabled.mechanisms": "SCRAM-SHA-256"})


def test_a_bad_jaas_config_names_its_key_and_kafkas_reason():
    message = config_error({**SASL, "sasl.enabled.mechanisms": "PLAIN",
                            "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x y;"})
    assert message == ("listener.name.sasl_plaintext.plain.sasl.jaas.config: Invalid login "
                       "module control flag 'y' in JAAS config")


def test_listener_names_in_jaas_keys_are_lower_case():
    message = config_error({**SASL, "sasl.enabled.mechanisms": "PLAIN",
                            "listener.name.SASL_PLAINTEXT.plain.sasl.jaas.config": JAAS})
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config" in message


def test_the_failed_authentication_delay_must_be_below_the_idle_time():
    message = config_error({"connection.failed.authentication.delay.ms": "1000",
                            "connections.max.idle.ms": "1000"})
    assert message.startswith("connection.failed.authentication.delay.ms=1000 should always "
                              "be less than connections.max.idle.ms=1000")


def test_the_failed_authentication_delay_must_be_below_the_authentication_timeout():
    message = config_error({"connection.failed.authentication.delay.ms": "500",
                            "connection.authentication.timeout.ms": "500"})
    assert message.startswith("connection.failed.authentication.delay.ms=500 should always "
                              "be less than connection.authentication.timeout.ms=500")
    assert config(connection_authentication_timeout_ms="-1",
                  connection_failed_authentication_delay_ms="500")
    assert ServerConfig().connection_authentication_timeout_ms == 30000


def test_a_bad_scram_spec_is_refused_at_startup():
    message = config_error({"scram.credentials": "SCRAM-SHA-256=[name=a]"})
    assert message.startswith("scram.credentials: ") and "'password'" in message
    message = config_error({"scram.credentials": "alice:secret"})
    assert "cannot read 'alice:secret'" in message
