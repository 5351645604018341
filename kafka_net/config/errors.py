"""The one exception of kafka_net.config: a bad key or value, named in the message."""


class ConfigError(ValueError):
    """A bad configuration key or value; the message names the key."""
