"""The ``kafka-net`` command's entry point (and ``python -m kafka_net``'s): the
cyclic garbage collector paused before anything is imported
(:mod:`kafka_net.collector` says why), then :func:`kafka_net.cli.main`.  The broker
resumes the collector once it listens; any other command when it returns.
"""

from __future__ import annotations

import sys

from kafka_net.collector import pause_collector, resume_collector


def main(argv: list[str] | None = None) -> int:
    pause_collector()
    try:
        from kafka_net.cli import main as cli_main
        return cli_main(argv)
    finally:
        resume_collector()


if __name__ == "__main__":
    sys.exit(main())
