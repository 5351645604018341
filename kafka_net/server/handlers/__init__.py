"""One module per Kafka API.

Each module has the same shape (the docstring names the API key, the versions
served and the behaviour), so a reader can open any of them cold:

* ``API_KEY``; the versions served are the module's row in the dispatch table
  (:data:`kafka_net.server.apis.HANDLERS`), which ApiVersions advertises and
  which imports the module on the first request of its API;
* ``handle(ctx, request) -> response body`` (a dict), a pure function of the
  request and the broker state reachable from ``ctx``;
* ``error_response(request, version, error_code) -> response body``, used when
  ``handle`` raised: Kafka's ``getErrorResponse``.  Returning
  ``CLOSE_CONNECTION`` closes the connection instead.

``handle`` may also return ``NO_RESPONSE`` (answer nothing but unmute, e.g.
produce acks=0), ``CLOSE_CONNECTION``, or ``DEFERRED``: the request is parked
(a long-poll Fetch, a JoinGroup waiting for members) and will be answered
later by ``ctx.complete(body)`` from whichever thread completes it.  The
connection stays muted meanwhile, so ordering still holds.

Handlers reach the broker only through ``ctx`` (``ctx.replica_manager``,
``ctx.group_coordinator``, ``ctx.quotas``...), never ``ctx.apis``.  The group
APIs share one contract with :mod:`kafka_net.server.group`: decode the
request into domain values, call the coordinator, turn its result into the
body at this version (a parked JoinGroup/SyncGroup is answered by the
callback the handler gave it, through ``ctx.complete``).
"""


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONSE = _Marker("NO_RESPONSE")
CLOSE_CONNECTION = _Marker("CLOSE_CONNECTION")
DEFERRED = _Marker("DEFERRED")
