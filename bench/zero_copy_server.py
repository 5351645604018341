"""A kafka-net broker for the zerocopy group: ``python -m bench.zero_copy_server
--log memory|regions [--dir D] [--override k=v ...]``.

The same Daemon as ``kafka-net serve`` (defaults, signals, the "listening on"
line); only the partition logs differ.  ``memory``: the in-memory log, whose
Fetch answers are bytes copied into the response (the copy path).
``regions``: :class:`tests.region_log.RegionLog`, the in-memory log with every
batch also written to a file and reads answered as file regions, which the
Processor sends with sendfile: a stand-in for the durable log (UnifiedLog
over segment files) until that is merged, with the same answer to the
network layer (a FileRegion per partition)."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile

from kafka_net.config import ServerConfig
from kafka_net.daemon import Daemon
from tests.region_log import RegionLog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.zero_copy_server")
    parser.add_argument("--log", choices=("memory", "regions"), required=True)
    parser.add_argument("--dir", help="where the regions' files go (default: a temp dir)")
    parser.add_argument("--override", action="append", default=[])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(threadName)s)")
    props = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    props.update(kv.split("=", 1) for kv in args.override)
    daemon = Daemon(ServerConfig.from_properties(props))
    if args.log == "regions":
        directory = args.dir or tempfile.mkdtemp(prefix="kafka-net-regions-")
        daemon.server.replica_manager.log_factory = lambda *_: RegionLog(directory)
    return daemon.run()


if __name__ == "__main__":
    sys.exit(main())
