"""Handler failures (reference G1, E5-E7): a handler that raises is answered with the API's
error response (UNKNOWN_SERVER_ERROR), or the connection is closed when no error response can
be built; no handler thread ever dies and other connections are unaffected."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import pytest

from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.apis import HANDLERS
from kafka_net.server.handlers import CLOSE_CONNECTION, NO_RESPONSE, api_versions, metadata
from tests.network.helpers import (
    closed_by_server, healthy, metadata_body, server_threads_alive, still_open)
from tests.support import RawClient, make_config, running_server, wait_until


def failing_module(base, handle=None, error_response=None):
    """A dispatch-table row like ``base``'s (a handler module) whose
    handle/error_response may be replaced."""
    calls = {"handle": 0, "error_response": 0}

    def _handle(ctx, body):
        calls["handle"] += 1
        return (handle or base.handle)(ctx, body)

    def _error_response(body, version, code):
        calls["error_response"] += 1
        return (error_response or base.error_response)(body, version, code)

    return SimpleNamespace(API_KEY=base.API_KEY, VERSIONS=HANDLERS[base.API_KEY].VERSIONS,
                           handle=_handle,
                           error_response=_error_response, calls=calls)


def boom(*_):
    raise RuntimeError("handler bug")


def test_raising_handler_gets_unknown_server_error(caplog):
    mod = failing_module(metadata, handle=boom)
    config = make_config(num_io_threads=2)
    with running_server(config, apis_handlers={3: mod}) as server:
        port = server.bound_port()
        with caplog.at_level(logging.ERROR, logger="kafka_net"), RawClient(port) as client:
            # Several times, on more requests than there are handler threads.
            for i in range(5):
                body = client.call(3, 1, metadata_body(1, topics=[{"name": f"t{i}"}]))
                assert [(t["error_code"], t["name"], t["partitions"])
                        for t in body["topics"]] == [
                    (ErrorCode.UNKNOWN_SERVER_ERROR, f"t{i}", [])]
                assert body["brokers"] == []
            assert still_open(client.sock)
            assert client.call(18, 0, {})["error_code"] == 0  # same connection still works
        assert mod.calls == {"handle": 5, "error_response": 5}
        assert server_threads_alive(server)
        assert any("Error handling request" in r.getMessage() and r.exc_info
                   for r in caplog.records)
        with RawClient(port) as other:
            assert other.call(18, 3, {"client_software_name": "x",
                                      "client_software_version": "1"})["error_code"] == 0


def test_raising_api_versions_handler_error_body():
    mod = failing_module(api_versions, handle=boom)
    with running_server(make_config(), apis_handlers={18: mod}) as server:
        with RawClient(server.bound_port()) as client:
            for version in (0, 3):
                body = client.call(18, version, {"client_software_name": "x",
                                                 "client_software_version": "1"}
                                   if version >= 3 else {})
                assert body["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
                assert body["api_keys"] == []
        assert server_threads_alive(server)


def test_error_response_that_raises_closes_the_connection(caplog):
    mod = failing_module(metadata, handle=boom, error_response=boom)
    with running_server(make_config(num_io_threads=2), apis_handlers={3: mod}) as server:
        port = server.bound_port()
        with RawClient(port) as bystander:
            assert bystander.call(18, 0, {})["error_code"] == 0
            with caplog.at_level(logging.ERROR, logger="kafka_net"):
                for _ in range(3):  # more than once per handler thread
                    with RawClient(port) as client:
                        client.send(3, 1, metadata_body(1))
                        assert closed_by_server(client.sock)
            assert mod.calls == {"handle": 3, "error_response": 3}
            assert server_threads_alive(server)
            healthy_api_versions(bystander)
        assert any("closing the connection" in r.getMessage() for r in caplog.records)


def healthy_api_versions(client: RawClient) -> None:
    assert client.call(18, 1, {})["error_code"] == 0


def test_unencodable_response_closes_the_connection():
    mod = failing_module(api_versions, handle=lambda ctx, body: {"error_code": "not an int"})
    with running_server(make_config(), apis_handlers={18: mod}) as server:
        with RawClient(server.bound_port()) as client:
            client.send(18, 0, {})
            assert closed_by_server(client.sock)
        assert server_threads_alive(server)


def test_no_response_unmutes_and_close_connection_closes():
    answers = iter([NO_RESPONSE, None, CLOSE_CONNECTION])

    def handle(ctx, body):
        answer = next(answers, None)
        return api_versions.handle(ctx, body) if answer is None else answer

    mod = failing_module(api_versions, handle=handle)
    with running_server(make_config(), apis_handlers={18: mod}) as server:
        with RawClient(server.bound_port()) as client:
            client.send(18, 0, {}, correlation_id=1)   # NO_RESPONSE: nothing comes back
            client.send(18, 0, {}, correlation_id=2)   # but the connection is unmuted
            assert client.receive(18, 0)[0] == 2
            client.send(18, 0, {}, correlation_id=3)   # CLOSE_CONNECTION
            assert closed_by_server(client.sock)
        assert server_threads_alive(server)
        healthy(server.bound_port())


def test_failure_outside_the_handler_closes_instead_of_hanging(monkeypatch, caplog):
    """Even if KafkaApis.handle itself fails (after the handler), the connection must not
    stay muted forever: the handler thread's backstop closes it, and survives."""
    with running_server(make_config(num_io_threads=1)) as server:
        real = server.apis.build_response
        failures = [RuntimeError("apis bug")]

        def build_response(request):
            if failures:
                raise failures.pop()
            return real(request)

        monkeypatch.setattr(server.apis, "build_response", build_response)
        with caplog.at_level(logging.ERROR, logger="kafka_net"):
            with RawClient(server.bound_port()) as client:
                client.send(18, 0, {})
                assert closed_by_server(client.sock), "connection left muted, unanswered"
        assert not failures
        assert server_threads_alive(server)
        healthy(server.bound_port())  # the single handler thread still serves


def test_handler_thread_survives_a_failing_backstop(monkeypatch):
    """Even if the backstop's close cannot be sent, the handler thread lives on."""
    # That connection stays muted for good; a short drain keeps the stop quick.
    with running_server(make_config(num_io_threads=1, shutdown_timeout_ms=200)) as server:
        calls = []

        def handle(request):
            calls.append(request)
            raise RuntimeError("apis.handle bug")

        def send_response(response):
            calls.append(response)
            raise RuntimeError("request channel bug")

        with monkeypatch.context() as m:
            m.setattr(server.apis, "handle", handle)
            m.setattr(server.request_channel, "send_response", send_response)
            with RawClient(server.bound_port()) as client:
                client.send(18, 0, {})
                assert wait_until(lambda: len(calls) == 2, 5)
        assert server_threads_alive(server)
        healthy(server.bound_port())


@pytest.mark.parametrize("threads", [1, 3])
def test_many_failures_never_reduce_the_pool(threads):
    mod = failing_module(api_versions, handle=boom)
    with running_server(make_config(num_io_threads=threads),
                        apis_handlers={18: mod}) as server:
        port = server.bound_port()
        errors = []

        def hammer():
            try:
                with RawClient(port) as c:
                    for _ in range(10):
                        assert c.call(18, 1, {})["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
            except Exception as exc:
                errors.append(exc)

        workers = [threading.Thread(target=hammer) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
        assert errors == []
        assert mod.calls["handle"] == 40
        assert server_threads_alive(server)
        assert len(server.handler_pool.handlers) == threads
