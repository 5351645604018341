"""The two kinds of SASL failure, as Kafka tells them apart.

* :class:`SaslAuthenticationError` (Kafka's SaslAuthenticationException): its
  message is safe to show the client and goes into the SaslAuthenticate
  response's error_message as is.
* :class:`SaslError` (javax.security.sasl.SaslException): its message may
  say too much (whether a user exists); the client only gets
  "Authentication failed during authentication due to invalid credentials
  with SASL mechanism <M>", the log gets the detail.
"""


class SaslError(Exception):
    pass


class SaslAuthenticationError(SaslError):
    pass
