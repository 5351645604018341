"""Command line: ``kafka-net serve [--config FILE] [--override key=value ...]``.

Exit codes are listed in :mod:`kafka_net.daemon` and ``kafka-net serve --help``.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kafka_net import __version__
from kafka_net.config import KEYS, ConfigError, load_config
from kafka_net.daemon import (
    EXIT_CONFIG_ERROR, EXIT_OK, EXIT_STARTUP_FAILED, EXIT_UNCLEAN_STOP, Daemon)

_EXIT_CODES = f"""exit codes:
  {EXIT_OK}  stopped by SIGTERM/SIGINT after answering every request received
  {EXIT_CONFIG_ERROR}  bad arguments or configuration (nothing was started)
  {EXIT_STARTUP_FAILED}  startup failed (e.g. a listener port is in use)
  {EXIT_UNCLEAN_STOP}  stopped, but shutdown.timeout.ms ran out with requests unanswered
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-net", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kafka-net {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the broker",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a kafka-net broker with Kafka's server.properties keys.",
        epilog=_EXIT_CODES + "\nkeys:\n" + "\n".join(
            f"  {k.name} (default {k.default or 'listeners'}): {k.doc}" for k in KEYS))
    serve.add_argument("--config", metavar="FILE", help="a server.properties file")
    serve.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                       help="set one key; may be repeated; wins over --config")
    serve.add_argument("--log-level", default="INFO",
                       choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on errors, 0 for --help
        return int(exc.code or 0)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(message)s (%(threadName)s)")
    try:
        config = load_config(args.config, args.override)
    except ConfigError as exc:
        print(f"kafka-net: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    return Daemon(config).run()


if __name__ == "__main__":
    sys.exit(main())
