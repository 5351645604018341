"""The ``kafka-net`` command's entry point (and ``python -m kafka_net``'s): the
cyclic garbage collector paused before anything is imported
(:mod:`kafka_net.collector` says why), then :func:`kafka_net.cli.main`.  The broker
resumes the collector once it listens; any other command when it returns.

:data:`OWN_PROCESS` is true while a command runs from here: the process is the
command's own, not a caller's (a test or a program calling ``kafka_net.cli.main``),
so the command may settle what is process-wide (``kafka-net conformance``, in
one process: pyarrow without pandas, ``spark_jobs.without_pandas``).
"""

from __future__ import annotations

import sys

from kafka_net.collector import pause_collector, resume_collector


OWN_PROCESS = False


def main(argv: list[str] | None = None) -> int:
    global OWN_PROCESS
    OWN_PROCESS = True
    pause_collector()
    try:
        from kafka_net.cli import main as cli_main
        return cli_main(argv)
    finally:
        resume_collector()


if __name__ == "__main__":
    sys.exit(main())
