"""The exceptions of kafka_net.config: a bad key or value, named in the message."""


class ConfigError(ValueError):
    """A bad broker configuration key or value (a file, an override); the message
    names the key."""


class InvalidConfig(Exception):
    """A bad topic or group config in a request: Kafka's InvalidConfigurationException /
    ConfigException, answered INVALID_CONFIG with the message."""


class DynamicConfigError(Exception):
    """A change of broker configs refused; the config APIs answer it INVALID_REQUEST
    with this message."""
