"""Command line.

* ``kafka-net serve [FILE | --config FILE] [--override key=value ...] [--capture-dir DIR]``:
  the file, then the ``KAFKA_*`` environment variables (the apache/kafka image's
  mapping, :func:`kafka_net.config.properties.env_key`), then each ``--override``
* ``kafka-net conformance CAPTURES... --out DIR`` (the Spark job, local mode;
  see ``spark_jobs/conformance.py``)
* ``kafka-net conformance --compare A B [--out DIR]``: two reports side by side
  (see ``spark_jobs/compare.py``)
* ``kafka-net decode FILE [--max N] [--connection C]``: a capture as text, like
  ``tshark -V`` for Kafka (:mod:`kafka_net.capture.decode`; no Spark needed)
* ``kafka-net dump-log FILE... [--print-data-log] [--cluster-metadata-decoder]``:
  segment files as text, as Kafka's ``kafka-dump-log.sh`` (:mod:`kafka_net.dump_log`)
* ``kafka-net fault --control URL add|list|wait|clear``: faults on demand in a
  running broker (:mod:`kafka_net.server.faults.cli`, docs/faults.md)

Exit codes are defined in :mod:`kafka_net.daemon` and listed by ``kafka-net
--help`` and ``kafka-net serve --help``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from kafka_net import __version__
from kafka_net.config import DEV_PROFILE, KEYS, ConfigError, load_config
from kafka_net.daemon import (
    EXIT_CONFIG_ERROR, EXIT_LOG_DIRS_FAILED, EXIT_OK, EXIT_STARTUP_FAILED, EXIT_UNCLEAN_STOP,
    Daemon)
from kafka_net.log_safety import TRACE  # noqa: F401  (registers the TRACE level name)
from kafka_net.server.storage.checkpoint import StorageError

_EXIT_CODES = f"""exit codes:
  {EXIT_OK}  stopped by SIGTERM/SIGINT after answering every request received
  1  an unexpected internal error (a bug; the traceback is on stderr)
  {EXIT_CONFIG_ERROR}  bad arguments or configuration (nothing was started)
  {EXIT_STARTUP_FAILED}  startup failed (e.g. a listener port is in use)
  {EXIT_UNCLEAN_STOP}  stopped, but requests were left unanswered (shutdown.timeout.ms
     ran out, or a second signal cut the graceful stop short)
  {EXIT_LOG_DIRS_FAILED}  stopped because every log dir failed (a full or failing disk,
     too many open files; docs/bad-day.md)

