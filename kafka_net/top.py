"""``kafka-net top --metrics http://HOST:PORT``: watch 1 + N + M work, live.

It reads a running broker's ``/requests`` (metrics.listener) once a second
and draws README's diagram with the numbers of now: per listener the
Acceptor and its blocked percent; per Processor its connections, idle
percent, requests read and responses written per second (the change since
the last read) and its response queue; the RequestChannel's queue against
``queued.max.requests``; each handler thread busy (and on which API) or
idle; per API the requests and error responses per second, with the 99th
percentile of TotalTimeMs; the last requests with Kafka's six timings.  A
frame fits 80 columns.  ``q`` or Ctrl-C exits;
``--once`` prints one frame (two reads a second apart, for the rates).

Drawn with ``rich`` (the ``top`` extra): tables and panels that redraw in
place on any terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import sys
import time
import urllib.request

REFRESH_S = 1.0
SHOWN_REQUESTS = 8
TIMINGS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
           "ResponseSendTimeMs", "TotalTimeMs")


def read_view(base_url: str, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(base_url.rstrip("/") + "/requests", timeout=timeout) as r:
        return json.load(r)


def _rates(view: dict, previous: dict | None) -> dict[int, tuple[float, float]]:
    """Processor id -> (requests read/s, responses written/s) since ``previous``."""
    if previous is None:
        return {}
    dt = (view["time_ns"] - previous["time_ns"]) / 1e9
    before = {p["id"]: p for listener in previous["listeners"] for p in listener["processors"]}
    out = {}
    for listener in view["listeners"]:
        for p in listener["processors"]:
            old = before.get(p["id"])
            if old is not None and dt > 0:
                out[p["id"]] = ((p["requests_received"] - old["requests_received"]) / dt,
                                (p["responses_sent"] - old["responses_sent"]) / dt)
    return out


def render(view: dict, previous: dict | None, url: str):
    """One frame: a rich renderable."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table

    rates = _rates(view, previous)
    parts = [f"[bold]kafka-net[/bold] at {url}   (q or Ctrl-C quits)"]
    for listener in view["listeners"]:
        table = Table(title=None, expand=False, box=None, pad_edge=False)
        for column in ("Processor", "connections", "idle %", "req/s", "resp/s",
                       "requests", "response queue"):
            table.add_column(column, justify="right")
        for p in listener["processors"]:
            read, written = rates.get(p["id"], (0.0, 0.0))
            table.add_row(str(p["id"]), str(p["connections"]), f"{p['idle_percent']:.1f}",
                          f"{read:.0f}", f"{written:.0f}", str(p["requests_received"]),
                          str(p["response_queue_size"]))
        parts.append(Panel(table, title=(
            f"1 Acceptor  {listener['name']} :{listener['port']}   blocked "
            f"{listener['acceptor_blocked_percent']:.1f}%   ->   "
            f"N = {len(listener['processors'])} Processors"), title_align="left"))
    channel = view["request_channel"]
    parts.append(Panel(
        f"request queue {channel['queue_size']} / {channel['queued_max_requests']} "
        "(queued.max.requests)", title="RequestChannel", title_align="left"))
    handlers = Table(box=None, pad_edge=False, show_header=False)
    for h in view["handlers"]:
        handlers.add_row(h["name"], f"busy ({h['api']})" if h["busy"] else "idle")
    parts.append(Panel(handlers, title=(
        f"M = {len(view['handlers'])} request handlers   avg idle "
        f"{view['handler_avg_idle_percent']:.1f}%"), title_align="left"))
    parts.append(_api_table(view, previous))
    parts.append(_recent_table(view["recent_requests"][-SHOWN_REQUESTS:]))
    return Group(*parts)


def api_rates(view: dict, previous: dict | None) -> list[tuple[str, float, float, float | None]]:
    """(API, requests/s, errors/s, p99 ms since start) per API, the rates since
    ``previous`` (0 on the first frame)."""
    dt = 0.0 if previous is None else (view["time_ns"] - previous["time_ns"]) / 1e9
    before = {a["api"]: a for a in (previous or {}).get("apis", [])}
    out = []
    for a in view.get("apis", []):
        old = before.get(a["api"], {"requests": a["requests"], "errors": a["errors"]})
        rate = (a["requests"] - old["requests"]) / dt if dt > 0 else 0.0
        errors = (a["errors"] - old["errors"]) / dt if dt > 0 else 0.0
        out.append((a["api"], rate, errors, a["p99_ms"]))
    return out


