"""Connection ids: Kafka's ServerConnectionId format, and the index wrap."""

from __future__ import annotations

import socket

from kafka_net.network.server_connection_id import INT_MAX, ConnectionIdGenerator, host_port


def test_ids_name_both_ends_the_processor_and_a_growing_index():
    server = socket.create_server(("127.0.0.1", 0))
    clients, accepted = [], []
    try:
        ids = ConnectionIdGenerator(processor_id=3)
        for _ in range(2):
            clients.append(socket.create_connection(server.getsockname()))
            accepted.append(server.accept()[0])
        made = [ids.next_id(s) for s in accepted]
        port = server.getsockname()[1]
        for index, (cid, client) in enumerate(zip(made, clients)):
            assert cid == f"127.0.0.1:{port}-127.0.0.1:{client.getsockname()[1]}-3-{index}"
    finally:
        for s in clients + accepted + [server]:
            s.close()


def test_the_index_wraps_at_int_max():
    ids = ConnectionIdGenerator(0)
    ids._index = INT_MAX
    a, b = socket.socketpair()
    try:
        assert ids.next_id(a).endswith(f"-0-{INT_MAX}")
        assert ids.next_id(a).endswith("-0-0")
    finally:
        a.close()
        b.close()


def test_host_port_of_unix_socket_addresses():
    assert host_port(("::1", 9092, 0, 0)) == ("::1", 9092)
    assert host_port("") == ("local", 0)
    assert host_port(b"/tmp/s") == ("/tmp/s", 0)