signals: SIGTERM or SIGINT stop gracefully (a second one stops at once);
SIGUSR1 logs every metric and keeps running.
"""


# Where configuration is defined: one line per module of kafka_net/config (a test
# holds this list to the package's modules).
_CONFIG_PACKAGE = """configuration is defined in the kafka_net/config package
(docs/operations.md, "Configuration", describes it):
  broker_keys.py          the broker keys listed below: name, default, doc
  kafka_broker_names.py   every key a Kafka broker knows; those kafka-net does not
                          use are accepted with a warning
  topic_keys.py           topic configs (CreateTopics, AlterConfigs): Kafka's
                          names, types, defaults, checks and broker synonyms
  group_keys.py           group configs (KIP-848's GROUP resource)
  client_metrics_keys.py  client metrics subscriptions (KIP-714)
  quota_keys.py           client quotas (AlterClientQuotas: producer_byte_rate...)
  dynamic_rules.py        which broker keys AlterConfigs may change at run time
  server_config.py        ServerConfig: the broker keys read and checked as a whole
  properties.py           the server.properties format, --override, and the
                          KAFKA_* environment variables
  listeners.py, sasl.py, values.py, errors.py
                          listener entries, SASL keys, how a key's text becomes
                          its value, and the errors a bad key or value raises
"""


def _key_help() -> str:
    lines = [_CONFIG_PACKAGE, "broker keys (Kafka's names and defaults; see README.md):"]
    for k in KEYS:
        default = k.default if k.default else "(empty)"
        lines.append(f"  {k.name} = {default}\n      {k.doc}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-net", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="kafka-net: Apache Kafka's broker network layer, in Python.",
        epilog="Run 'kafka-net serve --help' for the configuration keys and where they\n"
               "are defined (the kafka_net/config package).\n\n" + _EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"kafka-net {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the broker until SIGTERM or SIGINT",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a kafka-net broker with Kafka's server.properties keys.",
        epilog=_EXIT_CODES + "\n" + _key_help())
    serve.add_argument("properties", nargs="?", metavar="FILE",
                       help="a server.properties file, as kafka-server-start.sh takes it "
                            "(same as --config FILE)")
    serve.add_argument("--config", metavar="FILE", help="a server.properties file")
    serve.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                       help="set one key; may be repeated; wins over the file and the "
                            "KAFKA_* environment variables")
    serve.add_argument("--dev", action="store_true",
                       help="development profile: " + ", ".join(
                           f"{k}={v}" for k, v in DEV_PROFILE.items())
                       + " (under --config and --override)")
    serve.add_argument("--as-version", metavar="X.Y",
                       help="play Kafka release X.Y (2.1 ... 4.4): advertise and accept only "
                            "its API versions and features (same as as.version=X.Y)")
    serve.add_argument("--capture-dir", metavar="DIR",
                       help="record wire captures here (same as capture.dir=DIR)")
    serve.add_argument("--add-scram", metavar="SPEC", action="append", default=[],
                       help="a SCRAM user to create at startup, as kafka-storage format "
                            "takes it: 'SCRAM-SHA-256=[name=alice,password=alice-secret]' "
                            "(repeatable; same as scram.credentials)")
    serve.add_argument("--log-level", default="INFO", type=str.upper,
                       choices=["TRACE", "DEBUG", "INFO", "WARNING", "ERROR"],
                       help="in any case: info and INFO are the same")
    sub.add_parser(
        "top", add_help=False,
        help="watch a running broker's 1 + N + M threads live (run with --help)")
    sub.add_parser(
        "fault", add_help=False,
        help="add, list, wait on and clear faults in a running broker (run with --help)")
    sub.add_parser(
        "conformance", add_help=False,
        help="validate correlation ids in captures with PySpark (run with --help); "
             "--compare A B puts two reports side by side")
    decode = sub.add_parser(
        "decode", help="print a capture's Kafka frames as text (like tshark -V)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print each Kafka frame of a capture (.kncap, pcap, pcapng): where it "
                    "is, when, the connection, API, version, ids, coverage, and the "
                    "decoded body.",
        epilog=_DECODE_EXIT_CODES)
    decode.add_argument("file", help="a capture file")
    decode.add_argument("--max", type=int, metavar="N", help="stop after N frames")
    decode.add_argument("--connection", metavar="C",
                        help="only connections whose id contains C")
    decode.add_argument("--broker-port", type=int, action="append",
                        help="broker port(s) in pcaps when no SYN shows the direction")
    dump = sub.add_parser(
        "dump-log", help="print segment files (.log) as text (like kafka-dump-log.sh)",
        description="Print each record batch of log segment files, read only (nothing is "
                    "recovered or written): offsets, producer, CRC and whether it matches.",
        epilog="exit codes:\n  0  every file was read\n  2  bad arguments, or a file "
               "cannot be read", formatter_class=argparse.RawDescriptionHelpFormatter)
    dump.add_argument("files", nargs="+", metavar="FILE", help="segment files (.log)")
    dump.add_argument("--print-data-log", action="store_true",
                      help="also each record's key and value")
    dump.add_argument("--cluster-metadata-decoder", action="store_true",
                      help="also each record of __cluster_metadata-0 as its metadata "
                           "record type and fields (credential bytes shown by length)")
    return parser


def _dump_log(args) -> int:
    from kafka_net.dump_log import dump_file
    try:
        for path in args.files:
            try:
                for line in dump_file(path, args.print_data_log,
                                      args.cluster_metadata_decoder):
                    print(line)
            except OSError as exc:
                print(f"kafka-net dump-log: cannot read {path}: {exc.strerror}",
                      file=sys.stderr)
                return 2
    except BrokenPipeError:   # `| head`: stop quietly
        sys.stderr.close()
    return 0


_DECODE_EXIT_CODES = """exit codes:
  0  the file was decoded (violations and gaps are shown, not an error)
  2  bad arguments, or the file cannot be read or is not a capture
"""


def _decode(args) -> int:
    from kafka_net.capture.decode import decode_file
    from kafka_net.capture.reader import NOT_A_CAPTURE, sniff
    try:
        with open(args.file, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        print(f"kafka-net decode: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    if sniff(data) is None:
        print(f"kafka-net decode: {args.file} is not a capture ({NOT_A_CAPTURE})",
              file=sys.stderr)
        return 2
    lines = decode_file(data, args.file, args.max, args.connection,
                        set(args.broker_port or []) or None)
    try:
        for line in lines:
            print(line)
    except BrokenPipeError:   # `| head`: stop quietly
        sys.stderr.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["conformance"]:
        return _conformance(argv[1:])
    if argv[:1] == ["fault"]:
        from kafka_net.server.faults.cli import main as fault_main
        return fault_main(argv[1:])
    if argv[:1] == ["top"]:
        from kafka_net import top   # needs rich (the top extra); serve does not
        try:
            return top.main(argv[1:])
        except SystemExit as exc:   # argparse: --help or a usage error
            return int(exc.code or 0)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on errors, 0 for --help
        return int(exc.code or 0)
    if args.command == "decode":
        return _decode(args)
    if args.command == "dump-log":
        return _dump_log(args)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(message)s (%(threadName)s)")
    overrides = list(args.override)
    if args.capture_dir:
        overrides.append(f"capture.dir={args.capture_dir}")
    if args.as_version:
        overrides.append(f"as.version={args.as_version}")
    if args.add_scram:
        overrides.append("scram.credentials=" + " ".join(args.add_scram))
    if args.properties and args.config:
        print("kafka-net: give the properties file once: as FILE or as --config FILE",
              file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        config = load_config(args.properties or args.config, overrides,
                             base=DEV_PROFILE if args.dev else None, environ=os.environ)
    except ConfigError as exc:
        print(f"kafka-net: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        # Builds the broker: locks log.dirs and replays the metadata log.
        daemon = Daemon(config)
    except (OSError, StorageError) as exc:
        logging.getLogger("kafka_net.daemon").error("Startup failed: %s", exc)
        return EXIT_STARTUP_FAILED
    return daemon.run()


def _conformance(argv: list[str]) -> int:
    """Run the Spark job in this process; it owns its arguments and exit codes."""
    if "--compare" in argv:
        from kafka_net.spark_jobs import compare   # reports need no Spark; captures do
        try:
            return compare.main(argv)
        except SystemExit as exc:
            return int(exc.code or 0)
    try:
        from kafka_net.spark_jobs import conformance
    except ImportError as exc:
        print(f"kafka-net conformance needs PySpark (and Java): {exc}\n"
              "`make test` installs them into the checkout's .venv; or, in the checkout: "
              ".venv/bin/pip install -c constraints.txt -e '.[spark]'", file=sys.stderr)
        return 2
    try:
        return conformance.main(argv)
    except SystemExit as exc:  # argparse: --help or a usage error
        return int(exc.code or 0)


if __name__ == "__main__":
    sys.exit(main())
