"""SocketServerTest's four throttled-channel cases (reference 4.2), ported: a real
Processor, a real TCP connection, and the request handler played by the test,
which throttles the channel with a real ThrottledChannel (its constructor
sends StartThrottlingResponse) before answering, as KafkaApis does.

As in Kafka's test the "response" is the request's own bytes echoed back, and
the throttle is ended by hand (``notify_throttling_done``, what the reaper
calls) when the case says the throttle is already over.
"""

from __future__ import annotations

import time

from kafka_net.network.mute_state import ChannelMuteState as S
from kafka_net.network.request_channel import NoOpResponse, SendResponse
from kafka_net.protocol import encode_request
from kafka_net.server.quotas.throttled_channel import ChannelThrottleCallback, ThrottledChannel
from tests.network.test_processor import env, recv_frame  # noqa: F401 (env: a fixture)
from tests.support import wait_until


def producer_request_bytes(correlation_id: int = 1) -> bytes:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 10_000, "topic_data": [
        {"name": "topic", "partition_data": [{"index": 0, "records": b""}]}]}
    return encode_request(0, 9, correlation_id, body)


def throttled_channel_test_set_up(env, sock, frame: bytes, noop_response: bool,
                                  throttling_in_progress: bool, sent: bytes | None = None):
    sock.sendall(frame if sent is None else sent)
    request = env.next_request()
    callback = ChannelThrottleCallback(env.channel, request)
    throttled = ThrottledChannel(100, callback, time.monotonic_ns())   # sends StartThrottling
    if noop_response:
        env.channel.send_response(NoOpResponse(request))
    else:
        env.channel.send_response(SendResponse(request, frame))
    if not throttling_in_progress:
        throttled.notify_throttling_done()   # what the reaper would do
    return request


def state_of(env, request):
    channel = env.channel_of(request)
    return None if channel is None else channel.mute_state.state


def test_send_action_response_with_throttled_channel_where_throttling_in_progress(env):
    sock = env.tcp_pair()
    frame = producer_request_bytes()
    request = throttled_channel_test_set_up(env, sock, frame, noop_response=False,
                                            throttling_in_progress=True)
    assert recv_frame(sock) == frame[4:]   # the response is sent at once
    assert wait_until(lambda: state_of(env, request) is S.MUTED_AND_THROTTLED, 5)
    assert env.channel_of(request).mute_state.muted
    # Answered, only throttled: a graceful stop does not wait for it.
    assert env.processor.outstanding() == 0


def test_send_action_response_with_throttled_channel_where_throttling_already_done(env):
    sock = env.tcp_pair()
    frame = producer_request_bytes()
    request = throttled_channel_test_set_up(env, sock, frame, noop_response=False,
                                            throttling_in_progress=False)
    assert recv_frame(sock) == frame[4:]
    # The throttle is over, so the channel unmutes once the response is written.
    assert wait_until(lambda: state_of(env, request) is S.NOT_MUTED, 5)
    assert not env.channel_of(request).mute_state.muted


def test_no_op_action_response_with_throttled_channel_where_throttling_in_progress(env):
    sock = env.tcp_pair()
    request = throttled_channel_test_set_up(env, sock, producer_request_bytes(),
                                            noop_response=True, throttling_in_progress=True)
    assert wait_until(lambda: state_of(env, request) is S.MUTED_AND_THROTTLED, 5)
    assert env.channel_of(request).mute_state.muted


def test_no_op_action_response_with_throttled_channel_where_throttling_already_done(env):
    sock = env.tcp_pair()
    request = throttled_channel_test_set_up(env, sock, producer_request_bytes(),
                                            noop_response=True, throttling_in_progress=False)
    assert wait_until(lambda: state_of(env, request) is S.NOT_MUTED, 5)
    assert not env.channel_of(request).mute_state.muted


def test_throttled_channel_reads_the_next_request_only_after_the_throttle(env):
    # The point of muting: a pipelined request waits in the socket until the end.
    sock = env.tcp_pair()
    first, second = producer_request_bytes(1), producer_request_bytes(2)
    # Pipelined: the second request waits in the socket until the first's throttle ends.
    request = throttled_channel_test_set_up(env, sock, first, noop_response=False,
                                            throttling_in_progress=True, sent=first + second)
    assert request.header.correlation_id == 1
    assert recv_frame(sock) == first[4:]
    assert wait_until(lambda: state_of(env, request) is S.MUTED_AND_THROTTLED, 5)
    assert env.no_request(0.3)
    ChannelThrottleCallback(env.channel, request).end_throttling()
    assert env.next_request().header.correlation_id == 2