def _api_table(view: dict, previous: dict | None):
    from rich.table import Table
    table = Table(title="requests by API", title_justify="left", box=None, pad_edge=False)
    for column in ("API", "req/s", "errors/s", "requests", "errors", "p99 ms"):
        table.add_column(column, justify="left" if column == "API" else "right")
    totals = {a["api"]: a for a in view.get("apis", [])}
    for name, rate, errors, p99 in api_rates(view, previous):
        table.add_row(name, f"{rate:.0f}", f"{errors:.0f}", str(totals[name]["requests"]),
                      str(totals[name]["errors"]), "-" if p99 is None else f"{p99:.1f}")
    return table


def _recent_table(recent: list[dict]):
    from rich.table import Table
    table = Table(title="last requests (ms)", title_justify="left", box=None, pad_edge=False)
    table.add_column("request", no_wrap=True)
    table.add_column("client", no_wrap=True)
    for name in ("queue", "local", "remote", "respq", "send", "total"):
        table.add_column(name, justify="right")
    for r in recent:
        table.add_row(request_label(r["api"], r["version"], r["correlation_id"]),
                      client_end(r["connection"]), *(timing_text(r[t]) for t in TIMINGS))
    return table


def timing_text(ms: float) -> str:
    """Five characters for any time below 100 s: microseconds where they fit
    (``9.068``), fewer decimals as the time grows (``14.62``, ``146.2``), so that
    80 columns never cut a timing's digits (rich would end it with an ellipsis)."""
    for limit, decimals in ((10, 3), (100, 2), (1000, 1)):
        if ms < limit:
            return f"{ms:.{decimals}f}"
    return f"{ms:.0f}"


REQUEST_LABEL_WIDTH = 18   # what 80 columns leave beside the client and six timings


def request_label(api: str, version: int, correlation_id: int) -> str:
    """``Produce v10 #4``; a long API name is cut (``GetTelemetry… v0 #3``) so
    that the six timings keep their digits in 80 columns (rich would cut those)."""
    suffix = f" v{version} #{correlation_id}"
    room = max(REQUEST_LABEL_WIDTH - len(suffix), 4)
    return (api if len(api) <= room else api[:room - 1] + "\u2026") + suffix


def client_end(connection_id: str) -> str:
    """The client's address of a connection id (Kafka's ``local-remote-index``):
    the part that tells connections apart, short enough for 80 columns."""
    parts = connection_id.split("-")
    return parts[1] if len(parts) >= 3 else connection_id


def once(url: str, console) -> None:
    previous = read_view(url)
    time.sleep(REFRESH_S)
    console.print(render(read_view(url), previous, url))


def live(url: str, console) -> None:
    from rich.live import Live
    previous = None
    with _keys() as key_pressed, Live(console=console, auto_refresh=False,
                                      screen=False) as screen:
        while True:
            view = read_view(url)
            screen.update(render(view, previous, url), refresh=True)
            previous = view
            if key_pressed(REFRESH_S) == "q":
                return


@contextlib.contextmanager
def _keys():
    """A function waiting up to ``timeout`` s for a key (None if none came);
    the terminal in cbreak mode meanwhile, so that q needs no Enter."""
    if not sys.stdin.isatty():
        yield lambda timeout: time.sleep(timeout)
        return
    import termios
    import tty
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    try:
        def key_pressed(timeout: float):
            ready, _, _ = select.select([fd], [], [], timeout)
            return sys.stdin.read(1) if ready else None
        yield key_pressed
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


# Where `make run` serves /metrics (the port of Strimzi's and the JMX exporter's
# Prometheus endpoint), so that `kafka-net top` finds a local broker with no options.
DEFAULT_METRICS_URL = "http://127.0.0.1:9404"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka-net top",
        description="Watch a running broker's 1 + N + M threads work, live, from its "
                    "metrics.listener (q or Ctrl-C quits).")
    parser.add_argument("--metrics", default=DEFAULT_METRICS_URL, metavar="URL",
                        help="the broker's metrics.listener (default: %(default)s, "
                             "where `make run` serves it)")
    parser.add_argument("--once", action="store_true", help="print one frame and exit")
    args = parser.parse_args(argv)
    try:
        from rich.console import Console
    except ImportError:
        print("kafka-net top needs the rich package: `make run` installs it into the "
              "checkout's .venv (or, in the checkout: .venv/bin/pip install -c "
              "constraints.txt -e '.[top]')", file=sys.stderr)
        return 2
    console = Console()
    try:
        if args.once:
            once(args.metrics, console)
        else:
            live(args.metrics, console)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"kafka-net top: cannot read {args.metrics}/requests: {exc}\n"
              f"Is a broker serving metrics there?  `make run` starts one with "
              f"metrics.listener={DEFAULT_METRICS_URL}; for another broker, give its "
              f"metrics.listener with --metrics URL.", file=sys.stderr)
        return 1
    return 0
