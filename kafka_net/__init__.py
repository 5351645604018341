"""kafka-net: Apache Kafka's broker network layer, in Python.

The public surface is small: :class:`Broker` (a broker in your process, for
tests), :class:`KafkaServer` (the broker: SocketServer +
KafkaRequestHandlerPool + KafkaApis), :class:`ServerConfig`, the sans-IO
codec in :mod:`kafka_net.protocol`, and the ``kafka_broker`` pytest fixture
(:mod:`kafka_net.pytest_plugin`).
"""

__version__ = "0.1.0"

__all__ = ["Broker", "KafkaServer", "ServerConfig", "__version__"]


def __getattr__(name):
    # Imported lazily so that `import kafka_net.protocol` (Spark executors, the
    # layering test) does not drag in the threaded server.
    if name == "KafkaServer":
        from kafka_net.server.kafka_server import KafkaServer
        return KafkaServer
    if name == "Broker":
        from kafka_net.embedded import Broker
        return Broker
    if name == "ServerConfig":
        from kafka_net.config import ServerConfig
        return ServerConfig
    raise AttributeError(name)
