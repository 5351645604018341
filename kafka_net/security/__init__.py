"""SASL for the broker, sans-IO: the mechanisms (PLAIN, SCRAM-SHA-256/512), the
JAAS config parser and the SCRAM credential cache.

Nothing here touches a socket: the network layer's SaslServerAuthenticator
(:mod:`kafka_net.network.authenticator`) feeds these tokens in and writes
their answers out; the API layer (DescribeUserScramCredentials /
AlterUserScramCredentials) reads and changes the credential cache.
"""
