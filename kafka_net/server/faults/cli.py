"""``kafka-net fault``: drive a running broker's faults through its control
endpoint (``/faults`` on the metrics listener)::

    kafka-net fault --control http://127.0.0.1:9404 add --api Produce --topic T \\
        --partitions 0 --error NOT_LEADER_OR_FOLLOWER --count 2      # prints f1
    kafka-net fault --control URL list                # the rules and hits, as JSON
    kafka-net fault --control URL wait f1 --hits 2 --timeout 30   # exit 0 once fired
    kafka-net fault --control URL wait-group G --state Stable --timeout 30
    kafka-net fault --control URL clear [f1]

Every option of ``add`` is one of :meth:`FaultRegistry.add`'s, dashes for
underscores; docs/faults.md lists them.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from urllib.parse import quote

EXIT_OK, EXIT_NOT_FIRED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3

_EPILOG = """exit codes:
  0  done (wait: the rule fired that many times; wait-group: the state was reached)
  1  wait, wait-group: the timeout passed first
  2  bad arguments, or the broker refused the request (the reason is printed)
  3  the control endpoint cannot be reached
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-net fault", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Inject faults into a running kafka-net broker (docs/faults.md).")
    parser.add_argument("--control", required=True, metavar="URL",
                        help="the broker's metrics listener, e.g. http://127.0.0.1:9404")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add a rule; prints its id")
    sel = add.add_argument_group("selectors (ANDed; each may be left out)")
    sel.add_argument("--api", action="append", help="API name or key (repeatable)")
    sel.add_argument("--min-version", type=int)
    sel.add_argument("--max-version", type=int)
    sel.add_argument("--topic", action="append", help="repeatable")
    sel.add_argument("--topic-id", action="append", help="repeatable")
    sel.add_argument("--partitions", type=_int_list, help="e.g. 0 or 0,2")
    sel.add_argument("--group", action="append")
    sel.add_argument("--transactional-id", action="append")
    sel.add_argument("--client-id", action="append")
    sel.add_argument("--listener", action="append")
    sel.add_argument("--connection", action="append")
    budget = add.add_argument_group("budget (none: until removed)")
    budget.add_argument("--count", type=int, help="fire at most N times")
    budget.add_argument("--once", action="store_true", help="same as --count 1")
    budget.add_argument("--nth", type=int, help="first fire on the n-th matching request")
    budget.add_argument("--probability", type=float, help="fire on a match with this "
                                                         "probability (0 < p <= 1)")
    budget.add_argument("--seed", type=int, help="seed of --probability's draws")
    action = add.add_argument_group("action (exactly one)")
    action.add_argument("--error", help="Kafka's error name or code")
    action.add_argument("--when", choices=["before", "after"],
                        help="before or after the handler's work")
    action.add_argument("--delay-ms", type=int)
    action.add_argument("--drop", action="store_true", help="no answer; connection open")
    action.add_argument("--close", choices=["before", "after"],
                        help="close the connection before or after the answer")
    action.add_argument("--throttle-ms", type=int)
    action.add_argument("--coordinator-moved", action="store_true",
                        help="NOT_COORDINATOR until the client sends FindCoordinator")
    action.add_argument("--unavailable-ms", type=int,
                        help="the broker refuses connections this long, then is back")
    action.add_argument("--chaos", action="store_true",
                        help="a seeded random fault per match (needs --probability "
                             "and --seed): a reproducible schedule for soak tests")
    sub.add_parser("list", help="the rules with their hits, as JSON")
    wait = sub.add_parser("wait", help="wait until a rule fired N times")
    wait.add_argument("id")
    wait.add_argument("--hits", type=int, default=1)
    wait.add_argument("--timeout", type=float, default=30.0, help="seconds")
    group = sub.add_parser("wait-group", help="wait until a group is in a state")
    group.add_argument("group")
    group.add_argument("--state", required=True, help="Stable, Empty, PreparingRebalance, ...")
    group.add_argument("--timeout", type=float, default=30.0, help="seconds")
    clear = sub.add_parser("clear", help="remove one rule, or all")
    clear.add_argument("id", nargs="?")
    return parser


def _int_list(text: str) -> list[int]:
    return [int(p) for p in text.split(",") if p.strip()]


_SPEC_OPTIONS = ("api", "min_version", "max_version", "topic", "topic_id", "partitions",
                 "group", "transactional_id", "client_id", "listener", "connection",
                 "count", "once", "nth", "probability", "seed", "error", "when", "delay_ms",
                 "drop", "close", "throttle_ms", "coordinator_moved", "unavailable_ms",
                 "chaos")


def spec_of(args) -> dict:
    """The rule's JSON from ``add``'s options (those given)."""
    spec = {}
    for name in _SPEC_OPTIONS:
        value = getattr(args, name)
        if value is None or value is False:
            continue
        if isinstance(value, list) and len(value) == 1 and name != "partitions":
            value = value[0]
        spec[name] = value
    return spec


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    base = args.control.rstrip("/") + "/faults"
    try:
        if args.command == "add":
            status, answer = _call("POST", base, spec_of(args))
            if status == 200:
                print(answer["id"])
        elif args.command == "list":
            status, answer = _call("GET", base)
            if status == 200:
                print(json.dumps(answer["faults"], indent=2))
        elif args.command == "wait":
            status, answer = _call("GET", f"{base}/{args.id}/wait?hits={args.hits}"
                                          f"&timeout={args.timeout}", timeout=args.timeout + 30)
            if status == 200:
                return EXIT_OK if answer["fired"] else EXIT_NOT_FIRED
        elif args.command == "wait-group":
            status, answer = _call("GET", f"{base}/groups/{quote(args.group, safe='')}/wait"
                                          f"?state={quote(args.state)}&timeout={args.timeout}",
                                   timeout=args.timeout + 30)
            if status == 200:
                return EXIT_OK if answer["reached"] else EXIT_NOT_FIRED
        else:
            status, answer = _call("DELETE", f"{base}/{args.id}" if args.id else base)
    except OSError as exc:
        print(f"kafka-net fault: cannot reach {args.control}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if status != 200:
        print(f"kafka-net fault: {answer.get('error', status)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _call(method: str, url: str, body: dict | None = None,
          timeout: float = 30.0) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"error": f"HTTP {exc.code}"}
