"""The network layer: Acceptor, Processors, Selector, RequestChannel (Kafka's SocketServer)."""
