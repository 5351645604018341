"""Errors raised by the sans-IO codec.

Kafka has exactly two answers to bad input (see docs/design.md, "Errors"):

* input that cannot be framed or parsed, or names an API or version the broker
  does not serve, closes the connection with no response;
* a request that parses but is wrong in meaning gets an error code in the
  response body.

The codec only ever raises :class:`InvalidRequestError` (the first kind) for
bytes that came from a peer.  Anything else escaping the codec is a bug.
"""


class InvalidRequestError(Exception):
    """The peer sent bytes that are not a request we can serve: close the connection."""


class InvalidReceiveError(InvalidRequestError):
    """A frame's size prefix is negative or above ``socket.request.max.bytes``.

    Kafka's ``InvalidReceiveException``: detected as soon as the four size
    bytes arrive, before any of the body is read.
    """


class UnsupportedVersionError(InvalidRequestError):
    """A known API at a version outside the range this broker serves."""
