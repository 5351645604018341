"""The control endpoint, ``/faults`` on the metrics listener (``kafka-net fault``
drives it; docs/faults.md has the reference).

==========================================  =================================================
``GET /faults``                             the rules with their hits, as JSON
``POST /faults`` (a JSON rule)              add it; answers ``{"id": "f1"}``
``GET /faults/ID/wait?hits=N&timeout=S``    wait until rule ID fired N times: ``{"fired":
                                            true|false, "hits": n}``
``GET /faults/groups/G/wait?state=Stable``  wait until group G is in that state (``&timeout=
                                            S``): ``{"reached": true|false, "state": s}``
``DELETE /faults`` or ``/faults/ID``        remove every rule, or one: ``{"removed": n}``
==========================================  =================================================

A rule is the same JSON as :meth:`FaultRegistry.add`'s options.  A bad rule is
answered 400 with the reason; an unknown id 404.  Only loopback peers are
served unless ``faults.control.allowed.hosts`` names the peer's address (or
``*``): others get 403, since a fault can take the broker off the network.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import parse_qs, unquote

from kafka_net.server.faults.rules import RuleError

PREFIX = "/faults"
MAX_WAIT_S = 600.0


def allowed(peer_ip: str, allowed_hosts: tuple[str, ...]) -> bool:
    if "*" in allowed_hosts or peer_ip in allowed_hosts:
        return True
    try:
        address = ipaddress.ip_address(peer_ip.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def handle(registry, method: str, path: str, body: bytes, peer_ip: str,
           allowed_hosts: tuple[str, ...]) -> tuple[int, dict]:
    """(HTTP status, JSON answer) for one request under ``/faults``."""
    if not allowed(peer_ip, allowed_hosts):
        return 403, {"error": f"fault control is not allowed from {peer_ip} "
                              "(see faults.control.allowed.hosts)"}
    path, _, query = path.partition("?")
    parts = [unquote(p) for p in path[len(PREFIX):].split("/") if p]
    try:
        if method == "GET" and not parts:
            return 200, {"faults": registry.list()}
        if method == "POST" and not parts:
            return _add(registry, body)
        if method == "GET" and len(parts) == 3 and parts[0] == "groups" and parts[2] == "wait":
            return _wait_group(registry, parts[1], parse_qs(query))
        if method == "GET" and len(parts) == 2 and parts[1] == "wait":
            return _wait(registry, parts[0], parse_qs(query))
        if method == "DELETE" and len(parts) <= 1:
            removed = registry.remove(parts[0] if parts else None)
            if parts and not removed:
                return 404, {"error": f"no fault {parts[0]}"}
            return 200, {"removed": removed}
    except KeyError as exc:
        return 404, {"error": str(exc.args[0]) if exc.args else "no such fault"}
    return 404, {"error": f"no {method} {path}: see docs/faults.md"}


def _add(registry, body: bytes) -> tuple[int, dict]:
    try:
        spec = json.loads(body or b"{}")
    except ValueError as exc:
        return 400, {"error": f"the rule is not JSON: {exc}"}
    if not isinstance(spec, dict):
        return 400, {"error": "the rule must be a JSON object"}
    try:
        fault = registry.add(spec)
    except RuleError as exc:
        return 400, {"error": str(exc)}
    return 200, {"id": fault.id}


def _wait(registry, rule_id: str, query: dict) -> tuple[int, dict]:
    try:
        hits = int(query.get("hits", ["1"])[0])
        timeout = min(float(query.get("timeout", ["10"])[0]), MAX_WAIT_S)
    except ValueError:
        return 400, {"error": "hits must be an integer and timeout a number of seconds"}
    fired = registry.wait(rule_id, hits, timeout)
    return 200, {"fired": fired, "hits": registry.hits(rule_id)}


def _wait_group(registry, group_id: str, query: dict) -> tuple[int, dict]:
    state = query.get("state", [""])[0]
    if not state:
        return 400, {"error": "give the state to wait for: ?state=Stable"}
    try:
        timeout = min(float(query.get("timeout", ["10"])[0]), MAX_WAIT_S)
    except ValueError:
        return 400, {"error": "timeout must be a number of seconds"}
    reached = registry.wait_group(group_id, state, timeout)
    return 200, {"reached": reached, "state": registry.group_state(group_id)}
