"""SaslHandshake (API key 17): versions 0-1, never flexible.

Wire schema of ``SaslHandshakeRequest.json`` / ``SaslHandshakeResponse.json``.
The client names a mechanism; the answer lists the enabled ones.

Version notes:

* v0: the SASL tokens that follow travel as raw size-prefixed frames.
* v1: they travel inside SaslAuthenticate requests (KIP-152).
"""

from kafka_net.protocol.schema import INT16, STRING, Array, Field, Schema

REQUEST = Schema(
    "SaslHandshakeRequest", valid="0-1", flexible="none",
    fields=[Field("mechanism", STRING)])

RESPONSE = Schema(
    "SaslHandshakeResponse", valid="0-1", flexible="none",
    fields=[
        Field("error_code", INT16),
        Field("mechanisms", Array(STRING)),
    ])
