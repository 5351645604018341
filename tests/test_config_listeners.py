"""kafka_net.config's listeners: ``listeners``, ``listener.security.protocol.map``,
``controller.listener.names`` and ``advertised.listeners``: the forms Kafka
accepts, what it refuses (secure protocols, clashes, unknown names), each
refusal a ConfigError naming the key.
"""

from __future__ import annotations

import pytest

from kafka_net.config import ConfigError, EndPoint, ServerConfig, parse_listeners
from tests.support import config, config_error


# --- listeners -----------------------------------------------------------------------


def test_several_listeners_with_a_protocol_map():
    cfg = config(listeners="INTERNAL://127.0.0.1:9092, EXTERNAL://127.0.0.1:9093",
                 listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT")
    assert cfg.listeners == (EndPoint("INTERNAL", "127.0.0.1", 9092),
                             EndPoint("EXTERNAL", "127.0.0.1", 9093))


def test_listener_names_are_case_insensitive():
    assert config(listeners="plaintext://127.0.0.1:1").listeners[0].listener_name == "PLAINTEXT"


@pytest.mark.parametrize("value, host, port, text", [
    ("PLAINTEXT://[::1]:9092", "::1", 9092, "PLAINTEXT://[::1]:9092"),
    ("PLAINTEXT://[::]:0", "::", 0, "PLAINTEXT://[::]:0"),
    ("PLAINTEXT://127.0.0.1:0", "127.0.0.1", 0, "PLAINTEXT://127.0.0.1:0"),
    ("PLAINTEXT://:9092", "", 9092, "PLAINTEXT://:9092"),
    ("PLAINTEXT://broker-1.example.com:65535", "broker-1.example.com", 65535,
     "PLAINTEXT://broker-1.example.com:65535"),
])
def test_listener_forms(value, host, port, text):
    (endpoint,) = parse_listeners(value)
    assert (endpoint.host, endpoint.port, str(endpoint)) == (host, port, text)
    assert endpoint.security_protocol == "PLAINTEXT"


@pytest.mark.parametrize("value, fragment", [
    ("PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2", "'PLAINTEXT' appears twice"),
    ("PLAINTEXT://127.0.0.1", "is not of the form NAME://host:port"),
    ("127.0.0.1:9092", "is not of the form NAME://host:port"),
    ("PLAINTEXT://::1:9092", "is not of the form NAME://host:port"),
    ("PLAINTEXT://host:port", "is not of the form NAME://host:port"),
    ("PLAINTEXT://127.0.0.1:65536", "out of range"),
    ("PLAINTEXT://127.0.0.1:-1", "out of range"),
    ("", "at least one listener is required"),
    (" , ", "at least one listener is required"),
])
def test_bad_listeners(value, fragment):
    message = config_error({"listeners": value})
    assert message.startswith("listeners: ")
    assert fragment in message


def test_every_security_protocol_is_served():
    cfg = ServerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,"
                     "SASL_PLAINTEXT://127.0.0.1:9094,SASL_SSL://127.0.0.1:9095,"
                     "EXTERNAL://:9096",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
                                          "EXTERNAL:SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    assert [e.security_protocol for e in cfg.listeners] == [
        "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "SASL_SSL"]


def test_ssl_listeners_are_accepted_with_their_protocol():
    cfg = ServerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,EXTERNAL://:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,EXTERNAL:SSL"})
    assert [(e.listener_name, e.security_protocol) for e in cfg.listeners] == [
        ("PLAINTEXT", "PLAINTEXT"), ("SSL", "SSL"), ("EXTERNAL", "SSL")]


def test_a_listener_name_needs_a_protocol():
    message = config_error({"listeners": "INTERNAL://127.0.0.1:9092"})
    assert "listener 'INTERNAL' has no security protocol" in message
    assert "INTERNAL:PLAINTEXT" in message


@pytest.mark.parametrize("value, fragment", [
    ("INTERNAL", "is not of the form NAME:PROTOCOL"),
    ("INTERNAL:TLS", "'TLS' in 'INTERNAL:TLS' is not a security protocol"),
    ("A:PLAINTEXT,a:SSL", "'A' appears twice"),
])
def test_bad_protocol_maps(value, fragment):
    message = config_error({"listener.security.protocol.map": value})
    assert message.startswith("listener.security.protocol.map: ")
    assert fragment in message


def test_two_listeners_on_one_port_are_refused_unless_ipv4_and_ipv6():
    proto = "A:PLAINTEXT,B:PLAINTEXT"
    message = config_error({"listeners": "A://127.0.0.1:9092,B://0.0.0.0:9092",
                            "listener.security.protocol.map": proto})
    assert "use the same port" in message
    cfg = config(listeners="A://127.0.0.1:9092,B://[::1]:9092",
                 listener_security_protocol_map=proto)
    assert [e.port for e in cfg.listeners] == [9092, 9092]
    cfg = config(listeners="A://127.0.0.1:0,B://127.0.0.1:0",
                 listener_security_protocol_map=proto)
    assert [e.port for e in cfg.listeners] == [0, 0]


def test_controller_listeners_are_accepted_and_not_opened():
    cfg = config(listeners="PLAINTEXT://:9092,CONTROLLER://:9093",
                 advertised_listeners="PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
                 controller_listener_names="CONTROLLER",
                 listener_security_protocol_map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT")
    assert cfg.listeners == (EndPoint("PLAINTEXT", "", 9092),)
    assert cfg.advertised_listeners == (EndPoint("PLAINTEXT", "localhost", 9092),)
    assert cfg.controller_listener_names == ("CONTROLLER",)


def test_controller_listeners_alone_are_not_enough():
    message = config_error({"listeners": "CONTROLLER://:9093",
                            "controller.listener.names": "CONTROLLER",
                            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT"})
    assert "at least one listener is required besides the controller listeners" in message


def test_advertised_listeners_default_to_none_and_the_server_uses_listeners():
    assert config(listeners="PLAINTEXT://127.0.0.1:0").advertised_listeners == ()


def test_advertised_listeners_may_name_another_host():
    cfg = config(listeners="PLAINTEXT://0.0.0.0:9092",
                 advertised_listeners="PLAINTEXT://broker.example.com:19092")
    assert cfg.advertised_listeners == (EndPoint("PLAINTEXT", "broker.example.com", 19092),)


def test_advertised_listeners_must_name_a_known_listener():
    message = config_error({
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "advertised.listeners": "OTHER://broker:9092",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"})
    assert message == ("advertised.listeners: 'OTHER://broker:9092' names a listener "
                       "not in listeners")


def test_advertised_listeners_cannot_advertise_port_zero():
    message = config_error({"listeners": "PLAINTEXT://127.0.0.1:0",
                            "advertised.listeners": "PLAINTEXT://localhost:0"})
    assert "cannot advertise port 0" in message


def test_with_overrides_validates():
    cfg = ServerConfig().with_overrides(num_io_threads=2)
    assert cfg.num_io_threads == 2
    with pytest.raises(ConfigError, match="names a listener not in listeners"):
        ServerConfig().with_overrides(
            advertised_listeners=(EndPoint("OTHER", "h", 1),))


def test_listener_ssl_keys_override_the_broker_ones_for_that_listener_only():
    cfg = ServerConfig.from_properties({
        "listeners": "SSL://127.0.0.1:9093,MTLS://127.0.0.1:9094",
        "listener.security.protocol.map": "SSL:SSL,MTLS:SSL",
        "ssl.client.auth": "requested", "ssl.keystore.location": "/k.pem",
        "listener.name.mtls.ssl.client.auth": "REQUIRED",
        "listener.name.mtls.ssl.enabled.protocols": "TLSv1.3"})
    assert cfg.ssl_config("SSL")["ssl.client.auth"] == ("ssl.client.auth", "requested")
    assert cfg.ssl_config("MTLS")["ssl.client.auth"] == (
        "listener.name.mtls.ssl.client.auth", "required")
    assert cfg.ssl_config("MTLS")["ssl.enabled.protocols"][1] == ("TLSv1.3",)
    assert cfg.ssl_config("MTLS")["ssl.keystore.location"] == ("ssl.keystore.location",
                                                               "/k.pem")


@pytest.mark.parametrize("props, fragment", [
    ({"ssl.client.auth": "always"}, "ssl.client.auth: 'always' is not one of"),
    ({"listener.name.ssl.ssl.keystore.type": "XYZ"},
     "listener.name.ssl.ssl.keystore.type: 'XYZ' is not one of"),
    ({"listener.name.other.ssl.client.auth": "none"},
     "listener.name.other: names a listener not in listeners"),
    ({"listener.name.SSL.ssl.client.auth": "none"}, "lower case"),
])
def test_bad_ssl_keys_are_refused_naming_the_key(props, fragment):
    assert fragment in config_error({"listeners": "SSL://127.0.0.1:9093", **props})


def test_ssl_secrets_stay_out_of_the_config_repr():
    cfg = ServerConfig.from_properties({
        "listeners": "SSL://127.0.0.1:9093", "ssl.key.password": "s3cret",
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----xyz",
        "listener.name.ssl.ssl.key.password": "other-s3cret"})
    assert "s3cret" not in repr(cfg) and "PRIVATE KEY" not in repr(cfg)
