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


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_secure_listeners_are_refused_with_a_clear_message(protocol):
    message = config_error({"listeners": f"{protocol}://127.0.0.1:9093"})
    assert message == (f"listeners: listener '{protocol}' uses security protocol {protocol}, "
                       "which kafka-net does not implement yet; PLAINTEXT and SASL_PLAINTEXT "
                       "listeners are supported")


def test_a_listener_mapped_to_ssl_is_refused_too():
    message = config_error({"listeners": "EXTERNAL://:9093",
                            "listener.security.protocol.map": "EXTERNAL:SSL"})
    assert "'EXTERNAL' uses security protocol SSL" in message


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
